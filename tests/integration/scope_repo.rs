//! `scope: repo`: one verdict per repo, combined by mean with the spread reported, and
//! `truth`/`result`/`id` narrowed to the repo being judged.

use std::path::Path;

use caldera::Overrides;
use caldera::Status;
use caldera::load_suite;
use caldera::{RunOptions, run_heuristic};

const SUITE: &str = "# yaml-language-server: $schema=../schemas/suite.schema.json
suite: per-repo
inputs:
  results: outputs
  ground_truth: expected
";

const JUDGE: &str = "# yaml-language-server: $schema=../schemas/judge.schema.json
dimension: known_cves_per_repo
weight: 1.0
scope: repo
evidence:
  expected: << truth.expected.known_cves if truth is mapping and truth.expected.known_cves is defined else [] >>
  found: << match(result.vulnerabilities | map(attribute='id') | list, expected) >>
  rate: << pct(found.tp, found.expected, zero=none) >>
heuristic:
  metric: rate
  when_no_data: { if: << expected | length == 0 >>, score: 3, reasoning: << id >> lists no known CVEs }
  bands:
    - { min: 100, score: 5 }
    - { min: 50, score: 3 }
    - { score: 1 }
  reasoning: << id >> found << found.tp >> of << found.expected >> known CVEs
assertions:
  - that: << truth is mapping >>
    message: << id >> has no ground truth
";

#[test]
fn per_repo_judges_score_each_repo_and_report_the_spread() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("per-repo");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("suite.yaml"), SUITE).unwrap();
    std::fs::write(dir.join("known.yaml"), JUDGE).unwrap();
    let env = caldera::environment();
    let (suite, diags) = load_suite(&dir, &env);
    assert!(
        diags.is_empty(),
        "{}",
        caldera::diag::render_text(&diags, false)
    );
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("ground-truth/trivy");
    let options = RunOptions {
        overrides: Overrides {
            results: Some(data.join("outputs")),
            ground_truth: Some(data.join("expected")),
            ..Overrides::default()
        },
        ..RunOptions::default()
    };
    let result = run_heuristic(&env, &suite.unwrap(), &options).unwrap();
    let d = &result.dimensions[0];
    assert_eq!(d.status, Status::Scored);
    assert_eq!(d.repos.len(), 10, "one verdict per result");
    // Per repo, by hand from ground-truth/trivy: the CVE ids each output reports against
    // `expected.known_cves`, exact ids (a GHSA id is not its CVE), banded 100% -> 5,
    // >= 50% -> 3, else 1; a repo with no known CVEs (or no truth) scores 3.
    //   clean-service     no known CVEs                              3
    //   critical-cves     4 of 5 (CVE-2021-45046 missing)   80.0%    3
    //   dev-deps-fp       2 of 2                            100%     5
    //   iac-platform      no known CVEs                              3
    //   legacy-admin-portal  no ground truth                         3
    //   mixed-severity    3 of 3                            100%     5
    //   outdated-polyglot 2 of 3 (CVE-2024-43485 missing)   66.7%    3
    //   sbom-monorepo     4 of 4                            100%     5
    //   ghsa-aliases      2 of 3 (CVE-2021-23337 reported as GHSA-35jh-r3h4-6jhm)  3
    //   clean-flask-api   no known CVEs                              3
    let expected = [
        ("clean-service", 3),
        ("critical-cves", 3),
        ("dev-deps-fp", 5),
        ("iac-platform", 3),
        ("legacy-admin-portal", 3),
        ("mixed-severity", 5),
        ("outdated-polyglot", 3),
        ("sbom-monorepo", 5),
        ("ghsa-aliases", 3),
        ("clean-flask-api", 3),
    ];
    let mut scores: Vec<(&str, i64)> = d
        .repos
        .iter()
        .map(|r| (r.repo.as_str(), r.score.expect("every repo scored")))
        .collect();
    scores.sort_unstable();
    let mut want = expected.to_vec();
    want.sort_unstable();
    assert_eq!(scores, want);
    // Mean: (7 * 3 + 3 * 5) / 10 = 36 / 10 = 3.6, stored unrounded.
    match d.score {
        Some(caldera::Score::Mean(mean)) => {
            assert!((mean - 3.6).abs() < 1e-12, "{mean}");
        }
        ref other => panic!("expected a mean score, got {other:?}"),
    }
    // Sample standard deviation: deviations -0.6 (seven times) and +1.4 (three times);
    // 7 * 0.36 + 3 * 1.96 = 2.52 + 5.88 = 8.4; 8.4 / (10 - 1) = 0.9333...;
    // sqrt(0.9333...) = 0.966091783...
    let spread = d.spread.as_ref().expect("spread");
    assert_eq!((spread.n, spread.min, spread.max), (10, 3, 5));
    let std = spread.std.expect("a standard deviation");
    assert!((std - 0.966_091_783).abs() < 1e-9, "{std}");
    // `id` and `truth` are the repo's own: critical-cves misses one of its five CVEs.
    let critical = d.repos.iter().find(|r| r.repo == "critical-cves").unwrap();
    assert_eq!(critical.score, Some(3), "{}", critical.reasoning);
    assert!(
        critical.reasoning.starts_with("critical-cves found 4 of 5"),
        "{}",
        critical.reasoning
    );
    // The repo without ground truth fails the assertion, named with its repo.
    assert!(
        d.ground_truth_failures
            .iter()
            .any(|f| f.contains("legacy-admin-portal has no ground truth")),
        "{:?}",
        d.ground_truth_failures
    );
}

