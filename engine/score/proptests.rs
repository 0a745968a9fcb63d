//! Property tests: invariants every score must keep whatever the input.

use indexmap::IndexMap;
use proptest::prelude::*;
use serde_json::json;

use super::agreement::{
    AlphaLevel, PanelOptions, Raters, Weighting, cohen_kappa, fleiss_kappa, krippendorff_alpha,
    panel,
};
use super::detection::Counts;
use super::macro_micro;
use super::matcher::{MatcherConfig, match_findings};

const WEIGHTINGS: [Weighting; 3] = [
    Weighting::Unweighted,
    Weighting::Linear,
    Weighting::Quadratic,
];

/// One rater's ratings of `n` items on a 4-point scale, about one in six missing.
fn column(n: usize) -> impl Strategy<Value = Vec<Option<u8>>> {
    proptest::collection::vec(
        prop_oneof![1 => Just(None), 5 => (1u8..=4).prop_map(Some)],
        n,
    )
}

/// 2 to 4 raters over 1 to 30 items.
fn panel_data() -> impl Strategy<Value = Vec<Vec<Option<u8>>>> {
    (2usize..=4, 1usize..=30).prop_flat_map(|(m, n)| proptest::collection::vec(column(n), m))
}

fn named(columns: &[Vec<Option<u8>>]) -> Raters<u8> {
    columns
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("r{i}"), c.clone()))
        .collect::<IndexMap<_, _>>()
}

fn same(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => (a - b).abs() < 1e-9,
        _ => false,
    }
}

fn record() -> impl Strategy<Value = serde_json::Value> {
    let word = prop_oneof![
        Just("s3"),
        Just("bucket"),
        Just("iam"),
        Just("policy"),
        Just("public")
    ];
    (
        prop_oneof![Just("a.tf"), Just("dir/a.tf"), Just("b.tf")],
        proptest::collection::vec(word, 0..4),
    )
        .prop_map(|(file, words)| json!({ "file": file, "title": words.join(" ") }))
}

proptest! {
    #[test]
    fn identical_non_constant_raters_agree_perfectly(
        ratings in proptest::collection::vec(1u8..=5, 2..40)
    ) {
        prop_assume!(ratings.iter().any(|&r| r != ratings[0]));
        let col: Vec<Option<u8>> = ratings.iter().copied().map(Some).collect();
        for w in WEIGHTINGS {
            let k = cohen_kappa(&col, &col, w, None).unwrap();
            prop_assert!(same(k.kappa, Some(1.0)), "{w:?}: {k:?}");
        }
        let cols = vec![col.clone(), col.clone(), col];
        for level in [AlphaLevel::Nominal, AlphaLevel::Ordinal] {
            let a = krippendorff_alpha(&cols, level, None).unwrap();
            prop_assert!(same(a.alpha, Some(1.0)), "{level:?}: {a:?}");
        }
        prop_assert!(same(fleiss_kappa(&cols, None).unwrap().kappa, Some(1.0)));
    }

    #[test]
    fn agreement_is_bounded_and_order_free(data in panel_data(), seed in any::<u64>()) {
        let order = [1u8, 2, 3, 4];
        let n = data[0].len();
        // A permutation of the items, derived from the seed.
        let mut perm: Vec<usize> = (0..n).collect();
        let mut s = seed;
        for i in (1..n).rev() {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            perm.swap(i, usize::try_from(s >> 33).unwrap() % (i + 1));
        }
        let shuffled: Vec<Vec<Option<u8>>> =
            data.iter().map(|c| perm.iter().map(|&i| c[i]).collect()).collect();
        for w in WEIGHTINGS {
            let opts = PanelOptions { weighting: w, order: Some(order.to_vec()), ..PanelOptions::default() };
            let a = panel(&named(&data), &opts).unwrap();
            let b = panel(&named(&shuffled), &opts).unwrap();
            for (ka, kb) in a.pairwise_kappa.values().zip(b.pairwise_kappa.values()) {
                prop_assert!(same(ka.kappa, kb.kappa));
                prop_assert!(ka.kappa.is_none_or(|k| (-1.0 - 1e-12..=1.0 + 1e-12).contains(&k)), "{ka:?}");
            }
            prop_assert!(same(a.mean_kappa, b.mean_kappa));
            prop_assert!(same(a.fleiss.kappa, b.fleiss.kappa));
            prop_assert!(a.fleiss.kappa.is_none_or(|k| (-1.0 - 1e-12..=1.0 + 1e-12).contains(&k)));
            prop_assert!(same(a.alpha_nominal.alpha, b.alpha_nominal.alpha));
            prop_assert!(same(a.alpha_ordinal.alpha, b.alpha_ordinal.alpha));
            prop_assert!(a.alpha_nominal.alpha.is_none_or(|k| k <= 1.0 + 1e-12));
            prop_assert_eq!(&a.agreement, &b.agreement);
        }
    }

    #[test]
    fn detection_metrics_are_rates_and_games_commute(
        games in proptest::collection::vec((0u64..50, 0u64..50, 0u64..50), 1..12)
    ) {
        let counts: Vec<Counts> = games.iter().map(|&(tp, fp, fn_)| Counts::new(tp, fp, fn_)).collect();
        for c in &counts {
            for v in [c.precision(), c.recall(), c.f1(), c.evasion(), c.evasion_of_manifest()] {
                prop_assert!((0.0..=1.0).contains(&v), "{c:?} -> {v}");
            }
        }
        let mut reversed = counts.clone();
        reversed.reverse();
        let (a, b) = (macro_micro(&counts), macro_micro(&reversed));
        prop_assert_eq!(a.micro, b.micro);
        prop_assert!(same(a.macro_.f1.mean, b.macro_.f1.mean));
        prop_assert!(same(a.macro_.precision.std_sample, b.macro_.precision.std_sample));
        for v in [a.micro.precision, a.micro.recall, a.micro.f1] {
            prop_assert!((0.0..=1.0).contains(&v));
        }
    }

    #[test]
    fn matcher_accounts_for_every_item(
        findings in proptest::collection::vec(record(), 0..8),
        truths in proptest::collection::vec(record(), 0..8),
        threshold in 0.05f64..=1.0,
    ) {
        let config: MatcherConfig = serde_json::from_value(json!({
            "by": { "similarity": [
                { "finding": "file", "compare": "same_base_name", "weight": 1 },
                { "finding": "title", "compare": "shared_words", "weight": 2 },
            ]},
            "threshold": threshold, "exact_at": threshold,
        })).unwrap();
        let out = match_findings(&findings, &truths, &config).unwrap();
        prop_assert_eq!(out.counts.tp + out.counts.fn_, truths.len() as u64);
        prop_assert_eq!(out.counts.tp + out.counts.fp, findings.len() as u64);
        prop_assert_eq!(out.pairs.len() + out.unmatched_findings.len(), findings.len());
        prop_assert!(out.pairs.iter().all(|p| p.score + 1e-9 >= threshold));
        // Reordering the findings does not change the best total score.
        let mut rev = findings.clone();
        rev.reverse();
        let back = match_findings(&rev, &truths, &config).unwrap();
        let total = |o: &super::matcher::MatchOutcome| o.pairs.iter().map(|p| p.score).sum::<f64>();
        prop_assert!((total(&out) - total(&back)).abs() < 1e-5);
    }
}
