//! Loading: suites and judges from YAML, documents from JSON, all with located
//! diagnostics.

pub mod yaml;
