//! The shared reference data beside the project (`../shared`): tests that compare with it
//! find it here. Without it, a test skips and says so on the real stderr (which
//! `cargo test` shows even for a passing test); with `CI` set, a missing folder is a
//! failure, so a CI run never passes on skipped checks.

use std::io::Write as _;
use std::path::PathBuf;

/// `../shared/<rel>` when it exists. Otherwise: a panic under CI, else a visible notice
/// and `None`.
pub fn shared_path(rel: &str, what: &str) -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared")
        .join(rel);
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI is set but {} is missing: {what} cannot be checked",
        path.display()
    );
    skipped(&format!("{} not found; {what} skipped", path.display()));
    None
}

/// Says that a check was skipped, where `cargo test` shows it (not captured).
pub fn skipped(message: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED: {message}");
}
