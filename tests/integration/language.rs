//! The judge language end to end, on small suites written here over the sample data of
//! `tests/fixtures/examples`: heuristics without a metric, `when_no_data` with computed
//! scores and recommendations, `llm: never` judges in LLM mode.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::binary::{Caldera, Ran};
use crate::llm_server::{MockServer, anthropic_text};

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A project in `root`: the sample suite at `judges.d/examples` with `judges` as its
/// judge files (name, YAML) and `prompts` under `prompts/` (name, text).
pub fn project(root: &Path, judges: &[(&str, &str)], prompts: &[(&str, &str)]) -> PathBuf {
    let suite = root.join("judges.d/examples");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/examples"),
        &suite,
    );
    for (name, text) in judges {
        std::fs::write(suite.join(name), text).expect("write judge");
    }
    std::fs::create_dir_all(root.join("prompts")).expect("mkdir");
    for (name, text) in prompts {
        std::fs::write(root.join("prompts").join(name), text).expect("write prompt");
    }
    suite
}

/// Runs the binary in `root` with `args` and `env`; a `run` writes its result to
/// `result.json`, read into the returned result.
pub fn caldera(root: &Path, args: &[&str], env: &[(&str, &str)]) -> Ran {
    let cmd = Caldera::new().dir(root).args(args);
    let cmd = if args.first() == Some(&"run") {
        cmd.out(root.join("result.json"))
    } else {
        cmd
    };
    cmd.envs(env).run()
}

fn dimension<'a>(result: &'a Value, name: &str) -> &'a Value {
    result["dimensions"]
        .as_array()
        .and_then(|d| d.iter().find(|d| d["name"] == name))
        .unwrap_or_else(|| panic!("no dimension {name} in {result:#}"))
}

const COUNTS: &str = "\
dimension: counts
weight: 1
llm: never
evidence:
  joined: << repos | selectattr('truth') | list | length >>
  findings: << repos | map(attribute='result.findings') | flatten | list | length >>
heuristic:
  when_no_data:
    if: << joined == 0 >>
    score: << 3 if findings > 0 else 1 >>
    confidence: << 0.3 if findings > 0 else 0.2 >>
    reasoning: No scan has ground truth (<< findings >> findings).
    recommendations:
      - text: Add ground truth for at least one sample repo.
      - if: << findings == 0 >>
        text: Never shown here.
  score: 4
  reasoning: << findings >> findings
";

#[test]
fn when_no_data_computes_its_score_and_gives_recommendations() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let suite = project(tmp.path(), &[("counts.yaml", COUNTS)], &[]);
    std::fs::remove_dir_all(suite.join("data/truth/")).expect("rm truth");
    std::fs::create_dir_all(suite.join("data/truth/")).expect("mkdir");
    let Ran { stderr, result, .. } = caldera(
        tmp.path(),
        &["run", "judges.d/examples", "--heuristic"],
        &[],
    );
    let d = dimension(&result, "counts");
    assert_eq!(d["score"], 3, "{stderr}");
    assert_eq!(d["confidence"], 0.3);
    assert_eq!(
        d["recommendations"],
        serde_json::json!(["Add ground truth for at least one sample repo."])
    );
    assert_eq!(d["reasoning"], "No scan has ground truth (4 findings).");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_judge_with_llm_never_is_scored_by_its_heuristic_in_llm_mode() {
    let server = MockServer::start(|_, _| {
        anthropic_text(
            r#"{"score": 2, "confidence": 0.9, "reasoning": "asked", "evidence_cited": [], "recommendations": [], "sub_scores": {}}"#,
            "end_turn",
        )
    })
    .await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let asked = "\
dimension: asked
weight: 1
evidence:
  n: << repos | length >>
heuristic:
  metric: n
  bands: [{ min: 1, score: 5 }, { score: 1 }]
  reasoning: << n >> repos
prompt: ../../prompts/asked.md
";
    project(
        tmp.path(),
        &[("counts.yaml", COUNTS), ("asked.yaml", asked)],
        &[("asked.md", "Judge these: << evidence >>")],
    );
    let root = tmp.path().to_path_buf();
    let base = server.base.clone();
    let Ran {
        code,
        stderr,
        result,
        ..
    } = tokio::task::spawn_blocking(move || {
        caldera(
            &root,
            &[
                "run",
                "judges.d/examples",
                "--timeout",
                "5",
                "--cache",
                "off",
            ],
            &[
                ("ANTHROPIC_API_KEY", "test-key"),
                ("ANTHROPIC_BASE_URL", base.as_str()),
            ],
        )
    })
    .await
    .expect("joins");
    assert_eq!(
        server.hits(),
        1,
        "only the judge without `llm: never` asks: {stderr}"
    );
    let never = dimension(&result, "counts");
    assert_eq!(never["source"], "heuristic");
    assert_eq!(never["score"], 4);
    assert!(
        never["note"]
            .as_str()
            .unwrap_or_default()
            .contains("llm: never"),
        "{never:#}"
    );
    assert!(never["llm_calls"].is_null());
    let asked = dimension(&result, "asked");
    assert_eq!(asked["source"], "llm");
    assert_eq!(asked["score"], 2);
    assert!(asked["note"].is_null());
    // Weights 1 and 1 (relative): (4 + 2) / 2 = 3.0, WEAK_PASS in the default decision
    // table (3.0 <= x < 3.5), so exit 0.
    assert_eq!(result["decision"], "WEAK_PASS", "{stderr}");
    assert_eq!(code, Some(0), "{stderr}");
}

