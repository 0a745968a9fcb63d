//! What every renderer of every command shares, so that each exists once: one escape
//! per target language ([`escape`]: HTML, Markdown, terminal), one stylesheet and chart
//! palette for every HTML page ([`style`]), one aligned-table routine for the terminal
//! and Markdown ([`table`]), JUnit through quick-junit only ([`junit`]), and how a score
//! is written ([`number`]).
//!
//! The renderers themselves are in `crate::view`: they take their command's data (a
//! result, a comparison, a plan, a calibration, a history, judge-test checks) and a
//! format, and return the text; the command line writes it through its one writer
//! (`cli::output`), which ends quietly on a closed pipe. This module sits at the bottom
//! of the module graph (it uses nothing of the crate), so every renderer, the engines'
//! wording (a comparison's lines) and the diagnostic renderer in `diag` can use it.
//! `docs/architecture.md` follows one command from its arguments to the bytes written.

pub(crate) mod escape;
pub(crate) mod junit;
pub(crate) mod number;
pub(crate) mod style;
pub(crate) mod table;
