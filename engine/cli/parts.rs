//! `--parts` of `caldera validate` and `caldera plan`: which part of a run each judge
//! and each piece of suite evidence belongs to (per-repo, aggregate, constant or whole),
//! and for a whole one the first read that needs every document, so a user knows before
//! `caldera run --shard` whether the suite shards.

use crate::load::parts::{Part, classify};
use crate::load::suite::Suite;

/// The parts of `suite`, one line each: suite evidence first, then the judges.
pub(crate) fn text(suite: &Suite) -> String {
    let parts = classify(suite);
    let mut out = format!("parts of suite `{}`:\n", suite.spec.suite);
    for (name, part) in &parts.evidence {
        out.push_str(&line(&format!("evidence {name}"), part));
    }
    for (plan, part) in suite.judges.iter().zip(&parts.judges) {
        out.push_str(&line(&format!("judge {}", plan.spec.dimension), part));
    }
    out.push_str(if parts.any_whole() {
        "shards: only with --defer-whole (whole parts run at merge, reading the inputs)\n"
    } else {
        "shards: yes\n"
    });
    out
}

fn line(what: &str, part: &Part) -> String {
    match part.why() {
        Some(why) => format!("  {what}: whole ({why})\n"),
        None => format!("  {what}: {}\n", part.label()),
    }
}
