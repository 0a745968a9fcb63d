//! Every command's output, rendered: the engines (`run`, `report`, `history`,
//! `calibrate`, `plan`, `judgetest`) return data, and the renderers here turn it into
//! text in each format a command offers, one folder or file per command. The pieces
//! they share (escapes, the stylesheet, table routines, JUnit, number formats) are in
//! `crate::present`; the command line writes the text through its one writer
//! (`cli::output`). A new format, or a new command's output, is a change here only.
//! `docs/architecture.md` follows one command from its arguments to the bytes written.

pub(crate) mod calibrate;
pub(crate) mod history;
pub(crate) mod judgetest;
pub(crate) mod plan;
pub(crate) mod run;
