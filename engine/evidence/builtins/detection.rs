//! Detection scoring for judges: `detection`, `summary_stats`, `macro_micro`,
//! `manifest_accuracy`, `hallucination_rate`, `corroboration_rate`.
//!
//! Thin wrappers over [`crate::score`], so a suite written in YAML computes exactly
//! the figures the Rust score library (and its tests against published results)
//! computes. Choices a published figure depends on are arguments rather than fixed,
//! because real reference runs made them differently (`std`, `'sample'` or
//! `'population'`, besides the two below); they are
//! [`crate::score::aggregate::AggregateOptions`]:
//!
//! - `f1`: `'counts'` is `2tp / (2tp + fp + fn)` (as `match` computes it);
//!   `'harmonic'` is `2PR / (P + R)` of the already-rounded ratios, the way most
//!   Python frameworks write it. Both are the same number up to the last bit; a
//!   figure printed to 16 digits needs the one its producer used.
//! - `summation`: `'sequential'` adds left to right (Python's `sum` before 3.12, and
//!   any running total `x += v`); `'compensated'` is Neumaier's compensated sum, the
//!   algorithm of Python's `sum` over floats since 3.12. They differ only in the last
//!   digits of long lists.
//!
//! Counts must be non-negative whole numbers; a float with an integral value (`3.0`)
//! is accepted, since JSON producers often write counts that way.

use minijinja::value::{Rest, ValueOrKwargs};
use minijinja::{Error, Value};

use super::args::{Args, as_f64, describe};
use super::path::key_of;
use crate::score::aggregate::{
    AggregateOptions, F1Rule, Stats, StdConvention, Summation, macro_micro_with,
};
use crate::score::detection::{self as score, Counts};

fn pick<T: Copy>(
    args: &Args,
    i: usize,
    default: T,
    choices: &[(&str, T)],
    expected: &str,
) -> Result<T, Error> {
    match args.text(i)? {
        None => Ok(default),
        Some(text) => choices
            .iter()
            .find(|(name, _)| *name == text)
            .map(|(_, v)| *v)
            .ok_or_else(|| args.error(i, expected, &Value::from(text))),
    }
}

fn std_rule(args: &Args, i: usize) -> Result<StdConvention, Error> {
    pick(
        args,
        i,
        StdConvention::Sample,
        &[
            ("sample", StdConvention::Sample),
            ("population", StdConvention::Population),
        ],
        "'sample' or 'population'",
    )
}

fn summation_rule(args: &Args, i: usize) -> Result<Summation, Error> {
    pick(
        args,
        i,
        Summation::Sequential,
        &[
            ("sequential", Summation::Sequential),
            ("compensated", Summation::Compensated),
        ],
        "'sequential' or 'compensated'",
    )
}

fn f1_rule(args: &Args, i: usize) -> Result<F1Rule, Error> {
    pick(
        args,
        i,
        F1Rule::Counts,
        &[("counts", F1Rule::Counts), ("harmonic", F1Rule::Harmonic)],
        "'counts' or 'harmonic'",
    )
}

/// A count from a value: a non-negative whole number.
fn count_of(value: &Value) -> Option<u64> {
    let x = as_f64(value)?;
    // Counts stay far below 2^53, where every integer is exact in f64.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let n = x as u64;
    #[allow(clippy::cast_precision_loss)]
    let exact = x >= 0.0 && x.fract() == 0.0 && x < 9.0e15 && n as f64 == x;
    exact.then_some(n)
}

fn count_arg(args: &Args, i: usize) -> Result<u64, Error> {
    let value = args.raw(i);
    count_of(&value).ok_or_else(|| args.error(i, "a non-negative whole number", &value))
}

fn opt(value: Option<f64>) -> Value {
    value.map_or(Value::from(()), Value::from)
}

