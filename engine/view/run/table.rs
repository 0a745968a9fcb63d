//! The terminal table: one line per dimension, the weighted score and decision, then
//! every problem the run found; per-repo scores with `-v`; the comparison with a baseline
//! when one was given. Styles are anstyle; the writer strips them where colour is off.

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};

use crate::diag::printable_line as safe;

use crate::present::number::{fmt_delta, fmt_score};
use crate::report::compare::{Change, Comparison, DimensionDelta};
use crate::report::model::{Dimension, Report, Status};
use crate::score::round::decisive;
use crate::view::run::{Input, Reporter};

const GREEN: Style = AnsiColor::Green.on_default();
const RED: Style = AnsiColor::Red.on_default();
const YELLOW: Style = AnsiColor::Yellow.on_default();
const DIM: Style = Style::new().dimmed();

/// The table format.
pub(crate) struct Table;

impl Reporter for Table {
    fn render(&self, input: &Input<'_>) -> String {
        let mut out = String::new();
        if !(input.diff_only && input.comparison.is_some()) {
            run_table(&mut out, input.report, input.per_repo);
        }
        if let Some(c) = input.comparison {
            comparison(&mut out, c, input.diff_only);
        }
        out
    }
}

fn paint(style: Style, text: &str) -> String {
    format!("{style}{text}{style:#}")
}

fn run_table(out: &mut String, r: &Report, per_repo: bool) {
    let _ = writeln!(
        out,
        "caldera {} suite `{}` ({} mode, {} results, {} ground truth)",
        safe(&r.run_id),
        safe(&r.suite),
        safe(&r.mode),
        r.inputs.results,
        r.inputs.ground_truth
    );
    let width = r
        .dimensions
        .iter()
        .map(|d| d.name.len())
        .max()
        .unwrap_or(9)
        .max(9);
    let _ = writeln!(
        out,
        "\n  {:<width$}  {:>6}  {:>6}  {:>5}  {:>8}  status",
        "dimension", "weight", "score", "conf", "weighted"
    );
    for d in &r.dimensions {
        let conf = d.confidence.map_or("-".into(), |c| format!("{c:.2}"));
        let weighted = d.weighted_score.map_or("-".into(), |w| format!("{w:.3}"));
        let _ = writeln!(
            out,
            "  {:<width$}  {:>6.3}  {:>6}  {:>5}  {:>8}  {}",
            safe(&d.name),
            d.normalized_weight,
            fmt_score(d.score),
            conf,
            weighted,
            status_text(d)
        );
        if per_repo {
            repo_lines(out, d, width);
        }
    }
    let total = r
        .total_score
        .map_or("-".into(), |t| decisive(t, r.bars(), 2));
    let decision = match r.decision.as_str() {
        "FAIL" | "NO_SCORE" => paint(RED.bold(), &r.decision),
        "WEAK_PASS" => paint(YELLOW.bold(), &r.decision),
        other => paint(GREEN.bold(), &safe(other)),
    };
    // A judge can score with some of its units (repos, panel members) missing: then the
    // count of units says so, so the line never reads as complete when it is not.
    let units = match r.gate.as_ref() {
        Some(g) if g.scored_units < g.units => {
            format!("; {} of {} units scored", g.scored_units, g.units)
        }
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "\n  weighted score {total} / 5  ->  {decision}   ({} of {} judges scored, {} passed{units})",
        r.summary.scored, r.summary.judges, r.summary.passed
    );
    usage_and_panel(out, r);
    if !r.summary.problems.is_empty() {
        let _ = writeln!(out, "\n  worth a look:");
        for p in &r.summary.problems {
            let who = safe(p.dimension.as_deref().unwrap_or("run"));
            let _ = writeln!(out, "  - [{}] {who}: {}", safe(&p.kind), safe(&p.message));
        }
    }
}

