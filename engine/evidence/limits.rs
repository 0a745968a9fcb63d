//! Bounds on what one expression or template may cost, so a judge file can neither hang
//! a run nor take the machine's memory: a judge is data, and data may come from anyone.
//!
//! - **Steps**: every evaluation (one expression, one template, one prompt) gets
//!   [`FUEL`] minijinja instructions. Loops, recursion and macro fan-out stop there with
//!   an error instead of running for hours.
//! - **Text**: a rendered template, and the text built by the filters that can multiply
//!   their input (`join`, `replace`, `indent`, `batch`, `slice`, `format`), may
//!   not exceed [`MAX_TEXT_BYTES`] (or [`MAX_ITEMS`] items); the check comes before the
//!   allocation, not after. The operators that join text (`~`, and `+` on strings) are
//!   bounded the same way: [`crate::evidence::operators`] rewrites them into calls.
//! - **Nested record lists**: the lists nested in one evidence name's records go over
//!   at most [`MAX_NESTED_RECORDS`] items together (an outer list is bounded by its input).
//!
//! A breach is an ordinary evaluation error: the judge ends in `error` with the key path
//! of the value that went over, and the run goes on.

use std::io::Write;

use minijinja::value::{Kwargs, StringInput, Value};
use minijinja::{Environment, Error, ErrorKind, State, Template};

/// Instructions one evaluation may execute. The bundled suites need well under a tenth
/// of this on thousands of findings; two nested `range(100000)` loops need 10^10.
pub(crate) const FUEL: u64 = 20_000_000;

/// The longest text one template or filter may produce (16 MiB).
pub(crate) const MAX_TEXT_BYTES: usize = 16 << 20;

/// The most items `batch` and `slice` may create.
pub(crate) const MAX_ITEMS: usize = 1_000_000;

/// The most items the record lists nested in one evidence name's records may go over,
/// together (each outer item runs its nested lists again, so their work multiplies).
pub(crate) const MAX_NESTED_RECORDS: usize = 1_000_000;

/// Turns fuel on and replaces the multiplying filters by bounded ones. The bounded
/// operators are installed beside it (`operators::install`), since they use the limits
/// defined here.
pub(crate) fn install(env: &mut Environment<'_>) {
    env.set_fuel(Some(FUEL));
    env.add_filter("join", join);
    env.add_filter("replace", replace);
    env.add_filter("indent", indent);
    env.add_filter("batch", batch);
    env.add_filter("slice", slice);
    env.add_filter("format", format);
}

/// The message for an evaluation that ran out of fuel, in the user's words.
pub(crate) fn out_of_fuel_message() -> String {
    format!(
        "evaluation stopped after {FUEL} steps: a loop, recursion or macro does too much work \
         (every expression and template must finish within that many steps)"
    )
}

/// Formats a minijinja error as one line (kind, detail, no debug dump).
pub(crate) fn error_text(err: &minijinja::Error) -> String {
    if err.kind() == minijinja::ErrorKind::OutOfFuel {
        return out_of_fuel_message();
    }
    let mut text = match err.detail() {
        Some(detail) => format!("{}: {detail}", err.kind()),
        None => err.kind().to_string(),
    };
    let mut source = std::error::Error::source(err);
    while let Some(inner) = source {
        if !inner.is::<LimitReached>() {
            text.push_str(": ");
            text.push_str(&inner.to_string());
        }
        source = inner.source();
    }
    text
}

/// Marks a minijinja error as a breach of one of these bounds, so the evaluation error
/// built from it is of kind `Limit` (minijinja has no such kind; its nearest is
/// `InvalidOperation`, which it keeps).
#[derive(Debug)]
struct LimitReached;

impl std::fmt::Display for LimitReached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("limit reached")
    }
}

impl std::error::Error for LimitReached {}

/// A breach of a bound on text size or item count, as a minijinja error.
pub(crate) fn limit_error(message: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, message).with_source(LimitReached)
}

/// Whether `err` is a breach of one of these bounds (fuel included).
pub(crate) fn is_limit(err: &Error) -> bool {
    if err.kind() == ErrorKind::OutOfFuel {
        return true;
    }
    let mut source = std::error::Error::source(err);
    while let Some(inner) = source {
        if inner.is::<LimitReached>() {
            return true;
        }
        source = inner.source();
    }
    false
}

