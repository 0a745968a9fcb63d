//! Evidence: the run context, JSONPath selectors, expressions and the built-in
//! functions judges use to compute named values.

pub(crate) mod builtins;
pub(crate) mod compiled;
pub(crate) mod error;
pub(crate) mod eval;
pub(crate) mod fastpath;
pub(crate) mod limits;
pub(crate) mod operators;
pub(crate) mod plan;
pub(crate) mod scope;
pub(crate) mod select;

/// The delimiters of every template: `<< >>`, `<% %>`, `<# #>`.
pub(crate) fn syntax() -> minijinja::syntax::SyntaxConfig {
    let syntax = minijinja::syntax::SyntaxConfig::builder()
        .block_delimiters("<%", "%>")
        .variable_delimiters("<<", ">>")
        .comment_delimiters("<#", "#>")
        .build();
    match syntax {
        Ok(s) => s,
        // The delimiters are constants; failing here is a programming error caught by tests.
        Err(e) => unreachable!("invalid built-in syntax config: {e}"),
    }
}
