//! One self-contained HTML page: no script, no network, no font or stylesheet from
//! elsewhere, so it opens from a CI artefact or an e-mail. It reads top-down for someone
//! who never saw caldera: the decision and weighted score first; a chart of every
//! dimension; the comparison with a baseline; panel agreement; one card per dimension
//! (score, confidence, weight, status, reasoning, recommendations, failed assertions and
//! caps, heuristic and model side by side, per-repo chart, evidence folded away); the
//! problems of the run.

pub(crate) mod svg;

use std::fmt::Write as _;

use serde_json::Value;

pub(crate) use crate::present::escape::html as esc;
use crate::present::style::{Page, sheet};

use crate::present::number::{fmt_delta, fmt_score};
use crate::present::style::{BLUE, GREY, VERMILLION};
use crate::report::compare::{Change, Comparison};
use crate::report::model::{AgreementView, Dimension, Report, Status};
use crate::view::run::{Input, Reporter};
use svg::Bar;

/// Evidence shown per dimension, in bytes of pretty JSON; beyond, the card says where the
/// rest is (the JSON result).
const MAX_EVIDENCE_BYTES: usize = 256 * 1024;

/// Repos drawn in a per-repo chart.
const MAX_REPO_BARS: usize = 60;

/// Models drawn in the pairwise-kappa heatmap. The heatmap has one cell per pair, so
/// its size grows with the square of the panel: 3,000 raters would be nine million
/// cells (gigabytes of SVG). Past this many, the first ones are drawn and a note says
/// where every pair is (the JSON result).
pub(crate) const MAX_HEATMAP_RATERS: usize = 40;

/// Heuristic and model scores this far apart are a divergence worth a human look.
const DIVERGENCE: f64 = 2.0;

/// The HTML format.
pub(crate) struct Html;

impl Reporter for Html {
    fn render(&self, input: &Input<'_>) -> String {
        let r = input.report;
        let mut out = String::with_capacity(64 * 1024);
        let _ = write!(
            out,
            "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <link rel=\"icon\" href=\"data:,\">\n<title>caldera: {} {} {}</title>\n<style>\n{}</style>\n</head>\n<body>\n<main>\n",
            esc(&r.suite),
            esc(&r.decision),
            fmt_score(r.total_score),
            sheet(Page::Report)
        );
        verdict(&mut out, r);
        overview(&mut out, r);
        if let Some(c) = input.comparison {
            comparison(&mut out, c);
        }
        panel(&mut out, r);
        out.push_str("<h2 id=\"dimensions\" style=\"margin-top:24px\">Dimensions</h2>\n");
        for d in &r.dimensions {
            card(&mut out, d, input.comparison);
        }
        problems(&mut out, r);
        let _ = write!(
            out,
            "<footer>Written by caldera {} from result format {}. Every figure here is in the JSON result.</footer>\n</main>\n</body>\n</html>\n",
            esc(r
                .caldera_version
                .as_deref()
                .unwrap_or(env!("CARGO_PKG_VERSION"))),
            r.format()
        );
        out
    }
}

/// A verbal interpretation as text (`"Substantial"`), whatever JSON shape it has.
pub(crate) fn words(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

fn decision_class(decision: &str) -> &'static str {
    match decision {
        "FAIL" | "NO_SCORE" => "bad",
        "WEAK_PASS" => "weak",
        _ => "good",
    }
}

fn verdict(out: &mut String, r: &Report) {
    let _ = write!(
        out,
        "<section class=\"verdict {cls}\" aria-label=\"decision\">\n<div><div class=\"muted\">Decision</div><div class=\"decision\" id=\"decision\">{d}</div></div>\n\
         <div><div class=\"muted\">Weighted score</div><div class=\"score\" id=\"weighted-score\">{s} <small>/ 5</small></div></div>\n<div>\n<h1>Suite <code>{suite}</code></h1>\n",
        cls = decision_class(&r.decision),
        d = esc(&r.decision),
        s = r.total_score.map_or("-".into(), |t| format!("{t:.2}")),
        suite = esc(&r.suite)
    );
    let model = r
        .model
        .as_deref()
        .map_or(String::new(), |m| format!(", model {}", esc(m)));
    let _ = writeln!(
        out,
        "<div class=\"meta\">Run {} at {}, {} mode{model}; {} results, {} ground truth; {} of {} judges scored, {} passed.</div>",
        esc(&r.run_id),
        esc(&r.timestamp),
        esc(&r.mode),
        r.inputs.results,
        r.inputs.ground_truth,
        r.summary.scored,
        r.summary.judges,
        r.summary.passed
    );
    if let Some(g) = &r.gate
        && !g.reason.is_empty()
    {
        let _ = writeln!(out, "<p class=\"gate\">{}</p>", esc(&g.reason));
    }
    if let Some(u) = &r.usage {
        let _ = writeln!(
            out,
            "<div class=\"meta\">{} verdicts ({} cached), {}, {}.</div>",
            u.calls,
            u.cached,
            esc(&u.tokens_text()),
            esc(&u.cost_text())
        );
    }
    out.push_str("</div>\n</section>\n");
}

