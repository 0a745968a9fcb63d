//! The resolved form of evidence: every value classified once at load (selector,
//! expression, template, constant, record list) so evaluation never re-parses YAML text.
//!
//! Selectors and expressions (values, `if:` conditions, `where:` filters) are compiled
//! at load too. Templates are kept as text and compiled when a unit is evaluated (once
//! per value, once per record-list block): minijinja holds a compiled template only
//! inside an environment, borrowed from it, so a plan cannot own one.

use crate::doc::Doc;
use crate::evidence::compiled::Expr;
use crate::evidence::select::Selector;

/// How one evidence value is computed.
#[derive(Clone, Debug)]
pub enum ValuePlan {
    /// A JSONPath selector.
    Select(Selector),
    /// A minijinja expression (the text between `<<` and `>>`), compiled.
    Expr(Expr),
    /// A text with `<< >>` parts, rendered to a string.
    Template(String),
    /// A constant.
    Const(Doc),
    /// A record list.
    Records(Box<RecordsPlan>),
    /// A value left out when its condition is false or it is empty.
    Conditional(Box<ConditionalPlan>),
}

/// A value that may be left out.
#[derive(Clone, Debug)]
pub struct ConditionalPlan {
    /// Computed only when this expression is true.
    pub condition: Option<Expr>,
    /// Left out when the value is `null`, `""`, `[]` or `{}`.
    pub omit_empty: bool,
    /// The value.
    pub value: ValuePlan,
}

/// Whether a computed value counts as empty for `omit_empty`.
pub(crate) fn is_empty(doc: &crate::doc::Doc) -> bool {
    use crate::doc::Doc;
    match doc {
        Doc::Null => true,
        Doc::Str(s) => s.is_empty(),
        Doc::Array(a) => a.is_empty(),
        Doc::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// A record list: fields computed per selected item.
#[derive(Clone, Debug)]
pub struct RecordsPlan {
    /// Where the items come from.
    pub for_each: ValuePlan,
    /// Keep an item only when this expression is true.
    pub filter: Option<Expr>,
    /// The fields, in order.
    pub fields: Vec<(String, ValuePlan)>,
    /// Each entry's key, when the list is a map.
    pub key: Option<ValuePlan>,
    /// Each entry's value, instead of the record.
    pub value: Option<ValuePlan>,
    /// A second name for the item (`as:`), seen by the fields and by nested lists.
    pub as_name: Option<String>,
}

/// What a piece of text in a judge file is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TextKind<'a> {
    /// `$...`: a JSONPath selector.
    Selector(&'a str),
    /// `<< expr >>` and nothing else: an expression (its inner text).
    Expr(&'a str),
    /// Text containing `<< >>` or `<% %>` parts: a template.
    Template(&'a str),
    /// Anything else: a string constant.
    Literal(&'a str),
}

/// Classifies evidence text. One rule for every place a value is written, so a reader
/// can tell a value's kind from its first characters.
pub(crate) fn classify(text: &str) -> TextKind<'_> {
    let trimmed = text.trim();
    if trimmed.starts_with('$') {
        return TextKind::Selector(trimmed);
    }
    if let Some(inner) = expression_inner(trimmed) {
        return TextKind::Expr(inner);
    }
    if text.contains("<<") || text.contains("<%") {
        return TextKind::Template(text);
    }
    TextKind::Literal(text)
}

/// The inner text of `<< expr >>` when the whole text is one expression.
pub(crate) fn expression_inner(text: &str) -> Option<&str> {
    let t = text.trim();
    let inner = t.strip_prefix("<<")?.strip_suffix(">>")?;
    (!inner.contains("<<") && !inner.contains(">>")).then(|| inner.trim())
}

/// A condition (`that:`, `if:`) may be written `<< expr >>` or as a bare expression.
pub(crate) fn condition_source(text: &str) -> &str {
    expression_inner(text).unwrap_or_else(|| text.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        assert_eq!(classify("$.a[*]"), TextKind::Selector("$.a[*]"));
        assert_eq!(classify("<< a + 1 >>"), TextKind::Expr("a + 1"));
        assert_eq!(classify(" << a >> "), TextKind::Expr("a"));
        assert_eq!(
            classify("<< a >> of << b >>"),
            TextKind::Template("<< a >> of << b >>")
        );
        assert_eq!(
            classify("rate: << r >>%"),
            TextKind::Template("rate: << r >>%")
        );
        assert_eq!(classify("plain"), TextKind::Literal("plain"));
        // One delimiter more inside: not a single expression.
        assert_eq!(classify("<< a >> b >>"), TextKind::Template("<< a >> b >>"));
        assert_eq!(classify("<< a << b >>"), TextKind::Template("<< a << b >>"));
        assert_eq!(condition_source("<< x > 1 >>"), "x > 1");
        assert_eq!(condition_source("x > 1"), "x > 1");
    }

    #[test]
    fn empty_is_null_and_empty_texts_lists_and_maps_only() {
        let empty: [Doc; 4] = [
            Doc::Null,
            Doc::from(""),
            Doc::from(Vec::<Doc>::new()),
            Doc::object(Vec::<(&str, Doc)>::new()),
        ];
        assert!(empty.iter().all(is_empty));
        let full = [
            Doc::Int(0),
            Doc::Bool(false),
            Doc::Float(0.0),
            Doc::from(" "),
            Doc::from(vec![Doc::Null]),
            Doc::object([("k", Doc::Null)]),
        ];
        assert!(!full.iter().any(is_empty), "{full:?}");
    }
}
