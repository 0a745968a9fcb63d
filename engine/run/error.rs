//! Why a run gave no result. Everything a judge finds goes into the result instead; only
//! what stops the run as a whole is an error.

use crate::diag::{Code, Diagnostic};

/// A run that could not complete.
#[derive(Debug)]
pub enum RunError {
    /// The suite, its inputs or the provider cannot be used (exit 2).
    Invalid(Vec<Diagnostic>),
    /// A signal stopped the run; the sentence says what was kept for the next one
    /// (exit 130).
    Interrupted(String),
}

impl From<Vec<Diagnostic>> for RunError {
    fn from(d: Vec<Diagnostic>) -> Self {
        RunError::Invalid(d)
    }
}

impl From<Diagnostic> for RunError {
    fn from(d: Diagnostic) -> Self {
        RunError::Invalid(vec![d])
    }
}

impl From<RunError> for Vec<Diagnostic> {
    /// For callers that report any failure as diagnostics (`caldera test`, `calibrate`).
    fn from(e: RunError) -> Self {
        match e {
            RunError::Invalid(d) => d,
            RunError::Interrupted(message) => vec![Diagnostic::error(Code::Io, message)],
        }
    }
}

impl RunError {
    /// The diagnostics, if the run could not start (none for an interrupt).
    pub fn into_diagnostics(self) -> Vec<Diagnostic> {
        match self {
            RunError::Invalid(d) => d,
            RunError::Interrupted(_) => Vec::new(),
        }
    }
}
