//! Reading a judge's reply into a verdict.
//!
//! A reply is untrusted text. The parser never guesses: a score that is missing,
//! out of the judge's scale, fractional on an integer judge, or inside a JSON
//! object that was cut off is a [`ReplyError`]. Its message is written to be
//! quoted back to the model on the single re-ask, so it says what was wrong and
//! what a readable reply looks like.
//!
//! - `format.rs`: the declared format, checked once and shared ([`CompiledFormat`],
//!   [`SharedFormat`]), and the instructions it gives the model;
//! - `read.rs`: a reply read with it into a [`ParsedVerdict`];
//! - `extract.rs`: the JSON objects found in free text, in linear time;
//! - `error.rs`: [`FormatError`] (the author's) and [`ReplyError`] (the model's).

mod error;
mod extract;
mod format;
mod read;

pub(crate) use error::{FormatError, ReplyError};
// `CompiledFormat` is the crate's public API (re-exported by `lib.rs`).
pub use format::CompiledFormat;
pub(crate) use format::SharedFormat;
pub(crate) use read::ParsedVerdict;
