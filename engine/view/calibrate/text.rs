//! A calibration for people: an aligned text table or Markdown (JSON is the
//! `Calibration` itself). Both show, per dimension, the raters' ceiling, each source's
//! agreement, bias and pass rates, and its confusion matrix.
//!
//! Names come from the labels file and the results (raters, units, sources): every one
//! goes through [`shown`], the terminal sanitizer for the table and the Markdown escape
//! for Markdown, so a name can neither drive the terminal nor add a link to a comment.

use std::fmt::Write as _;

use crate::calibrate::stats::{Agreement, Confusion, SCALE};
use crate::calibrate::{Calibration, DimensionCalibration, SourceCalibration};
use crate::present::escape::{inert_markdown as inert, markdown_code_span as code};
use crate::present::table;

/// Which text format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// Aligned columns for a terminal.
    Table,
    /// GitHub-flavoured Markdown.
    Markdown,
}

/// Renders `c` in `style`.
pub(crate) fn render(c: &Calibration, style: Style) -> String {
    let mut out = String::new();
    let suite = match style {
        Style::Table => format!("`{}`", shown(&c.suite, style)),
        Style::Markdown => code(&c.suite),
    };
    let title = format!(
        "calibration of suite {suite} against {} ({} labels); kappa target {}",
        shown(&c.labels, style),
        c.rows,
        c.kappa_target
    );
    match style {
        Style::Table => {
            let _ = writeln!(out, "caldera {title}");
        }
        Style::Markdown => {
            let _ = writeln!(out, "# Calibration of {suite}\n\n{title}\n");
        }
    }
    let note = "weighted kappa is Cohen's, quadratic weights on the 1-5 scale; the consensus \
                is the raters' median (lower middle for an even count); bias is judge minus \
                consensus; (!) marks a source below the kappa target";
    let _ = match style {
        Style::Table => writeln!(out, "{note}"),
        Style::Markdown => writeln!(out, "_{note}_"),
    };
    for d in &c.dimensions {
        dimension(&mut out, d, style);
    }
    if !c.warnings.is_empty() {
        out.push_str(if style == Style::Table {
            "\nwarnings:\n"
        } else {
            "\n## Warnings\n\n"
        });
        for w in &c.warnings {
            let _ = writeln!(out, "  - {}", shown(w, style));
        }
    }
    out
}

fn dimension(out: &mut String, d: &DimensionCalibration, style: Style) {
    let raters: Vec<String> = d.raters.iter().map(|r| shown(r, style)).collect();
    let heading = format!(
        "{}: {} units, raters {}",
        shown(&d.dimension, style),
        d.units.len(),
        raters.join(", ")
    );
    match style {
        Style::Table => {
            let _ = writeln!(out, "\n== {heading}");
        }
        Style::Markdown => {
            let _ = writeln!(out, "\n## {heading}\n");
        }
    }
    let ceiling = format!(
        "raters among themselves (the ceiling): weighted kappa {}, exact agreement {}",
        opt(d.ceiling.mean_weighted_kappa, 3),
        pct(d.ceiling.mean_exact)
    );
    let _ = writeln!(out, "{}{ceiling}", indent(style));
    let mut header = vec![
        "source".to_owned(),
        "kappa_w".into(),
        "exact".into(),
        "bias [95% CI]".into(),
        "pass: people / judge".into(),
        "judge, all units".into(),
        "corrected".into(),
    ];
    header.extend(raters.iter().map(|r| format!("kappa_w {r}")));
    let rows: Vec<Vec<String>> = d
        .sources
        .iter()
        .map(|s| source_row(s, &d.raters, style))
        .collect();
    grid(out, &header, &rows, style);
    for s in &d.sources {
        confusion(out, &shown(&s.source, style), &s.confusion, style);
        if !s.unscored_units.is_empty() {
            let units: Vec<String> = s.unscored_units.iter().map(|u| shown(u, style)).collect();
            let _ = writeln!(
                out,
                "{}{} did not score: {}",
                indent(style),
                shown(&s.source, style),
                units.join(", ")
            );
        }
    }
}

/// A name from the labels or the results as `style` shows it: escaped for a terminal
/// (control characters, direction overrides) or inert Markdown.
fn shown(text: &str, style: Style) -> String {
    match style {
        Style::Table => crate::diag::printable_line(text).into_owned(),
        Style::Markdown => inert(text),
    }
}

fn source_row(s: &SourceCalibration, raters: &[String], style: Style) -> Vec<String> {
    let bias = match &s.bias {
        None => "-".to_owned(),
        Some(b) => match b.ci95 {
            Some([lo, hi]) => format!("{:+.2} [{lo:+.2}, {hi:+.2}]", b.mean),
            None => format!("{:+.2}", b.mean),
        },
    };
    let p = &s.pass_rate;
    let mut row = vec![
        format!(
            "{}{}",
            shown(&s.source, style),
            if s.below_target { " (!)" } else { "" }
        ),
        opt(s.consensus.weighted_kappa, 3),
        pct(s.consensus.exact),
        bias,
        format!("{} / {}", pct(p.human), pct(p.judge)),
        format!("{} of {}", pct(p.judge_all), p.n_all),
        pct(p.corrected),
    ];
    row.extend(
        raters
            .iter()
            .map(|r| s.raters.get(r).map_or_else(|| "-".into(), kappa_cell)),
    );
    row
}

fn kappa_cell(a: &Agreement) -> String {
    opt(a.weighted_kappa, 3)
}

fn confusion(out: &mut String, source: &str, c: &Confusion, style: Style) {
    let mut header = vec![format!("consensus \\ {source}")];
    header.extend(SCALE.iter().map(i64::to_string));
    let rows: Vec<Vec<String>> = SCALE
        .iter()
        .zip(&c.counts)
        .map(|(h, counts)| {
            let mut row = vec![h.to_string()];
            row.extend(counts.iter().map(|n| {
                if *n == 0 && style == Style::Table {
                    ".".to_owned()
                } else {
                    n.to_string()
                }
            }));
            row
        })
        .collect();
    if style == Style::Markdown {
        out.push('\n');
    }
    grid(out, &header, &rows, style);
}

/// Writes an aligned table (text) or a pipe table (Markdown), after a blank line.
fn grid(out: &mut String, header: &[String], rows: &[Vec<String>], style: Style) {
    out.push('\n');
    out.push_str(&match style {
        Style::Markdown => {
            let header: Vec<&str> = header.iter().map(String::as_str).collect();
            table::markdown(&header, &[], rows)
        }
        Style::Table => table::aligned(
            header,
            rows,
            &[],
            table::Layout {
                indent: "  ",
                left_columns: 1,
            },
        ),
    });
}

fn indent(style: Style) -> &'static str {
    match style {
        Style::Table => "  ",
        Style::Markdown => "",
    }
}

fn opt(x: Option<f64>, places: usize) -> String {
    x.map_or_else(|| "undefined".into(), |v| format!("{v:.places$}"))
}

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |v| format!("{:.0}%", v * 100.0))
}
