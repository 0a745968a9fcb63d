//! The one error of evaluation: what kind of failure, where in the judge file, and for
//! which record item.
//!
//! Expressions, templates, selectors, heuristics and assertions all fail with this type,
//! so the key path and the kind travel as data from the place that failed to the
//! diagnostic `caldera validate` prints and to the verdict a run records: nothing is
//! worded into a string and split apart again. Its text (`Display`) is what results and
//! reports have always shown: `key.path (item x): message`.

use crate::diag::{Code, Diagnostic};

/// What kind of failure: the diagnostic chooses its help from it.
///
/// Non-exhaustive, as minijinja's own `ErrorKind` is: new kinds may come with new
/// functions, and code matching on it keeps a fallback arm.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A name or key that is not there on the data it was read from.
    Undefined,
    /// An operation on a value of the wrong type, or a call with the wrong arguments.
    Type,
    /// An expression or template that does not parse.
    Syntax,
    /// A function, filter, test or method that does not exist.
    UnknownFunction,
    /// A JSONPath selector that could not run on the data.
    Selector,
    /// A value of the wrong shape where the judge needs one: a record key that is not
    /// text, a score that is not a whole number from 1 to 5, `failures` that is not a
    /// list of messages.
    Shape,
    /// A bound on evaluation steps, text size or item count was reached.
    Limit,
    /// The items of nested record lists under one evidence name passed their total
    /// bound. The total is what is at fault, not the item it was passed on (with lists
    /// split over the cores, which item that is depends on timing), so none is named.
    Budget,
    /// Any other failure inside an expression or template.
    Other,
}

/// An evidence value, heuristic or assertion that could not be evaluated. (Partial
/// results of shards keep it whole, so a merge reports it as the single run would.)
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EvalError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// Where in the judge file (`evidence.per_repo.fields.cves`); empty until the
    /// caller that knows the place sets it with [`EvalError::at`].
    pub key_path: String,
    /// Which record item, when the error happened inside a record list.
    pub item: Option<String>,
    /// What went wrong, on one line.
    pub message: String,
}

impl EvalError {
    /// An error of `kind`, not yet located.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> EvalError {
        EvalError {
            kind,
            key_path: String::new(),
            item: None,
            message: message.into(),
        }
    }

    /// A minijinja error (an expression or template that failed), with its kind read
    /// from minijinja's and its message on one line.
    pub fn from_minijinja(e: &minijinja::Error) -> EvalError {
        EvalError::new(kind_of(e), crate::evidence::limits::error_text(e))
    }

    /// The error located at `key_path` in the judge file.
    pub fn at(mut self, key_path: impl Into<String>) -> EvalError {
        self.key_path = key_path.into();
        self
    }

    /// The error raised while computing record item `item` (a [`ErrorKind::Budget`]
    /// error belongs to no item and stays without one).
    pub fn for_item(mut self, item: Option<&str>) -> EvalError {
        if self.kind != ErrorKind::Budget {
            self.item = item.map(str::to_owned);
        }
        self
    }

    /// The message with the item it was raised for, without the key path (a diagnostic
    /// locates the key path itself).
    pub fn message_with_item(&self) -> String {
        match &self.item {
            Some(item) => format!("{} (item {item})", self.message),
            None => self.message.clone(),
        }
    }
}

impl EvalError {
    /// The diagnostic `caldera validate` and a run's input errors show: the message, the
    /// item as a note, and a help chosen by the kind. The caller locates it in its file
    /// by [`EvalError::key_path`].
    pub fn to_diagnostic(&self) -> Diagnostic {
        let mut d = Diagnostic::error(Code::EvaluationError, self.message.clone());
        if let Some(item) = &self.item {
            d = d.note(format!("while computing item `{item}`"));
        }
        match help(self.kind) {
            Some(help) => d.help(help),
            None => d,
        }
    }
}

