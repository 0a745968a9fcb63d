//! The module graph runs one way: from the command line down to the leaves.
//!
//! Each top-level module of `engine/` sits on a layer; code may use modules of lower
//! layers only (never a sibling on its own layer, never one above). An import that runs
//! back up is how circles start, so this test names any such import with its file and
//! line. Test modules (`#[cfg(test)] mod tests` at the end of a file) are not counted:
//! a test may build what it needs from anywhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Top to bottom. A module may use the modules of the layers after its own.
const LAYERS: &[&[&str]] = &[
    &["main", "lib"],
    &["cli"],
    &["history"],
    &["calibrate", "judgetest", "plan", "report"],
    &["run"],
    &["llm"],
    &["outfile"],
    &["load"],
    &["verdict"],
    &["render"],
    &["evidence"],
    &["provider"],
    &["score"],
    &["spec"],
    &["doc"],
    &["diag", "par"],
    &["present"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `engine/` belongs to.
fn module_of(engine: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(engine).unwrap();
    let first = rel.components().next().unwrap().as_os_str();
    first.to_string_lossy().trim_end_matches(".rs").to_owned()
}

/// `(line, module)` for every `crate::<module>` path outside the file's test module.
fn uses(text: &str) -> Vec<(usize, String)> {
    let body = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    let mut found = Vec::new();
    for (n, line) in body.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push((n + 1, name));
            }
        }
    }
    found
}

#[test]
fn every_import_runs_down_the_layers() {
    let engine = Path::new(env!("CARGO_MANIFEST_DIR")).join("engine");
    let mut files = Vec::new();
    rust_files(&engine, &mut files);
    files.sort();
    let mut wrong = Vec::new();
    let mut edges: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let from = module_of(&engine, file);
        let Some(from_layer) = layer_of(&from) else {
            panic!("module `{from}` has no layer: add it to LAYERS");
        };
        let text = std::fs::read_to_string(file).unwrap();
        for (line, to) in uses(&text) {
            if to == from {
                continue;
            }
            let Some(to_layer) = layer_of(&to) else {
                panic!(
                    "`crate::{to}` used in {}: add `{to}` to LAYERS",
                    file.display()
                );
            };
            edges.entry(from.clone()).or_default().insert(to.clone());
            if to_layer <= from_layer {
                wrong.push(format!(
                    "{}:{line}: `{from}` uses `{to}`, which is not below it",
                    file.strip_prefix(&engine).unwrap().display()
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that run back up:\n{}",
        wrong.join("\n")
    );
    // The test must have seen the graph it guards.
    assert!(edges.get("run").is_some_and(|to| to.contains("verdict")));
    assert!(edges.get("verdict").is_some_and(|to| to.contains("score")));
}

#[test]
fn a_backward_import_would_be_found() {
    let text = "use crate::run::Run;\n// crate::cli in a comment\n#[cfg(test)]\nmod tests {\n    use crate::cli;\n}\n";
    assert_eq!(uses(text), vec![(1, "run".to_owned())]);
}

/// The non-test code of every engine file, by path relative to `engine/`.
fn engine_code() -> Vec<(String, String)> {
    let engine = Path::new(env!("CARGO_MANIFEST_DIR")).join("engine");
    let mut files = Vec::new();
    rust_files(&engine, &mut files);
    files.sort();
    files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let body = match text.find("#[cfg(test)]\nmod tests") {
                Some(at) => text[..at].to_owned(),
                None => text,
            };
            // Comments may show a table or a tag; code is what counts.
            let code: Vec<&str> = body
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect();
            let rel = f.strip_prefix(&engine).unwrap().display().to_string();
            (rel, code.join("\n"))
        })
        .collect()
}

/// The files whose code holds any of `marks`.
fn holding(code: &[(String, String)], marks: &[&str]) -> Vec<String> {
    code.iter()
        .filter(|(_, body)| marks.iter().any(|m| body.contains(m)))
        .map(|(rel, _)| rel.clone())
        .collect()
}

/// Every piece the renderers share exists once, in `engine/present/`: the HTML escape,
/// the stylesheet (no CSS in Rust code), the aligned-table and Markdown-table routines,
/// and no XML written by hand (JUnit goes through quick-junit).
#[test]
fn each_presentation_piece_exists_once_in_present() {
    let code = engine_code();
    assert_eq!(
        holding(&code, &["\"&amp;\"", "\"&lt;\""]),
        ["present/escape.rs"],
        "an escape of HTML or XML outside present/escape.rs"
    );
    assert_eq!(
        holding(
            &code,
            &["border-collapse", "grid-template-columns", "font-family"]
        ),
        Vec::<String>::new(),
        "CSS in Rust code: it belongs in present/style.css"
    );
    let sheets: Vec<PathBuf> = {
        let mut all = Vec::new();
        collect_ext(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("engine"),
            "css",
            &mut all,
        );
        all
    };
    assert_eq!(sheets.len(), 1, "{sheets:?}");
    assert!(sheets[0].ends_with("present/style.css"), "{sheets:?}");
    assert_eq!(
        holding(&code, &["<?xml", "</testcase>", "</failure>"]),
        Vec::<String>::new(),
        "XML written by hand: JUnit goes through quick-junit"
    );
    assert_eq!(
        holding(&code, &[".saturating_sub(cell.chars().count())"]),
        ["present/table.rs"],
        "an aligned-table routine outside present/table.rs"
    );
    assert_eq!(
        holding(&code, &["---|", "---:|"]),
        ["present/table.rs"],
        "a Markdown table written outside present/table.rs"
    );
}

fn collect_ext(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_ext(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}
