//! Where output goes, and how: colour chosen once (`--color`, `NO_COLOR`,
//! `CLICOLOR_FORCE`, a terminal or not) through anstream; `--quiet`; reports written to a
//! file or, for `-`, to stdout; and stdout closed early by the reader (`| head -1`) ending
//! the program quietly instead of a panic.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use anstream::ColorChoice;

/// `--color` values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ColorArg {
    /// Colour on a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it).
    #[default]
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

static QUIET: AtomicBool = AtomicBool::new(false);
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Applies the global output choices; called once, before any output.
pub(crate) fn init(color: ColorArg, quiet: bool) {
    match color {
        ColorArg::Auto => ColorChoice::Auto,
        ColorArg::Always => ColorChoice::Always,
        ColorArg::Never => ColorChoice::Never,
    }
    .write_global();
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether `--quiet` was given: print nothing but errors and the one-line reason of a
/// failing gate.
pub(crate) fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Whether stdout gets colour.
pub(crate) fn stdout_color() -> bool {
    anstream::AutoStream::choice(&std::io::stdout()) != ColorChoice::Never
}

/// Whether stderr gets colour.
pub(crate) fn stderr_color() -> bool {
    anstream::AutoStream::choice(&std::io::stderr()) != ColorChoice::Never
}

/// Prints `text` on stdout, with styles stripped where colour is off. A reader that
/// closed the pipe ends output quietly: later prints are dropped, and the command keeps
/// its exit status.
pub(crate) fn print(text: &str) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = anstream::stdout().lock();
    let written = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    if let Err(e) = written {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("error: cannot write to stdout: {e}");
        }
    }
}

/// Prints `text` and a newline.
pub(crate) fn println(text: &str) {
    print(&format!("{text}\n"));
}

/// Where a report goes: a file, or stdout for `-`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Dest {
    /// Standard output.
    Stdout,
    /// A file (written atomically, styles stripped).
    File(PathBuf),
}

impl Dest {
    /// `-` is stdout; anything else a file.
    pub(crate) fn of(path: &Path) -> Dest {
        if path.as_os_str() == "-" {
            Dest::Stdout
        } else {
            Dest::File(path.to_owned())
        }
    }
}

/// Writes a report to `dest`.
pub(crate) fn emit(dest: &Dest, text: &str) -> Result<(), String> {
    match dest {
        Dest::Stdout => {
            print(text);
            Ok(())
        }
        Dest::File(path) => {
            let plain = anstream::adapter::strip_str(text).to_string();
            crate::report::json::write_atomic(path, plain.as_bytes())
                .map_err(|e| format!("cannot write {}: {e}", path.display()))
        }
    }
}
