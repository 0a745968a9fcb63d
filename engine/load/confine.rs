//! The project a suite may read from. A judge file is code from someone else as much as
//! data: its `prompt:` and its suite's inputs could name `../.ssh/id_rsa` and send it to
//! a model. So every path a suite names must resolve inside one folder, the project
//! root, unless the user says otherwise on the command line.
//!
//! The root is, in order: `--root DIR`; the folder holding the nearest `judges.d` above
//! the suite; the suite folder itself. Paths given on the command line (`--results`,
//! `--ground-truth`, `--input`) are the user's own choice and are not confined.
//!
//! Confined means every file read, not only the folder named: each document of a
//! suite's input folder, each judge file, and a test case's folders, files, cassettes and
//! `case.yaml`/`expect.yaml` are checked with links resolved, so a link planted inside
//! the project cannot lead out. A `run_file` must be a plain relative name.

use std::path::{Component, Path, PathBuf};

/// Where a suite may read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    /// The project root, canonical where it exists.
    pub root: PathBuf,
    /// `--allow-outside-root`: paths outside the root are read all the same.
    pub allow_outside: bool,
}

/// How to find the root; the defaults apply without command-line flags.
#[derive(Debug, Clone, Default)]
pub struct RootOptions {
    /// `--root DIR`.
    pub root: Option<PathBuf>,
    /// `--allow-outside-root`.
    pub allow_outside: bool,
}

impl Confinement {
    /// The confinement of the suite in `suite_dir`.
    pub fn for_suite(suite_dir: &Path, options: &RootOptions) -> Confinement {
        let root = options
            .root
            .clone()
            .unwrap_or_else(|| default_root(suite_dir));
        Confinement {
            root: resolve(&root),
            allow_outside: options.allow_outside,
        }
    }

    /// Whether `path` (absolute, or relative to the working directory) resolves inside
    /// the root, symbolic links followed where the path exists.
    pub fn contains(&self, path: &Path) -> bool {
        resolve(path).starts_with(&self.root)
    }

    /// Whether `path` may be read: inside the root, or outside with permission.
    pub fn permits(&self, path: &Path) -> bool {
        self.allow_outside || self.contains(path)
    }
}

/// The parent of the nearest `judges.d` above the suite, else the suite folder itself.
fn default_root(suite_dir: &Path) -> PathBuf {
    let abs = resolve(suite_dir);
    abs.ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "judges.d"))
        .and_then(Path::parent)
        .map_or(abs.clone(), Path::to_path_buf)
}

/// `path` made absolute with `..` resolved: canonical for the longest part that exists
/// (so a symbolic link cannot lead outside unseen), lexical for the rest.
pub(crate) fn resolve(path: &Path) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    let mut existing = abs.as_path();
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(canonical) = existing.canonicalize() {
            let mut out = canonical;
            for part in rest.iter().rev() {
                push_lexical(&mut out, Path::new(part));
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return lexical(&abs),
        }
    }
}

fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    push_lexical(&mut out, path);
    out
}

fn push_lexical(out: &mut PathBuf, path: &Path) {
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
}

/// Why `name` (a suite name, a judge's dimension) cannot be used as one file-name
/// component, or `None` when it can. Such names become files (`results/<suite>/`,
/// `<out-dir>/<suite>.md`, `cassettes/<dimension>.json`): a separator, `..` or a leading
/// dot would put the file elsewhere or hide it.
pub(crate) fn file_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("it is empty")
    } else if name.contains(['/', '\\']) {
        Some("it holds a path separator (`/` or `\\`)")
    } else if name.starts_with('.') {
        Some("it starts with `.` (`..` is the parent folder; a leading dot hides a file)")
    } else if name.chars().any(char::is_control) {
        Some("it holds a control character")
    } else if name.len() > MAX_NAME_BYTES {
        Some("it is longer than 200 bytes")
    } else {
        None
    }
}

/// The longest name [`file_name_problem`] accepts: a file name (255 bytes on most file
/// systems) with room for an extension.
const MAX_NAME_BYTES: usize = 200;

/// The part of a glob pattern before its first wildcard: what must be inside the root.
pub(crate) fn glob_base(pattern: &str) -> &str {
    let cut = pattern.find(['*', '?', '[', '{']).unwrap_or(pattern.len());
    &pattern[..cut]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_dot_and_links_cannot_leave_the_root() {
        let tmp = tempfile::tempdir().unwrap();
        let project = tmp.path().join("project");
        std::fs::create_dir_all(project.join("judges.d/tool")).unwrap();
        std::fs::write(tmp.path().join("secret.json"), "{}").unwrap();
        let c = Confinement::for_suite(&project.join("judges.d/tool"), &RootOptions::default());
        assert_eq!(c.root, project.canonicalize().unwrap());
        assert!(c.contains(&project.join("judges.d/tool/../../prompts/x.md")));
        assert!(!c.contains(&project.join("judges.d/tool/../../../secret.json")));
        assert!(!c.contains(Path::new("/etc/passwd")));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(tmp.path().join("secret.json"), project.join("link.json"))
                .unwrap();
            assert!(!c.contains(&project.join("link.json")), "a link out is out");
        }
        let allowed = Confinement {
            allow_outside: true,
            ..c
        };
        assert!(allowed.permits(Path::new("/etc/passwd")));
    }

    #[test]
    fn a_suite_outside_judges_d_is_its_own_root() {
        let tmp = tempfile::tempdir().unwrap();
        let suite = tmp.path().join("mysuite");
        std::fs::create_dir_all(&suite).unwrap();
        let c = Confinement::for_suite(&suite, &RootOptions::default());
        assert_eq!(c.root, suite.canonicalize().unwrap());
        assert!(!c.contains(&suite.join("../other")));
    }

    #[test]
    fn only_plain_names_can_be_file_names() {
        for good in [
            "trivy",
            "vulnerability_accuracy",
            "Fix Rate",
            "a.b",
            "ümlaut",
        ] {
            assert_eq!(file_name_problem(good), None, "{good}");
        }
        for bad in [
            "",
            "..",
            ".",
            ".hidden",
            "../../ESCAPED",
            "a/b",
            "a\\b",
            "a\nb",
        ] {
            assert!(file_name_problem(bad).is_some(), "{bad:?}");
        }
        assert!(file_name_problem(&"x".repeat(201)).is_some());
    }

    #[test]
    fn glob_base_stops_at_the_first_wildcard() {
        assert_eq!(glob_base("../../runs/trivy-*.json"), "../../runs/trivy-");
        assert_eq!(glob_base("/abs/[ab]/x"), "/abs/");
        assert_eq!(glob_base("plain.json"), "plain.json");
    }
}
