//! The history in GitHub-flavoured Markdown: per suite a table of runs, a table of
//! trends (a sparkline per dimension), the steps that changed something, unstable
//! judges; then the files skipped. Text from a result goes through
//! [`inert_markdown`](crate::diag::inert_markdown) or
//! [`markdown_code_span`](crate::diag::markdown_code_span), as in the run report: a
//! hostile result cannot put a link, a mention or HTML into the page.

use std::fmt::Write as _;

use super::rows::{self, Aside};
use crate::history::{History, Step, SuiteHistory};
use crate::present::escape::{inert_markdown as inert, markdown_code_span as code};
use crate::present::number::fmt_score;
use crate::present::table::{self, Align};

/// Renders the history as Markdown.
pub(crate) fn render(h: &History) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## caldera history of {}\n\n{} run(s) of {} suite(s){}.",
        code(&h.folder),
        rows::run_count(h),
        h.suites.len(),
        if h.skipped.is_empty() {
            String::new()
        } else {
            format!("; {} file(s) skipped", h.skipped.len())
        }
    );
    for s in &h.suites {
        suite(&mut out, s, h.tolerance);
    }
    if !h.skipped.is_empty() {
        out.push_str("\n### Skipped (not part of any history)\n\n");
        for s in &h.skipped {
            let _ = writeln!(out, "- {}", inert(&s.line()));
        }
    }
    out
}

fn suite(out: &mut String, s: &SuiteHistory, tolerance: f64) {
    let _ = writeln!(
        out,
        "\n### Suite {}: {} run(s)\n",
        code(&s.suite),
        s.runs.len()
    );
    runs(out, s);
    trends(out, s);
    steps(out, s, tolerance);
    unstable(out, s);
}

fn runs(out: &mut String, s: &SuiteHistory) {
    use Align::{Left, Right};
    let llm = s.usage.is_some();
    let mut header = vec!["#", "run", "time", "mode", "decision", "score", "delta"];
    let mut align = vec![Right, Left, Left, Left, Left, Right, Right];
    if llm {
        header.extend(["tokens (in + out)", "cost"]);
        align.extend([Right, Right]);
    }
    let mut rows = Vec::new();
    for c in rows::runs(s) {
        let r = c.run;
        let mode = match &r.model {
            Some(m) => format!("{} {}", inert(&r.mode), inert(m)),
            None => inert(&r.mode),
        };
        let mut row = vec![
            c.number.to_string(),
            inert(&r.run_id),
            inert(&r.timestamp),
            mode,
            inert(&r.decision),
            c.score,
            c.delta,
        ];
        if llm {
            row.extend(match c.spent {
                Some((tokens, cost)) => [tokens, inert(&cost)],
                None => ["-".into(), "-".into()],
            });
        }
        rows.push(row);
    }
    out.push_str(&table::markdown(&header, &align, &rows));
    if let Some(u) = &s.usage {
        let _ = writeln!(
            out,
            "\nModel usage over {} run(s): {} input + {} output tokens, {}.",
            u.runs,
            u.input_tokens,
            u.output_tokens,
            inert(&u.cost_text())
        );
    }
}

fn trends(out: &mut String, s: &SuiteHistory) {
    let n = s.runs.len();
    let _ = writeln!(
        out,
        "\n#### Trends\n\nScore per run, oldest first{}; `·` no score.\n",
        rows::drawn_note(s)
    );
    let rows: Vec<Vec<String>> = s
        .trends
        .iter()
        .map(|t| {
            let f = rows::trend(t);
            vec![
                inert(&t.dimension),
                f.spark,
                f.first,
                f.last,
                f.min,
                f.max,
                f.mean,
                format!("{} of {n}", t.scored),
            ]
        })
        .collect();
    let header = [
        "dimension",
        "trend",
        "first",
        "last",
        "min",
        "max",
        "mean",
        "scored",
    ];
    let mut align = [Align::Right; 8];
    align[..2].fill(Align::Left);
    out.push_str(&table::markdown(&header, &align, &rows));
}

fn steps(out: &mut String, s: &SuiteHistory, tolerance: f64) {
    if s.steps.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n#### Changes between consecutive runs\n\nCompared as `caldera diff` compares them (tolerance {}).\n",
        fmt_score(Some(tolerance))
    );
    let (loud, quiet) = rows::loud_steps(s);
    for st in loud {
        step(out, st);
    }
    if quiet > 0 {
        let _ = writeln!(
            out,
            "- {quiet} of {} step(s) changed nothing (scores, evidence, problems and decision alike).",
            s.steps.len()
        );
    }
}

fn step(out: &mut String, st: &Step) {
    let h = rows::heading(st);
    let decision = h.decision.map_or(String::new(), |(a, b)| {
        format!(", decision {} → {}", inert(a), inert(b))
    });
    let _ = writeln!(
        out,
        "- **{} → {}** ({} → {}): weighted {}{decision}",
        h.from,
        h.to,
        code(h.base),
        code(h.new),
        h.weighted
    );
    if let Some(why) = &st.incomparable {
        let _ = writeln!(out, "  - not compared: {}", inert(why));
        return;
    }
    for c in rows::changes(st) {
        let change = if c.regression {
            format!("**{}**", c.change)
        } else {
            c.change.to_owned()
        };
        let evidence = match c.evidence {
            Some((n, first)) => format!("; evidence: {n} leaf(s) changed, first {}", code(first)),
            None => "; evidence unchanged".into(),
        };
        let interval = c
            .interval
            .map_or(String::new(), |ci| format!(" ({})", inert(ci)));
        let _ = writeln!(
            out,
            "  - {} {} → {} ({}) {change}{interval}{evidence}",
            inert(c.dimension),
            c.before,
            c.after,
            c.delta
        );
    }
    for (kind, line) in rows::asides(st) {
        let label = match kind {
            Aside::Regression => "**regression:**",
            Aside::NewProblem => "new problem:",
            Aside::ProblemGone => "problem gone:",
            Aside::Note => "note:",
        };
        let _ = writeln!(out, "  - {label} {}", inert(line));
    }
}

fn unstable(out: &mut String, s: &SuiteHistory) {
    if s.unstable.is_empty() {
        return;
    }
    out.push_str(
        "\n#### Unstable judges\n\nSame evidence, different score (same mode and model).\n\n",
    );
    let rows: Vec<Vec<String>> = s
        .unstable
        .iter()
        .map(|u| {
            let moves: Vec<String> = rows::moves(u, 3)
                .0
                .iter()
                .map(|m| {
                    format!(
                        "{} → {} ({} → {})",
                        m.before,
                        m.after,
                        inert(m.base),
                        inert(m.new)
                    )
                })
                .collect();
            vec![
                inert(&u.dimension),
                u.moves.len().to_string(),
                u.comparable_steps.to_string(),
                moves.join("; "),
            ]
        })
        .collect();
    use Align::{Left, Right};
    out.push_str(&table::markdown(
        &["dimension", "moves", "of comparable steps", "first moves"],
        &[Left, Right, Right, Left],
        &rows,
    ));
}