/// A suite whose judges all say `llm: never` asks no model, so a run without
/// `--heuristic` needs no provider: no key, no `claude` on PATH. It scores every judge
/// by its heuristic and says on stderr that no model was asked and no provider needed.
#[test]
fn a_suite_of_llm_never_judges_runs_without_a_provider_and_says_so() {
    let tmp = tempfile::tempdir().expect("tempdir");
    project(tmp.path(), &[("counts.yaml", COUNTS)], &[]);
    let empty = tmp.path().join("no-tools");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let Ran {
        code,
        stderr,
        result,
        ..
    } = caldera(
        tmp.path(),
        &["run", "judges.d/examples", "--cache", "off"],
        &[("PATH", empty.to_str().expect("utf-8 path"))],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr
            .contains("every judge says `llm: never`: no model is asked, so no provider is needed"),
        "{stderr}"
    );
    assert_eq!(result["mode"], "llm", "{result:#}");
    assert!(result["provider"].is_null(), "{result:#}");
    assert!(result["model"].is_null(), "{result:#}");
    let never = dimension(&result, "counts");
    assert_eq!(never["source"], "heuristic");
    assert_eq!(never["score"], 4);
    assert!(
        never["note"]
            .as_str()
            .unwrap_or_default()
            .contains("llm: never"),
        "{never:#}"
    );
    assert!(
        !tmp.path().join("result.interactions.jsonl").exists(),
        "no interaction, no log"
    );
}

/// `identity_keys` in suite.yaml says which field identifies a record when two runs'
/// evidence is compared: with `rule`, a finding whose line moved is one change of its
/// line, where the first distinct field (`line`) would read it as a removal and an
/// addition. The result records the keys, so `caldera diff` of saved results uses them.
#[test]
fn identity_keys_of_the_suite_match_evidence_records_in_a_diff() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let rules = "\
dimension: rules
weight: 1
llm: never
evidence:
  found:
    for_each: $.results.beta.findings[*]
    fields:
      line: $.line
      rule: $.rule
heuristic:
  score: 3
  reasoning: constant