fn too_long(what: &str, bytes: usize) -> Error {
    limit_error(format!(
        "{what} would be {bytes} bytes long, more than the {MAX_TEXT_BYTES} a value may take"
    ))
}

/// Renders `template` with `ctx`, stopping once the output passes [`MAX_TEXT_BYTES`].
pub(crate) fn render(template: &Template<'_, '_>, ctx: &Value) -> Result<String, Error> {
    let mut out = Capped::default();
    let result = template.render_captured_to(ctx, &mut out);
    if out.over {
        return Err(too_long("the rendered text", out.written));
    }
    result?;
    String::from_utf8(out.bytes).map_err(|e| Error::new(ErrorKind::WriteFailure, e.to_string()))
}

/// A writer that refuses to grow past [`MAX_TEXT_BYTES`].
#[derive(Default)]
struct Capped {
    bytes: Vec<u8>,
    written: usize,
    over: bool,
}

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.written = self.written.saturating_add(buf.len());
        if self.written > MAX_TEXT_BYTES {
            self.over = true;
            return Err(std::io::Error::other("output limit reached"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `join`, building the text piece by piece and stopping at the limit. (Auto-escaping
/// is off in caldera, so the plain join is the only one.)
fn join(
    value: &Value,
    joiner: Option<StringInput<'_>>,
    attribute: Option<&str>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let joiner = match joiner {
        Some(j) => Some(j.as_str().to_owned()),
        None => kwargs.get::<Option<String>>("d")?,
    };
    let attribute = match attribute {
        Some(a) => Some(a.to_owned()),
        None => kwargs.get::<Option<String>>("attribute")?,
    };
    kwargs.assert_all_used()?;
    let joiner = joiner.unwrap_or_default();
    let items = value.try_iter().map_err(|err| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("cannot join value of type {}", value.kind()),
        )
        .with_source(err)
    })?;
    let mut out = String::new();
    for (i, item) in items.enumerate() {
        let item = match &attribute {
            Some(path) => attribute_of(&item, path),
            None => item,
        };
        if i > 0 {
            out.push_str(&joiner);
        }
        match item.as_str() {
            Some(s) => out.push_str(s),
            None => {
                use std::fmt::Write as _;
                let _ = write!(out, "{item}");
            }
        }
        if out.len() > MAX_TEXT_BYTES {
            return Err(too_long("the joined text", out.len()));
        }
    }
    Ok(Value::from(out))
}

/// A dotted attribute path (`a.b.0`) of `item`, as minijinja's own filters read it.
fn attribute_of(item: &Value, path: &str) -> Value {
    path.split('.')
        .fold(item.clone(), |v, part| match part.parse::<i64>() {
            Ok(i) => v.get_item(&Value::from(i)).unwrap_or_default(),
            Err(_) => v.get_attr(part).unwrap_or_default(),
        })
}

/// `replace`, refused when the result would pass the limit.
fn replace(
    state: &mut State,
    value: StringInput<'_>,
    from: StringInput<'_>,
    to: StringInput<'_>,
) -> Result<Value, Error> {
    let text = value.as_str();
    let hits = if from.as_str().is_empty() {
        text.chars().count() + 1
    } else {
        text.matches(from.as_str()).count()
    };
    let size = (text.len() - hits * from.as_str().len())
        .saturating_add(hits.saturating_mul(to.as_str().len()));
    if size > MAX_TEXT_BYTES {
        return Err(too_long("the replaced text", size));
    }
    minijinja::filters::replace(state, value, from, to)
}

/// `indent`, refused when the indentation would pass the limit.
fn indent(
    value: StringInput<'_>,
    width: Option<usize>,
    first: Option<bool>,
    blank: Option<bool>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let w = match width {
        Some(w) => w,
        None => kwargs.peek::<Option<usize>>("width")?.unwrap_or(4),
    };
    let lines = value.as_str().lines().count() + 1;
    let size = value.as_str().len().saturating_add(w.saturating_mul(lines));
    if size > MAX_TEXT_BYTES {
        return Err(too_long("the indented text", size));
    }
    minijinja::filters::indent(value, width, first, blank, kwargs)
}

/// `batch`, refused for a batch size past [`MAX_ITEMS`] (the last batch is filled up to it).
fn batch(
    state: &State,
    value: Value,
    count: usize,
    fill_with: Option<Value>,
) -> Result<Value, Error> {
    check_items(count)?;
    minijinja::filters::batch(state, value, count, fill_with)
}

/// `slice`, refused for a slice count past [`MAX_ITEMS`].
fn slice(
    state: &State,
    value: Value,
    count: usize,
    fill_with: Option<Value>,
) -> Result<Value, Error> {
    check_items(count)?;
    minijinja::filters::slice(state, value, count, fill_with)
}

fn check_items(count: usize) -> Result<(), Error> {
    if count > MAX_ITEMS {
        return Err(limit_error(format!(
            "{count} items are more than the {MAX_ITEMS} a list may take"
        )));
    }
    Ok(())
}

/// `format` (printf style), refused for a field width or precision past the limit.
fn format(
    state: &mut State,
    format_str: &Value,
    args: minijinja::value::Rest<minijinja::value::ValueOrKwargs>,
) -> Result<Value, Error> {
    if let Some(text) = format_str.as_str() {
        static WIDTH: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
        let width = WIDTH.get_or_init(|| {
            regex::Regex::new(r"%[-+ #0]*(\d*)(?:\.(\d*))?").unwrap_or_else(|_| unreachable!())
        });
        for caps in width.captures_iter(text) {
            let numbers = [caps.get(1), caps.get(2)].into_iter().flatten();
            for n in numbers.filter(|n| !n.as_str().is_empty()) {
                let n: usize = n.as_str().parse().unwrap_or(usize::MAX);
                if n > MAX_TEXT_BYTES {
                    return Err(too_long("a formatted field", n));
                }
            }
        }
    }
    if let Some(text) = format_str.as_str() {
        check_formatted_size(text, &args)?;
    }
    minijinja::filters::format(state, format_str, args)
}

/// Refuses a `format` whose text could pass the limit: every conversion (`%`) writes at
/// most the longest argument (or value of a mapping argument, for `%(name)s`, which may
/// repeat one), so the text is at most the format plus that many of them.
fn check_formatted_size(text: &str, args: &[minijinja::value::ValueOrKwargs]) -> Result<(), Error> {
    let conversions = text.matches('%').count();
    if conversions == 0 {
        return Ok(());
    }
    let mut longest = 0;
    for arg in args {
        let arg: &Value = arg;
        longest = longest.max(shown_len(arg));
        if arg.kind() == minijinja::value::ValueKind::Map
            && let Ok(keys) = arg.try_iter()
        {
            for key in keys {
                let item = arg.get_item(&key).unwrap_or_default();
                longest = longest.max(shown_len(&item));
            }
        }
    }
    let size = text
        .len()
        .saturating_add(conversions.saturating_mul(longest));
    if size > MAX_TEXT_BYTES {
        return Err(too_long("the formatted text", size));
    }
    Ok(())
}

/// How long `value` is as text, counted up to just past [`MAX_TEXT_BYTES`].
fn shown_len(value: &Value) -> usize {
    if let Some(s) = value.as_str() {
        return s.len();
    }
    struct Count(usize);
    impl std::fmt::Write for Count {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0 = self.0.saturating_add(s.len());
            if self.0 > MAX_TEXT_BYTES {
                return Err(std::fmt::Error);
            }
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = std::fmt::Write::write_fmt(&mut count, format_args!("{value}"));
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Doc;

    /// Evaluates `src` in caldera's environment with `x` bound to `x`.
    fn eval(src: &str, x: Value) -> Result<Value, String> {
        let env = crate::render::environment();
        crate::evidence::eval::eval_expr(&env, src, &minijinja::context! { x => x })
            .map_err(|e| e.message)
    }

    /// Evaluates `src` and gives the length of the text it makes.
    fn text_len(src: &str, x: Value) -> Result<usize, String> {
        eval(src, x).map(|v| v.as_str().map_or(0, str::len))
    }

    /// `n` bytes of `x`.
    fn xs(n: usize) -> Value {
        Value::from("x".repeat(n))
    }

    #[test]
    fn a_runaway_loop_stops_with_the_out_of_fuel_message() {
        let env = crate::render::environment();
        let endless =
            "<% for i in range(100000) %><% for j in range(100000) %><% endfor %><% endfor %>";
        let err = crate::evidence::eval::render_text(&env, endless, &Value::from(()))
            .unwrap_err()
            .message;
        assert_eq!(err, out_of_fuel_message());
        assert!(
            err.starts_with("evaluation stopped after 20000000 steps"),
            "{err}"
        );
    }

    #[test]
    fn error_text_is_kind_detail_and_every_source_on_one_line() {
        let bare = Error::from(ErrorKind::InvalidOperation);
        assert_eq!(error_text(&bare), "invalid operation");
        let detailed = Error::new(ErrorKind::InvalidOperation, "boom");
        assert_eq!(error_text(&detailed), "invalid operation: boom");
        let inner = Error::new(ErrorKind::BadSerialization, "inner");
        let chained = Error::new(ErrorKind::InvalidOperation, "outer").with_source(inner);
        assert_eq!(
            error_text(&chained),
            "invalid operation: outer: could not serialize to value: inner"
        );
    }

    #[test]
    fn a_rendered_text_may_reach_the_limit_but_not_pass_it() {
        let env = crate::render::environment();
        let t = env.template_from_str("<< x >>").unwrap();
        let at = render(&t, &minijinja::context! { x => xs(MAX_TEXT_BYTES) }).unwrap();
        assert_eq!(at.len(), MAX_TEXT_BYTES);
        let t = env.template_from_str("<< x >>!").unwrap();
        let err = render(&t, &minijinja::context! { x => xs(MAX_TEXT_BYTES) }).unwrap_err();
        assert_eq!(
            error_text(&err),
            format!(
                "invalid operation: the rendered text would be {} bytes long, more than the {MAX_TEXT_BYTES} a value may take",
                MAX_TEXT_BYTES + 1
            )
        );
        let t = env.template_from_str("a << x >> b").unwrap();
        assert_eq!(
            render(&t, &minijinja::context! { x => 1 }).unwrap(),
            "a 1 b"
        );
    }

    #[test]
    fn join_reads_its_joiner_and_attribute_positionally_or_by_name() {
        let items: Doc =
            serde_json::from_str(r#"[{"a": {"b": ["p", 1]}}, {"a": {"b": ["q", 2]}}]"#).unwrap();
        let items = items.to_value();
        let cases = [
            ("[1, 'a', 2.5] | join(', ')", "1, a, 2.5"),
            ("[1, 2] | join", "12"),
            ("[1, 2] | join(d='-')", "1-2"),
            ("x | join('/', 'a.b.0')", "p/q"),
            ("x | join(attribute='a.b.1')", "12"),
            ("x | join(d='+', attribute='a.b.1')", "1+2"),
        ];
        for (src, want) in cases {
            assert_eq!(
                eval(src, items.clone()).unwrap().as_str(),
                Some(want),
                "{src}"
            );
        }
        let err = eval("5 | join", Value::from(())).unwrap_err();
        assert!(err.contains("cannot join value of type number"), "{err}");
    }

    #[test]
    fn joined_text_may_reach_the_limit_but_not_pass_it() {
        let half = Value::from(vec![xs(MAX_TEXT_BYTES / 2 - 1), xs(MAX_TEXT_BYTES / 2 - 1)]);
        assert_eq!(text_len("x | join('ab')", half.clone()), Ok(MAX_TEXT_BYTES));
        let err = text_len("x | join('abc')", half).unwrap_err();
        assert!(err.contains("the joined text would be"), "{err}");
        // The first item alone can pass the limit.
        let one = Value::from(vec![xs(MAX_TEXT_BYTES + 1)]);
        assert!(text_len("x | join", one).is_err());
    }

    /// A text of `n` bytes holding `hits` copies of `ab`.
    fn with_hits(n: usize, hits: usize) -> Value {
        Value::from(format!("{}{}", "ab".repeat(hits), "x".repeat(n - 2 * hits)))
    }

    #[test]
    fn replaced_text_may_reach_the_limit_but_not_pass_it() {
        // 3 hits of a 2-byte text by a 3-byte one add 3 bytes.
        let at = with_hits(MAX_TEXT_BYTES - 3, 3);
        assert_eq!(text_len("x | replace('ab', 'abc')", at), Ok(MAX_TEXT_BYTES));
        let over = with_hits(MAX_TEXT_BYTES - 2, 3);
        let err = text_len("x | replace('ab', 'abc')", over).unwrap_err();
        assert!(err.contains("the replaced text would be"), "{err}");
        // An empty `from` matches before every character and at the end: n + 1 hits.
        let n = MAX_TEXT_BYTES / 2;
        assert!(text_len("x | replace('', '-')", xs(n)).is_err());
        assert_eq!(
            text_len("x | replace('', '-')", xs(n - 1)),
            Ok(MAX_TEXT_BYTES - 1)
        );
        assert_eq!(
            eval("'ab' | replace('', '-')", Value::from(()))
                .unwrap()
                .as_str(),
            Some("-a-b-")
        );
    }

    #[test]
    fn indented_text_may_reach_the_limit_but_not_pass_it() {
        // Two bytes on one line: the bound counts the width twice (a line past the last).
        let w = MAX_TEXT_BYTES / 2 - 1;
        let at = eval(&format!("x | indent({w}, true)"), Value::from("ab"));
        assert_eq!(at.map(|v| v.as_str().map(str::len)), Ok(Some(w + 2)));
        assert!(eval(&format!("x | indent({})", w + 1), Value::from("ab")).is_err());
        let err = eval(&format!("x | indent(width={})", w + 1), Value::from("ab")).unwrap_err();
        assert!(err.contains("the indented text would be"), "{err}");
        assert_eq!(
            eval("x | indent(2)", Value::from("a\nb")).unwrap().as_str(),
            Some("a\n  b")
        );
    }

    #[test]
    fn batch_and_slice_take_up_to_max_items() {
        for f in ["batch", "slice"] {
            let at = eval(
                &format!("[1, 2] | {f}({MAX_ITEMS}) | list | length"),
                Value::from(()),
            );
            assert!(at.is_ok(), "{f}: {at:?}");
            let err =
                eval(&format!("[1, 2] | {f}({})", MAX_ITEMS + 1), Value::from(())).unwrap_err();
            assert!(err.contains("items are more than the"), "{f}: {err}");
        }
        let batches = eval("[1, 2, 3] | batch(2, 0) | list", Value::from(())).unwrap();
        assert_eq!(batches.to_string(), "[[1, 2], [3, 0]]");
        let slices = eval("[1, 2, 3] | slice(2) | list", Value::from(())).unwrap();
        assert_eq!(slices.to_string(), "[[1, 2], [3]]");
    }

    #[test]
    fn format_widths_and_formatted_text_may_reach_the_limit_but_not_pass_it() {
        let ok = eval("'%s-%d|%5s' | format('a', 3, 'b')", Value::from(())).unwrap();
        assert_eq!(ok.as_str(), Some("a-3|    b"));
        assert_eq!(
            text_len(
                &format!("'%{MAX_TEXT_BYTES}s' | format('a')"),
                Value::from(())
            ),
            Ok(MAX_TEXT_BYTES)
        );
        for field in [
            format!("%{}s", MAX_TEXT_BYTES + 1),
            format!("%.{}f", MAX_TEXT_BYTES + 1),
        ] {
            let err = eval(&format!("'{field}' | format(1)"), Value::from(())).unwrap_err();
            assert!(err.contains("a formatted field would be"), "{field}: {err}");
        }
        // `%s%s` is 4 bytes: two conversions of the longest argument fill the rest.
        let longest = (MAX_TEXT_BYTES - 4) / 2;
        assert_eq!(
            text_len("'%s%s' | format(x, x)", xs(longest)),
            Ok(2 * longest)
        );
        let err = text_len("'%s%s' | format(x, 'y')", xs(longest + 1)).unwrap_err();
        assert!(err.contains("the formatted text would be"), "{err}");
        // An argument that is not a text is counted as it is shown.
        let list = Value::from(vec![xs(MAX_TEXT_BYTES)]);
        assert!(text_len("'%s' | format(x)", list).is_err());
    }
}
