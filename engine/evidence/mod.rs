//! Evidence: the run context, JSONPath selectors, expressions and the built-in
//! functions judges use to compute named values.

pub mod builtins;
pub mod compiled;
pub mod error;
pub mod eval;
pub mod fastpath;
pub mod limits;
pub mod operators;
pub mod plan;
pub mod scope;
pub mod select;

/// The delimiters of every template: `<< >>`, `<% %>`, `<# #>`.
pub fn syntax() -> minijinja::syntax::SyntaxConfig {
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
