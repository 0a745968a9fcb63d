//! The terminal history: per suite the runs (decision, weighted score, tokens and cost),
//! a sparkline per dimension, what changed at each step, unstable judges; then the files
//! skipped. Styles are anstyle (the writer strips them where colour is off); every text
//! from a result goes through [`printable_line`](crate::diag::printable_line).

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};

use super::{History, SPARK_RUNS, Step, SuiteHistory, spark_window, sparkline};
use crate::diag::printable_line as safe;
use crate::present::number::{fmt_delta, fmt_score};

const GREEN: Style = AnsiColor::Green.on_default();
const RED: Style = AnsiColor::Red.on_default();
const YELLOW: Style = AnsiColor::Yellow.on_default();

/// Renders the history for a terminal.
pub(crate) fn render(h: &History) -> String {
    let mut out = String::new();
    let runs: usize = h.suites.iter().map(|s| s.runs.len()).sum();
    let _ = writeln!(
        out,
        "history of {}: {runs} run(s) of {} suite(s){}",
        safe(&h.folder),
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
        let _ = writeln!(out, "\nskipped (not part of any history):");
        for s in &h.skipped {
            let _ = writeln!(out, "  - {}", safe(&s.line()));
        }
    }
    out
}

fn paint(style: Style, text: &str) -> String {
    format!("{style}{text}{style:#}")
}

fn decision(d: &str) -> String {
    let style = match d {
        "FAIL" | "NO_SCORE" => RED.bold(),
        "WEAK_PASS" => YELLOW.bold(),
        _ => GREEN.bold(),
    };
    paint(style, &safe(d))
}

fn suite(out: &mut String, s: &SuiteHistory, tolerance: f64) {
    let span = match (s.runs.first(), s.runs.last()) {
        (Some(a), Some(b)) => format!(", {} to {}", safe(&a.timestamp), safe(&b.timestamp)),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "\nsuite `{}`: {} run(s){span}",
        safe(&s.suite),
        s.runs.len()
    );
    runs(out, s);
    trends(out, s);
    steps(out, s, tolerance);
    unstable(out, s);
}

