//! The diagnostics catalogue: one bad fixture per diagnostic code under
//! `tests/fixtures/diagnostics/<code>/`, each rendered and snapshot-tested, and a check
//! that no code is without a fixture. Further wordings of a code (each message a user
//! can meet) are cases under `tests/fixtures/diagnostics/<code>/cases/<case>/`, checked
//! and snapshotted the same way as `<code>--<case>`.

use std::path::{Path, PathBuf};

use caldera::diag::{Code, Diagnostic, render_text};
use caldera::load_suite;
use caldera::{RunOptions, run_heuristic};

fn fixture_dir(code: Code) -> PathBuf {
    Path::new("tests/fixtures/diagnostics").join(code.as_str())
}

/// The fixture of `code` and its further cases: (snapshot name, folder).
fn fixtures(code: Code) -> Vec<(String, PathBuf)> {
    let dir = fixture_dir(code);
    let mut out = vec![(code.as_str().to_owned(), dir.clone())];
    let mut cases: Vec<PathBuf> = std::fs::read_dir(dir.join("cases"))
        .map(|rd| rd.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    cases.sort();
    for case in cases {
        let name = case.file_name().unwrap_or_default().to_string_lossy();
        out.push((format!("{code}--{name}"), case.clone()));
    }
    out
}

/// Validates the fixture's suite; when validation finds no error, runs it (some codes,
/// such as broken JSON inputs, only show up when inputs are read).
fn diagnostics_for(dir: &Path) -> Vec<Diagnostic> {
    let nested = dir.join("project/judges.d/fixture");
    let suite_dir = if nested.is_dir() {
        nested
    } else {
        dir.to_path_buf()
    };
    if dir.join("validate-data").exists() {
        // Found only by `caldera validate` evaluating the judges on the suite's inputs.
        return caldera::validate_path(&suite_dir, &Default::default(), true);
    }
    let env = caldera::environment();
    let (suite, mut diags) = load_suite(&suite_dir, &env);
    if dir.join("run-llm").exists() {
        // Asks for the Anthropic API without a key: the provider cannot be built.
        if let Some(suite) = suite
            && let Err(run_diags) = caldera::run_llm(
                &env,
                &suite,
                &caldera::LlmOptions {
                    provider: Some(caldera::provider::ProviderKind::Anthropic),
                    cache: caldera::llm::cache::CacheMode::Off,
                    progress: false,
                    ..Default::default()
                },
            )
        {
            diags.extend(run_diags.into_diagnostics());
        }
        return diags;
    }
    if diags.is_empty()
        && let Some(suite) = suite
        && let Err(run_diags) = run_heuristic(&env, &suite, &RunOptions::default())
    {
        diags.extend(run_diags);
    }
    diags
}

/// The provider fixture needs an environment without an Anthropic key.
fn skip(code: Code) -> bool {
    let skip = code == Code::ProviderUnavailable && std::env::var_os("ANTHROPIC_API_KEY").is_some();
    if skip {
        crate::shared::skipped(&format!(
            "ANTHROPIC_API_KEY is set; the {code} fixture is not exercised"
        ));
    }
    skip
}

#[test]
fn every_code_has_a_fixture_that_produces_it() {
    let mut missing = Vec::new();
    for code in Code::ALL {
        if skip(*code) {
            continue;
        }
        let dir = fixture_dir(*code);
        if !dir.is_dir() {
            missing.push(format!("{code}: no fixture folder {}", dir.display()));
            continue;
        }
        for (name, dir) in fixtures(*code) {
            let diags = diagnostics_for(&dir);
            if !diags.iter().any(|d| d.code == *code) {
                missing.push(format!(
                    "{name}: fixture produced {:?}",
                    diags.iter().map(|d| d.code.as_str()).collect::<Vec<_>>()
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "codes without a working fixture:\n{}",
        missing.join("\n")
    );
}

#[test]
fn rendered_diagnostics_are_stable() {
    for code in Code::ALL {
        if !fixture_dir(*code).is_dir() || skip(*code) {
            continue;
        }
        for (name, dir) in fixtures(*code) {
            let text = render_text(&diagnostics_for(&dir), false);
            insta::with_settings!({
                snapshot_path => "snapshots/diagnostics",
                prepend_module_to_snapshot => false,
                omit_expression => true,
            }, {
                insta::assert_snapshot!(name, text);
            });
        }
    }
}

/// A diagnostic about a YAML file that has text to point into (every code but
/// `io-error`, whose file could not be read).
fn about_yaml(d: &Diagnostic) -> bool {
    d.code != Code::Io
        && d.file
            .as_deref()
            .and_then(Path::extension)
            .is_some_and(|e| e == "yaml" || e == "yml")
}

/// Problems of the suite as a whole, located at its judge list; see
/// `suite_level_diagnostics_point_into_suite_yaml`.
const SUITE_LEVEL: [Code; 2] = [Code::NoJudges, Code::WeightsNotNormalised];

#[test]
fn every_diagnostic_is_located() {
    // Each fixture's diagnostics name a file; those about YAML also carry a span (line
    // and column from 1) and, except whole-file problems (a syntax error, found before
    // any key is known), a key path.
    let mut yaml = 0;
    for code in Code::ALL {
        if skip(*code) {
            continue;
        }
        for (name, dir) in fixtures(*code) {
            for d in diagnostics_for(&dir) {
                if d.code == Code::ProviderUnavailable {
                    continue; // about this machine's environment, not about a file
                }
                assert!(d.file.is_some(), "{name}: {} has no file", d.message);
                if !about_yaml(&d) {
                    continue;
                }
                yaml += 1;
                let span = d
                    .span
                    .unwrap_or_else(|| panic!("{name}: `{}` has no span", d.message));
                assert!(span.line >= 1 && span.column >= 1, "{name}: {span:?}");
                if d.code != Code::YamlSyntax {
                    let key = d.key_path.as_deref().unwrap_or_default();
                    assert!(!key.is_empty(), "{name}: `{}` has no key path", d.message);
                }
            }
        }
    }
    // The catalogue's YAML fixtures produce dozens of located diagnostics; a loop that
    // checked none would pass vacuously.
    assert!(yaml >= 40, "only {yaml} YAML diagnostics checked");
}

/// Positions read by hand from the fixture files (line and column count from 1; the
/// column is the first character of the offending key or value).
#[test]
fn diagnostics_point_at_the_hand_read_place() {
    let cases: [(&str, Code, usize, usize, &str); 7] = [
        // `  reasonning: << n >> repos`: the key after two spaces.
        (
            "unknown-key",
            Code::UnknownKey,
            10,
            3,
            "heuristic.reasonning",
        ),
        // `weight: 0.5`, the second `weight` key, at the start of line 3.
        ("duplicate-key", Code::DuplicateKey, 3, 1, "weight"),
        // `  ids: $.repos[*.id`: `$` after `  ids: ` (7 characters).
        (
            "jsonpath-syntax",
            Code::JsonpathSyntax,
            4,
            8,
            "evidence.ids",
        ),
        // `  confidence: 90`: `9` after `  confidence: ` (14 characters).
        (
            "confidence-out-of-range",
            Code::ConfidenceOutOfRange,
            10,
            15,
            "heuristic.confidence",
        ),
        // `    - { score: 2.5 }`: `2` after `    - { score: ` (15 characters).
        (
            "wrong-type/cases/fractional-score",
            Code::WrongType,
            8,
            16,
            "heuristic.bands[0].score",
        ),
        // `  - { min: 0.5, label: PASS }`: `0` after `  - { min: ` (11 characters).
        (
            "score-out-of-range/cases/decision-min",
            Code::ScoreOutOfRange,
            5,
            12,
            "decision[0].min",
        ),
        // `      newest: /etc/*.json`: `/` after `      newest: ` (14 characters).
        (
            "input-outside-project",
            Code::InputOutsideProject,
            6,
            15,
            "inputs.files.keys.newest",
        ),
    ];
    for (fixture, code, line, column, key) in cases {
        let diags = diagnostics_for(&Path::new("tests/fixtures/diagnostics").join(fixture));
        let found: Vec<(usize, usize, Option<&str>)> = diags
            .iter()
            .filter(|d| d.code == code)
            .map(|d| {
                let span = d.span.expect("a span");
                (span.line, span.column, d.key_path.as_deref())
            })
            .collect();
        assert!(
            found.contains(&(line, column, Some(key))),
            "{fixture}: expected {code} at {line}:{column} `{key}`, got {found:?}"
        );
    }
}

/// A suite without judges, or whose weights do not sum to 1, is reported against
/// suite.yaml with no line, column or key path, while a judge without its required
/// `weight` is located at line 1, column 1 with the key path `weight` (missing-key).
/// The same located form is expected here: `judges` for no-judges, `weights` (or the
/// judges list) for the weight sum.
#[test]
fn suite_level_diagnostics_point_into_suite_yaml() {
    for code in SUITE_LEVEL {
        for (name, dir) in fixtures(code) {
            for d in diagnostics_for(&dir).iter().filter(|d| d.code == code) {
                assert!(d.span.is_some(), "{name}: `{}` has no span", d.message);
                assert!(
                    d.key_path.is_some(),
                    "{name}: `{}` has no key path",
                    d.message
                );
            }
        }
    }
}

#[test]
fn codes_are_unique_kebab_case() {
    let mut seen = std::collections::HashSet::new();
    for code in Code::ALL {
        let s = code.as_str();
        assert!(seen.insert(s), "duplicate code {s}");
        assert!(
            s.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
            "{s} is not kebab-case"
        );
    }
}