";
    let suite = project(tmp.path(), &[("rules.yaml", rules)], &[]);
    let yaml = std::fs::read_to_string(suite.join("suite.yaml")).expect("read");
    std::fs::write(
        suite.join("suite.yaml"),
        format!("{yaml}identity_keys: [rule]\n"),
    )
    .expect("write");
    let beta = |g101_line: u32| {
        let doc = serde_json::json!({"id": "beta", "findings": [
            {"rule": "G101", "line": g101_line}, {"rule": "G102", "line": 9}]});
        std::fs::write(suite.join("data/results/beta.json"), doc.to_string()).expect("write");
    };
    beta(3);
    let Ran {
        code,
        stderr,
        result,
        ..
    } = caldera(tmp.path(), &["run", "judges.d/examples"], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(result["identity_keys"], serde_json::json!(["rule"]));
    std::fs::rename(tmp.path().join("result.json"), tmp.path().join("base.json")).expect("mv");
    beta(5);
    let Ran { code, stderr, .. } = caldera(tmp.path(), &["run", "judges.d/examples"], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let diff = Caldera::new()
        .dir(tmp.path())
        .args(["diff", "base.json", "result.json"])
        .run();
    let stdout = diff.stdout;
    assert!(
        stdout.contains("$.evidence.found[?@.rule=='G101'].line: 3 -> 5"),
        "{stdout}"
    );
    assert!(!stdout.contains("removed"), "{stdout}");
}

/// Each repo of the run context names its result file: `file`, the path relative to the
/// results folder (`/`-separated, the run folder included), and `stem`, its name without
/// `.json`. A judge can choose its mode from them (here a score by the file name); the
/// result documents do not carry them, only the context does.
#[test]
fn repos_in_the_context_carry_the_result_file_and_its_stem() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let by_file = "\
dimension: by_file
weight: 1
llm: never
evidence:
  files: << repos | map(attribute='file') | list >>
  stems: << repos | map(attribute='stem') | list >>
  per_repo:
    for_each: $.repos[*]
    fields:
      id: $.id
      file: $.file
      stem: $.stem
heuristic:
  score: << 5 if 'gamma' in files | map('replace', '/output.json', '') | list else 1 >>
  reasoning: << files | join(', ') >>
";
    let suite = project(tmp.path(), &[("by_file.yaml", by_file)], &[]);
    let run = suite.join("data/results/gamma");
    std::fs::create_dir_all(&run).expect("mkdir");
    std::fs::write(
        run.join("output.json"),
        r#"{"language": "c", "findings": []}"#,
    )
    .expect("write");
    std::fs::write(
        suite.join("suite.yaml"),
        "suite: examples\nweights: relative\ninputs:\n  results: { folder: data/results, run_file: output.json }\n  ground_truth: data/truth\n",
    )
    .expect("write");
    let Ran {
        code,
        stderr,
        result,
        ..
    } = caldera(
        tmp.path(),
        &["run", "judges.d/examples", "--heuristic"],
        &[],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let d = dimension(&result, "by_file");
    assert_eq!(
        d["evidence"]["files"],
        serde_json::json!(["alpha.json", "beta.json", "gamma/output.json"]),
        "{d:#}"
    );
    assert_eq!(
        d["evidence"]["stems"],
        serde_json::json!(["alpha", "beta", "output"])
    );
    assert_eq!(
        d["evidence"]["per_repo"][2],
        serde_json::json!({"id": "gamma", "file": "gamma/output.json", "stem": "output"})
    );
    assert_eq!(d["score"], 5, "{d:#}");
}

const GAMMA: &str = "\
dimension: gamma
weight: 1
evidence:
  ratio: << results.gamma.stats.palma >>
  unbounded: << results.gamma.stats.palma > 1e308 >>
  repos_read: << repos | map(attribute='id') | list >>
  baseline: << inputs.baseline >>
heuristic:
  score: 3
  reasoning: << repos_read | join(', ') >>
";

/// Writes the inputs the three input options are about: a run folder whose
/// `output.json` holds Python's `Infinity`, a broken file, and a broken named input.
fn messy_inputs(suite: &Path) {
    let run = suite.join("data/results/gamma");
    std::fs::create_dir_all(&run).expect("mkdir");
    std::fs::write(
        run.join("output.json"),
        "{\"language\": \"c\", \"findings\": [], \"stats\": {\"palma\": Infinity, \"gini\": NaN}}",
    )
    .expect("write");
    std::fs::write(
        suite.join("data/results/broken.json"),
        "{\"id\": \"broken\",\n  \"x\": }",
    )
    .expect("write");
    std::fs::write(suite.join("data/baseline.json"), "[1, 2,").expect("write");
}

fn suite_yaml(results: &str) -> String {
    format!(
        "suite: examples\nweights: relative\ninputs:\n  results: {results}\n  ground_truth: data/truth\n  files:\n    baseline: {{ file: data/baseline.json, skip_unreadable: true }}\n"
    )
}

#[test]
fn lenient_json_run_folders_and_skipped_files_are_read_and_listed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let suite = project(tmp.path(), &[("gamma.yaml", GAMMA)], &[]);
    messy_inputs(&suite);
    std::fs::write(
        suite.join("suite.yaml"),
        suite_yaml(
            "{ folder: data/results, json: lenient, skip_unreadable: true, run_file: output.json }",
        ),
    )
    .expect("write");
    let Ran { stderr, result, .. } = caldera(
        tmp.path(),
        &["run", "judges.d/examples", "--heuristic"],
        &[],
    );
    let d = dimension(&result, "gamma");
    assert_eq!(d["status"], "scored", "{stderr}\n{d:#}");
    // The run folder is named by its folder; Infinity is read, and shown as null.
    assert_eq!(
        d["evidence"]["repos_read"],
        serde_json::json!(["alpha", "beta", "gamma"])
    );
    assert_eq!(d["evidence"]["unbounded"], true);
    assert_eq!(d["evidence"]["ratio"], Value::Null);
    assert_eq!(d["evidence"]["baseline"], Value::Null);
    let problems: Vec<&str> = result["summary"]["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter_map(|p| p["message"].as_str())
        .collect();
    let skipped: Vec<&&str> = problems
        .iter()
        .filter(|m| m.starts_with("skipped"))
        .collect();
    assert_eq!(skipped.len(), 2, "{problems:#?}");
    assert!(
        skipped[0].contains("broken.json:2:") && skipped[0].contains("inputs.results"),
        "{skipped:?}"
    );
    assert!(skipped[1].contains("baseline.json") && skipped[1].contains("inputs.files.baseline"));
    assert_eq!(
        result["inputs"]["skipped"].as_array().map(Vec::len),
        Some(2)
    );
}

#[test]
fn strict_json_refuses_infinity_and_says_how_to_read_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let suite = project(tmp.path(), &[("gamma.yaml", GAMMA)], &[]);
    messy_inputs(&suite);
    std::fs::remove_file(suite.join("data/results/broken.json")).expect("rm");
    std::fs::write(
        suite.join("suite.yaml"),
        suite_yaml("{ folder: data/results, run_file: output.json }"),
    )
    .expect("write");
    let Ran { code, stderr, .. } = caldera(
        tmp.path(),
        &["run", "judges.d/examples", "--heuristic"],
        &[],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("error[json-syntax]"), "{stderr}");
    assert!(stderr.contains("gamma/output.json:1:"), "{stderr}");
    assert!(stderr.contains("json: lenient"), "{stderr}");
}

