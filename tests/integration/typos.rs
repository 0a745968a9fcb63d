//! The typo corpus of `caldera validate` (`tests/fixtures/typos/`): every typo planted in
//! the judges of `trivy/` (over the bundled Trivy data) is reported with its file, line
//! and key path, and nothing else is; the reads of `false-alarms/` that only look like
//! typos (guarded branches, conditional names, selectors that match a null, optional
//! inputs, alternatives) give no warning; and the bundled suites stay clean.

use std::path::{Path, PathBuf};

use caldera::RootOptions;
use caldera::diag::{Code, Diagnostic, Severity};
use caldera::validate_path;

/// Validates `dir` with the data check, confined to this project.
fn validate(dir: &Path) -> Vec<Diagnostic> {
    let root = RootOptions {
        root: Some(PathBuf::from(".")),
        allow_outside: false,
    };
    validate_path(dir, &root, true)
}

/// One planted typo: the judge file, the key path, the text and its 1-based line.
#[derive(Debug)]
struct Planted {
    file: String,
    key_path: String,
    text: String,
    line: usize,
}

/// The typos a judge file declares in its header (`# planted: <key path> :: <text>`),
/// each on the first line after the header that holds its text.
fn planted(path: &Path) -> Vec<Planted> {
    let source = std::fs::read_to_string(path).unwrap_or_default();
    let file = path
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let mut out = Vec::new();
    for header in source.lines().filter_map(|l| l.strip_prefix("# planted: ")) {
        let (key_path, text) = header.split_once(" :: ").unwrap_or((header, ""));
        let line = source
            .lines()
            .enumerate()
            .find(|(_, l)| !l.starts_with('#') && l.contains(text))
            .map_or(0, |(n, _)| n + 1);
        out.push(Planted {
            file: file.clone(),
            key_path: key_path.to_owned(),
            text: text.to_owned(),
            line,
        });
    }
    out
}

fn describe(d: &Diagnostic) -> String {
    format!(
        "{}:{} at {} [{}] {}",
        d.file.as_deref().unwrap_or(Path::new("?")).display(),
        d.span.map_or(0, |s| s.line),
        d.key_path.as_deref().unwrap_or("?"),
        d.code.as_str(),
        d.message
    )
}

#[test]
fn every_planted_typo_is_reported_with_file_line_and_key_path() {
    let dir = Path::new("tests/fixtures/typos/trivy");
    let mut judges: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the typo corpus")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml") && !p.ends_with("suite.yaml"))
        .collect();
    judges.sort();
    let all: Vec<Planted> = judges.iter().flat_map(|p| planted(p)).collect();
    assert!(all.len() >= 40, "only {} planted typos", all.len());
    let diags = validate(dir);
    let errors: Vec<String> = diags
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(describe)
        .collect();
    assert!(errors.is_empty(), "the corpus must load: {errors:#?}");
    let mut missed = Vec::new();
    for p in &all {
        let found = diags.iter().any(|d| {
            d.code == Code::NeverMatched
                && d.file.as_ref().is_some_and(|f| f.ends_with(&p.file))
                && d.key_path.as_deref() == Some(p.key_path.as_str())
                && d.span.is_some_and(|s| s.line == p.line)
        });
        if !found {
            missed.push(format!(
                "{}:{} at {}: `{}`",
                p.file, p.line, p.key_path, p.text
            ));
        }
    }
    let all_found: Vec<String> = diags.iter().map(describe).collect();
    assert!(
        missed.is_empty(),
        "{} of {} planted typos not reported:\n{}\nreported:\n{}",
        missed.len(),
        all.len(),
        missed.join("\n"),
        all_found.join("\n")
    );
    // Nothing but the planted typos: one warning each.
    assert_eq!(
        diags.len(),
        all.len(),
        "reported:\n{}",
        all_found.join("\n")
    );
}

#[test]
fn reads_that_only_look_like_typos_give_no_warning() {
    let diags = validate(Path::new("tests/fixtures/typos/false-alarms"));
    let found: Vec<String> = diags.iter().map(describe).collect();
    assert!(found.is_empty(), "false alarms:\n{}", found.join("\n"));
}

#[test]
fn bundled_suites_validate_without_warnings() {
    let mut suites: Vec<PathBuf> = std::fs::read_dir("judges.d")
        .expect("judges.d")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("suite.yaml").is_file())
        .collect();
    suites.sort();
    assert!(
        suites.len() >= 10,
        "found only {} bundled suites",
        suites.len()
    );
    let found: Vec<String> = suites
        .iter()
        .flat_map(|s| validate(s))
        .map(|d| describe(&d))
        .collect();
    assert!(found.is_empty(), "bundled suites:\n{}", found.join("\n"));
}

/// The `# validate-example:` block of docs/functions.md and its `# expect-warning:` paths.
fn validate_example() -> (String, Vec<String>) {
    let doc = std::fs::read_to_string("docs/functions.md").expect("docs/functions.md");
    let start = doc
        .find("```yaml\n# validate-example:")
        .expect("a `# validate-example:` block in docs/functions.md");
    let block = &doc[start + "```yaml\n".len()..];
    let yaml = &block[..block.find("```").unwrap_or(block.len())];
    let expected = yaml
        .lines()
        .filter_map(|l| l.strip_prefix("# expect-warning: "))
        .map(str::to_owned)
        .collect();
    (yaml.to_owned(), expected)
}

#[test]
fn the_validate_example_of_the_docs_reports_exactly_its_typos() {
    let (yaml, expected) = validate_example();
    assert!(expected.len() >= 4, "the example expects {expected:?}");
    let tmp = tempfile::tempdir().expect("tempdir");
    let suite_dir = tmp.path().join("judges.d/examples");
    copy_dir(Path::new("tests/fixtures/examples"), &suite_dir);
    std::fs::write(suite_dir.join("typos.yaml"), yaml).expect("write the example");
    let diags = validate_path(&suite_dir, &RootOptions::default(), true);
    let found: Vec<String> = diags.iter().map(describe).collect();
    assert_eq!(
        diags.len(),
        expected.len(),
        "reported:\n{}",
        found.join("\n")
    );
    let source = std::fs::read_to_string(suite_dir.join("typos.yaml")).expect("read back");
    for path in &expected {
        let reported = diags.iter().any(|d| {
            // A field path is named in the message; a selector is the text pointed at.
            let pointed = d
                .span
                .and_then(|s| source.get(s.start..s.end))
                .unwrap_or("");
            d.code == Code::NeverMatched
                && (d.message.contains(&format!("`{path}`")) || pointed == path)
        });
        assert!(reported, "`{path}` not reported:\n{}", found.join("\n"));
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from)
        .expect("read_dir")
        .filter_map(Result::ok)
    {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}
