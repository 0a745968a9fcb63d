//! The diagnostics catalogue: one bad fixture per diagnostic code under
//! `tests/fixtures/diagnostics/<code>/`, each rendered and snapshot-tested, and a check
//! that no code is without a fixture. Further wordings of a code (each message a user
//! can meet) are cases under `tests/fixtures/diagnostics/<code>/cases/<case>/`, checked
//! and snapshotted the same way as `<code>--<case>`.

use std::path::{Path, PathBuf};

use caldera::diag::{Code, Diagnostic, render_text};
use caldera::load::suite::load_suite;
use caldera::run::{RunOptions, run_heuristic};

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
        return caldera::cli::validate::validate_path(&suite_dir, &Default::default(), true);
    }
    let env = caldera::render::environment();
    let (suite, mut diags) = load_suite(&suite_dir, &env);
    if dir.join("run-llm").exists() {
        // Asks for the Anthropic API without a key: the provider cannot be built.
        if let Some(suite) = suite
            && let Err(run_diags) = caldera::run::llm::run_llm(
                &env,
                &suite,
                &caldera::run::llm::LlmOptions {
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

#[test]
fn every_diagnostic_is_located() {
    // Each fixture's diagnostics name a file; those about YAML also carry a span and,
    // except for whole-file problems, a key path.
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
