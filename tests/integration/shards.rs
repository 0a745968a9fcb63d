//! `caldera run --shard K/N` and `caldera merge`: every bundled suite split into 1, 2, 3
//! and 7 shards and merged gives the single run's result (every score, evidence value,
//! decision, verdict and problem), and merges that cannot be right are refused.
//!
//! Real processes of the built binary, run from the project root so the partials name
//! the suite as the user did.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::binary::{Caldera, Ran};
use crate::same_result::assert_same_result;

/// The fields of a result that legitimately differ between a merge and a single run:
/// the run's identity and timing, and the partial files a merge joined. Everything else
/// is compared byte for byte.
const MAY_DIFFER: [&str; 4] = ["run_id", "timestamp", "duration_ms", "shards"];

/// The shard counts every suite is split into.
const SPLITS: [u32; 4] = [1, 2, 3, 7];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn caldera(args: &[&str]) -> Ran {
    Caldera::new().args(args).dir(root()).run()
}

fn text(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Runs `suite` whole and as `n` shards merged; asserts the results and exit codes are
/// the same. `extra` goes to every command that reads inputs.
fn assert_merge_equals_single(suite: &str, n: u32, dir: &Path, extra: &[&str]) {
    let single = dir.join(format!("{}-single.json", suite.replace('/', "_")));
    let mut args = vec!["run", suite, "--heuristic", "--out", text(&single)];
    args.extend_from_slice(extra);
    let whole = caldera(&args);
    let mut partials: Vec<PathBuf> = Vec::new();
    for k in 1..=n {
        let out = dir.join(format!("{}-{k}-of-{n}.json", suite.replace('/', "_")));
        let shard = format!("{k}/{n}");
        let mut args = vec![
            "run",
            suite,
            "--heuristic",
            "--shard",
            &shard,
            "--defer-whole",
            "--out",
            text(&out),
        ];
        args.extend_from_slice(extra);
        let run = caldera(&args);
        assert_eq!(run.code, Some(0), "{suite} shard {shard}: {}", run.stderr);
        partials.push(out);
    }
    let merged = dir.join(format!("{}-merged-{n}.json", suite.replace('/', "_")));
    let mut args = vec!["merge", "--out", text(&merged)];
    args.extend(partials.iter().map(|p| text(p)));
    let merge = caldera(&args);
    assert_eq!(
        merge.code, whole.code,
        "{suite} N={n}: merge exits as the single run does: {}",
        merge.stderr
    );
    assert_same_result(
        &format!("{suite} N={n}"),
        ("single", &single),
        ("merged", &merged),
        &MAY_DIFFER,
    );
    let shards = serde_json::from_str::<Value>(&std::fs::read_to_string(&merged).unwrap()).unwrap()
        ["shards"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(shards, n as usize, "{suite}: the merge lists its partials");
}

fn bundled_suites() -> Vec<String> {
    let mut suites: Vec<String> = std::fs::read_dir(root().join("judges.d"))
        .expect("judges.d")
        .filter_map(Result::ok)
        .filter(|e| e.path().join("suite.yaml").is_file())
        .map(|e| format!("judges.d/{}", e.file_name().to_string_lossy()))
        .collect();
    suites.sort();
    suites
}

#[test]
fn every_bundled_suite_merged_from_1_2_3_and_7_shards_equals_the_single_run() {
    let suites = bundled_suites();
    assert_eq!(
        suites.len(),
        15,
        "every bundled suite is covered: {suites:?}"
    );
    let tmp = tempfile::tempdir().unwrap();
    // Two workers: the suites are independent.
    let (left, right) = suites.split_at(suites.len() / 2);
    std::thread::scope(|s| {
        for half in [left, right] {
            let dir = tmp.path();
            s.spawn(move || {
                for suite in half {
                    for n in SPLITS {
                        assert_merge_equals_single(suite, n, dir, &[]);
                    }
                }
            });
        }
    });
}

const PER_REPO_SUITE: &str = "suite: per-repo-shards
weights: relative
inputs:
  results: outputs
  ground_truth: expected
  key: [id, metadata.repo_id]
  unwrap: [data, results]
evidence:
  scans:
    for_each: $.repos[*]
    fields:
      repo: $.id
      vulns: << result.vulnerabilities if result.vulnerabilities is sequence else [] >>
      count: << vulns | length >>
      _private: << count * 2 >>
      # Operators are rewritten to bounded calls: still reads of the item only.
      _label: << repo ~ ' has ' ~ (count + 1) >>
  total: << scans | sum(attribute='count') >>
  doubled: << scans | sum(attribute='_private') >>
";

const PER_REPO_JUDGE: &str = "dimension: known_cves_per_repo
weight: 1.0
scope: repo
evidence:
  expected: << truth.expected.known_cves if truth is mapping and truth.expected.known_cves is defined else [] >>
  ids: << result.vulnerabilities | map(attribute='id') | list if result.vulnerabilities is sequence else [] >>
  _seen: << ids | length >>
  found: << match(ids, expected) >>
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

const AGGREGATE_JUDGE: &str = "dimension: totals
weight: 1.0
evidence:
  total: << total >>
  doubled: << doubled >>
  repos_with_findings: << scans | selectattr('count') | list | length >>
heuristic:
  metric: repos_with_findings
  bands:
    - { min: 5, score: 4 }
    - { score: 2 }
  reasoning: << repos_with_findings >> repos with findings, << total >> findings
";

/// A suite of a per-repo judge, per-repo records with a private field, aggregates over
/// them and an aggregate judge, over the trivy data.
fn per_repo_suite(dir: &Path) -> PathBuf {
    let suite = dir.join("per-repo-shards");
    std::fs::create_dir_all(&suite).unwrap();
    std::fs::write(suite.join("suite.yaml"), PER_REPO_SUITE).unwrap();
    std::fs::write(suite.join("known.yaml"), PER_REPO_JUDGE).unwrap();
    std::fs::write(suite.join("totals.yaml"), AGGREGATE_JUDGE).unwrap();
    let data = root().join("ground-truth/trivy");
    copy_dir(&data.join("outputs"), &suite.join("outputs"));
    copy_dir(&data.join("expected"), &suite.join("expected"));
    suite
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().filter_map(Result::ok) {
        if e.path().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn per_repo_judges_and_private_record_fields_merge_to_the_single_run() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = per_repo_suite(tmp.path());
    let parts = caldera(&["validate", "--no-data", "--parts", text(&suite)]);
    let listed = parts.stdout;
    assert!(
        listed.contains("judge known_cves_per_repo: per-repo"),
        "{listed}"
    );
    assert!(listed.contains("evidence scans: per-repo"), "{listed}");
    assert!(listed.contains("judge totals: aggregate"), "{listed}");
    assert!(listed.contains("shards: yes"), "{listed}");
    for n in [1, 3] {
        assert_merge_equals_single(text(&suite), n, tmp.path(), &[]);
    }
    // A heuristic shard's partial keeps the records' private fields (aggregates read
    // them) but not its units' private evidence, which nothing reads once they are
    // scored.
    let part = std::fs::read_to_string(
        tmp.path()
            .join(format!("{}-1-of-3.json", text(&suite).replace('/', "_"))),
    )
    .unwrap();
    assert!(
        part.contains("\"_private\""),
        "records keep their private fields"
    );
    assert!(
        !part.contains("\"_seen\""),
        "units drop their private evidence"
    );
}

/// Shards of trivy (every part per-repo or aggregate), written once for the refusals.
fn trivy_shards(dir: &Path, n: u32) -> Vec<PathBuf> {
    (1..=n)
        .map(|k| {
            let out = dir.join(format!("trivy-{k}-of-{n}.json"));
            let shard = format!("{k}/{n}");
            let run = caldera(&[
                "run",
                "judges.d/trivy",
                "--heuristic",
                "--shard",
                &shard,
                "--out",
                text(&out),
            ]);
            assert_eq!(run.code, Some(0), "{}", run.stderr);
            out
        })
        .collect()
}

fn merge(partials: &[&Path], dir: &Path) -> Ran {
    merge_with(partials, dir, &[])
}

fn merge_with(partials: &[&Path], dir: &Path, extra: &[&str]) -> Ran {
    let out = dir.join("merged.json");
    let mut args = vec!["merge", "--out", text(&out)];
    args.extend_from_slice(extra);
    args.extend(partials.iter().map(|p| text(p)));
    caldera(&args)
}

#[test]
fn merge_refuses_a_missing_shard_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let p = trivy_shards(tmp.path(), 3);
    let Ran {
        code, stderr: err, ..
    } = merge(&[&p[0], &p[2]], tmp.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("shard 2/3 is missing"), "{err}");
    assert!(!tmp.path().join("merged.json").exists());
}

#[test]
fn merge_refuses_a_shard_given_twice_naming_both_files() {
    let tmp = tempfile::tempdir().unwrap();
    let p = trivy_shards(tmp.path(), 2);
    let copy = tmp.path().join("copy-of-1.json");
    std::fs::copy(&p[0], &copy).unwrap();
    let Ran {
        code, stderr: err, ..
    } = merge(&[&p[0], &p[1], &copy], tmp.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("shard 1/2 is given more than once"), "{err}");
    assert!(err.contains("copy-of-1.json"), "{err}");
}

#[test]
fn merge_refuses_shards_of_different_n_or_different_suites() {
    let tmp = tempfile::tempdir().unwrap();
    let two = trivy_shards(tmp.path(), 2);
    let three = trivy_shards(tmp.path(), 3);
    let Ran {
        code, stderr: err, ..
    } = merge(&[&two[0], &three[1], &three[2]], tmp.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("same N"), "{err}");

    let scc = tmp.path().join("scc-2-of-2.json");
    let run = caldera(&[
        "run",
        "judges.d/scc",
        "--heuristic",
        "--shard",
        "2/2",
        "--out",
        text(&scc),
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let Ran {
        code, stderr: err, ..
    } = merge(&[&two[0], &scc], tmp.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is not of the same run"), "{err}");
    assert!(err.contains("suite"), "{err}");
}

#[test]
fn merge_refuses_a_partial_edited_after_it_was_written() {
    let tmp = tempfile::tempdir().unwrap();
    let p = trivy_shards(tmp.path(), 2);
    let original = std::fs::read_to_string(&p[1]).unwrap();
    let mut doc: Value = serde_json::from_str(&original).unwrap();
    // A repo's record says one finding more than the shard computed.
    let records = doc["body"]["records"]["scans"]
        .as_object_mut()
        .expect("per-repo records of `scans`");
    let (_, first) = records.iter_mut().next().expect("a repo");
    first[0]["total"] = Value::from(first[0]["total"].as_i64().unwrap_or(0) + 1);
    std::fs::write(&p[1], serde_json::to_string(&doc).unwrap()).unwrap();
    let Ran {
        code, stderr: err, ..
    } = merge(&[&p[0], &p[1]], tmp.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("changed after it was written"), "{err}");
    assert!(err.contains("trivy-2-of-2.json"), "{err}");
}

#[test]
fn shard_refuses_a_whole_judge_without_defer_whole_and_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p.json");
    let run = caldera(&[
        "run",
        "judges.d/dotcover",
        "--heuristic",
        "--shard",
        "1/2",
        "--out",
        text(&out),
    ]);
    let err = run.stderr;
    assert_eq!(run.code, Some(2), "{err}");
    assert!(
        err.contains("judge `accuracy` needs every document at once"),
        "{err}"
    );
    assert!(
        err.contains("suite.yaml:47"),
        "the first whole read, located: {err}"
    );
    assert!(err.contains("--defer-whole"), "{err}");
    assert!(!out.exists(), "nothing is written");
}

#[test]
fn merge_with_deferred_whole_parts_reads_only_inside_the_project_unless_told_and_refuses_when_the_inputs_are_gone()
 {
    let tmp = tempfile::tempdir().unwrap();
    let outputs = tmp.path().join("outputs");
    copy_dir(&root().join("ground-truth/dependensee/outputs"), &outputs);
    let p: Vec<PathBuf> = (1..=2)
        .map(|k| {
            let out = tmp.path().join(format!("d-{k}.json"));
            let shard = format!("{k}/2");
            let run = caldera(&[
                "run",
                "judges.d/dependensee",
                "--heuristic",
                "--shard",
                &shard,
                "--defer-whole",
                "--results",
                text(&outputs),
                "--out",
                text(&out),
            ]);
            assert_eq!(run.code, Some(0), "{}", run.stderr);
            out
        })
        .collect();
    // The folder the partials name is outside the project: read only when told.
    let Ran {
        code, stderr: err, ..
    } = merge(&[&p[0], &p[1]], tmp.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("outside"), "{err}");
    let Ran {
        code, stderr: err, ..
    } = merge_with(&[&p[0], &p[1]], tmp.path(), &["--allow-outside-root"]);
    assert_eq!(code, Some(0), "{err}");

    std::fs::remove_dir_all(&outputs).unwrap();
    let Ran {
        code, stderr: err, ..
    } = merge_with(&[&p[0], &p[1]], tmp.path(), &["--allow-outside-root"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("need the inputs the shards read"), "{err}");
}

#[test]
fn validate_and_plan_say_per_judge_which_part_it_is() {
    let validate = caldera(&[
        "validate",
        "--no-data",
        "--parts",
        "judges.d/trivy",
        "judges.d/dotcover",
    ]);
    assert_eq!(validate.code, Some(0));
    let listed = validate.stdout;
    insta::assert_snapshot!("validate_parts_trivy_dotcover", listed);
    let plan = caldera(&["plan", "--parts", "judges.d/trivy", "--no-cache"]);
    let planned = plan.stdout;
    assert!(
        planned.starts_with(&listed[..listed.find("parts of suite `dotcover`").unwrap()]),
        "plan --parts prints the same parts: {planned}"
    );
}

/// What the run's data check finds (a field path that never matched) is in the merged
/// result exactly as in the single run: shard 1 checks the same samples, read again,
/// without holding the other shards' documents.
#[test]
fn the_data_check_of_shard_1_finds_what_the_single_run_finds() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = per_repo_suite(tmp.path());
    std::fs::write(
        suite.join("typo.yaml"),
        "dimension: typo
weight: 1.0
evidence:
  # `cuont` is a typo of `count`: never there, so the judge always sees 0.
  counted: << scans | map(attribute='cuont') | select | list | length >>
heuristic:
  metric: counted
  bands:
    - { min: 1, score: 4 }
    - { score: 2 }
  reasoning: << counted >> repos counted
",
    )
    .unwrap();
    let single = tmp.path().join("single.json");
    caldera(&["run", text(&suite), "--heuristic", "--out", text(&single)]);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&single).unwrap()).unwrap();
    let problems = doc["summary"]["problems"].to_string();
    assert!(
        problems.contains("cuont"),
        "the run's data check sees it: {problems}"
    );
    for n in [2, 3] {
        assert_merge_equals_single(text(&suite), n, tmp.path(), &[]);
    }
}

/// Every shard reads every file for its id, but builds only its own repos' documents
/// (the others' ids are skimmed): a file that does not parse, at any depth, is reported
/// alike by every shard whoever owns it, ids come from the same place (a key, an escaped
/// key, a nested key, the file name), and the merge equals the single run.
#[test]
fn every_shard_reads_every_file_alike_whoever_owns_it() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = per_repo_suite(tmp.path());
    let yaml = std::fs::read_to_string(suite.join("suite.yaml")).unwrap();
    let yaml = yaml.replace(
        "  results: outputs\n",
        "  results: { folder: outputs, skip_unreadable: true }\n",
    );
    std::fs::write(suite.join("suite.yaml"), yaml).unwrap();
    let outputs = suite.join("outputs");
    for (file, text) in [
        // A key twice deep inside: the full parse refuses it; so must every shard.
        (
            "deep-duplicate.json",
            r#"{"id": "deep-duplicate", "results": {"vulnerabilities": [{"id": "CVE-1", "id": "CVE-2"}]}}"#,
        ),
        (
            "broken.json",
            r#"{"id": "broken", "results": {"vulnerabilities": ["#,
        ),
        (
            "escaped.json",
            r#"{"i\u0064": "escaped-id", "results": {"vulnerabilities": []}}"#,
        ),
        (
            "nested.json",
            r#"{"metadata": {"repo_id": "nested-id"}, "results": {"vulnerabilities": [{"id": "CVE-9"}]}}"#,
        ),
        ("stem-only.json", r#"{"results": {"vulnerabilities": []}}"#),
    ] {
        std::fs::write(outputs.join(file), text).unwrap();
    }
    for n in [2, 3, 7] {
        assert_merge_equals_single(text(&suite), n, tmp.path(), &[]);
        let bodies: Vec<Value> = (1..=n)
            .map(|k| {
                let file = tmp.path().join(format!(
                    "{}-{k}-of-{n}.json",
                    text(&suite).replace('/', "_")
                ));
                serde_json::from_str::<Value>(&std::fs::read_to_string(file).unwrap()).unwrap()
                    ["body"]
                    .clone()
            })
            .collect();
        for body in &bodies {
            assert_eq!(
                body["repos"], bodies[0]["repos"],
                "N={n}: every shard lists every repo"
            );
            assert_eq!(
                body["input_problems"], bodies[0]["input_problems"],
                "N={n}: every shard reports the same unreadable files"
            );
        }
        let repos = bodies[0]["repos"].to_string();
        for id in ["escaped-id", "nested-id", "stem-only"] {
            assert!(repos.contains(id), "{id} in {repos}");
        }
        let problems = bodies[0]["input_problems"].to_string();
        for file in ["deep-duplicate.json", "broken.json"] {
            assert!(problems.contains(file), "{file} in {problems}");
        }
    }
}