#[test]
fn a_prompt_name_that_renders_empty_is_a_load_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let per_repo = "\
dimension: per_repo
weight: 1
scope: repo
evidence:
  findings: << result.findings | length >>
heuristic:
  metric: findings
  bands: [{ min: 1, score: 4 }, { score: 2 }]
  reasoning: << findings >> findings
prompt: ../../prompts/per_repo.md
";
    project(
        tmp.path(),
        &[("per_repo.yaml", per_repo)],
        &[(
            "per_repo.md",
            "Repo << id >> has << evidence.findings >> findings.\n<< findngs >>\n",
        )],
    );
    let Ran { code, stderr, .. } = caldera(tmp.path(), &["validate", "judges.d/examples"], &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("prompt reads `id`, which is not defined where it renders"),
        "{stderr}"
    );
    assert!(stderr.contains("per_repo.md:1:9"), "{stderr}");
    assert!(
        stderr.contains("did you mean `evidence.findings`?"),
        "{stderr}"
    );
}

/// The trap of a misspelled field path: the run gives a plausible score from
/// `when_no_data`; `caldera validate` on the suite's own inputs names the path, where it
/// stopped, and what was meant.
#[test]
fn validate_on_the_data_catches_a_misspelled_path_that_falls_through_to_when_no_data() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let rules = "\
dimension: rules
weight: 1
evidence:
  expected: << truth.alpha.expectd.rules | default([]) >>
  found: << results.alpha.findings | map(attribute='rule') | select('in', expected) | unique | list >>
  recall: << pct(found | length, expected | length) >>
heuristic:
  metric: recall
  bands: [{ min: 90, score: 5 }, { score: 2 }]
  when_no_data: { if: << expected | length == 0 >>, score: 3, reasoning: No rules expected. }
  reasoning: << recall >>%
