//! Python-style argument binding shared by every built-in.
//!
//! minijinja hands a function its positional values followed by one
//! keyword-argument map. Judge authors write both `pct(a, b, 2)` and
//! `pct(a, b, digits=2)`, so each built-in declares its parameter names once
//! and [`Args::bind`] fills them from either form. Every error names the
//! function, the parameter, what was expected and what was given, because the
//! author only sees the message, never this code.

use minijinja::value::{Kwargs, Rest, ValueKind, ValueOrKwargs, from_args};
use minijinja::{Error, ErrorKind, Value};

/// The arguments of one call, bound to the declared parameter names.
pub(crate) struct Args {
    func: &'static str,
    names: &'static [&'static str],
    slots: Vec<Option<Value>>,
}

impl Args {
    /// Binds positional and keyword arguments to `names`; the first
    /// `required` names must be supplied.
    pub(crate) fn bind(
        func: &'static str,
        names: &'static [&'static str],
        required: usize,
        raw: Rest<ValueOrKwargs>,
    ) -> Result<Args, Error> {
        let values = raw.into_values();
        let (positional, kwargs): (&[Value], Kwargs) = from_args(&values)?;
        if positional.len() > names.len() {
            return Err(Error::new(
                ErrorKind::TooManyArguments,
                format!(
                    "{func}() takes at most {} argument(s) ({}), got {}",
                    names.len(),
                    names.join(", "),
                    positional.len()
                ),
            ));
        }
        let mut slots: Vec<Option<Value>> = vec![None; names.len()];
        for (slot, value) in slots.iter_mut().zip(positional) {
            *slot = Some(value.clone());
        }
        let given: Vec<String> = kwargs.args().map(str::to_owned).collect();
        for key in given {
            let Some(index) = names.iter().position(|name| *name == key) else {
                return Err(Error::new(
                    ErrorKind::TooManyArguments,
                    format!(
                        "{func}() got an unknown keyword argument '{key}' (known: {})",
                        names.join(", ")
                    ),
                ));
            };
            if slots[index].is_some() {
                return Err(Error::new(
                    ErrorKind::TooManyArguments,
                    format!("{func}() got argument '{key}' both by position and by keyword"),
                ));
            }
            slots[index] = Some(kwargs.get::<Value>(&key)?);
        }
        if let Some(missing) = names[..required]
            .iter()
            .zip(&slots)
            .find_map(|(name, slot)| slot.is_none().then_some(name))
        {
            return Err(Error::new(
                ErrorKind::MissingArgument,
                format!("{func}() is missing its required argument '{missing}'"),
            ));
        }
        Ok(Args { func, names, slots })
    }

    /// The raw value of parameter `i`; undefined when not supplied.
    pub(crate) fn raw(&self, i: usize) -> Value {
        self.slots[i].clone().unwrap_or(Value::UNDEFINED)
    }

    /// Whether parameter `i` was supplied at all (even as `none`).
    pub(crate) fn supplied(&self, i: usize) -> bool {
        self.slots[i].is_some()
    }

    /// Parameter `i` unless it is missing, `none` or undefined.
    pub(crate) fn present(&self, i: usize) -> Option<Value> {
        self.slots[i].clone().filter(|v| !is_nothing(v))
    }

    /// An error about parameter `i`: what was expected and what was given.
    pub(crate) fn error(&self, i: usize, expected: &str, given: &Value) -> Error {
        Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "{}(): argument '{}' must be {expected}, got {}",
                self.func,
                self.names[i],
                describe(given)
            ),
        )
    }

    /// An error about the call as a whole (not tied to one argument's type).
    pub(crate) fn fail(&self, message: impl std::fmt::Display) -> Error {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("{}(): {message}", self.func),
        )
    }

    /// A required number.
    pub(crate) fn number(&self, i: usize) -> Result<f64, Error> {
        let value = self.raw(i);
        as_f64(&value).ok_or_else(|| self.error(i, "a number", &value))
    }

    /// An optional number; `none` or missing gives `default`.
    pub(crate) fn number_or(&self, i: usize, default: f64) -> Result<f64, Error> {
        match self.present(i) {
            None => Ok(default),
            Some(value) => as_f64(&value).ok_or_else(|| self.error(i, "a number", &value)),
        }
    }

    /// An optional non-negative integer; `none` or missing gives `None`.
    pub(crate) fn count(&self, i: usize) -> Result<Option<usize>, Error> {
        let Some(value) = self.present(i) else {
            return Ok(None);
        };
        let as_int = value
            .is_integer()
            .then(|| value.as_i64())
            .flatten()
            .and_then(|n| usize::try_from(n).ok());
        match as_int {
            Some(n) => Ok(Some(n)),
            None => Err(self.error(i, "a non-negative integer", &value)),
        }
    }

    /// An optional boolean; `none` or missing gives `default`.
    pub(crate) fn flag(&self, i: usize, default: bool) -> Result<bool, Error> {
        match self.present(i) {
            None => Ok(default),
            Some(value) if value.kind() == ValueKind::Bool => Ok(value.is_true()),
            Some(value) => Err(self.error(i, "true or false", &value)),
        }
    }

    /// An optional string; `none` or missing gives `None`.
    pub(crate) fn text(&self, i: usize) -> Result<Option<String>, Error> {
        match self.present(i) {
            None => Ok(None),
            Some(value) => match value.as_str() {
                Some(s) => Ok(Some(s.to_owned())),
                None => Err(self.error(i, "a string", &value)),
            },
        }
    }

    /// A list of items; `none` and undefined count as an empty list so that
    /// a tool that reported nothing is judged rather than crashing the judge.
    pub(crate) fn items(&self, i: usize) -> Result<Vec<Value>, Error> {
        let value = self.raw(i);
        if is_nothing(&value) {
            return Ok(Vec::new());
        }
        match value.kind() {
            ValueKind::Seq | ValueKind::Iterable => Ok(value
                .try_iter()
                .map_err(|_| self.error(i, "a list", &value))?
                .collect()),
            _ => Err(self.error(i, "a list", &value)),
        }
    }

    /// A list of numbers. A map contributes its values, so that
    /// `gini(count_by(..))` works directly; `none` is an empty list.
    pub(crate) fn numbers(&self, i: usize) -> Result<Vec<f64>, Error> {
        let value = self.raw(i);
        let items: Vec<Value> = if value.kind() == ValueKind::Map {
            map_values(&value)
        } else {
            self.items(i)?
        };
        items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                as_f64(item).ok_or_else(|| {
                    self.fail(format_args!(
                        "item {index} of argument '{}' must be a number, got {}",
                        self.names[i],
                        describe(item)
                    ))
                })
            })
            .collect()
    }
}