/// The status column: pass / below threshold / unscored / error, with caps, failed
/// assertions and the heuristic's score beside a model's.
fn status_text(d: &Dimension) -> String {
    let mut status = match d.status {
        Status::Scored => match d.passed {
            Some(true) => paint(GREEN, "pass"),
            _ => paint(RED, "below threshold"),
        },
        Status::Unscored => paint(YELLOW, "unscored"),
        Status::Error => paint(RED, "error"),
    };
    if let (Some(before), Some(cap)) = (d.score_before_cap, d.cap_applied) {
        let _ = write!(
            status,
            " (capped {} -> {})",
            fmt_score(Some(before)),
            fmt_score(Some(cap))
        );
    }
    if !d.assertion_failures.is_empty() {
        let _ = write!(
            status,
            ", {} assertion(s) failed",
            d.assertion_failures.len()
        );
    }
    if let Some(h) = &d.heuristic {
        let _ = write!(status, " (heuristic {})", fmt_score(h.score));
    }
    status
}

/// Per-repo scores under a `scope: repo` dimension, with the spread.
fn repo_lines(out: &mut String, d: &Dimension, width: usize) {
    if d.repos.is_empty() {
        return;
    }
    let repo_width = d
        .repos
        .iter()
        .map(|r| r.repo.chars().count())
        .max()
        .unwrap_or(0)
        .max(width.saturating_sub(2));
    for r in &d.repos {
        let what = match r.status {
            Status::Scored => fmt_score(r.score),
            other => format!(
                "{} ({})",
                other.as_str(),
                safe(r.unscored_reason.as_deref().unwrap_or("no reason given"))
            ),
        };
        let line = format!("    {:<w$}  {what}", safe(&r.repo), w = repo_width);
        let _ = writeln!(out, "{}", paint(DIM, &line));
    }
    if let Some(s) = &d.spread {
        let std = s.std.map_or("-".into(), |v| format!("{v:.2}"));
        let _ = writeln!(
            out,
            "{}",
            paint(
                DIM,
                &format!(
                    "    spread over {} repos: min {}, max {}, std {std}",
                    s.n,
                    fmt_score(Some(s.min)),
                    fmt_score(Some(s.max))
                )
            )
        );
    }
}

fn usage_and_panel(out: &mut String, r: &Report) {
    if let Some(u) = &r.usage {
        let _ = writeln!(
            out,
            "  model {} via {}: {} of {} verdicts ({} cached), {} requests, {}, {}",
            safe(r.model.as_deref().unwrap_or("-")),
            safe(r.provider.as_deref().unwrap_or("-")),
            u.verdicts,
            u.calls,
            u.cached,
            u.requests,
            u.tokens_text(),
            u.cost_text()
        );
    }
    let Some(p) = &r.panel else { return };
    let mean = p
        .agreement
        .as_ref()
        .and_then(|a| a.mean_kappa)
        .map_or("undefined".into(), |k| format!("{k:.3}"));
    let rate = p
        .agreement
        .as_ref()
        .and_then(|a| a.agreement.rate)
        .map_or("-".into(), |r| format!("{:.1}%", r * 100.0));
    let _ = writeln!(
        out,
        "  panel of {}: mean pairwise kappa {mean} (target {:.2}), unanimous on {rate} of {} items",
        p.models.len(),
        p.kappa_target
            .unwrap_or(crate::verdict::panel::DEFAULT_KAPPA_TARGET),
        p.items
    );
    if let Some(a) = &p.agreement {
        for (pair, k) in &a.pairwise_kappa {
            let kv = k.kappa.map_or("undefined".into(), |v| format!("{v:.3}"));
            let _ = writeln!(
                out,
                "    {}: kappa {kv} ({})",
                safe(pair),
                safe(&crate::view::run::html::words(&k.interpretation))
            );
        }
    }
    if let Some(d) = &p.pairwise {
        panel_digest(out, &d.unweighted);
    }
}