";
    project(tmp.path(), &[("rules.yaml", rules)], &[]);
    // The run alone looks fine.
    let Ran { result, .. } = caldera(
        tmp.path(),
        &["run", "judges.d/examples", "--heuristic"],
        &[],
    );
    assert_eq!(dimension(&result, "rules")["score"], 3);
    // Validation on the data does not.
    let Ran { code, stderr, .. } = caldera(tmp.path(), &["validate", "judges.d/examples"], &[]);
    assert_eq!(code, Some(0), "warnings only: {stderr}");
    assert!(
        stderr.contains(
            "warning[never-matched]: field path `truth.alpha.expectd.rules` never matched anything"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("rules.yaml:4:16"), "{stderr}");
    assert!(
        stderr.contains("did you mean `truth.alpha.expected`?"),
        "{stderr}"
    );
    let Ran { code, .. } = caldera(
        tmp.path(),
        &["validate", "judges.d/examples", "--deny-warnings"],
        &[],
    );
    assert_eq!(code, Some(2));
    let Ran { code, stderr, .. } = caldera(
        tmp.path(),
        &[
            "validate",
            "judges.d/examples",
            "--no-data",
            "--deny-warnings",
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{stderr}");
}

/// Issue 20: a misspelled path in suite evidence gave scores and a FAIL with nothing
/// worth a look; only `caldera validate` named it. A run reports the data check of the
/// judges it ran: in the result's problems (kind `data`) and in the terminal summary.
#[test]
fn a_run_reports_a_misspelled_path_of_suite_evidence_worth_a_look() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let rules = "\
dimension: rules
weight: 1
evidence:
  found: << results.alpha.findings | map(attribute='rule') | select('in', expected_rules) | unique | list >>
  recall: << pct(found | length, expected_rules | length) >>
heuristic:
  metric: recall
  bands: [{ min: 90, score: 5 }, { score: 2 }]
  when_no_data: { if: << expected_rules | length == 0 >>, score: 3, reasoning: No rules expected. }
  reasoning: << recall >>%
";
    let suite = project(tmp.path(), &[("rules.yaml", rules)], &[]);
    let yaml = std::fs::read_to_string(suite.join("suite.yaml")).expect("read")
        + "evidence:\n  expected_rules: << truth.alpha.expectd.rules | default([]) >>\n";
    std::fs::write(suite.join("suite.yaml"), yaml).expect("write");
    let Ran { result, .. } = caldera(
        tmp.path(),
        &["run", "judges.d/examples", "--heuristic"],
        &[],
    );
    assert_eq!(dimension(&result, "rules")["score"], 3, "when_no_data");
    let problems = result["summary"]["problems"].as_array().expect("problems");
    let data: Vec<&str> = problems
        .iter()
        .filter(|p| p["kind"] == "data")
        .filter_map(|p| p["message"].as_str())
        .collect();
    assert_eq!(data.len(), 1, "{problems:?}");
    assert!(
        data[0].contains("field path `truth.alpha.expectd.rules` never matched anything"),
        "{}",
        data[0]
    );
    assert!(data[0].contains("suite.yaml:"), "{}", data[0]);
    assert!(
        data[0].contains("did you mean `truth.alpha.expected`?"),
        "{}",
        data[0]
    );
    // The terminal summary lists it under what is worth a look.
    let out = Caldera::new()
        .dir(tmp.path())
        .args(["run", "judges.d/examples", "--heuristic", "--out", "r.json"])
        .run();
    let table = out.stdout;
    assert!(table.contains("[data]"), "{table}");
    assert!(table.contains("truth.alpha.expectd.rules"), "{table}");
}

/// Suite evidence is part of what the judges rest on: the result carries it under
/// `suite_evidence` (private `_names` left out, as in a judge's evidence) and
/// `caldera render` shows it before the prompts. Before, it appeared nowhere.
#[test]
fn suite_evidence_is_in_the_result_and_in_render() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let rules = "\
dimension: rules
weight: 1
evidence:
  found: << results.alpha.findings | map(attribute='rule') | select('in', expected_rules) | unique | list >>
  recall: << pct(found | length, expected_rules | length) >>
heuristic:
  metric: recall
  bands: [{ min: 90, score: 5 }, { score: 2 }]
  reasoning: << recall >>% of << _rule_count >> rules
prompt: ../../prompts/rules.md
";
    let suite = project(
        tmp.path(),
        &[("rules.yaml", rules)],
        &[("rules.md", "<< evidence >>\n<< response_format >>\n")],
    );
    let yaml = std::fs::read_to_string(suite.join("suite.yaml")).expect("read")
        + "evidence:\n  expected_rules: << truth.alpha.expected.rules >>\n  _rule_count: << expected_rules | length >>\n";
    std::fs::write(suite.join("suite.yaml"), yaml).expect("write");
    let Ran {
        code,
        stderr,
        result,
        ..
    } = caldera(
        tmp.path(),
        &["run", "judges.d/examples", "--heuristic"],
        &[],
    );
    assert!(code == Some(0) || code == Some(1), "{stderr}");
    assert_eq!(
        result["suite_evidence"],
        serde_json::json!({"expected_rules": ["B101", "B102", "B103"]}),
        "{result}"
    );
    let out = Caldera::new()
        .dir(tmp.path())
        .args(["render", "judges.d/examples"])
        .run();
    let text = out.stdout;
    assert_eq!(out.code, Some(0), "{text}");
    let at = text.find("===== suite evidence =====").expect(&text);
    let judge = text.find("===== rules =====").expect(&text);
    assert!(at < judge, "suite evidence first:\n{text}");
    assert!(text[at..judge].contains("\"B103\""), "{text}");
    assert!(!text[at..judge].contains("_rule_count"), "{text}");
}

