//! Reports of a run: the JSON result document and the terminal table.

pub mod json;
pub mod table;