/// `{n, sum, mean, std, min, max}`.
fn stats_value(stats: &Stats) -> Value {
    Value::from_pairs([
        ("n", Value::from(stats.n)),
        ("sum", Value::from(stats.sum)),
        ("mean", opt(stats.mean)),
        ("std", opt(stats.std)),
        ("min", opt(stats.min)),
        ("max", opt(stats.max)),
    ])
}

fn detection_value(c: &Counts, rule: F1Rule) -> Value {
    Value::from_pairs([
        ("tp", Value::from(c.tp)),
        ("fp", Value::from(c.fp)),
        ("fn", Value::from(c.fn_)),
        ("findings", Value::from(c.findings())),
        ("truths", Value::from(c.truths())),
        ("precision", Value::from(c.precision())),
        ("recall", Value::from(c.recall())),
        ("f1", Value::from(rule.f1(c))),
        ("evasion", Value::from(c.evasion_of_manifest())),
    ])
}

/// `detection(tp, fp, fn, f1='counts')`: the metrics of one game.
pub(crate) fn detection(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("detection", &["tp", "fp", "fn", "f1"], 3, raw)?;
    let counts = Counts::new(
        count_arg(&args, 0)?,
        count_arg(&args, 1)?,
        count_arg(&args, 2)?,
    );
    Ok(detection_value(&counts, f1_rule(&args, 3)?))
}

/// `summary_stats(values, std='sample', summation='sequential')`.
pub(crate) fn summary_stats(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("summary_stats", &["values", "std", "summation"], 1, raw)?;
    let std = std_rule(&args, 1)?;
    let summation = summation_rule(&args, 2)?;
    Ok(stats_value(&Stats::of(&args.numbers(0)?, std, summation)))
}

/// The counts of record `index`: `tp` and `fp` from their attributes; `fn` from its
/// attribute, or `n_truth - tp` when `n_truth` names the ground-truth size.
fn record_counts(
    args: &Args,
    index: usize,
    item: &Value,
    names: &[String; 3],
    n_truth: Option<&str>,
) -> Result<Counts, Error> {
    let field = |attr: &str| -> Result<u64, Error> {
        let value = key_of(item, Some(attr));
        count_of(&value).ok_or_else(|| {
            args.fail(format_args!(
                "record {index}: '{attr}' must be a non-negative whole number, got {}",
                describe(&value)
            ))
        })
    };
    let tp = field(&names[0])?;
    let fp = field(&names[1])?;
    let fn_ = match n_truth {
        None => field(&names[2])?,
        Some(attr) => {
            let truths = field(attr)?;
            truths.checked_sub(tp).ok_or_else(|| {
                args.fail(format_args!(
                    "record {index}: tp {tp} exceeds '{attr}' {truths}"
                ))
            })?
        }
    };
    Ok(Counts::new(tp, fp, fn_))
}

/// `macro_micro(records, tp='tp', fp='fp', fn='fn', n_truth=none, std='sample',
/// summation='sequential', f1='counts')`.
pub(crate) fn macro_micro(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind(
        "macro_micro",
        &[
            "records",
            "tp",
            "fp",
            "fn",
            "n_truth",
            "std",
            "summation",
            "f1",
        ],
        1,
        raw,
    )?;
    let names = [
        args.text(1)?.unwrap_or_else(|| "tp".into()),
        args.text(2)?.unwrap_or_else(|| "fp".into()),
        args.text(3)?.unwrap_or_else(|| "fn".into()),
    ];
    let n_truth = args.text(4)?;
    let options = AggregateOptions {
        std: std_rule(&args, 5)?,
        summation: summation_rule(&args, 6)?,
        f1: f1_rule(&args, 7)?,
    };
    let games = args
        .items(0)?
        .iter()
        .enumerate()
        .map(|(i, item)| record_counts(&args, i, item, &names, n_truth.as_deref()))
        .collect::<Result<Vec<_>, _>>()?;
    let aggregated = macro_micro_with(&games, options);
    let m = &aggregated.macro_;
    let macro_ = Value::from_pairs([
        ("precision", stats_value(&m.precision)),
        ("recall", stats_value(&m.recall)),
        ("f1", stats_value(&m.f1)),
        ("evasion", stats_value(&m.evasion_of_manifest)),
        ("f1_of_means", Value::from(m.f1_of_means)),
    ]);
    Ok(Value::from_pairs([
        ("n", Value::from(aggregated.n_games)),
        ("macro", macro_),
        ("micro", detection_value(&aggregated.pooled, options.f1)),
    ]))
}

