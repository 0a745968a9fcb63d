//! Parity with the framework the trivy judges replace: each dataset of the shared
//! reference is run through the bundled YAML judges, and every evidence value the
//! framework recorded is compared, leaf by leaf, with caldera's evidence for the same
//! dimension. Values must be equal, number type included (`0` is not `0.0`), except where
//! the framework's logic was deliberately fixed: those differences are listed below with
//! their reason. The test fails on a difference that is not listed, and on a listed one
//! that no longer occurs, so the list stays honest.
//!
//! The assertion outcome each reference file recorded (`ground_truth_assertions`) is
//! compared as well, as in the other parity specs: whether they passed against caldera's
//! `ground_truth_passed`, the number of failures, and, where both sides failed as often, the
//! numbers their messages quote (the wording differs). Deliberate differences in outcome are
//! listed in `OUTCOME_DIFFERENCES`, under the same rule.
//!
//! The reference lives outside the project; without it the test says it skipped (and
//! fails under CI).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use caldera::Overrides;
use caldera::load_suite;
use caldera::{RunOptions, run_heuristic};
use serde_json::Value;

use crate::parity::{Aspect, leaves, outcomes, under};

/// One deliberate difference: every differing leaf under `prefix` (a JSON pointer into
/// the dimension's evidence) of `dimension` on `dataset` is explained by `reason`.
struct Listed {
    dataset: &'static str,
    dimension: &'static str,
    prefix: &'static str,
    reason: &'static str,
}

const fn d(
    dataset: &'static str,
    dimension: &'static str,
    prefix: &'static str,
    reason: &'static str,
) -> Listed {
    Listed {
        dataset,
        dimension,
        prefix,
        reason,
    }
}

const MODE: &str =
    "evaluation_mode dropped: no synthetic/real-world guess (D5), no synthetic baseline";
const D1: &str = "D1: expectations nested under `expected` are read";
const D2: &str =
    "D2: the analyzer `results` wrapper is unwrapped, so its findings, SBOM and targets are seen";
const D3: &str = "D3: envelope counts come from `vulnerabilities[]`, `targets[]` and IaC `count`";
const D4: &str =
    "D4: the envelope is named by metadata.repo_id, so it no longer joins `vulnerable-npm` truth";
const D7: &str = "D7: sets are listed sorted";
const CLEAN: &str =
    "clean test: the expected range 0-5 wins over the word 'clean' in the description";

const VA: &str = "vulnerability_accuracy";
const SA: &str = "severity_accuracy";
const SB: &str = "sbom_completeness";
const IQ: &str = "iac_quality";
const FP: &str = "false_positive_rate";
const FQ: &str = "freshness_quality";
const VD: &str = "vulnerability_detection";

