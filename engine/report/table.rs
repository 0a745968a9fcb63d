//! The terminal table: one line per dimension, the weighted score and decision, then
//! every problem the run found.

use std::fmt::Write as _;

use crate::run::result::RunResult;
use crate::verdict::types::Status;

/// Renders the table (plain text; `color` adds ANSI colour to statuses and decision).
pub fn render(result: &RunResult, color: bool) -> String {
    let paint = |code: &str, text: &str| {
        if color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "caldera {} suite `{}` ({} mode, {} results, {} ground truth)",
        result.run_id, result.suite, result.mode, result.inputs.results, result.inputs.ground_truth
    );
    let width = result
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
    for d in &result.dimensions {
        let score = d.score.map_or("-".into(), |s| format!("{s}"));
        let conf = d.confidence.map_or("-".into(), |c| format!("{c:.2}"));
        let weighted = d.weighted_score.map_or("-".into(), |w| format!("{w:.3}"));
        let mut status = match d.status {
            Status::Scored => match d.passed {
                Some(true) => paint("32", "pass"),
                _ => paint("31", "below threshold"),
            },
            Status::Unscored => paint("33", "unscored"),
            Status::Error => paint("31", "error"),
        };
        if let (Some(before), Some(cap)) = (d.score_before_cap, d.cap_applied) {
            status.push_str(&format!(" (capped {before} -> {cap})"));
        }
        if !d.assertion_failures.is_empty() {
            status.push_str(&format!(
                ", {} assertion(s) failed",
                d.assertion_failures.len()
            ));
        }
        if let Some(h) = &d.heuristic {
            let hs = h.score.map_or("-".into(), |s| format!("{s}"));
            status.push_str(&format!(" (heuristic {hs})"));
        }
        let _ = writeln!(
            out,
            "  {:<width$}  {:>6.3}  {:>6}  {:>5}  {:>8}  {}",
            d.name, d.normalized_weight, score, conf, weighted, status
        );
    }
    let total = result.total_score.map_or("-".into(), |t| format!("{t:.2}"));
    let decision = match result.decision.as_str() {
        "FAIL" | "NO_SCORE" => paint("1;31", &result.decision),
        "WEAK_PASS" => paint("1;33", &result.decision),
        other => paint("1;32", other),
    };
    // A judge can score with some of its units (repos, panel members) missing: then the
    // count of units says so, so the line never reads as complete when it is not.
    let gate = &result.gate;
    let units = if gate.scored_units < gate.units {
        format!("; {} of {} units scored", gate.scored_units, gate.units)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "\n  weighted score {total} / 5  ->  {decision}   ({} of {} judges scored, {} passed{units})",
        result.summary.scored, result.summary.judges, result.summary.passed
    );
    if let Some(u) = &result.usage {
        let _ = writeln!(
            out,
            "  model {} via {}: {} of {} verdicts ({} cached), {} requests, {} input + {} output tokens, ${:.4}",
            result.model.as_deref().unwrap_or("-"),
            result.provider.as_deref().unwrap_or("-"),
            u.verdicts,
            u.calls,
            u.cached,
            u.requests,
            u.input_tokens,
            u.output_tokens,
            u.cost_usd
        );
    }
    if let Some(p) = &result.panel {
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
            p.kappa_target,
            p.items
        );
        if let Some(a) = &p.agreement {
            for (pair, k) in &a.pairwise_kappa {
                let kv = k.kappa.map_or("undefined".into(), |v| format!("{v:.3}"));
                let _ = writeln!(out, "    {pair}: kappa {kv} ({})", k.interpretation);
            }
        }
        if let Some(d) = &p.pairwise {
            panel_digest(&mut out, &d.unweighted);
        }
    }
    if !result.summary.problems.is_empty() {
        let _ = writeln!(out, "\n  worth a look:");
        for p in &result.summary.problems {
            let who = p.dimension.as_deref().unwrap_or("run");
            let _ = writeln!(out, "  - [{}] {who}: {}", p.kind, p.message);
        }
    }
    out
}

/// A large panel's pairs in three lines: how many, the least agreeing pairs, and the
/// models that agree least with the rest.
fn panel_digest(out: &mut String, d: &crate::run::panel::PairwiseDigest) {
    let lowest: Vec<String> = d
        .lowest
        .iter()
        .map(|e| format!("{} {:.3}", e.pair, e.kappa))
        .collect();
    let mut models: Vec<(&String, f64)> = d
        .by_model
        .iter()
        .filter_map(|(m, k)| k.map(|k| (m, k)))
        .collect();
    models.sort_by(|a, b| a.1.total_cmp(&b.1));
    let models: Vec<String> = models
        .iter()
        .take(crate::run::panel::DIGEST_ENDS)
        .map(|(m, k)| format!("{m} {k:.3}"))
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