/// The comparison with a baseline: decision and score change, one line per dimension,
/// evidence paths that changed, problems new and gone, and the verdict on regression.
fn comparison(out: &mut String, c: &Comparison, diff_only: bool) {
    if !diff_only {
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "compared with {} ({}): weighted score {} -> {} ({}), decision {} -> {}",
        safe(&c.base.run_id),
        safe(&c.base.timestamp),
        fmt_score(c.base.total_score),
        fmt_score(c.new.total_score),
        fmt_delta(c.total_delta),
        safe(&c.base.decision),
        safe(&c.new.decision)
    );
    let width = c
        .dimensions
        .iter()
        .map(|d| d.name.len())
        .max()
        .unwrap_or(9)
        .max(9);
    let _ = writeln!(
        out,
        "\n  {:<width$}  {:>6}  {:>6}  {:>6}  change",
        "dimension", "before", "after", "delta"
    );
    for d in &c.dimensions {
        let _ = writeln!(
            out,
            "  {:<width$}  {:>6}  {:>6}  {:>6}  {}",
            safe(&d.name),
            fmt_score(d.before),
            fmt_score(d.after),
            fmt_delta(d.delta),
            change_text(d)
        );
        if let Some(ci) = d.repos.as_ref().and_then(|r| r.ci.as_ref()) {
            let _ = writeln!(out, "{}", paint(DIM, &format!("    {}", ci.sentence())));
        }
        for leaf in &d.evidence.changes {
            let _ = writeln!(
                out,
                "{}",
                paint(DIM, &format!("    {}", safe(&leaf.line())))
            );
        }
        if d.evidence.total > d.evidence.changes.len() {
            let _ = writeln!(
                out,
                "{}",
                paint(
                    DIM,
                    &format!(
                        "    ... and {} more evidence change(s)",
                        d.evidence.total - d.evidence.changes.len()
                    )
                )
            );
        }
    }
    for (title, list) in [
        ("new problems", &c.problems_new),
        ("problems gone", &c.problems_gone),
    ] {
        if !list.is_empty() {
            let _ = writeln!(out, "\n  {title}:");
            for p in list {
                let _ = writeln!(out, "  - {}", safe(&p.line()));
            }
        }
    }
    for note in &c.notes {
        let _ = writeln!(out, "\n  note: {}", safe(note));
    }
    let _ = writeln!(out, "\n  {}", verdict_line(c));
}

/// The change column of one dimension.
fn change_text(d: &DimensionDelta) -> String {
    let word = d.change.as_str();
    match d.change {
        Change::Regressed | Change::LostScore => paint(RED.bold(), word),
        Change::Improved | Change::GainedScore => paint(GREEN, word),
        Change::WithinNoise => paint(YELLOW, word),
        _ => word.to_owned(),
    }
}

/// One line: regressions found (with the tolerance) or none.
pub(crate) fn verdict_line(c: &Comparison) -> String {
    if c.regressions.is_empty() {
        format!("no regression (tolerance {})", fmt_score(Some(c.tolerance)))
    } else {
        format!(
            "{} ({} found, tolerance {}): {}",
            paint(RED.bold(), "regression"),
            c.regressions.len(),
            fmt_score(Some(c.tolerance)),
            safe(&c.regressions.join("; "))
        )
    }
}

/// A large panel's pairs in three lines: how many, the least agreeing pairs, and the
/// models that agree least with the rest.
fn panel_digest(out: &mut String, d: &crate::report::model::DigestView) {
    let lowest: Vec<String> = d
        .lowest
        .iter()
        .map(|e| format!("{} {:.3}", safe(&e.pair), e.kappa))
        .collect();
    let mut models: Vec<(&String, f64)> = d
        .by_model
        .iter()
        .filter_map(|(m, k)| k.map(|k| (m, k)))
        .collect();
    models.sort_by(|a, b| a.1.total_cmp(&b.1));
    let models: Vec<String> = models
        .iter()
        .take(crate::verdict::panel::DIGEST_ENDS)
        .map(|(m, k)| format!("{} {k:.3}", safe(m)))
        .collect();
    let _ = writeln!(
        out,
        "    {} pairs, summarised (--panel-matrices writes them all)",
        d.n_pairs
    );
    let _ = writeln!(out, "    least agreeing pairs: {}", lowest.join(", "));
    let _ = writeln!(
        out,
        "    models least in agreement with the rest: {}",
        models.join(", ")
    );
}