const DIFFERENCES: &[Listed] = &[
    // fixtures: two raw Trivy reports (nothing readable) and one `results`-wrapped analysis.
    d("fixtures", VA, "/evaluation_mode", MODE),
    d("fixtures", SA, "/severity_distribution", D2),
    d("fixtures", SA, "/cvss_alignment", D2),
    d("fixtures", SA, "/per_repo_severity/0", D2),
    d("fixtures", SA, "/alignment_rate", D2),
    d("fixtures", SB, "/sbom_summary", D2),
    d("fixtures", SB, "/per_repo_sbom/0", D2),
    d("fixtures", SB, "/package_inventory_quality/0", D2),
    d("fixtures", SB, "/sbom_coverage_rate", D2),
    d("fixtures", SB, "/overall_vulnerability_ratio", D2),
    d("fixtures", FP, "/severity_distribution", D2),
    d("fixtures", VD, "/summary", D2),
    d("fixtures", VD, "/per_repo_results/0", D2),
    d("fixtures", VD, "/sample_vulnerabilities", D2),
    // umbraco: one flat report, no ground truth.
    d("umbraco", VA, "/evaluation_mode", MODE),
    d("umbraco", IQ, "/per_repo_iac/0/issue_types", D7),
    // sot: one schema envelope.
    d("sot", VA, "/evaluation_mode", MODE),
    d("sot", SA, "/severity_distribution", D3),
    d("sot", SA, "/per_repo_severity/0", D3),
    d("sot", SA, "/per_repo_severity/0/repo", D4),
    d("sot", SB, "/per_repo_sbom/0/repo", D4),
    d("sot", SB, "/package_inventory_quality/0/repo", D4),
    d("sot", SB, "/package_inventory_quality/0/has_targets", D3),
    d(
        "sot",
        SB,
        "/package_inventory_quality/0/targets_scanned",
        D3,
    ),
    d("sot", SB, "/package_inventory_quality/0/target_types", D7),
    d("sot", IQ, "/iac_summary", D3),
    d("sot", IQ, "/per_repo_iac/0", D3),
    d("sot", IQ, "/per_repo_iac/0/repo", D4),
    d("sot", IQ, "/per_repo_iac/0/issue_types", D7),
    d("sot", FP, "/severity_distribution", D3),
    d("sot", FQ, "/per_repo_results/0/repo", D4),
    d("sot", VD, "/summary", D3),
    d("sot", VD, "/per_repo_results/0", D3),
    d("sot", VD, "/per_repo_results/0/repo", D4),
    // paired: the umbraco report as `no-vulnerabilities` (nested truth) and the envelope as
    // `vulnerable-npm` (flat truth).
    d("paired", VA, "/evaluation_mode", MODE),
    d("paired", VA, "/summary/repos_with_ground_truth", D4),
    d("paired", VA, "/summary/total_expected_cves", D4),
    d(
        "paired",
        VA,
        "/summary/severity_alignment_rate",
        "D1 and D4: the one repo left with truth is aligned with its real ranges",
    ),
    d("paired", VA, "/per_repo_accuracy/0/expected_vulns_max", D1),
    d("paired", VA, "/per_repo_accuracy/1", D4),
    d("paired", VA, "/cve_matching", D4),
    d("paired", VA, "/severity_alignment/0/critical_expected", D1),
    d("paired", VA, "/severity_alignment/0/high_expected", D1),
    d("paired", VA, "/severity_alignment/1", D4),
    d("paired", VA, "/missed_cves", D4),
    d("paired", SA, "/severity_distribution", D3),
    d("paired", SA, "/per_repo_severity/1", D3),
    d("paired", SA, "/per_repo_severity/1/repo", D4),
    d(
        "paired",
        SA,
        "/ground_truth_comparison/0/expected_critical",
        D1,
    ),
    d("paired", SA, "/ground_truth_comparison/0/expected_high", D1),
    d("paired", SA, "/ground_truth_comparison/1", D4),
    d("paired", SB, "/per_repo_sbom/1/repo", D4),
    d("paired", SB, "/package_inventory_quality/1/repo", D4),
    d("paired", SB, "/package_inventory_quality/1/has_targets", D3),
    d(
        "paired",
        SB,
        "/package_inventory_quality/1/targets_scanned",
        D3,
    ),
    d(
        "paired",
        SB,
        "/package_inventory_quality/1/target_types",
        D7,
    ),
    d("paired", IQ, "/iac_summary", D3),
    d("paired", IQ, "/per_repo_iac/0/issue_types", D7),
    d("paired", IQ, "/per_repo_iac/1", D3),
    d("paired", IQ, "/per_repo_iac/1/repo", D4),
    d("paired", IQ, "/per_repo_iac/1/issue_types", D7),
    d("paired", FP, "/summary/clean_repos_tested", CLEAN),
    d("paired", FP, "/clean_repo_results", CLEAN),
    d("paired", FP, "/severity_distribution", D3),
    d("paired", FQ, "/per_repo_results/1/repo", D4),
    d("paired", VD, "/summary", D3),
    d("paired", VD, "/per_repo_results/1", D3),
    d("paired", VD, "/per_repo_results/1/repo", D4),
    d("paired", VD, "/ground_truth_comparison/0/expected_max", D1),
    d("paired", VD, "/ground_truth_comparison/1", D4),
];

/// One deliberate difference in a dimension's assertion outcome.
struct ListedOutcome {
    dataset: &'static str,
    dimension: &'static str,
    aspect: Aspect,
    reason: &'static str,
}

const fn o(
    dataset: &'static str,
    dimension: &'static str,
    aspect: Aspect,
    reason: &'static str,
) -> ListedOutcome {
    ListedOutcome {
        dataset,
        dimension,
        aspect,
        reason,
    }
}

/// The framework joined the envelope to the `vulnerable-npm` truth by file name and failed
/// its known CVEs (0%); named by its `metadata.repo_id`, it joins no truth, and the one repo
/// left with truth (`no-vulnerabilities`) expects no CVE, so the detection floor has nothing
/// to check.
const D4_CVES: &str = "D4: the envelope no longer joins `vulnerable-npm` truth, so no known CVE is expected and the 50% detection floor does not fail";

const OUTCOME_DIFFERENCES: &[ListedOutcome] = &[
    o("paired", VA, Aspect::Passed, D4_CVES),
    o("paired", VA, Aspect::Failures, D4_CVES),
];

const DATASETS: &[&str] = &["fixtures", "umbraco", "sot", "paired"];

fn reference_dir() -> Option<PathBuf> {
    crate::shared::shared_path("reference/caldera-trivy", "the trivy parity check")
}

