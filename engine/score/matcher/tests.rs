use serde_json::{Value, json};

use super::*;
use crate::score::detection::Counts;

fn sim(rules: Value) -> MatcherConfig {
    serde_json::from_value(
        json!({ "by": { "similarity": rules }, "threshold": 0.5, "exact_at": 0.8 }),
    )
    .unwrap()
}

#[test]
fn key_matching_is_one_to_one() {
    let config: MatcherConfig =
        serde_json::from_value(json!({ "by": { "key": [{ "finding": "id", "truth": "cve" }] } }))
            .unwrap();
    let findings = vec![
        json!({"id": "CVE-1"}),
        json!({"id": "CVE-1"}),
        json!({"id": "CVE-9"}),
        json!({}),
    ];
    let truths = vec![json!({"cve": "CVE-1"}), json!({"cve": "CVE-2"})];
    let out = match_findings(&findings, &truths, &config).unwrap();
    assert_eq!(out.counts, Counts::new(1, 3, 1));
    assert_eq!(out.pairs.len(), 1);
    assert_eq!(
        (out.pairs[0].truth, out.pairs[0].label),
        (0, MatchLabel::Exact)
    );
    assert_eq!(out.unmatched_truths, vec![1]);
    assert_eq!(out.exact, 1);
    assert!(out.near_misses.is_empty());
}

