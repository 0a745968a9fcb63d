//! Loading: suites and judges from YAML, documents from JSON, all with located
//! diagnostics. The engine only ever runs what comes out of here.

pub mod catalogue;
pub mod confine;
pub mod documents;
pub mod inputs;
pub mod judge;
pub mod lenient;
pub mod names;
pub mod parts;
pub mod patterns;
pub mod reads;
pub mod reasoning;
pub mod suite;
pub mod yaml;
