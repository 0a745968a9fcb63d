//! The module graph runs one way: from the command line down to the leaves.
//!
//! Each top-level module of `engine/` sits on a layer; code may use modules of lower
//! layers only (never a sibling on its own layer, never one above). Inside one folder,
//! the files may use each other, but never in a circle. An import that runs back up, or
//! closes a circle, is how tangles start, so these tests name each with file and line.
//!
//! The files are read by a small lexer, not by text search, so that every way of naming
//! a module counts: `use` trees with groups and aliases (`crate::{a::X, b::{Y, Z}}`),
//! paths written inline without `use` (`crate::a::f()`), `super::`, `super::super::`,
//! `self::`, and a child module named bare from its parent (`child::f()`). Comments and
//! string literals are skipped. Test code is not counted (a test may build what it needs
//! from anywhere): every item under `#[cfg(test)]`, wherever it sits in the file, and
//! the files of test modules declared `#[cfg(test)] mod x;`. Code after a test module
//! is read like any other.
//!
//! A name is followed to the file that defines it: `super::Thing`, where the folder's
//! module file only re-exports `Thing` from a sibling, counts as a use of that sibling.
//! Re-exports in a folder's module file (`mod.rs`) are its table of contents, not uses.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top to bottom. A module may use the modules of the layers after its own.
const LAYERS: &[&[&str]] = &[
    &["main", "lib"],
    &["cli"],
    &["view"],
    &["history"],
    &["calibrate", "judgetest", "plan", "report"],
    &["run"],
    &["llm"],
    &["outfile"],
    &["load"],
    &["reply"],
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

/// One token of Rust code: an identifier (or keyword, or number), `::`, or one
/// punctuation character. Comments, strings, characters and lifetimes are dropped.
#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Path,
    Punct(char),
}

/// `(line, token)` for the code of `text`.
fn lex(text: &str) -> Vec<(usize, Tok)> {
    let chars: Vec<char> = text.chars().collect();
    let mut toks = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i = skip_block_comment(&chars, i, &mut line);
        } else if c == '"' {
            i = skip_string(&chars, i + 1, &mut line);
        } else if c == '\'' {
            i = skip_char_or_lifetime(&chars, i);
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            match literal_after_prefix(&word, &chars, i) {
                Some(Literal::Str) => i = skip_string(&chars, i + 1, &mut line),
                Some(Literal::Raw) => i = skip_raw_string(&chars, i, &mut line),
                Some(Literal::Char) => i = skip_char_or_lifetime(&chars, i),
                Some(Literal::RawIdent) => {}
                None => toks.push((line, Tok::Ident(word))),
            }
        } else if c == ':' && next == Some(':') {
            toks.push((line, Tok::Path));
            i += 2;
        } else {
            toks.push((line, Tok::Punct(c)));
            i += 1;
        }
    }
    toks
}

enum Literal {
    Str,
    Raw,
    Char,
    RawIdent,
}

/// What a word like `b`, `r`, `br` or `c` starts when a quote or `#` follows it.
fn literal_after_prefix(word: &str, chars: &[char], at: usize) -> Option<Literal> {
    let next = chars.get(at).copied();
    match (word, next) {
        ("b" | "c", Some('"')) => Some(Literal::Str),
        ("b", Some('\'')) => Some(Literal::Char),
        ("r" | "br" | "cr", Some('"')) => Some(Literal::Raw),
        ("r" | "br" | "cr", Some('#')) => {
            let hashes = chars[at..].iter().take_while(|c| **c == '#').count();
            match chars.get(at + hashes) {
                Some('"') => Some(Literal::Raw),
                _ => Some(Literal::RawIdent),
            }
        }
        _ => None,
    }
}

fn skip_block_comment(chars: &[char], mut i: usize, line: &mut usize) -> usize {
    let mut depth = 0;
    while i < chars.len() {
        match (chars[i], chars.get(i + 1)) {
            ('/', Some('*')) => {
                depth += 1;
                i += 2;
            }
            ('*', Some('/')) => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            (c, _) => {
                *line += usize::from(c == '\n');
                i += 1;
            }
        }
    }
    i
}

