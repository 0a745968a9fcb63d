//! The one place where the library's notices reach a person.
//!
//! Library code never prints: what a person should see while a run goes on (a cache
//! entry refused, a batch re-polled, a cassette recorded, phase timings) goes through the
//! `log` facade, and this logger, installed by the CLI, writes it to stderr. Embedders of
//! the library install their own logger or none; nothing is lost from results either way,
//! since every problem that affects a score is also on the verdict and in the summary.

use std::io::Write as _;

use log::{Level, LevelFilter, Log, Metadata, Record};

/// Writes caldera's own records to stderr: warnings as `warning: ...`, progress and
/// other information as the bare line, phase timings (`debug`, target
/// `caldera::profile`) as `profile: ...` when `CALDERA_PROFILE` is set. Records of
/// dependencies are dropped: their wording is not ours to show.
struct StderrLog;

/// The target prefix of records this logger shows.
const OURS: &str = "caldera";

impl Log for StderrLog {
    fn enabled(&self, metadata: &Metadata) -> bool {
        metadata.target().starts_with(OURS)
    }

    fn log(&self, record: &Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let mut err = anstream::stderr().lock();
        let _ = match record.level() {
            Level::Error => writeln!(err, "error: {}", record.args()),
            Level::Warn => writeln!(err, "warning: {}", record.args()),
            Level::Info => writeln!(err, "{}", record.args()),
            Level::Debug | Level::Trace => writeln!(err, "profile: {}", record.args()),
        };
    }

    fn flush(&self) {
        let _ = std::io::stderr().flush();
    }
}

/// Installs the logger; called once by the CLI before any command runs.
pub(crate) fn init() {
    static LOGGER: StderrLog = StderrLog;
    if log::set_logger(&LOGGER).is_ok() {
        let profile = std::env::var_os("CALDERA_PROFILE").is_some();
        log::set_max_level(if profile {
            LevelFilter::Debug
        } else {
            LevelFilter::Info
        });
    }
}
