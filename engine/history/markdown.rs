//! The history in GitHub-flavoured Markdown: per suite a table of runs, a table of
//! trends (a sparkline per dimension), the steps that changed something, unstable
//! judges; then the files skipped. Text from a result goes through
//! [`inert_markdown`](crate::diag::inert_markdown) or
//! [`markdown_code_span`](crate::diag::markdown_code_span), as in the run report: a
//! hostile result cannot put a link, a mention or HTML into the page.

use std::fmt::Write as _;

use super::{History, SPARK_RUNS, Step, SuiteHistory, spark_window, sparkline};
use crate::present::escape::{inert_markdown as inert, markdown_code_span as code};
use crate::present::number::{fmt_delta, fmt_score};
use crate::present::table::{self, Align};

/// Renders the history as Markdown.
pub(crate) fn render(h: &History) -> String {
    let mut out = String::new();
    let runs: usize = h.suites.iter().map(|s| s.runs.len()).sum();
    let _ = writeln!(
        out,
        "## caldera history of {}\n\n{runs} run(s) of {} suite(s){}.",
        code(&h.folder),
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
    let mut previous: Option<f64> = None;
    let mut rows = Vec::new();
    for (i, r) in s.runs.iter().enumerate() {
        let delta = previous.zip(r.total_score).map(|(a, b)| b - a);
        previous = r.total_score;
        let mode = match &r.model {
            Some(m) => format!("{} {}", inert(&r.mode), inert(m)),
            None => inert(&r.mode),
        };
        let mut row = vec![
            (i + 1).to_string(),
            inert(&r.run_id),
            inert(&r.timestamp),
            mode,
            inert(&r.decision),
            r.total_score.map_or("-".into(), |t| format!("{t:.2}")),
            if i == 0 {
                String::new()
            } else {
                fmt_delta(delta)
            },
        ];
        if llm {
            row.extend(match &r.usage {
                Some(u) => [
                    format!("{} + {}", u.input_tokens, u.output_tokens),
                    inert(&u.cost_text()),
                ],
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
    let cut = n.saturating_sub(SPARK_RUNS);
    let _ = writeln!(
        out,
        "\n#### Trends\n\nScore per run, oldest first{}; `·` no score.\n",
        if cut > 0 {
            format!("; the last {} of {n} runs drawn", n - cut)
        } else {
            String::new()
        }
    );
    let rows: Vec<Vec<String>> = s
        .trends
        .iter()
        .map(|t| {
            let (window, _) = spark_window(&t.scores);
            vec![
                inert(&t.dimension),
                sparkline(window),
                fmt_score(t.first),
                fmt_score(t.last),
                fmt_score(t.min),
                fmt_score(t.max),
                fmt_score(t.mean),
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
    let quiet = s.steps.iter().filter(|st| st.is_quiet()).count();
    for st in s.steps.iter().filter(|st| !st.is_quiet()) {
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
    let decision = st.decision.as_ref().map_or(String::new(), |(a, b)| {
        format!(", decision {} → {}", inert(a), inert(b))
    });
    let _ = writeln!(
        out,
        "- **{} → {}** ({} → {}): weighted {}{decision}",
        st.from + 1,
        st.from + 2,
        code(&st.base),
        code(&st.new),
        fmt_delta(st.total_delta)
    );
    if let Some(why) = &st.incomparable {
        let _ = writeln!(out, "  - not compared: {}", inert(why));
        return;
    }
    for c in &st.changes {
        let change = if c.change.is_regression() {
            format!("**{}**", c.change.as_str())
        } else {
            c.change.as_str().to_owned()
        };
        let evidence = match &c.evidence_first {
            Some(first) => format!(
                "; evidence: {} leaf(s) changed, first {}",
                c.evidence_changed,
                code(first)
            ),
            None => "; evidence unchanged".into(),
        };
        let interval = c
            .interval
            .as_deref()
            .map_or(String::new(), |ci| format!(" ({})", inert(ci)));
        let _ = writeln!(
            out,
            "  - {} {} → {} ({}) {change}{interval}{evidence}",
            inert(&c.dimension),
            fmt_score(c.before),
            fmt_score(c.after),
            fmt_delta(c.delta)
        );
    }
    for r in &st.regressions {
        let _ = writeln!(out, "  - **regression:** {}", inert(r));
    }
    for p in &st.problems_new {
        let _ = writeln!(out, "  - new problem: {}", inert(p));
    }
    for p in &st.problems_gone {
        let _ = writeln!(out, "  - problem gone: {}", inert(p));
    }
    for n in &st.notes {
        let _ = writeln!(out, "  - note: {}", inert(n));
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
            let moves: Vec<String> = u
                .moves
                .iter()
                .take(3)
                .map(|m| {
                    format!(
                        "{} → {} ({} → {})",
                        fmt_score(Some(m.before)),
                        fmt_score(Some(m.after)),
                        inert(&m.base),
                        inert(&m.new)
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