/// From just after the opening quote to just after the closing one.
fn skip_string(chars: &[char], mut i: usize, line: &mut usize) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            c => {
                *line += usize::from(c == '\n');
                i += 1;
            }
        }
    }
    i
}

/// From the first `#` or `"` after `r` to just after the closing `"#…`.
fn skip_raw_string(chars: &[char], mut i: usize, line: &mut usize) -> usize {
    let hashes = chars[i..].iter().take_while(|c| **c == '#').count();
    i += hashes + 1;
    while i < chars.len() {
        if chars[i] == '"'
            && chars[i + 1..]
                .iter()
                .take(hashes)
                .filter(|c| **c == '#')
                .count()
                == hashes
        {
            return i + 1 + hashes;
        }
        *line += usize::from(chars[i] == '\n');
        i += 1;
    }
    i
}

/// `'x'`, `'\n'` and `'\u{..}'` are characters; `'a` is a lifetime or label.
fn skip_char_or_lifetime(chars: &[char], i: usize) -> usize {
    match (chars.get(i + 1), chars.get(i + 2)) {
        (Some('\\'), _) => {
            let close = chars[i + 2..].iter().position(|c| *c == '\'');
            close.map_or(chars.len(), |p| i + 2 + p + 1)
        }
        (Some(_), Some('\'')) => i + 3,
        _ => {
            let name = chars[i + 1..]
                .iter()
                .take_while(|c| c.is_alphanumeric() || **c == '_')
                .count();
            i + 1 + name
        }
    }
}

/// The tokens with every item under `#[cfg(test)]` taken out, and the names of the
/// test modules declared `#[cfg(test)] mod name;` (their files are test code too).
fn without_test_items(toks: &[(usize, Tok)]) -> (Vec<(usize, Tok)>, Vec<String>) {
    let mut kept = Vec::new();
    let mut test_files = Vec::new();
    let mut i = 0;
    if is_cfg_test(toks, 0, true) {
        return (kept, test_files);
    }
    while i < toks.len() {
        if !is_cfg_test(toks, i, false) {
            kept.push(toks[i].clone());
            i += 1;
            continue;
        }
        i += 7;
        // Further attributes, then the item up to its `;` or its closing brace.
        while toks.get(i).is_some_and(|t| t.1 == Tok::Punct('#')) {
            i = after_group(toks, i + 1);
        }
        let item_start = i;
        while i < toks.len() && toks[i].1 != Tok::Punct(';') && toks[i].1 != Tok::Punct('{') {
            i += 1;
        }
        if toks.get(i).is_some_and(|t| t.1 == Tok::Punct('{')) {
            i = after_group(toks, i);
        } else {
            if let [.., (_, Tok::Ident(m)), (_, Tok::Ident(name))] = &toks[item_start..i]
                && m == "mod"
            {
                test_files.push(name.clone());
            }
            i += 1;
        }
    }
    (kept, test_files)
}

/// `#[cfg(test)]` (or `#![cfg(test)]` when `inner`) at `i`.
fn is_cfg_test(toks: &[(usize, Tok)], i: usize, inner: bool) -> bool {
    let want: &[Tok] = &[
        Tok::Punct('#'),
        Tok::Punct('!'),
        Tok::Punct('['),
        Tok::Ident("cfg".into()),
        Tok::Punct('('),
        Tok::Ident("test".into()),
        Tok::Punct(')'),
        Tok::Punct(']'),
    ];
    let want: Vec<&Tok> = want
        .iter()
        .filter(|t| inner || **t != Tok::Punct('!'))
        .collect();
    toks.len() >= i + want.len()
        && toks[i..i + want.len()]
            .iter()
            .zip(want)
            .all(|(a, b)| a.1 == *b)
}

