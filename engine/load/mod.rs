//! Loading: suites and judges from YAML, documents from JSON, all with located
//! diagnostics. The engine only ever runs what comes out of here.

pub(crate) mod catalogue;
pub(crate) mod confine;
pub(crate) mod documents;
pub(crate) mod gzip;
pub(crate) mod inputs;
pub(crate) mod judge;
pub(crate) mod lenient;
pub(crate) mod names;
pub(crate) mod parts;
pub(crate) mod patterns;
pub(crate) mod reads;
pub(crate) mod reasoning;
pub(crate) mod skim;
pub(crate) mod suite;
pub(crate) mod yaml;