/// The most specific listed difference covering `pointer`.
fn listed_for(dataset: &str, dimension: &str, pointer: &str) -> Option<usize> {
    DIFFERENCES
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            l.dataset == dataset && l.dimension == dimension && under(pointer, l.prefix)
        })
        .max_by_key(|(_, l)| l.prefix.len())
        .map(|(i, _)| i)
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[derive(Default)]
struct Tally {
    compared: usize,
    equal: usize,
    listed: usize,
}

#[test]
fn evidence_matches_the_framework_where_its_logic_is_sound() {
    let Some(root) = reference_dir() else { return };
    let env = caldera::environment();
    let suite_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("judges.d/trivy");
    let (suite, diags) = load_suite(&suite_dir, &env);
    let suite = suite.unwrap_or_else(|| panic!("suite does not load: {diags:#?}"));

    let mut used = vec![false; DIFFERENCES.len()];
    let mut used_outcomes = vec![false; OUTCOME_DIFFERENCES.len()];
    let mut unlisted = Vec::new();
    for dataset in DATASETS {
        let options = RunOptions {
            overrides: Overrides {
                results: Some(root.join("inputs").join(dataset)),
                ground_truth: Some(root.join("ground-truth")),
                ..Overrides::default()
            },
            ..RunOptions::default()
        };
        let result = run_heuristic(&env, &suite, &options)
            .unwrap_or_else(|d| panic!("{dataset}: inputs not read: {d:#?}"));
        assert_eq!(result.dimensions.len(), 7, "{dataset}");
        let mut per_dim: BTreeMap<String, Tally> = BTreeMap::new();
        let mut asserted = Tally::default();
        for verdict in &result.dimensions {
            let file = root
                .join("reference")
                .join(format!("{dataset}__{}.json", verdict.name));
            let recorded = read_json(&file);
            let reference = recorded["evidence"].clone();
            assert!(reference.is_object(), "{}: no evidence", file.display());
            let ours = serde_json::to_value(&verdict.evidence).expect("evidence serialises");
            let mut expected = Vec::new();
            leaves(&reference, String::new(), &mut expected);
            let tally = per_dim.entry(verdict.name.clone()).or_default();
            for (pointer, want) in expected {
                tally.compared += 1;
                let got = ours.pointer(&pointer);
                if got == Some(&want) {
                    tally.equal += 1;
                    continue;
                }
                match listed_for(dataset, &verdict.name, &pointer) {
                    Some(i) => {
                        used[i] = true;
                        tally.listed += 1;
                    }
                    None => unlisted.push(format!(
                        "{dataset} {} {pointer}: framework {want}, caldera {}",
                        verdict.name,
                        got.map_or_else(|| "(missing)".to_owned(), Value::to_string)
                    )),
                }
            }
            for (aspect, want, got) in outcomes(&recorded, verdict) {
                asserted.compared += 1;
                if want == got {
                    asserted.equal += 1;
                    continue;
                }
                let listed = OUTCOME_DIFFERENCES.iter().position(|l| {
                    l.dataset == *dataset && l.dimension == verdict.name && l.aspect == aspect
                });
                match listed {
                    Some(i) => {
                        used_outcomes[i] = true;
                        asserted.listed += 1;
                    }
                    None => unlisted.push(format!(
                        "{dataset} {} assertions {aspect}: framework {want}, caldera {got} \
                         (framework failures {}, caldera failures {:?})",
                        verdict.name,
                        recorded["ground_truth_assertions"]["failures"],
                        verdict.ground_truth_failures
                    )),
                }
            }
        }
        let total = per_dim.values().fold(Tally::default(), |acc, t| Tally {
            compared: acc.compared + t.compared,
            equal: acc.equal + t.equal,
            listed: acc.listed + t.listed,
        });
        println!(
            "{dataset}: {} leaves compared, {} equal, {} listed differences",
            total.compared, total.equal, total.listed
        );
        for (name, t) in &per_dim {
            println!(
                "  {name:<24} {:>3} compared {:>3} equal {:>3} listed",
                t.compared, t.equal, t.listed
            );
        }
        println!(
            "  assertion outcomes       {:>3} compared {:>3} equal {:>3} listed",
            asserted.compared, asserted.equal, asserted.listed
        );
    }
    let stale: Vec<String> = DIFFERENCES
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|(l, _)| format!("{} {} {} ({})", l.dataset, l.dimension, l.prefix, l.reason))
        .chain(
            OUTCOME_DIFFERENCES
                .iter()
                .zip(&used_outcomes)
                .filter(|(_, u)| !**u)
                .map(|(l, _)| {
                    format!(
                        "{} {} assertions {} ({})",
                        l.dataset, l.dimension, l.aspect, l.reason
                    )
                }),
        )
        .collect();
    assert!(
        unlisted.is_empty(),
        "differences not listed as deliberate:\n{}",
        unlisted.join("\n")
    );
    assert!(
        stale.is_empty(),
        "listed differences that no longer occur (remove them):\n{}",
        stale.join("\n")
    );
}