/// Just after the bracket or brace group that opens at `i`.
fn after_group(toks: &[(usize, Tok)], mut i: usize) -> usize {
    let mut depth = 0i32;
    while i < toks.len() {
        match toks[i].1 {
            Tok::Punct('{' | '[' | '(') => depth += 1,
            Tok::Punct('}' | ']' | ')') => depth -= 1,
            _ => {}
        }
        i += 1;
        if depth <= 0 {
            return i;
        }
    }
    i
}

/// One path a file names: where, the module it is named from, and its segments as
/// written (`super`, `self` and `crate` unresolved). `binds` is the name a `use`
/// brings into scope (`None` for inline paths and globs); `reexport` marks `pub use`.
#[derive(Clone, Debug, PartialEq)]
struct Named {
    line: usize,
    module: Vec<String>,
    path: Vec<String>,
    binds: Option<String>,
    glob: bool,
    reexport: bool,
}

/// Every path in the code of a file whose module path is `module`, and the inline
/// modules it declares (as full module paths).
fn paths(toks: &[(usize, Tok)], module: &[String]) -> (Vec<Named>, Vec<Vec<String>>) {
    let mut found = Vec::new();
    let mut inline_mods = Vec::new();
    let mut stack: Vec<(String, i32)> = Vec::new();
    let mut depth = 0i32;
    let mut i = 0;
    let ident = |i: usize| match toks.get(i) {
        Some((_, Tok::Ident(w))) => Some(w.as_str()),
        _ => None,
    };
    let here_of = |stack: &[(String, i32)]| -> Vec<String> {
        module
            .iter()
            .cloned()
            .chain(stack.iter().map(|s| s.0.clone()))
            .collect()
    };
    while i < toks.len() {
        match &toks[i].1 {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth -= 1;
                if stack.last().is_some_and(|s| s.1 == depth) {
                    stack.pop();
                }
            }
            Tok::Ident(w)
                if w == "mod" && toks.get(i + 2).is_some_and(|t| t.1 == Tok::Punct('{')) =>
            {
                if let Some(name) = ident(i + 1) {
                    stack.push((name.to_owned(), depth));
                    inline_mods.push(here_of(&stack));
                }
            }
            Tok::Ident(w) if w == "use" => {
                let (line, reexport, here) = (toks[i].0, is_pub(toks, i), here_of(&stack));
                let mut trees = Vec::new();
                i = use_tree(toks, i + 1, Vec::new(), &mut trees);
                for (path, binds, glob) in trees {
                    let module = here.clone();
                    found.push(Named {
                        line,
                        module,
                        path,
                        binds,
                        glob,
                        reexport,
                    });
                }
                continue;
            }
            Tok::Ident(w)
                if toks.get(i + 1).is_some_and(|t| t.1 == Tok::Path)
                    && !after_path_or_dollar(toks, i) =>
            {
                let line = toks[i].0;
                let mut path = vec![w.clone()];
                i += 1;
                while toks.get(i).is_some_and(|t| t.1 == Tok::Path)
                    && let Some(next) = ident(i + 1)
                {
                    path.push(next.to_owned());
                    i += 2;
                }
                let module = here_of(&stack);
                found.push(Named {
                    line,
                    module,
                    path,
                    binds: None,
                    glob: false,
                    reexport: false,
                });
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    (found, inline_mods)
}

/// Whether the `use` at `i` is a re-export: `pub use` or `pub(…) use`.
fn is_pub(toks: &[(usize, Tok)], i: usize) -> bool {
    let before = |k: usize| i.checked_sub(k).and_then(|j| toks.get(j)).map(|t| &t.1);
    before(1) == Some(&Tok::Ident("pub".into()))
        || (before(1) == Some(&Tok::Punct(')'))
            && (2..6).any(|k| before(k) == Some(&Tok::Ident("pub".into()))))
}

/// A path continues (`a::b`) or is a macro's `$crate`: not the start of a new path.
fn after_path_or_dollar(toks: &[(usize, Tok)], i: usize) -> bool {
    i > 0 && matches!(toks[i - 1].1, Tok::Path | Tok::Punct('$'))
}

/// Reads one `use` tree from `i` under `prefix`, pushing `(path, bound name, glob)`
/// for each leaf; returns the position after it (after the `;` at the top).
fn use_tree(
    toks: &[(usize, Tok)],
    mut i: usize,
    prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>, bool)>,
) -> usize {
    let mut path = prefix;
    if toks.get(i).is_some_and(|t| t.1 == Tok::Path) {
        i += 1; // `::std::…`, a leading `::`
    }
    loop {
        match toks.get(i).map(|t| &t.1) {
            Some(Tok::Ident(w)) if w == "self" && !path.is_empty() => i += 1,
            Some(Tok::Ident(w)) => {
                path.push(w.clone());
                i += 1;
            }
            Some(Tok::Punct('*')) => {
                out.push((path, None, true));
                return close_use(toks, i + 1);
            }
            Some(Tok::Punct('{')) => {
                i += 1;
                while toks.get(i).is_some_and(|t| t.1 != Tok::Punct('}')) {
                    i = use_tree(toks, i, path.clone(), out);
                }
                return close_use(toks, i + 1);
            }
            _ => break,
        }
        if toks.get(i).is_some_and(|t| t.1 == Tok::Path) {
            i += 1;
        } else {
            break;
        }
    }
    let mut binds = path.last().cloned();
    if toks.get(i).is_some_and(|t| t.1 == Tok::Ident("as".into())) {
        binds = match toks.get(i + 1) {
            Some((_, Tok::Ident(a))) if a != "_" => Some(a.clone()),
            _ => None,
        };
        i += 2;
    }
    out.push((path, binds, false));
    close_use(toks, i)
}

/// Steps over the `,` or `;` that ends a use tree.
fn close_use(toks: &[(usize, Tok)], i: usize) -> usize {
    match toks.get(i).map(|t| &t.1) {
        Some(Tok::Punct(',' | ';')) => i + 1,
        _ => i,
    }
}

/// One engine file as the import tests see it.
struct Source {
    rel: String,
    module: Vec<String>,
    toks: Vec<(usize, Tok)>,
    named: Vec<Named>,
}

/// Everything the import tests know of `engine/`: its files and modules, and the
/// names each module binds with `use` (to follow re-exports to where a thing lives).
struct Tree {
    files: Vec<Source>,
    modules: BTreeMap<Vec<String>, usize>,
    bindings: BTreeMap<(Vec<String>, String), Vec<String>>,
    globs: BTreeMap<Vec<String>, Vec<Vec<String>>>,
}

/// The module path of a file relative to `engine/`: `a/b.rs` and `a/b/mod.rs` are
/// `a::b`; `lib.rs` and `main.rs` are the crate roots.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    match last.trim_end_matches(".rs") {
        "mod" => {}
        "lib" | "main" if parts.is_empty() => {}
        stem => parts.push(stem.to_owned()),
    }
    parts
}