#[test]
fn similarity_bands_and_optimal_assignment() {
    let config = sim(json!([
        { "finding": "resource", "compare": "equal", "weight": 2 },
        { "finding": "title", "truth": "name", "compare": "shared_words", "weight": 1 },
    ]));
    let findings = vec![
        // Equal resource, title shares 1 of 4 words with truth 0: (2 + 1/4) / 3 = 0.75.
        json!({"resource": "aws_s3_bucket.logs", "title": "public acl"}),
        // Same resource as truth 0 too, but a poor title; truth 1 is its only other option.
        json!({"resource": "aws_s3_bucket.logs", "title": "unencrypted storage"}),
        json!({"resource": "aws_iam_role.admin", "title": "wildcard iam policy"}),
    ];
    let truths = vec![
        json!({"resource": "aws_s3_bucket.logs", "name": "bucket is public"}),
        json!({"resource": "aws_s3_bucket.logs", "name": "unencrypted storage at rest"}),
    ];
    let out = match_findings(&findings, &truths, &config).unwrap();
    assert_eq!(out.counts, Counts::new(2, 1, 0));
    let pairs: Vec<(usize, usize, MatchLabel)> = out
        .pairs
        .iter()
        .map(|p| (p.finding, p.truth, p.label))
        .collect();
    // Finding 1 vs truth 1: (2 + 2/4) / 3 = 0.833 exact; finding 0 vs truth 0: partial.
    assert_eq!(
        pairs,
        vec![(0, 0, MatchLabel::Partial), (1, 1, MatchLabel::Exact)]
    );
    assert!((out.pairs[0].score - 0.75).abs() < 1e-12);
    assert_eq!(out.pairs[0].field_scores.len(), 2);
    assert_eq!((out.exact, out.partial), (1, 1));
    assert_eq!(out.unmatched_findings, vec![2]);
    assert!((out.metrics().precision - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(out.metrics().recall, 1.0);
}

#[test]
fn below_threshold_is_a_near_miss_not_a_match() {
    let config = sim(json!([
        { "finding": "file", "compare": "same_base_name" },
        { "finding": "msg", "compare": "shared_words" },
    ]));
    let findings = vec![json!({"file": "x/main.tf", "msg": "totally different"})];
    let truths = vec![json!({"file": "other.tf", "msg": "different text here"})];
    let out = match_findings(&findings, &truths, &config).unwrap();
    assert_eq!(out.counts, Counts::new(0, 1, 1));
    assert_eq!(out.near_misses.len(), 1);
    assert_eq!(out.near_misses[0].label, MatchLabel::Missed);
    assert!((out.near_misses[0].score - 0.125).abs() < 1e-12);
}

#[test]
fn weights_summing_to_one_reach_exact() {
    let config = sim(json!([
        { "finding": "a", "compare": "equal", "weight": 0.1 },
        { "finding": "b", "compare": "equal", "weight": 0.2 },
        { "finding": "c", "compare": "contains", "weight": 0.7 },
    ]));
    let m = Matcher::new(&config).unwrap();
    let (s, _) = m.score(
        &json!({"a": "1", "b": "2", "c": "X"}),
        &json!({"a": "1", "b": "2", "c": "xyz"}),
    );
    assert_eq!(m.label(s), MatchLabel::Exact);
}

#[test]
fn empty_sides() {
    let config = sim(json!([{ "finding": "a", "compare": "equal" }]));
    let none: Vec<Value> = vec![];
    let some = vec![json!({"a": "1"}), json!({"a": "2"})];
    let out = match_findings(&none, &some, &config).unwrap();
    assert_eq!(
        (out.counts, out.unmatched_truths.clone()),
        (Counts::new(0, 0, 2), vec![0, 1])
    );
    let out = match_findings(&some, &none, &config).unwrap();
    assert_eq!(out.counts, Counts::new(0, 2, 0));
}

#[test]
fn config_rejects_unknown_keys_and_bad_values() {
    let unknown = serde_json::from_value::<MatcherConfig>(json!({
        "by": { "similarity": [{ "finding": "a", "compare": "equal", "wieght": 2 }] }
    }));
    assert!(unknown.is_err());
    let unknown_top =
        serde_json::from_value::<MatcherConfig>(json!({ "by": { "key": [] }, "treshold": 0.3 }));
    assert!(unknown_top.is_err());
    let bad_cmp = serde_json::from_value::<MatcherConfig>(
        json!({ "by": { "similarity": [{ "finding": "a", "compare": "fuzzy" }] } }),
    );
    assert!(bad_cmp.is_err());
    let defaults: MatcherConfig = serde_json::from_value(
        json!({ "by": { "similarity": [{ "finding": "a", "compare": "equal" }] } }),
    )
    .unwrap();
    assert_eq!((defaults.threshold, defaults.exact_at), (0.5, 0.8));

    let with = |by: Value, threshold: f64, exact_at: f64| {
        Matcher::new(
            &serde_json::from_value(
                json!({"by": by, "threshold": threshold, "exact_at": exact_at}),
            )
            .unwrap(),
        )
    };
    let one = json!({ "similarity": [{ "finding": "a", "compare": "equal" }] });
    assert_eq!(
        with(json!({"key": []}), 0.5, 0.8),
        Err(MatcherConfigError::NoFields)
    );
    assert_eq!(
        with(one.clone(), 0.0, 0.8),
        Err(MatcherConfigError::BadThreshold(0.0))
    );
    assert!(matches!(
        with(one.clone(), 0.6, 0.5),
        Err(MatcherConfigError::BadExactAt { .. })
    ));
    assert!(matches!(
        with(
            json!({ "similarity": [{ "finding": "a", "compare": "equal", "weight": -1 }] }),
            0.5,
            0.8
        ),
        Err(MatcherConfigError::BadWeight { .. })
    ));
    assert_eq!(
        with(
            json!({ "similarity": [{ "finding": "a", "compare": "equal", "weight": 0 }] }),
            0.5,
            0.8
        ),
        Err(MatcherConfigError::ZeroWeights)
    );
    assert!(with(one, 0.5, 0.8).is_ok());
}

#[test]
fn config_has_a_documented_schema() {
    let schema = serde_json::to_value(schemars::schema_for!(MatcherConfig)).unwrap();
    let text = schema.to_string();
    assert!(
        text.contains("Smallest pair score that counts as a match"),
        "{text}"
    );
    assert!(text.contains("same_base_name"));
    assert!(text.contains("\"additionalProperties\":false"));
}

/// The bands are inclusive at their lower bound, with room for float sums that land a
/// hair below it (0.1 + 0.2 + 0.2 is 0.5000000000000001, 0.3 + 0.2 is 0.5 exactly;
/// either way a pair at the threshold is partial, one clearly below it is missed).
#[test]
fn a_score_at_a_band_edge_is_in_the_band() {
    let m = Matcher::new(&sim(json!([{ "finding": "a", "compare": "equal" }]))).unwrap();
    assert_eq!(m.label(0.5), MatchLabel::Partial);
    assert_eq!(m.label(0.5 - 1e-12), MatchLabel::Partial);
    assert_eq!(m.label(0.49), MatchLabel::Missed);
    assert_eq!(m.label(0.8), MatchLabel::Exact);
    assert_eq!(m.label(0.8 - 1e-12), MatchLabel::Exact);
    assert_eq!(m.label(0.79), MatchLabel::Partial);
}
