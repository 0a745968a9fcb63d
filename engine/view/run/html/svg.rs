//! SVG charts drawn by hand: a handful of rectangles and labels each, so the page needs no
//! chart library, no script and no network. Colours are the Okabe-Ito palette (safe for
//! the common colour-vision deficiencies), and every mark carries its value as text, so
//! no chart relies on colour alone. Each chart is `role="img"` with a title.

use std::fmt::Write as _;

use super::esc;
use crate::present::number::fmt_score;

/// One bar of a score chart.
pub(crate) struct Bar<'a> {
    /// Its label.
    pub label: &'a str,
    /// The score on the 1-5 scale; `None` draws no bar and says why.
    pub score: Option<f64>,
    /// Its colour.
    pub color: &'static str,
    /// Text shown instead of a bar without a score.
    pub missing: &'a str,
}

/// Horizontal bars on the 1-5 scale, with an optional vertical marker (the pass
/// threshold, or a mean) drawn and labelled.
pub(crate) fn score_bars(title: &str, bars: &[Bar<'_>], marker: Option<(f64, &str)>) -> String {
    let label_w = bars
        .iter()
        .map(|b| b.label.chars().count())
        .max()
        .unwrap_or(8)
        .clamp(8, 40) as f64
        * 7.2
        + 12.0;
    let plot_w = 360.0;
    let row = 24.0;
    let top = 22.0;
    let height = top + row * bars.len() as f64 + 26.0;
    let width = label_w + plot_w + 60.0;
    let x_of = |s: f64| label_w + (s.clamp(0.0, 5.0) / 5.0) * plot_w;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="chart" role="img" aria-label="{t}" viewBox="0 0 {width:.0} {height:.0}" width="{width:.0}" height="{height:.0}" xmlns="http://www.w3.org/2000/svg"><title>{t}</title>"#,
        t = esc(title)
    );
    for tick in 0..=5 {
        let x = x_of(f64::from(tick));
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{y2:.1}" stroke="#d0d0d0"/><text x="{x:.1}" y="{ty:.1}" class="tick" text-anchor="middle">{tick}</text>"##,
            y2 = height - 22.0,
            ty = height - 8.0
        );
    }
    for (i, b) in bars.iter().enumerate() {
        let y = top + row * i as f64;
        let _ = write!(
            svg,
            r#"<text x="{lx:.1}" y="{ty:.1}" class="label" text-anchor="end">{l}</text>"#,
            lx = label_w - 8.0,
            ty = y + 16.0,
            l = esc(&truncate(b.label, 40))
        );
        match b.score {
            Some(s) => {
                let _ = write!(
                    svg,
                    r#"<rect x="{x0:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{c}"><title>{l}: {v}</title></rect><text x="{tx:.1}" y="{ty:.1}" class="value">{v}</text>"#,
                    x0 = x_of(0.0),
                    y = y + 4.0,
                    w = (x_of(s) - x_of(0.0)).max(1.0),
                    h = row - 8.0,
                    c = b.color,
                    l = esc(b.label),
                    v = fmt_score(Some(s)),
                    tx = x_of(s) + 6.0,
                    ty = y + 16.0
                );
            }
            None => {
                let _ = write!(
                    svg,
                    r#"<text x="{x:.1}" y="{ty:.1}" class="missing">{m}</text>"#,
                    x = x_of(0.0) + 6.0,
                    ty = y + 16.0,
                    m = esc(b.missing)
                );
            }
        }
    }
    if let Some((value, label)) = marker {
        let x = x_of(value);
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" y1="{y1:.1}" x2="{x:.1}" y2="{y2:.1}" stroke="#000" stroke-width="2" stroke-dasharray="5 3"/><text x="{x:.1}" y="14" class="tick" text-anchor="middle">{l}</text>"##,
            y1 = top - 2.0,
            y2 = height - 22.0,
            l = esc(label)
        );
    }
    svg.push_str("</svg>");
    svg
}

/// A square heatmap of pairwise kappas (symmetric; the diagonal is 1). Each cell shows its
/// value; undefined pairs are grey and say so.
pub(crate) fn kappa_heatmap(
    title: &str,
    raters: &[String],
    kappa: &dyn Fn(usize, usize) -> Option<f64>,
) -> String {
    let n = raters.len();
    let label_w = raters
        .iter()
        .map(|r| r.chars().count())
        .max()
        .unwrap_or(6)
        .clamp(6, 28) as f64
        * 7.2
        + 10.0;
    let cell = 64.0;
    let top = 30.0;
    let width = label_w + cell * n as f64 + 10.0;
    let height = top + cell * n as f64 + 10.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg class="chart heatmap" role="img" aria-label="{t}" viewBox="0 0 {width:.0} {height:.0}" width="{width:.0}" height="{height:.0}" xmlns="http://www.w3.org/2000/svg"><title>{t}</title>"#,
        t = esc(title)
    );
    for (j, r) in raters.iter().enumerate() {
        let _ = write!(
            svg,
            r#"<text x="{x:.1}" y="20" class="label" text-anchor="middle">{l}</text>"#,
            x = label_w + cell * j as f64 + cell / 2.0,
            l = esc(&truncate(r, 10))
        );
    }
    for (i, r) in raters.iter().enumerate() {
        let y = top + cell * i as f64;
        let _ = write!(
            svg,
            r#"<text x="{x:.1}" y="{ty:.1}" class="label" text-anchor="end">{l}</text>"#,
            x = label_w - 8.0,
            ty = y + cell / 2.0 + 4.0,
            l = esc(&truncate(r, 28))
        );
        for j in 0..n {
            let x = label_w + cell * j as f64;
            let k = if i == j { Some(1.0) } else { kappa(i, j) };
            let (fill, ink) = heat(k);
            let text = k.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.2}"));
            let _ = write!(
                svg,
                r##"<rect x="{x:.1}" y="{y:.1}" width="{cell}" height="{cell}" fill="{fill}" stroke="#fff"><title>{a} vs {b}: {text}</title></rect><text x="{tx:.1}" y="{ty:.1}" fill="{ink}" class="cell" text-anchor="middle">{text}</text>"##,
                a = esc(&raters[i]),
                b = esc(&raters[j]),
                tx = x + cell / 2.0,
                ty = y + cell / 2.0 + 5.0
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

/// Fill and text colour of a kappa cell: blue for agreement, vermillion for less than
/// chance, stronger with the magnitude.
fn heat(k: Option<f64>) -> (String, &'static str) {
    let Some(k) = k else {
        return ("#e0e0e0".to_owned(), "#222");
    };
    let (r, g, b) = if k >= 0.0 {
        (0, 114, 178)
    } else {
        (213, 94, 0)
    };
    let t = k.abs().clamp(0.0, 1.0) * 0.85 + 0.1;
    let mix = |c: u8| (255.0 - (255.0 - f64::from(c)) * t).round() as u8;
    // White only on the deepest blue, where it keeps a 4.5:1 contrast; dark elsewhere.
    let ink = if k >= 0.0 && t >= 0.9 { "#fff" } else { "#111" };
    (format!("#{:02x}{:02x}{:02x}", mix(r), mix(g), mix(b)), ink)
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let cut: String = text.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}