fn status_word(d: &Dimension) -> (&'static str, &'static str) {
    match d.status {
        Status::Scored if d.passed == Some(false) => ("below", "below threshold"),
        Status::Scored => ("pass", "pass"),
        Status::Unscored => ("unscored", "unscored"),
        Status::Error => ("error", "error"),
    }
}

fn overview(out: &mut String, r: &Report) {
    let bars: Vec<Bar<'_>> = r
        .dimensions
        .iter()
        .map(|d| Bar {
            label: &d.name,
            score: d.score.filter(|_| d.status == Status::Scored),
            color: if d.passed == Some(false) {
                VERMILLION
            } else {
                BLUE
            },
            missing: if d.status == Status::Error {
                "error: no score"
            } else {
                "unscored"
            },
        })
        .collect();
    let threshold = r.dimensions.iter().find_map(|d| d.pass_threshold);
    let marker = threshold.map(|t| (t, format!("pass {}", fmt_score(Some(t)))));
    let _ = writeln!(
        out,
        "<section class=\"block\" aria-label=\"overview\">\n<h2>Scores by dimension</h2>\n<p class=\"muted\">Scores 1 to 5; blue passes its threshold, vermillion is below it; the dashed line is the pass threshold.</p>\n{}\n</section>",
        svg::score_bars(
            "Score of each dimension on a 1 to 5 scale",
            &bars,
            marker.as_ref().map(|(v, l)| (*v, l.as_str()))
        )
    );
}

fn comparison(out: &mut String, c: &Comparison) {
    let _ = writeln!(
        out,
        "<section class=\"block\" id=\"comparison\">\n<h2>Compared with run {}</h2>\n<p>Weighted score {} → {} ({}); decision {} → {}. {}</p>",
        esc(&c.base.run_id),
        fmt_score(c.base.total_score),
        fmt_score(c.new.total_score),
        fmt_delta(c.total_delta),
        esc(&c.base.decision),
        esc(&c.new.decision),
        if c.regressions.is_empty() {
            format!(
                "No regression (tolerance {}).",
                fmt_score(Some(c.tolerance))
            )
        } else {
            format!(
                "<strong>Regression</strong> (tolerance {}): {}.",
                fmt_score(Some(c.tolerance)),
                esc(&c.regressions.join("; "))
            )
        }
    );
    out.push_str("<table><thead><tr><th>dimension</th><th class=\"num\">before</th><th class=\"num\">after</th><th class=\"num\">delta</th><th>change</th></tr></thead><tbody>\n");
    for d in &c.dimensions {
        let cls = if d.change.is_regression() {
            " class=\"badge regressed\""
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td><span{cls}>{}</span>{}</td></tr>",
            esc(&d.name),
            fmt_score(d.before),
            fmt_score(d.after),
            fmt_delta(d.delta),
            d.change.as_str(),
            d.repos
                .as_ref()
                .and_then(|r| r.ci.as_ref())
                .map_or(String::new(), |ci| format!(
                    "<br><span class=\"muted\">{}</span>",
                    esc(&ci.sentence())
                ))
        );
    }
    out.push_str("</tbody></table>\n");
    for (title, list) in [
        ("New problems", &c.problems_new),
        ("Problems gone", &c.problems_gone),
    ] {
        if !list.is_empty() {
            let _ = writeln!(out, "<h3>{title}</h3><ul class=\"problems\">");
            for p in list {
                let _ = writeln!(out, "<li>{}</li>", esc(&p.line()));
            }
            out.push_str("</ul>\n");
        }
    }
    for note in &c.notes {
        let _ = writeln!(out, "<p class=\"muted\">Note: {}</p>", esc(note));
    }
    out.push_str("</section>\n");
}

