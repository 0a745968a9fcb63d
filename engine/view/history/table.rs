//! The terminal history: per suite the runs (decision, weighted score, tokens and cost),
//! a sparkline per dimension, what changed at each step, unstable judges; then the files
//! skipped. Styles are anstyle (the writer strips them where colour is off); every text
//! from a result goes through [`printable_line`](crate::diag::printable_line).

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};

use super::rows::{self, Aside};
use crate::diag::printable_line as safe;
use crate::history::{History, Step, SuiteHistory};
use crate::present::number::fmt_score;
use crate::report::compare::RunRef;

const GREEN: Style = AnsiColor::Green.on_default();
const RED: Style = AnsiColor::Red.on_default();
const YELLOW: Style = AnsiColor::Yellow.on_default();

/// Renders the history for a terminal.
pub(crate) fn render(h: &History) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "history of {}: {} run(s) of {} suite(s){}",
        safe(&h.folder),
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
    let span = rows::span(s).map_or(String::new(), |(a, b)| {
        format!(", {} to {}", safe(a), safe(b))
    });
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
        .map(|r| r.run.run_id.len())
        .max()
        .unwrap_or(3)
        .max(3);
    let mode_w = s
        .runs
        .iter()
        .map(|r| mode(&r.run).chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let time_w = s
        .runs
        .iter()
        .map(|r| r.run.timestamp.chars().count())
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
    for c in rows::runs(s) {
        let r = c.run;
        let usage = match (&c.spent, llm) {
            (Some((tokens, cost)), _) => format!("  {tokens:<22} {cost}"),
            (None, true) => format!("  {:<22} -", "-"),
            (None, false) => String::new(),
        };
        let _ = writeln!(
            out,
            "  {:>4}  {:<id_w$}  {:<time_w$}  {:<mode_w$}  {}{}  {:>5}  {:>6}{usage}",
            c.number,
            safe(&r.run_id),
            safe(&r.timestamp),
            safe(&mode(r)),
            decision(&r.decision),
            " ".repeat(9usize.saturating_sub(r.decision.chars().count())),
            c.score,
            c.delta
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
fn mode(r: &RunRef) -> String {
    match &r.model {
        Some(m) => format!("{} {m}", r.mode),
        None => r.mode.clone(),
    }
}

fn trends(out: &mut String, s: &SuiteHistory) {
    let n = s.runs.len();
    let _ = writeln!(
        out,
        "\n  trends (score per run, oldest first{}; `·` no score):",
        rows::drawn_note(s)
    );
    let width = s
        .trends
        .iter()
        .map(|t| t.dimension.len())
        .max()
        .unwrap_or(9)
        .max(9);
    for t in &s.trends {
        let f = rows::trend(t);
        let _ = writeln!(
            out,
            "    {:<width$}  {}  first {}, last {}, min {}, max {}, mean {} ({} of {n} scored)",
            safe(&t.dimension),
            f.spark,
            f.first,
            f.last,
            f.min,
            f.max,
            f.mean,
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
    let (loud, quiet) = rows::loud_steps(s);
    for st in loud {
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
    let h = rows::heading(st);
    let decision = h.decision.map_or(String::new(), |(a, b)| {
        format!(", decision {} -> {}", safe(a), safe(b))
    });
    let _ = writeln!(
        out,
        "    {} -> {} ({} -> {}): weighted {}{decision}",
        h.from,
        h.to,
        safe(h.base),
        safe(h.new),
        h.weighted
    );
    if let Some(why) = &st.incomparable {
        let _ = writeln!(out, "      not compared: {}", safe(why));
        return;
    }
    for c in rows::changes(st) {
        let change = if c.regression {
            paint(RED, c.change)
        } else {
            c.change.to_owned()
        };
        let evidence = match c.evidence {
            Some((n, first)) => format!("; evidence: {n} leaf(s) changed, first {}", safe(first)),
            None => "; evidence unchanged".into(),
        };
        let _ = writeln!(
            out,
            "      {}  {} -> {} ({})  {change}{evidence}",
            safe(c.dimension),
            c.before,
            c.after,
            c.delta
        );
        if let Some(ci) = c.interval {
            let _ = writeln!(out, "        {}", safe(ci));
        }
    }
    for (kind, line) in rows::asides(st) {
        let label = match kind {
            Aside::Regression => paint(RED.bold(), "regression:"),
            Aside::NewProblem => "new problem:".to_owned(),
            Aside::ProblemGone => "problem gone:".to_owned(),
            Aside::Note => "note:".to_owned(),
        };
        let _ = writeln!(out, "      {label} {}", safe(line));
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
        let (shown, more) = rows::moves(u, 5);
        let moves: Vec<String> = shown
            .iter()
            .map(|m| {
                format!(
                    "{} -> {} ({} -> {})",
                    m.before,
                    m.after,
                    safe(m.base),
                    safe(m.new)
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "    {}: {} of {} comparable step(s): {}{}",
            safe(&u.dimension),
            u.moves.len(),
            u.comparable_steps,
            moves.join("; "),
            rows::and_more(more)
        );
    }
}
