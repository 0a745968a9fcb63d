//! The plan as a table for people (JSON is the `Plan` itself, serialized).

use std::fmt::Write as _;

use crate::plan::{CostRange, Plan, Row, Tokens};
use crate::present::table;

/// The plan as an aligned table with a header saying what the numbers are.
pub(crate) fn table(plan: &Plan) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "caldera plan: suite `{}`, provider {}, model{} {}{}",
        plan.suite,
        plan.provider,
        if plan.models.len() == 1 { "" } else { "s" },
        plan.models.join(", "),
        if plan.repeat > 1 {
            format!(", {} repeats", plan.repeat)
        } else {
            String::new()
        }
    );
    let _ = writeln!(out, "verdicts: {}", transports(plan));
    let _ = writeln!(out, "{}", token_note(plan));
    let header = [
        "judge",
        "model",
        "asks",
        "cached",
        "calls",
        "input tokens",
        "output tokens",
        "cost",
    ];
    let mut lines: Vec<[String; 8]> = plan.rows.iter().map(cells).collect();
    let detail = lines.len();
    lines.extend(plan.by_model.iter().map(|r| {
        let mut c = cells(r);
        c[0] = "all judges".into();
        c
    }));
    let mut total = cells(&plan.total);
    total[0] = "total".into();
    lines.push(total);
    // A blank line sets off the per-model sums and the total from the judges' rows.
    let breaks = [detail, lines.len() - 1];
    let lines: Vec<Vec<String>> = lines.into_iter().map(Vec::from).collect();
    out.push('\n');
    out.push_str(&table::aligned(
        &header.map(str::to_owned),
        &lines,
        &breaks,
        table::Layout {
            indent: "",
            left_columns: 2,
        },
    ));
    out.push('\n');
    for line in footnotes(plan) {
        let _ = writeln!(out, "  {line}");
    }
    out
}

fn token_note(plan: &Plan) -> String {
    match plan.tokens {
        "estimated" => {
            "input tokens are estimates from the prompts' length (1 token per 3 to 4 bytes); \
                        --count-tokens asks the provider to count them"
                .into()
        }
        other => format!("input tokens {other} by the provider's token-counting endpoint"),
    }
}

fn footnotes(plan: &Plan) -> Vec<String> {
    let mut out = Vec::new();
    match &plan.cache_dir {
        Some(dir) => out.push(format!(
            "cache {dir}: {} of {} asks answered, {} call(s) to make",
            plan.total.cached, plan.total.prompts, plan.total.calls
        )),
        None => out.push("cache off: every ask is a call".into()),
    }
    out.push(
        "cost: low = the prompts alone; high = the prompts plus every call's full output \
         (max_tokens); an unreadable reply is asked again once, which a plan cannot foresee"
            .into(),
    );
    if plan.total.cache_write_tokens + plan.total.cache_read_tokens > 0 {
        out.push(format!(
            "prompt cache: about {} input tokens written by the first ask of each repeated \
             prompt and {} read by the asks after it (low cost: every read hits; high: none \
             does and every write pays the premium)",
            plan.total.cache_write_tokens, plan.total.cache_read_tokens
        ));
    }
    for model in &plan.unpriced {
        out.push(format!(
            "no price is known for `{model}`: its cost is unknown (add it under `prices:` in \
             suite.yaml or in a --prices file)"
        ));
    }
    for n in &plan.not_rendered {
        let unit = n
            .repo
            .as_ref()
            .map(|r| format!(" on {r}"))
            .unwrap_or_default();
        out.push(format!("{}{unit}: no prompt ({})", n.judge, n.reason));
    }
    out.extend(plan.notes.iter().cloned());
    out
}

fn cells(r: &Row) -> [String; 8] {
    [
        r.judge.clone(),
        r.model.clone(),
        r.prompts.to_string(),
        r.cached.to_string(),
        r.calls.to_string(),
        tokens(r.input_tokens),
        thousands(r.output_tokens),
        cost(r.cost),
    ]
}

fn tokens(t: Tokens) -> String {
    if t.low == t.high {
        thousands(t.low)
    } else {
        format!("{}-{}", thousands(t.low), thousands(t.high))
    }
}

/// `$low-$high`, `$0` for nothing to spend, `unknown` without a price.
pub(crate) fn cost(c: Option<CostRange>) -> String {
    match c {
        None => "unknown".into(),
        Some(c) if c.high == 0.0 => "$0".into(),
        Some(c) => format!("${}-${}", money(c.low), money(c.high)),
    }
}

fn money(x: f64) -> String {
    if x >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// How the plan's judges are asked for their verdicts.
fn transports(plan: &Plan) -> String {
    let judges = plan
        .rows
        .iter()
        .map(|r| r.judge.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    match plan.schema_bound.len() {
        0 => "free text, read by each judge's format".to_owned(),
        n if n >= judges => {
            "schema-bound (the provider binds each reply to the verdict schema)".to_owned()
        }
        n => format!(
            "schema-bound for {n} of {judges} judges ({}), free text for the rest",
            plan.schema_bound.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(cost(None), "unknown");
        assert_eq!(cost(Some(CostRange::default())), "$0");
        assert_eq!(
            cost(Some(CostRange {
                low: 0.0123,
                high: 2.5
            })),
            "$0.0123-$2.50"
        );
        assert_eq!(
            tokens(Tokens {
                low: 900,
                high: 1200
            }),
            "900-1,200"
        );
        assert_eq!(tokens(Tokens { low: 7, high: 7 }), "7");
    }
}