fn panel(out: &mut String, r: &Report) {
    let Some(p) = &r.panel else { return };
    let _ = writeln!(
        out,
        "<section class=\"block\" id=\"panel\">\n<h2>Panel agreement</h2>\n<p class=\"muted\">{} models rated {} items ({} ratings missing). Each dimension's score is the panel's consensus; agreement says how far one model's word can be trusted.</p>",
        p.models.len(),
        p.items,
        p.missing_ratings
    );
    if let Some(w) = &p.warning {
        let _ = writeln!(
            out,
            "<p><span class=\"badge unscored\">warning</span> {}</p>",
            esc(w)
        );
    }
    match &p.agreement {
        Some(a) => agreement(out, a, p.kappa_target),
        None => out.push_str("<p>Agreement could not be computed for this panel.</p>\n"),
    }
    out.push_str("</section>\n");
}

fn agreement(out: &mut String, a: &AgreementView, target: Option<f64>) {
    let k = |v: Option<f64>| v.map_or("undefined".into(), |x| format!("{x:.3}"));
    let _ = writeln!(
        out,
        "<dl class=\"facts\"><dt>Mean pairwise Cohen's kappa</dt><dd id=\"mean-kappa\">{} ({}){}</dd>\
         <dt>Fleiss' kappa</dt><dd>{} ({})</dd>\
         <dt>Krippendorff's alpha</dt><dd>nominal {} ({}), ordinal {} ({})</dd>\
         <dt>Unanimous</dt><dd>{} of {} items{}</dd></dl>",
        k(a.mean_kappa),
        esc(&words(&a.mean_kappa_interpretation)),
        target.map_or(String::new(), |t| format!(", target {t:.2}")),
        k(a.fleiss.kappa),
        esc(&words(&a.fleiss.interpretation)),
        k(a.alpha_nominal.alpha),
        esc(&words(&a.alpha_nominal.interpretation)),
        k(a.alpha_ordinal.alpha),
        esc(&words(&a.alpha_ordinal.interpretation)),
        a.agreement.unanimous_items,
        a.n_items,
        a.agreement
            .rate
            .map_or(String::new(), |r| format!(" ({:.1}%)", r * 100.0))
    );
    if a.raters.len() >= 2 {
        let shown = &a.raters[..a.raters.len().min(MAX_HEATMAP_RATERS)];
        let lookup = |i: usize, j: usize| {
            let (x, y) = (&shown[i], &shown[j]);
            a.pairwise_kappa
                .get(&format!("{x}_vs_{y}"))
                .or_else(|| a.pairwise_kappa.get(&format!("{y}_vs_{x}")))
                .and_then(|kv| kv.kappa)
        };
        let _ = writeln!(
            out,
            "<h3>Pairwise Cohen's kappa</h3>\n{}",
            svg::kappa_heatmap(
                "Pairwise Cohen's kappa between the panel's models",
                shown,
                &lookup
            )
        );
        if shown.len() < a.raters.len() {
            let _ = writeln!(
                out,
                "<p class=\"muted\" id=\"heatmap-cut\">The panel has {} models: the heatmap shows the first {MAX_HEATMAP_RATERS}. Every pair's kappa is in the JSON result.</p>",
                a.raters.len()
            );
        }
    }
}

