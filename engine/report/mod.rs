//! Reading saved runs and comparing them: the result document as a report reads it
//! ([`model::Report`]), the document written to disk ([`json`]), and the comparison of
//! two runs ([`compare::Comparison`]). The renderers of every format are in
//! `crate::view::run`.

pub(crate) mod compare;
pub(crate) mod json;
pub(crate) mod model;