fn runs(out: &mut String, s: &SuiteHistory) {
    let id_w = s
        .runs
        .iter()
        .map(|r| r.run_id.len())
        .max()
        .unwrap_or(3)
        .max(3);
    let mode_w = s
        .runs
        .iter()
        .map(|r| mode(r).chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let time_w = s
        .runs
        .iter()
        .map(|r| r.timestamp.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let llm = s.usage.is_some();
    let _ = writeln!(
        out,
        "\n  {:>4}  {:<id_w$}  {:<time_w$}  {:<mode_w$}  {:<9}  {:>5}  {:>6}{}",
        "#",
        "run",
        "time",
        "mode",
        "decision",
        "score",
        "delta",
        if llm {
            "  tokens (in + out)      cost"
        } else {
            ""
        }
    );
    let mut previous: Option<f64> = None;
    for (i, r) in s.runs.iter().enumerate() {
        let delta = previous.zip(r.total_score).map(|(a, b)| b - a);
        previous = r.total_score;
        let usage = match (&r.usage, llm) {
            (Some(u), _) => format!(
                "  {:<22} {}",
                format!("{} + {}", u.input_tokens, u.output_tokens),
                u.cost_text()
            ),
            (None, true) => format!("  {:<22} -", "-"),
            (None, false) => String::new(),
        };
        let _ = writeln!(
            out,
            "  {:>4}  {:<id_w$}  {:<time_w$}  {:<mode_w$}  {}{}  {:>5}  {:>6}{usage}",
            i + 1,
            safe(&r.run_id),
            safe(&r.timestamp),
            safe(&mode(r)),
            decision(&r.decision),
            " ".repeat(9usize.saturating_sub(r.decision.chars().count())),
            r.total_score.map_or("-".into(), |t| format!("{t:.2}")),
            if i == 0 {
                String::new()
            } else {
                fmt_delta(delta)
            }
        );
    }
    if let Some(u) = &s.usage {
        let _ = writeln!(
            out,
            "\n  model usage over {} run(s): {} input + {} output tokens, {}",
            u.runs,
            u.input_tokens,
            u.output_tokens,
            u.cost_text()
        );
    }
}

/// `heuristic`, or `llm sonnet`.
fn mode(r: &super::RunRow) -> String {
    match &r.model {
        Some(m) => format!("{} {m}", r.mode),
        None => r.mode.clone(),
    }
}

fn trends(out: &mut String, s: &SuiteHistory) {
    let n = s.runs.len();
    let cut = n.saturating_sub(SPARK_RUNS);
    let _ = writeln!(
        out,
        "\n  trends (score per run, oldest first{}; `·` no score):",
        if cut > 0 {
            format!("; the last {} of {n} runs drawn", n - cut)
        } else {
            String::new()
        }
    );
    let width = s
        .trends
        .iter()
        .map(|t| t.dimension.len())
        .max()
        .unwrap_or(9)
        .max(9);
    for t in &s.trends {
        let (window, _) = spark_window(&t.scores);
        let _ = writeln!(
            out,
            "    {:<width$}  {}  first {}, last {}, min {}, max {}, mean {} ({} of {n} scored)",
            safe(&t.dimension),
            sparkline(window),
            fmt_score(t.first),
            fmt_score(t.last),
            fmt_score(t.min),
            fmt_score(t.max),
            fmt_score(t.mean),
            t.scored
        );
    }
}

fn steps(out: &mut String, s: &SuiteHistory, tolerance: f64) {
    if s.steps.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n  changes between consecutive runs (as `caldera diff` compares them, tolerance {}):",
        fmt_score(Some(tolerance))
    );
    let quiet = s.steps.iter().filter(|st| st.is_quiet()).count();
    for st in s.steps.iter().filter(|st| !st.is_quiet()) {
        step(out, st);
    }
    if quiet > 0 {
        let _ = writeln!(
            out,
            "    {quiet} of {} step(s) changed nothing (scores, evidence, problems and decision alike)",
            s.steps.len()
        );
    }
}

fn step(out: &mut String, st: &Step) {
    let decision = st.decision.as_ref().map_or(String::new(), |(a, b)| {
        format!(", decision {} -> {}", safe(a), safe(b))
    });
    let _ = writeln!(
        out,
        "    {} -> {} ({} -> {}): weighted {}{decision}",
        st.from + 1,
        st.from + 2,
        safe(&st.base),
        safe(&st.new),
        fmt_delta(st.total_delta)
    );
    if let Some(why) = &st.incomparable {
        let _ = writeln!(out, "      not compared: {}", safe(why));
        return;
    }
    for c in &st.changes {
        let change = if c.change.is_regression() {
            paint(RED, c.change.as_str())
        } else {
            c.change.as_str().to_owned()
        };
        let evidence = match (&c.evidence_first, c.evidence_changed) {
            (Some(first), n) => format!("; evidence: {n} leaf(s) changed, first {}", safe(first)),
            (None, _) => "; evidence unchanged".into(),
        };
        let _ = writeln!(
            out,
            "      {}  {} -> {} ({})  {change}{evidence}",
            safe(&c.dimension),
            fmt_score(c.before),
            fmt_score(c.after),
            fmt_delta(c.delta)
        );
        if let Some(ci) = &c.interval {
            let _ = writeln!(out, "        {}", safe(ci));
        }
    }
    for r in &st.regressions {
        let _ = writeln!(
            out,
            "      {} {}",
            paint(RED.bold(), "regression:"),
            safe(r)
        );
    }
    for p in &st.problems_new {
        let _ = writeln!(out, "      new problem: {}", safe(p));
    }
    for p in &st.problems_gone {
        let _ = writeln!(out, "      problem gone: {}", safe(p));
    }
    for n in &st.notes {
        let _ = writeln!(out, "      note: {}", safe(n));
    }
}

fn unstable(out: &mut String, s: &SuiteHistory) {
    if s.unstable.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n  {} (same evidence, different score, same mode and model):",
        paint(YELLOW.bold(), "unstable judges")
    );
    for u in &s.unstable {
        let moves: Vec<String> = u
            .moves
            .iter()
            .take(5)
            .map(|m| {
                format!(
                    "{} -> {} ({} -> {})",
                    fmt_score(Some(m.before)),
                    fmt_score(Some(m.after)),
                    safe(&m.base),
                    safe(&m.new)
                )
            })
            .collect();
        let more = u.moves.len().saturating_sub(5);
        let _ = writeln!(
            out,
            "    {}: {} of {} comparable step(s): {}{}",
            safe(&u.dimension),
            u.moves.len(),
            u.comparable_steps,
            moves.join("; "),
            if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            }
        );
    }
}