fn card(out: &mut String, d: &Dimension, c: Option<&Comparison>) {
    let (cls, word) = status_word(d);
    let _ = writeln!(
        out,
        "<article class=\"card\" id=\"dim-{id}\" aria-labelledby=\"h-{id}\">\n<header><h2 id=\"h-{id}\">{name}</h2><span class=\"big\">{score}</span><span class=\"badge {cls}\">{word}</span>{delta}</header>",
        id = esc(&d.name),
        name = esc(&d.name),
        score = fmt_score(d.score),
        delta = c
            .and_then(|c| c.dimension(&d.name))
            .filter(|x| x.change != Change::Unchanged)
            .map_or(String::new(), |x| format!(
                "<span class=\"badge{}\">{} {}</span>",
                if x.change.is_regression() {
                    " regressed"
                } else {
                    ""
                },
                x.change.as_str(),
                fmt_delta(x.delta)
            ))
    );
    let _ = writeln!(
        out,
        "<dl class=\"facts\"><dt>Confidence</dt><dd>{}</dd><dt>Weight</dt><dd>{} ({:.1}% of the suite)</dd><dt>Pass threshold</dt><dd>{}</dd><dt>Scored by</dt><dd>{}</dd></dl>",
        d.confidence.map_or("-".into(), |v| format!("{v:.2}")),
        fmt_score(Some(d.weight)),
        d.normalized_weight * 100.0,
        fmt_score(d.pass_threshold),
        esc(if d.source.is_empty() { "-" } else { &d.source })
    );
    if let Some(reason) = &d.unscored_reason {
        let _ = writeln!(out, "<p><strong>Why no score:</strong> {}</p>", esc(reason));
    }
    if !d.reasoning.is_empty() {
        let _ = writeln!(out, "<h3>Reasoning</h3><p>{}</p>", esc(&d.reasoning));
    }
    list(out, "Recommendations", &d.recommendations);
    caps_and_assertions(out, d);
    sides(out, d);
    repos(out, d);
    list(out, "Evidence cited", &d.evidence_cited);
    evidence(out, d);
    out.push_str("</article>\n");
}

fn list(out: &mut String, title: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    let _ = writeln!(out, "<h3>{title}</h3><ul class=\"tight\">");
    for i in items {
        let _ = writeln!(out, "<li>{}</li>", esc(i));
    }
    out.push_str("</ul>\n");
}

fn caps_and_assertions(out: &mut String, d: &Dimension) {
    if let (Some(before), Some(cap)) = (d.score_before_cap, d.cap_applied) {
        let _ = writeln!(
            out,
            "<p><span class=\"badge below\">capped</span> The score was {} before a failed assertion capped it at {}.</p>",
            fmt_score(Some(before)),
            fmt_score(Some(cap))
        );
    }
    if d.assertion_failures.is_empty() {
        return;
    }
    let _ = writeln!(out, "<h3>Failed assertions</h3><ul class=\"tight\">");
    for f in &d.assertion_failures {
        let repo = f
            .repo
            .as_ref()
            .map_or(String::new(), |r| format!("repo {}: ", esc(r)));
        let cap = f.cap.map_or(String::new(), |c| {
            format!(" <span class=\"muted\">(cap {})</span>", fmt_score(Some(c)))
        });
        let _ = writeln!(out, "<li>{repo}{}{cap}</li>", esc(&f.message));
    }
    out.push_str("</ul>\n");
}

/// Heuristic and model verdicts side by side; a gap of two points or more is marked.
fn sides(out: &mut String, d: &Dimension) {
    let Some(h) = &d.heuristic else { return };
    let divergent = matches!((h.score, d.score), (Some(a), Some(b)) if (a - b).abs() >= DIVERGENCE);
    let mark = if divergent { " divergent" } else { "" };
    let _ = writeln!(
        out,
        "<h3>Heuristic and model{}</h3>\n<div class=\"side\"><div class=\"{mark}\"><strong>Heuristic: {}</strong> <span class=\"muted\">({})</span><p>{}</p></div><div class=\"{mark}\"><strong>Model: {}</strong><p>{}</p></div></div>",
        if divergent {
            " <span class=\"badge divergent\">divergent: a human should look</span>"
        } else {
            ""
        },
        fmt_score(h.score),
        h.status.as_str(),
        esc(&h.reasoning),
        fmt_score(d.score),
        esc(&d.reasoning)
    );
    if !d.model_verdicts.is_empty() {
        out.push_str("<table><thead><tr><th>model</th><th>repo</th><th class=\"num\">score</th><th class=\"num\">confidence</th><th>reasoning</th></tr></thead><tbody>\n");
        for m in &d.model_verdicts {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{:.2}</td><td>{}</td></tr>",
                esc(&m.model),
                esc(m.repo.as_deref().unwrap_or("-")),
                fmt_score(Some(m.score)),
                m.confidence,
                esc(&m.reasoning)
            );
        }
        out.push_str("</tbody></table>\n");
    }
}