/// The trap of a shadowed name: items that carry their own `truth` hide the run's
/// ground truth from the record's expressions.
#[test]
fn validate_on_the_data_catches_an_item_key_that_shadows_the_run_context() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let shadow = "\
dimension: shadow
weight: 1
evidence:
  # Each item carries a `truth` flag, so `truth` below is the flag, not the run's map.
  checks:
    for_each: \"<< [{'repo': 'alpha', 'truth': true}, {'repo': 'beta', 'truth': false}] >>\"
    fields:
      repo: << item.repo >>
      expected: << truth[repo].expected.high if truth[repo] is defined else 0 >>
  high: << checks | sum(attribute='expected') >>
heuristic:
  metric: high
  bands: [{ min: 2, score: 5 }, { score: 2 }]
  reasoning: << high >>
";
    project(tmp.path(), &[("shadow.yaml", shadow)], &[]);
    let Ran { result, .. } = caldera(
        tmp.path(),
        &["run", "judges.d/examples", "--heuristic"],
        &[],
    );
    // alpha's ground truth expects 2 HIGH findings; the shadowed lookup finds none.
    assert_eq!(dimension(&result, "shadow")["evidence"]["high"], 0);
    let Ran { stderr, .. } = caldera(tmp.path(), &["validate", "judges.d/examples"], &[]);
    assert!(
        stderr.contains("warning[shadowed-name]: items of `evidence.checks` have a key `truth`, which shadows the run context's `truth`"),
        "{stderr}"
    );
    assert!(stderr.contains("shadow.yaml:6:15"), "{stderr}");
}

/// Tests and filters named in strings are looked up by minijinja only when the
/// expression runs; caldera checks them when the judge loads.
#[test]
fn tests_and_filters_named_in_strings_are_checked_at_load() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let named = "\
dimension: named
weight: 1
evidence:
  reported: << results.alpha.findings | select('reported') | list >>
  failed: << results.alpha.findings | selectattr('message', 'contains', 'SQL') | list >>
  upper: << results.alpha.findings | map(attribute='rule') | map('uper') | list >>
  ok: << results.alpha.findings | selectattr('severity', 'eq', 'HIGH') | map(attribute='rule') | map('lower') | list >>
heuristic:
  score: 3
  reasoning: << reported | length >> << failed | length >> << upper | length >> << ok | length >>
";
    project(tmp.path(), &[("named.yaml", named)], &[]);
    let Ran { code, stderr, .. } = caldera(tmp.path(), &["validate", "judges.d/examples"], &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("unknown test `reported` (named in `select`)"),
        "{stderr}"
    );
    assert!(stderr.contains("write `selectattr('x')`"), "{stderr}");
    assert!(
        stderr.contains("unknown test `contains` (named in `selectattr`)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("unknown filter `uper` (named in `map`)"),
        "{stderr}"
    );
    assert!(stderr.contains("did you mean `upper`?"), "{stderr}");
    assert!(stderr.contains("named.yaml:4:49"), "{stderr}");
    assert!(stderr.contains("there is no `contains` test"), "{stderr}");
    assert_eq!(
        stderr.matches("error[unknown-function]").count(),
        3,
        "{stderr}"
    );
}