/// `manifest_accuracy(confirmed, claimed)`.
pub(crate) fn manifest_accuracy(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("manifest_accuracy", &["confirmed", "claimed"], 2, raw)?;
    Ok(Value::from(score::manifest_accuracy(
        count_arg(&args, 0)?,
        count_arg(&args, 1)?,
    )))
}

/// `hallucination_rate(confirmed, claimed)`.
pub(crate) fn hallucination_rate(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("hallucination_rate", &["confirmed", "claimed"], 2, raw)?;
    Ok(Value::from(score::hallucination_rate(
        count_arg(&args, 0)?,
        count_arg(&args, 1)?,
    )))
}

/// `corroboration_rate(corroborated, matches)`.
pub(crate) fn corroboration_rate(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("corroboration_rate", &["corroborated", "matches"], 2, raw)?;
    Ok(Value::from(score::corroboration_rate(
        count_arg(&args, 0)?,
        count_arg(&args, 1)?,
    )))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{error, eval, json, json_lazy};
    use crate::score::aggregate::compensated_sum;
    use serde_json::json;

    fn num(expr: &str, ctx: serde_json::Value) -> f64 {
        f64::try_from(eval(expr, ctx)).expect("a number")
    }

    #[test]
    fn detection_of_one_game() {
        let d = json("detection(2, 2, 1)", json!({}));
        let d: serde_json::Value = serde_json::from_str(&d).unwrap();
        assert_eq!(d["tp"], 2);
        assert_eq!(d["findings"], 4);
        assert_eq!(d["truths"], 3);
        assert_eq!(d["precision"], 0.5);
        assert_eq!(d["recall"], 2.0 / 3.0);
        assert_eq!(d["f1"], 4.0 / 7.0);
        assert_eq!(d["evasion"], 1.0 / 3.0);
        // Keyword form and an integral float count.
        assert_eq!(
            json("detection(tp=3.0, fp=1, fn=0).precision", json!({})),
            "0.75"
        );
    }

    #[test]
    fn detection_zero_denominators() {
        // Nothing reported, nothing expected: every ratio is 0, evasion too.
        assert_eq!(
            json("detection(0, 0, 0)", json!({})),
            r#"{"tp":0,"fp":0,"fn":0,"findings":0,"truths":0,"precision":0.0,"recall":0.0,"f1":0.0,"evasion":0.0}"#
        );
        // Silent tool on a non-empty manifest: everything evaded.
        assert_eq!(json("detection(0, 0, 2).evasion", json!({})), "1.0");
        // Empty manifest with false positives: evasion 0 (nothing to evade), not 1 - recall.
        assert_eq!(json("detection(0, 4, 0).evasion", json!({})), "0.0");
        assert_eq!(
            json("detection(0, 3, 2, f1='harmonic').f1", json!({})),
            "0.0"
        );
    }

    #[test]
    fn f1_rules_differ_only_in_the_last_bit() {
        // 2PR/(P+R) with P = 0.6, R = 1.0 gives 0.7499999999999999 in floats (as a
        // Python framework stores it); 2tp/(2tp+fp+fn) gives 0.75 exactly.
        assert_eq!(
            json("detection(3, 2, 0, f1='harmonic').f1", json!({})),
            "0.7499999999999999"
        );
        assert_eq!(json("detection(3, 2, 0).f1", json!({})), "0.75");
    }

    #[test]
    fn detection_rejects_bad_counts() {
        let msg = error("detection(1.5, 0, 0)", json!({}));
        assert!(
            msg.contains(
                "detection(): argument 'tp' must be a non-negative whole number, got number 1.5"
            ),
            "{msg}"
        );
        let msg = error("detection(1, -1, 0)", json!({}));
        assert!(msg.contains("argument 'fp'"), "{msg}");
        let msg = error("detection(1, 0, none)", json!({}));
        assert!(msg.contains("argument 'fn'"), "{msg}");
        let msg = error("detection(1, 0, 0, f1='mean')", json!({}));
        assert!(msg.contains("'counts' or 'harmonic'"), "{msg}");
    }

    /// Each part of the whole-number check rejects on its own: a fraction inside the
    /// range, a whole number below it, a whole number above it (counts stay below
    /// 9e15, where every integer is exact in a float) and the bound itself.
    #[test]
    fn counts_must_be_whole_and_in_range_each_check_alone() {
        for bad in [
            json!(2.5),
            json!(-3),
            json!(-3.0),
            json!(1e16),
            json!(9.0e15),
        ] {
            let msg = error("detection(n, 0, 0)", json!({ "n": bad }));
            assert!(
                msg.contains("argument 'tp' must be a non-negative whole number"),
                "{bad}: {msg}"
            );
        }
        // The largest count taken, and a whole float below it.
        assert_eq!(
            json("detection(n, 0, 0).tp", json!({"n": 8.0e15})),
            "8000000000000000"
        );
        assert_eq!(json("detection(4.0, 0, 0).tp", json!({})), "4");
    }

    #[test]
    fn summary_stats_sample_and_population() {
        let xs = json!({"xs": [2, 4, 4, 4, 5, 5, 7, 9]});
        assert_eq!(
            json("summary_stats(xs)", xs.clone()),
            r#"{"n":8,"sum":40.0,"mean":5.0,"std":2.138089935299395,"min":2.0,"max":9.0}"#
        );
        assert_eq!(
            json("(xs|summary_stats(std='population')).std", xs.clone()),
            "2.0"
        );
        assert_eq!(
            json("summary_stats(xs, summation='compensated').std", xs),
            "2.138089935299395"
        );
    }

    #[test]
    fn summary_stats_empty_and_single() {
        assert_eq!(
            json("summary_stats([])", json!({})),
            r#"{"n":0,"sum":0.0,"mean":null,"std":null,"min":null,"max":null}"#
        );
        assert_eq!(
            json("summary_stats(none, summation='compensated')", json!({})),
            r#"{"n":0,"sum":0.0,"mean":null,"std":null,"min":null,"max":null}"#
        );
        assert_eq!(json("summary_stats([0.7]).std", json!({})), "null");
        assert_eq!(
            json("summary_stats([0.7], std='population').std", json!({})),
            "0.0"
        );
        assert_eq!(
            json(
                "summary_stats([0.7], std='population', summation='compensated').std",
                json!({})
            ),
            "0.0"
        );
        let msg = error("summary_stats([1], std='n-1')", json!({}));
        assert!(msg.contains("'sample' or 'population'"), "{msg}");
        let msg = error("summary_stats([1], summation='kahan')", json!({}));
        assert!(msg.contains("'sequential' or 'compensated'"), "{msg}");
    }

    #[test]
    fn compensated_summation_matches_python_312() {
        // Python 3.12: sum([0.1] * 10) == 1.0; a left-to-right sum gives
        // 0.9999999999999999.
        let tenths = json!({"xs": [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]});
        assert_eq!(
            num(
                "summary_stats(xs, summation='compensated').sum",
                tenths.clone()
            ),
            1.0
        );
        assert_eq!(
            num("summary_stats(xs).sum", tenths),
            0.999_999_999_999_999_9
        );
        // Python 3.12: sum([1e100, 1.0, -1e100, 1.0]) == 2.0.
        assert_eq!(compensated_sum(&[1e100, 1.0, -1e100, 1.0]), 2.0);
        assert_eq!(compensated_sum(&[]), 0.0);
    }

    fn games() -> serde_json::Value {
        // (3,1,0), (0,0,2) silent, (2,2,1), (4,0,0): the score library's own example.
        json!({"g": [
            {"id": "a", "c": {"tp": 3, "fp": 1, "fn": 0}, "n": 3},
            {"id": "b", "c": {"tp": 0, "fp": 0, "fn": 2}, "n": 2},
            {"id": "c", "c": {"tp": 2, "fp": 2, "fn": 1}, "n": 3},
            {"id": "d", "c": {"tp": 4, "fp": 0, "fn": 0}, "n": 4}
        ]})
    }

    #[test]
    fn macro_micro_matches_the_score_library() {
        let expr = "macro_micro(g, tp='c.tp', fp='c.fp', fn='c.fn')";
        let r: serde_json::Value = serde_json::from_str(&json(expr, games())).unwrap();
        assert_eq!(r["n"], 4);
        assert_eq!(r["macro"]["precision"]["mean"], 0.5625);
        assert!(
            (r["macro"]["precision"]["std"].as_f64().unwrap() - 0.426_956_281_914_983_25).abs()
                < 1e-15
        );
        assert!((r["macro"]["recall"]["mean"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-15);
        assert!(
            (r["macro"]["f1"]["mean"].as_f64().unwrap() - 0.607_142_857_142_857_1).abs() < 1e-15
        );
        assert!((r["macro"]["evasion"]["mean"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-15);
        assert!(
            (r["macro"]["f1_of_means"].as_f64().unwrap() - 0.610_169_491_525_423_8).abs() < 1e-15
        );
        assert_eq!(r["macro"]["precision"]["min"], 0.0);
        assert_eq!(r["micro"]["tp"], 9);
        assert_eq!(r["micro"]["fp"], 3);
        assert_eq!(r["micro"]["fn"], 3);
        assert_eq!(r["micro"]["precision"], 0.75);
        assert_eq!(r["micro"]["evasion"], 0.25);
        // The same through lazily wrapped documents and n_truth instead of fn.
        let by_truth = "macro_micro(g, tp='c.tp', fp='c.fp', n_truth='n').micro.fn";
        assert_eq!(json_lazy(by_truth, games()), "3");
    }

    #[test]
    fn macro_micro_empty_and_errors() {
        let r: serde_json::Value =
            serde_json::from_str(&json("macro_micro([])", json!({}))).unwrap();
        assert_eq!(r["n"], 0);
        assert!(r["macro"]["f1"]["mean"].is_null());
        assert_eq!(r["macro"]["f1_of_means"], 0.0);
        assert_eq!(r["micro"]["precision"], 0.0);
        assert_eq!(json("macro_micro(none).micro.evasion", json!({})), "0.0");
        let msg = error("macro_micro(g)", games());
        assert!(
            msg.contains(
                "macro_micro(): record 0: 'tp' must be a non-negative whole number, got undefined"
            ),
            "{msg}"
        );
        let msg = error(
            "macro_micro([{'tp': 5, 'fp': 0, 'n': 3}], n_truth='n')",
            json!({}),
        );
        assert!(msg.contains("record 0: tp 5 exceeds 'n' 3"), "{msg}");
    }

    #[test]
    fn manifest_rates() {
        assert_eq!(json("manifest_accuracy(3, 4)", json!({})), "0.75");
        assert_eq!(json("hallucination_rate(3, 4)", json!({})), "0.25");
        assert_eq!(json("manifest_accuracy(0, 0)", json!({})), "0.0");
        assert_eq!(json("hallucination_rate(0, 0)", json!({})), "0.0");
        assert_eq!(
            json("hallucination_rate(confirmed=0, claimed=2)", json!({})),
            "1.0"
        );
        assert_eq!(json("corroboration_rate(1, 4)", json!({})), "0.25");
        assert_eq!(json("corroboration_rate(0, 0)", json!({})), "0.0");
        let msg = error("manifest_accuracy(none, 3)", json!({}));
        assert!(
            msg.contains("argument 'confirmed' must be a non-negative whole number"),
            "{msg}"
        );
    }
}