/// Per-repo scores of a `scope: repo` judge as a chart, with the mean and spread.
fn repos(out: &mut String, d: &Dimension) {
    if d.repos.is_empty() {
        return;
    }
    let bars: Vec<Bar<'_>> = d
        .repos
        .iter()
        .take(MAX_REPO_BARS)
        .map(|r| Bar {
            label: &r.repo,
            score: r.score.filter(|_| r.status == Status::Scored),
            color: if r.status == Status::Scored {
                BLUE
            } else {
                GREY
            },
            missing: if r.status == Status::Error {
                "error"
            } else {
                "unscored"
            },
        })
        .collect();
    let spread = d.spread.as_ref().map_or(String::new(), |s| {
        format!(
            " Spread over {} scored repos: min {}, max {}, standard deviation {}.",
            s.n,
            fmt_score(Some(s.min)),
            fmt_score(Some(s.max)),
            s.std.map_or("-".into(), |v| format!("{v:.2}"))
        )
    });
    let mean = d.score.map(|m| (m, format!("mean {}", fmt_score(Some(m)))));
    let _ = writeln!(
        out,
        "<h3>Per repo</h3><p class=\"muted\">One verdict per repo; the dimension's score is their mean (dashed).{spread}{}</p>\n{}",
        if d.repos.len() > MAX_REPO_BARS {
            format!(
                " The first {MAX_REPO_BARS} of {} repos are drawn.",
                d.repos.len()
            )
        } else {
            String::new()
        },
        svg::score_bars(
            &format!("Score of each repo for {}", d.name),
            &bars,
            mean.as_ref().map(|(v, l)| (*v, l.as_str()))
        )
    );
    let failing: Vec<_> = d
        .repos
        .iter()
        .filter(|r| r.status != Status::Scored)
        .collect();
    if !failing.is_empty() {
        out.push_str("<ul class=\"tight\">");
        for r in failing {
            let _ = write!(
                out,
                "<li>{} {}: {}</li>",
                esc(&r.repo),
                r.status.as_str(),
                esc(r.unscored_reason.as_deref().unwrap_or("no reason given"))
            );
        }
        out.push_str("</ul>\n");
    }
}

/// The evidence, folded: suite-scope evidence, then each repo's.
fn evidence(out: &mut String, d: &Dimension) {
    let has_repo_evidence = d.repos.iter().any(|r| !r.evidence.is_null());
    if d.evidence.is_null() && !has_repo_evidence {
        return;
    }
    let _ = writeln!(
        out,
        "<details class=\"evidence\"><summary>Evidence of {}</summary>",
        esc(&d.name)
    );
    if !d.evidence.is_null() {
        pre_json(out, &d.evidence);
    }
    for r in d.repos.iter().filter(|r| !r.evidence.is_null()) {
        let _ = writeln!(out, "<h3>{}</h3>", esc(&r.repo));
        pre_json(out, &r.evidence);
    }
    out.push_str("</details>\n");
}

fn pre_json(out: &mut String, v: &Value) {
    let text = serde_json::to_string_pretty(v).unwrap_or_default();
    if text.len() > MAX_EVIDENCE_BYTES {
        let mut cut = MAX_EVIDENCE_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let _ = writeln!(
            out,
            "<pre>{}</pre><p class=\"muted\">Cut at {MAX_EVIDENCE_BYTES} of {} bytes; the JSON result has all of it.</p>",
            esc(&text[..cut]),
            text.len()
        );
    } else {
        let _ = writeln!(out, "<pre>{}</pre>", esc(&text));
    }
}

fn problems(out: &mut String, r: &Report) {
    let _ = writeln!(
        out,
        "<section class=\"block\" id=\"problems\">\n<h2>Problems of the run ({})</h2>",
        r.summary.problems.len()
    );
    if r.summary.problems.is_empty() {
        out.push_str(
            "<p>None: every judge scored, every assertion held, every repo had ground truth.</p>\n",
        );
    } else {
        out.push_str("<ul class=\"problems\">\n");
        for p in &r.summary.problems {
            let _ = writeln!(
                out,
                "<li><span class=\"badge {}\">{}</span> <strong>{}</strong>: {}</li>",
                match p.kind.as_str() {
                    "error" | "assertion" | "cap" => "below",
                    _ => "unscored",
                },
                esc(&p.kind),
                esc(p.dimension.as_deref().unwrap_or("run")),
                esc(&p.message)
            );
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
}
