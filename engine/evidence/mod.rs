//! Evidence: the run context, JSONPath selectors, expressions and the built-in
//! functions judges use to compute named values.

pub mod builtins;
pub mod compiled;
pub mod eval;
pub mod fastpath;
pub mod limits;
pub mod operators;
pub mod plan;
pub mod scope;
pub mod select;