fn read_tree(engine: &Path) -> Tree {
    let mut paths_on_disk = Vec::new();
    rust_files(engine, &mut paths_on_disk);
    paths_on_disk.sort();
    let mut files = Vec::new();
    let mut test_modules: Vec<Vec<String>> = Vec::new();
    for file in &paths_on_disk {
        let rel = file.strip_prefix(engine).unwrap();
        let module = module_path(rel);
        let text = std::fs::read_to_string(file).unwrap();
        let (toks, tests) = without_test_items(&lex(&text));
        test_modules.extend(
            tests
                .into_iter()
                .map(|t| module.iter().cloned().chain([t]).collect()),
        );
        files.push(Source {
            rel: rel.display().to_string(),
            module,
            toks,
            named: Vec::new(),
        });
    }
    files.retain(|f| f.rel == "main.rs" || !test_modules.iter().any(|t| f.module.starts_with(t)));
    let mut modules = BTreeMap::new();
    for (n, f) in files.iter().enumerate() {
        if f.rel != "main.rs" {
            modules.insert(f.module.clone(), n);
        }
    }
    let mut inline = Vec::new();
    for (n, f) in files.iter_mut().enumerate() {
        let (named, mods) = paths(&f.toks, &f.module);
        f.named = named;
        inline.extend(mods.into_iter().map(|m| (m, n)));
    }
    for (m, n) in inline {
        modules.entry(m).or_insert(n);
    }
    let mut tree = Tree {
        files,
        modules,
        bindings: BTreeMap::new(),
        globs: BTreeMap::new(),
    };
    let mut bindings = BTreeMap::new();
    let mut globs: BTreeMap<Vec<String>, Vec<Vec<String>>> = BTreeMap::new();
    for f in &tree.files {
        for n in &f.named {
            let Some(abs) = tree.absolute(n) else {
                continue;
            };
            if n.glob {
                globs.entry(n.module.clone()).or_default().push(abs);
            } else if let Some(name) = &n.binds {
                bindings.insert((n.module.clone(), name.clone()), abs);
            }
        }
    }
    tree.bindings = bindings;
    tree.globs = globs;
    tree
}