/// `none` and undefined: the two ways a value can be absent.
pub(crate) fn is_nothing(value: &Value) -> bool {
    value.is_none() || value.is_undefined()
}

/// A number as `f64`; booleans are not numbers here, to catch mistakes.
pub(crate) fn as_f64(value: &Value) -> Option<f64> {
    if value.is_number() {
        f64::try_from(value.clone()).ok()
    } else {
        None
    }
}

/// The values of a map-like value in its own key order.
pub(crate) fn map_values(value: &Value) -> Vec<Value> {
    match value.try_iter() {
        Ok(keys) => keys
            .map(|key| value.get_item(&key).unwrap_or(Value::UNDEFINED))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// A short description of a value for error messages: its kind and a
/// truncated rendering, so a huge document does not flood the message.
pub(crate) fn describe(value: &Value) -> String {
    const LIMIT: usize = 60;
    match value.kind() {
        ValueKind::Undefined => "undefined".to_owned(),
        ValueKind::None => "none".to_owned(),
        // minijinja prints `True`; judges write `true`.
        ValueKind::Bool => format!("bool {}", value.is_true()),
        ValueKind::String => {
            let text = value.as_str().unwrap_or_default();
            format!("string {:?}", truncate(text, LIMIT))
        }
        kind => {
            let rendered = value.to_string();
            format!("{kind} {}", truncate(&rendered, LIMIT))
        }
    }
}

fn truncate(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}