/// A per-repo judge that reads `repos` and `results` as a suite judge would: in a
/// `scope: repo` judge both hold only the repo being judged, so `repos[0]` is that repo
/// (a new user's `<< repos[0].id >>` once judged every repo as the first one).
const READS_THE_LISTS: &str = "dimension: own_repo
weight: 1.0
scope: repo
evidence:
  first: << repos[0].id >>
  listed: << repos | length >>
  keyed: << results.keys() | list >>
  selected: $.repos[*].id
  n: << (repos[0].result.vulnerabilities or []) | length >>
heuristic:
  metric: n
  bands:
    - { min: 3, score: 5 }
    - { score: 2 }
  reasoning: << first >> reports << n >> findings
";

#[test]
fn in_a_per_repo_judge_repos_and_results_hold_only_the_repo_judged() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("per-repo");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("suite.yaml"), SUITE).unwrap();
    std::fs::write(dir.join("own.yaml"), READS_THE_LISTS).unwrap();
    let env = caldera::environment();
    let (suite, diags) = load_suite(&dir, &env);
    let suite = suite.unwrap_or_else(|| panic!("{}", caldera::diag::render_text(&diags, false)));
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("ground-truth/trivy");
    let options = RunOptions {
        overrides: Overrides {
            results: Some(data.join("outputs")),
            ground_truth: Some(data.join("expected")),
            ..Overrides::default()
        },
        ..RunOptions::default()
    };
    let result = run_heuristic(&env, &suite, &options).unwrap();
    let d = &result.dimensions[0];
    assert_eq!(d.repos.len(), 10);
    for r in &d.repos {
        let ev = serde_json::to_value(&r.evidence).unwrap();
        assert_eq!(ev["first"], r.repo.as_str(), "{}: {ev}", r.repo);
        assert_eq!(ev["listed"], 1, "{}: {ev}", r.repo);
        assert_eq!(ev["keyed"], serde_json::json!([r.repo]), "{}", r.repo);
        assert_eq!(ev["selected"], serde_json::json!([r.repo]), "{}", r.repo);
    }
    // The scores are each repo's own: not all equal to the first repo's.
    let scores: std::collections::BTreeSet<i64> = d.repos.iter().filter_map(|r| r.score).collect();
    assert_eq!(scores.len(), 2, "{scores:?}");
}