/// What to do about an error of `kind`, when there is more to say than its message.
fn help(kind: ErrorKind) -> Option<String> {
    use crate::evidence::limits::{FUEL, MAX_ITEMS, MAX_NESTED_RECORDS, MAX_TEXT_BYTES};
    match kind {
        ErrorKind::Undefined => Some(
            "a name or key that is not there on these inputs: check its spelling against the \
             data, or guard a read that may be absent with `is defined` or `.get(key, default)`"
                .into(),
        ),
        ErrorKind::Budget => Some(format!(
            "nested record lists multiply: at most {MAX_NESTED_RECORDS} items in all under \
             one evidence name; select fewer outer or inner items (`where`, a narrower \
             `for_each`)"
        )),
        ErrorKind::Limit => Some(format!(
            "every expression and template is bounded: {FUEL} steps, {} MiB of text, \
             {MAX_ITEMS} list items; compute less per value (filter with `where`, split a \
             record list)",
            MAX_TEXT_BYTES >> 20
        )),
        _ => None,
    }
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.key_path.is_empty() {
            return f.write_str(&self.message_with_item());
        }
        write!(f, "{}", self.key_path)?;
        if let Some(item) = &self.item {
            write!(f, " (item {item})")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for EvalError {}

/// The kind of a minijinja error. Bounds of our own (text size, item count) are
/// minijinja `InvalidOperation`s marked by their source; see `limits::limit_error`.
fn kind_of(e: &minijinja::Error) -> ErrorKind {
    use minijinja::ErrorKind as M;
    if crate::evidence::limits::is_limit(e) {
        return ErrorKind::Limit;
    }
    // An operation on an undefined value (a misspelled name or key, which the
    // environment lets through as undefined) is an `InvalidOperation` whose detail names
    // the undefined operand: the commonest typo, so it gets the kind that helps with it.
    let on_undefined = e.detail().is_some_and(|d| d.contains("undefined"));
    match e.kind() {
        M::UndefinedError => ErrorKind::Undefined,
        M::InvalidOperation if on_undefined => ErrorKind::Undefined,
        M::SyntaxError | M::BadEscape | M::InvalidDelimiter => ErrorKind::Syntax,
        M::UnknownFilter | M::UnknownTest | M::UnknownFunction | M::UnknownMethod => {
            ErrorKind::UnknownFunction
        }
        M::OutOfFuel => ErrorKind::Limit,
        M::NonPrimitive
        | M::NonKey
        | M::InvalidOperation
        | M::TooManyArguments
        | M::MissingArgument
        | M::CannotUnpack
        | M::CannotDeserialize => ErrorKind::Type,
        _ => ErrorKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval_err(src: &str) -> EvalError {
        let env = crate::render::environment();
        crate::evidence::eval::eval_expr(&env, src, &minijinja::context! { n => 1 })
            .expect_err("fails")
    }

    #[test]
    fn minijinja_failures_keep_their_kind() {
        assert_eq!(eval_err("n +").kind, ErrorKind::Syntax);
        assert_eq!(eval_err("missing + 1").kind, ErrorKind::Undefined);
        assert_eq!(eval_err("pct(n.missing, 2)").kind, ErrorKind::Undefined);
        assert_eq!(
            eval_err("n | no_such_filter").kind,
            ErrorKind::UnknownFunction
        );
        assert_eq!(eval_err("n + 'a'").kind, ErrorKind::Type);
        // Our own bounds are minijinja `InvalidOperation`s, marked as limits.
        let limit = eval_err("[1, 2] | batch(2000000)");
        assert_eq!(limit.kind, ErrorKind::Limit);
        assert!(
            !limit.message.contains("limit reached"),
            "{}",
            limit.message
        );
        assert_eq!(
            eval_err("range(10) | map('x') | list").kind,
            ErrorKind::UnknownFunction
        );
    }

    #[test]
    fn text_is_the_key_path_the_item_and_the_message() {
        let e = EvalError::new(ErrorKind::Shape, "not a list")
            .at("evidence.rows")
            .for_item(Some("repo-a"));
        assert_eq!(e.to_string(), "evidence.rows (item repo-a): not a list");
        assert_eq!(e.message_with_item(), "not a list (item repo-a)");
        let unlocated = EvalError::new(ErrorKind::Type, "bad");
        assert_eq!(unlocated.to_string(), "bad");
    }
}
