//! GitHub-flavoured Markdown, short enough for a pull-request comment: the decision, a
//! table of dimensions (with deltas when a baseline is given), what regressed, and the
//! problems; evidence changes folded in `<details>`. Long lists are cut with a count.
//!
//! Every field read from the result is data, and data may come from anyone (a tool's
//! output, a model's reply, a repo id): it goes through [`crate::diag::inert_markdown`]
//! or [`crate::diag::markdown_code_span`], so a hostile result cannot put a link, an
//! image, a mention or HTML into the comment.

use std::fmt::Write as _;

use crate::present::escape::{inert_markdown as inert, markdown_code_span as code};
use crate::present::number::{fmt_delta, fmt_score};
use crate::present::table::{self, Align};
use crate::report::compare::{Change, Comparison};
use crate::report::model::{Dimension, Report, Status};
use crate::view::run::{Input, Reporter};

/// Problems listed before "and N more".
const MAX_PROBLEMS: usize = 10;

/// The Markdown format.
pub(crate) struct Markdown;

impl Reporter for Markdown {
    fn render(&self, input: &Input<'_>) -> String {
        let r = input.report;
        let c = input.comparison;
        let mut out = String::new();
        heading(&mut out, r, c);
        dimension_table(&mut out, r, c);
        if let Some(c) = c {
            comparison(&mut out, c);
        }
        problems(&mut out, r);
        out
    }
}

fn heading(out: &mut String, r: &Report, c: Option<&Comparison>) {
    let total = r.total_score.map_or("-".into(), |t| {
        crate::score::round::decisive(t, r.bars(), 2)
    });
    let delta = c
        .and_then(|c| c.total_delta)
        .map_or(String::new(), |d| format!(" ({})", fmt_delta(Some(d))));
    let _ = writeln!(
        out,
        "### caldera: {} {} {} {total} / 5{delta}\n",
        code(&r.suite),
        decision_mark(&r.decision),
        inert(&r.decision),
    );
    let model = r
        .model
        .as_deref()
        .map_or(String::new(), |m| format!(", {}", inert(m)));
    let _ = writeln!(
        out,
        "Run {}, {} mode{model}, {} results, {} ground truth; {} of {} judges scored, {} passed.",
        code(&r.run_id),
        inert(&r.mode),
        r.inputs.results,
        r.inputs.ground_truth,
        r.summary.scored,
        r.summary.judges,
        r.summary.passed
    );
    if let Some(g) = r.gate.as_ref().filter(|g| g.blocked) {
        let _ = writeln!(out, "\n**Gate:** {}", inert(&g.reason));
    }
    out.push('\n');
}

fn decision_mark(decision: &str) -> &'static str {
    match decision {
        "FAIL" | "NO_SCORE" => ":x:",
        "WEAK_PASS" => ":warning:",
        _ => ":white_check_mark:",
    }
}

fn dimension_table(out: &mut String, r: &Report, c: Option<&Comparison>) {
    use Align::{Left, Right};
    let (header, align): (&[&str], &[Align]) = if c.is_some() {
        (
            &["dimension", "before", "after", "delta", "weight", "status"],
            &[Left, Right, Right, Right, Right, Left],
        )
    } else {
        (
            &["dimension", "score", "confidence", "weight", "status"],
            &[Left, Right, Right, Right, Left],
        )
    };
    let mut rows: Vec<Vec<String>> = r.dimensions.iter().map(|d| dimension_row(d, c)).collect();
    if let Some(c) = c {
        for d in c.dimensions.iter().filter(|d| d.change == Change::Removed) {
            rows.push(vec![
                inert(&d.name),
                fmt_score(d.before),
                "-".into(),
                "-".into(),
                "-".into(),
                "removed".into(),
            ]);
        }
    }
    out.push_str(&table::markdown(header, align, &rows));
    out.push('\n');
}

/// One dimension's cells: with a comparison, before, after and delta in place of the
/// score and confidence.
fn dimension_row(d: &Dimension, c: Option<&Comparison>) -> Vec<String> {
    let weight = format!("{:.3}", d.normalized_weight);
    match c.and_then(|c| c.dimension(&d.name)) {
        Some(delta) => {
            let change = match delta.change {
                Change::Unchanged => String::new(),
                other => format!(" ({})", other.as_str()),
            };
            vec![
                inert(&d.name),
                fmt_score(delta.before),
                fmt_score(d.score),
                fmt_delta(delta.delta),
                weight,
                format!("{}{change}", status(d)),
            ]
        }
        None => vec![
            inert(&d.name),
            fmt_score(d.score),
            d.confidence.map_or("-".into(), |v| format!("{v:.2}")),
            weight,
            status(d),
        ],
    }
}

