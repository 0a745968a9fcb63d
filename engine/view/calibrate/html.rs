//! A calibration as one self-contained HTML page: per dimension the raters' ceiling, each
//! source's figures, and its confusion matrix with cells shaded by count (the diagonal is
//! agreement; mass right of it is a lenient judge, left of it a strict one). No script,
//! no external resource; every text from labels or suites is escaped.

use std::fmt::Write as _;

use crate::calibrate::stats::{Confusion, SCALE};
use crate::calibrate::{Calibration, DimensionCalibration, SourceCalibration};
use crate::present::escape::html as esc;
use crate::present::style::{Page, sheet};

/// The page.
pub(crate) fn page(c: &Calibration) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Calibration of {suite}</title>\n<style>\n{style}</style></head><body>\n<main class=\"calibration\">\n\
         <h1>Calibration of <code>{suite}</code></h1>\n<p>{rows} labels from <code>{file}</code>; \
         kappa target {target}. Weighted kappa is Cohen's with quadratic weights on the 1-5 \
         scale; the consensus is the raters' median; bias is judge minus consensus.</p>\n",
        suite = esc(&c.suite),
        rows = c.rows,
        file = esc(&c.labels),
        target = c.kappa_target,
        style = sheet(Page::Calibration),
    );
    for d in &c.dimensions {
        dimension(&mut out, d);
    }
    if !c.warnings.is_empty() {
        out.push_str("<h2>Warnings</h2>\n<ul>\n");
        for w in &c.warnings {
            let _ = writeln!(out, "<li>{}</li>", esc(w));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</main></body></html>\n");
    out
}

fn dimension(out: &mut String, d: &DimensionCalibration) {
    let _ = writeln!(
        out,
        "<h2>{}</h2>\n<p>{} units, raters {}. Raters among themselves (the ceiling): weighted \
         kappa {}, exact agreement {}.</p>",
        esc(&d.dimension),
        d.units.len(),
        esc(&d.raters.join(", ")),
        num(d.ceiling.mean_weighted_kappa),
        pct(d.ceiling.mean_exact)
    );
    out.push_str(
        "<table><tr><th>source</th><th>weighted kappa</th><th>exact</th><th>bias [95% CI]</th>\
         <th>pass: people / judge</th><th>judge, all units</th><th>corrected</th></tr>\n",
    );
    for s in &d.sources {
        source_row(out, s);
    }
    out.push_str("</table>\n");
    for s in &d.sources {
        matrix(out, &s.source, &s.confusion);
    }
}

fn source_row(out: &mut String, s: &SourceCalibration) {
    let bias = s.bias.as_ref().map_or_else(
        || "-".to_owned(),
        |b| match b.ci95 {
            Some([lo, hi]) => format!("{:+.2} [{lo:+.2}, {hi:+.2}]", b.mean),
            None => format!("{:+.2}", b.mean),
        },
    );
    let p = &s.pass_rate;
    let _ = writeln!(
        out,
        "<tr><td{}>{}</td><td>{}</td><td>{}</td><td>{bias}</td><td>{} / {}</td>\
         <td>{} of {}</td><td>{}</td></tr>",
        if s.below_target {
            " class=\"below\""
        } else {
            ""
        },
        esc(&s.source),
        num(s.consensus.weighted_kappa),
        pct(s.consensus.exact),
        pct(p.human),
        pct(p.judge),
        pct(p.judge_all),
        p.n_all,
        pct(p.corrected)
    );
}

fn matrix(out: &mut String, source: &str, c: &Confusion) {
    let most = c.counts.iter().flatten().copied().max().unwrap_or(0).max(1);
    let _ = write!(
        out,
        "<table><caption>Confusion: consensus (rows) by {} (columns)</caption><tr><th></th>",
        esc(source)
    );
    for s in SCALE {
        let _ = write!(out, "<th>{s}</th>");
    }
    out.push_str("</tr>\n");
    for (i, row) in c.counts.iter().enumerate() {
        let _ = write!(out, "<tr><th>{}</th>", SCALE[i]);
        for (j, n) in row.iter().enumerate() {
            let shade = *n as f64 / most as f64 * 0.6;
            let diag = if i == j { " diag" } else { "" };
            let _ = write!(
                out,
                "<td class=\"cm{diag}\" style=\"background:rgba(33,102,172,{shade:.2})\">{n}</td>"
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

fn num(x: Option<f64>) -> String {
    x.map_or_else(|| "undefined".into(), |v| format!("{v:.3}"))
}

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |v| format!("{:.0}%", v * 100.0))
}