impl Tree {
    /// The path from the crate root, or `None` for another crate (`std::…`).
    fn absolute(&self, n: &Named) -> Option<Vec<String>> {
        let mut here = n.module.clone();
        let mut rest = n.path.as_slice();
        match rest.first().map(String::as_str) {
            Some("crate" | "caldera") => {
                here.clear();
                rest = &rest[1..];
            }
            Some("self") => rest = &rest[1..],
            Some("super") => {
                while rest.first().is_some_and(|s| s == "super") {
                    here.pop()?;
                    rest = &rest[1..];
                }
            }
            Some(first) => {
                let child: Vec<String> = here.iter().cloned().chain([first.to_owned()]).collect();
                if !self.modules.contains_key(&child) {
                    return None;
                }
            }
            None => return None,
        }
        Some(here.into_iter().chain(rest.iter().cloned()).collect())
    }

    /// The file that defines what `abs` names, following `use` bindings and globs.
    fn file_of(&self, abs: &[String], hops: usize) -> Option<usize> {
        let k = (0..=abs.len())
            .rev()
            .find(|k| self.modules.contains_key(&abs[..*k]))?;
        let file = self.modules[&abs[..k]];
        if k == abs.len() || hops > 8 {
            return Some(file);
        }
        let (module, name) = (abs[..k].to_vec(), &abs[k]);
        let rest = &abs[k + 1..];
        if let Some(target) = self.bindings.get(&(module.clone(), name.clone())) {
            let next: Vec<String> = target.iter().chain(rest).cloned().collect();
            return self.file_of(&next, hops + 1).or(Some(file));
        }
        if self.defines(file, name) {
            return Some(file);
        }
        for glob in self.globs.get(&module).into_iter().flatten() {
            let next: Vec<String> = glob.iter().chain([name]).chain(rest).cloned().collect();
            if let Some(found) = self.file_of(&next, hops + 1)
                && self.defines(found, name)
            {
                return Some(found);
            }
        }
        Some(file)
    }

    /// Whether the code of file `n` declares an item called `name`.
    fn defines(&self, n: usize, name: &str) -> bool {
        const ITEMS: &[&str] = &[
            "fn", "struct", "enum", "type", "trait", "const", "static", "union", "mod",
        ];
        self.files[n].toks.windows(2).any(|w| {
            matches!((&w[0].1, &w[1].1), (Tok::Ident(k), Tok::Ident(x)) if ITEMS.contains(&k.as_str()) && x == name)
        }) || self.files[n].toks.windows(3).any(|w| {
            matches!((&w[0].1, &w[1].1, &w[2].1), (Tok::Ident(k), Tok::Punct('!'), Tok::Ident(x)) if k == "macro_rules" && x == name)
        })
    }