/// Status words with a mark that does not rely on colour.
fn status(d: &Dimension) -> String {
    let mut s = match d.status {
        Status::Scored if d.passed == Some(true) => "pass".to_owned(),
        Status::Scored => ":x: below threshold".to_owned(),
        Status::Unscored => format!(
            ":warning: unscored: {}",
            inert(d.unscored_reason.as_deref().unwrap_or("no reason given"))
        ),
        Status::Error => format!(
            ":x: error: {}",
            inert(d.unscored_reason.as_deref().unwrap_or("no reason given"))
        ),
    };
    if let (Some(before), Some(cap)) = (d.score_before_cap, d.cap_applied) {
        let _ = write!(
            s,
            ", capped {} → {}",
            fmt_score(Some(before)),
            fmt_score(Some(cap))
        );
    }
    if !d.assertion_failures.is_empty() {
        let _ = write!(s, ", {} assertion(s) failed", d.assertion_failures.len());
    }
    if let Some(h) = &d.heuristic {
        let _ = write!(s, ", heuristic {}", fmt_score(h.score));
    }
    if let Some(sp) = &d.spread {
        let _ = write!(
            s,
            ", {} repos from {} to {}",
            sp.n,
            fmt_score(Some(sp.min)),
            fmt_score(Some(sp.max))
        );
    }
    s
}

fn comparison(out: &mut String, c: &Comparison) {
    let _ = writeln!(
        out,
        "Compared with {}: weighted score {} → {}, decision {} → {}.",
        code(&c.base.run_id),
        fmt_score(c.base.total_score),
        fmt_score(c.new.total_score),
        inert(&c.base.decision),
        inert(&c.new.decision)
    );
    if c.regressions.is_empty() {
        let _ = writeln!(
            out,
            "**No regression** (tolerance {}).\n",
            fmt_score(Some(c.tolerance))
        );
    } else {
        let _ = writeln!(
            out,
            "**:x: Regression** (tolerance {}):",
            fmt_score(Some(c.tolerance))
        );
        for line in &c.regressions {
            let _ = writeln!(out, "- {}", inert(line));
        }
        out.push('\n');
    }
    for d in &c.dimensions {
        if let Some(ci) = d.repos.as_ref().and_then(|r| r.ci.as_ref()) {
            let _ = writeln!(out, "- {}: {}", code(&d.name), ci.sentence());
        }
    }
    for note in &c.notes {
        let _ = writeln!(out, "- note: {}", inert(note));
    }
    let changed: Vec<_> = c
        .dimensions
        .iter()
        .filter(|d| d.evidence.total > 0)
        .collect();
    if !changed.is_empty() {
        let total: usize = changed.iter().map(|d| d.evidence.total).sum();
        let _ = writeln!(
            out,
            "\n<details><summary>Evidence that changed ({total} leaves)</summary>\n"
        );
        for d in changed {
            let _ = writeln!(
                out,
                "**{}** ({} changed)\n",
                inert(&d.name),
                d.evidence.total
            );
            for leaf in &d.evidence.changes {
                let _ = writeln!(out, "- {}", code(&leaf.line()));
            }
            out.push('\n');
        }
        out.push_str("</details>\n\n");
    }
    for (title, list) in [
        ("New problems", &c.problems_new),
        ("Problems gone", &c.problems_gone),
    ] {
        if !list.is_empty() {
            let _ = writeln!(out, "**{title}** ({})", list.len());
            for p in list.iter().take(MAX_PROBLEMS) {
                let _ = writeln!(out, "- {}", inert(&p.line()));
            }
            if list.len() > MAX_PROBLEMS {
                let _ = writeln!(out, "- ... and {} more", list.len() - MAX_PROBLEMS);
            }
            out.push('\n');
        }
    }
}

fn problems(out: &mut String, r: &Report) {
    let list = &r.summary.problems;
    if list.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<details><summary>Worth a look ({})</summary>\n",
        list.len()
    );
    for p in list.iter().take(MAX_PROBLEMS) {
        let _ = writeln!(out, "- {}", inert(&p.line()));
    }
    if list.len() > MAX_PROBLEMS {
        let _ = writeln!(out, "- ... and {} more", list.len() - MAX_PROBLEMS);
    }
    out.push_str("\n</details>\n");
}
