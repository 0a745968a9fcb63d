//! `scope: repo`: one verdict per repo, combined by mean with the spread reported, and
//! `truth`/`result`/`id` narrowed to the repo being judged.

use std::path::Path;

use caldera::load::inputs::Overrides;
use caldera::load::suite::load_suite;
use caldera::run::{RunOptions, run_heuristic};
use caldera::verdict::types::Status;

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
    let env = caldera::render::environment();
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
    let scores: Vec<i64> = d.repos.iter().filter_map(|r| r.score).collect();
    assert_eq!(scores.len(), 10);
    let mean = scores.iter().sum::<i64>() as f64 / scores.len() as f64;
    // The mean is stored exact (rounding is for display only).
    assert_eq!(d.score, Some(caldera::verdict::types::Score::Mean(mean)));
    let spread = d.spread.as_ref().expect("spread");
    assert_eq!(spread.n, 10);
    assert_eq!(spread.min, *scores.iter().min().unwrap());
    assert_eq!(spread.max, *scores.iter().max().unwrap());
    assert!(spread.std.is_some());
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