    /// `(line, file it names)` for every path of file `n` that leads into this crate.
    fn uses_of(&self, n: usize) -> Vec<(usize, usize)> {
        let f = &self.files[n];
        let toc = f.rel.ends_with("mod.rs") || f.rel == "lib.rs";
        f.named
            .iter()
            .filter(|u| !(toc && u.reexport))
            .filter_map(|u| Some((u.line, self.file_of(&self.absolute(u)?, 0)?)))
            .filter(|(_, to)| *to != n)
            .collect()
    }
}

/// The top-level module a file of `engine/` belongs to.
fn top_module(rel: &str) -> String {
    let first = rel.split('/').next().unwrap_or(rel);
    first.trim_end_matches(".rs").to_owned()
}

fn engine_tree() -> Tree {
    read_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("engine"))
}

#[test]
fn every_import_runs_down_the_layers() {
    let tree = engine_tree();
    let mut wrong = Vec::new();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (n, f) in tree.files.iter().enumerate() {
        let from = top_module(&f.rel);
        let Some(from_layer) = layer_of(&from) else {
            panic!("module `{from}` has no layer: add it to LAYERS");
        };
        for (line, to) in tree.uses_of(n) {
            let to = top_module(&tree.files[to].rel);
            if to == from {
                continue;
            }
            let Some(to_layer) = layer_of(&to) else {
                panic!("`crate::{to}` used in {}: add `{to}` to LAYERS", f.rel);
            };
            edges.entry(from.clone()).or_default().insert(to.clone());
            if to_layer <= from_layer {
                wrong.push(format!(
                    "{}:{line}: `{from}` uses `{to}`, which is not below it",
                    f.rel
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

/// A module of `engine/` as a node of a folder's graph.
type Node = Vec<String>;

/// The circles among the files of each folder, each written `a.rs:9 → b.rs:11 → a.rs`
/// (after each file, the line where it names the next one).
///
/// The files of one folder are the child modules of one module; a subfolder counts as
/// one of them (`load/judge/` beside `load/suite.rs`), with the uses of all its files.
/// The folder's module file (`mod.rs`) is the parent, not one of the files: it declares
/// and dispatches to its children, and they may use what it defines.
fn circles(tree: &Tree) -> Vec<String> {
    let mut graph: BTreeMap<Node, BTreeMap<Node, (String, usize)>> = BTreeMap::new();
    for (n, f) in tree.files.iter().enumerate() {
        if f.rel == "main.rs" {
            continue;
        }
        for (line, to) in tree.uses_of(n) {
            let (from, to) = (&f.module, &tree.files[to].module);
            let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == to.len() {
                continue; // a parent and its own child
            }
            let (a, b) = (from[..=common].to_vec(), to[..=common].to_vec());
            let edge = graph.entry(a).or_default().entry(b);
            edge.or_insert((f.rel.clone(), line));
        }
    }
    let label = |node: &Node| {
        let rel = &tree.files[tree.modules[node]].rel;
        rel.strip_suffix("mod.rs").unwrap_or(rel).to_owned()
    };
    let mut seen: BTreeSet<BTreeSet<Node>> = BTreeSet::new();
    let mut found = Vec::new();
    for start in graph.keys() {
        let Some(cycle) = shortest_cycle(&graph, start) else {
            continue;
        };
        if !seen.insert(cycle.iter().cloned().collect()) {
            continue;
        }
        let mut text: Vec<String> = cycle
            .windows(2)
            .map(|w| {
                let (rel, line) = &graph[&w[0]][&w[1]];
                format!("{rel}:{line}")
            })
            .collect();
        text.push(label(&cycle[0]));
        found.push(text.join(" → "));
    }
    found
}

/// The shortest way from `start` back to itself, as the nodes in order (the least one
/// first, and again at the end), found breadth first.
fn shortest_cycle<E>(graph: &BTreeMap<Node, BTreeMap<Node, E>>, start: &Node) -> Option<Vec<Node>> {
    let mut came_from: BTreeMap<&Node, &Node> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(at) = queue.pop_front() {
        for next in graph.get(at).into_iter().flat_map(|m| m.keys()) {
            if next == start {
                let mut cycle = vec![at.clone()];
                let mut back = at;
                while back != start {
                    back = came_from[back];
                    cycle.push(back.clone());
                }
                cycle.reverse();
                let least = (0..cycle.len()).min_by_key(|&k| &cycle[k]).unwrap_or(0);
                cycle.rotate_left(least);
                cycle.push(cycle[0].clone());
                return Some(cycle);
            }
            if !came_from.contains_key(next) {
                came_from.insert(next, at);
                queue.push_back(next);
            }
        }
    }
    None
}

#[test]
fn no_files_of_one_folder_import_each_other_in_a_circle() {
    let found = circles(&engine_tree());
    assert!(
        found.is_empty(),
        "files that import each other in a circle:\n{}",
        found.join("\n")
    );
}

/// The paths a piece of code names, resolved from the crate root, as `line: a::b::C`.
fn named_in(text: &str, module: &[&str]) -> Vec<String> {
    let module: Vec<String> = module.iter().map(|s| s.to_string()).collect();
    let (toks, _) = without_test_items(&lex(text));
    let tree = Tree {
        files: Vec::new(),
        modules: BTreeMap::from([(vec!["a".to_owned(), "child".to_owned()], 0)]),
        bindings: BTreeMap::new(),
        globs: BTreeMap::new(),
    };
    paths(&toks, &module)
        .0
        .iter()
        .filter_map(|n| Some(format!("{}: {}", n.line, tree.absolute(n)?.join("::"))))
        .collect()
}

#[test]
fn every_import_form_is_read() {
    let text = r##"use crate::{run::Run, load::{suite::Suite, judge as j}};
use super::super::score::Score;
use self::child::Thing;
use std::fmt;
fn f() { let _ = crate::verdict::decide(); let _ = super::sibling::g(); child::h(); }
// crate::cli in a comment
const S: &str = "crate::report in a string"; const R: &str = r#"super::x"#;
fn l<'a>(c: char) -> bool { c == '"' || c == '\'' }
#[cfg(test)]
mod tests {
    use crate::cli;
}
pub(crate) fn after_the_tests() { crate::history::load(); }
#[cfg(test)]
fn helper() { crate::plan::x(); }
mod inner { use super::super::evidence::Plan; }
"##;
    assert_eq!(
        named_in(text, &["a", "b"]),
        [
            "1: run::Run",
            "1: load::suite::Suite",
            "1: load::judge",
            "2: score::Score",
            "3: a::b::child::Thing",
            "5: verdict::decide",
            "5: a::sibling::g",
            "13: history::load",
            "16: a::evidence::Plan",
        ]
    );
    assert_eq!(named_in("child::h();", &["a"]), ["1: a::child::h"]);
}

#[test]
fn a_circle_between_files_of_one_folder_is_found_with_its_files_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "mod f;\n");
    write("f/mod.rs", "mod x;\nmod y;\nmod z;\npub use self::z::Z;\n");
    write("f/x.rs", "\nuse super::y::Y;\npub struct X;\n");
    write("f/y.rs", "pub struct Y;\nfn g() { let _ = super::Z; }\n");
    write(
        "f/z/mod.rs",
        "mod deep;\npub struct Z;\n#[cfg(test)]\nmod tests {}\nfn after() { crate::f::x::X; }\n",
    );
    write("f/z/deep.rs", "fn d() { super::super::y::Y; }\n");
    let found = circles(&read_tree(dir.path()));
    assert_eq!(
        found,
        [
            "f/x.rs:2 → f/y.rs:2 → f/z/mod.rs:5 → f/x.rs",
            "f/y.rs:2 → f/z/deep.rs:1 → f/y.rs"
        ]
    );
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
