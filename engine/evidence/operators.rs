//! The operators that build text, bounded like the filters of [`crate::evidence::limits`].
//!
//! minijinja evaluates `a ~ b` and `a + b` (on strings) as instructions, with no hook and
//! no size limit: forty `<% set a = a ~ a %>` ask for a terabyte, and the process aborts
//! on the allocation failure (an abort, not an error, so no judge could report it). So
//! before an expression or template is compiled for evaluation, its source is rewritten:
//! every `a ~ b` becomes `__caldera_concat(a, b)`, every `a + b` `__caldera_add(a, b)`
//! and every `a * b` `__caldera_mul(a, b)`, functions that refuse a result past
//! [`MAX_TEXT_BYTES`] (or a list past
//! [`MAX_ITEMS`] items) with an evaluation error,
//! and otherwise give exactly what the operator gives. (minijinja bounds a repeat,
//! `'x' * n`, at 100 million bytes or items: more than a hundred times the list bound.)
//!
//! The rewrite reads minijinja's own syntax tree (its parser, so strings, raw blocks and
//! operator precedence are read as minijinja reads them): an operator node spans its
//! operands exactly, so the call is inserted around that span and the operator replaced
//! by a comma. Source that does not parse is left as it is; compiling it reports the
//! error as before. Name checks and messages about the judge's text read the text as
//! written.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::OnceLock;

use minijinja::machinery::ast::{BinOpKind, CallArg, Expr, Stmt};
use minijinja::value::{Value, ValueKind};
use minijinja::{Environment, Error, Expression};

use crate::evidence::limits::{MAX_ITEMS, MAX_TEXT_BYTES};

/// The function `a ~ b` is rewritten to, and the text that opens its call.
const CONCAT: &str = "__caldera_concat";
const CONCAT_CALL: &str = "__caldera_concat(";

/// The function `a + b` is rewritten to, and the text that opens its call.
const ADD: &str = "__caldera_add";
const ADD_CALL: &str = "__caldera_add(";

/// The function `a * b` is rewritten to, and the text that opens its call.
const MUL: &str = "__caldera_mul";
const MUL_CALL: &str = "__caldera_mul(";

/// Registers the three bounded operators.
pub(crate) fn install(env: &mut Environment<'_>) {
    env.add_function(CONCAT, concat);
    env.add_function(ADD, add);
    env.add_function(MUL, mul);
}

/// Whether `name` is one of the functions the operators are rewritten to: a compiled
/// expression reads it, the judge never wrote it.
pub(crate) fn is_operator_function(name: &str) -> bool {
    [CONCAT, ADD, MUL].contains(&name)
}

/// An expression's source with `~`, `+` and `*` bounded (see the module docs).
pub(crate) fn bounded_expression(source: &str) -> Cow<'_, str> {
    if !source.contains(['~', '+', '*']) {
        return Cow::Borrowed(source);
    }
    match minijinja::machinery::parse_expr(source) {
        Ok(expr) => rewrite(source, |edits| edits.expr(&expr)),
        Err(_) => Cow::Borrowed(source),
    }
}

/// A template's source with `~`, `+` and `*` bounded (see the module docs).
pub(crate) fn bounded_template(source: &str) -> Cow<'_, str> {
    if !source.contains(['~', '+', '*']) {
        return Cow::Borrowed(source);
    }
    match minijinja::machinery::parse(source, "<template>", crate::evidence::syntax()) {
        Ok(stmt) => rewrite(source, |edits| edits.stmt(&stmt)),
        Err(_) => Cow::Borrowed(source),
    }
}

/// Collects the edits `walk` finds and applies them to `source`.
fn rewrite<'s>(source: &'s str, walk: impl FnOnce(&mut Edits<'s>)) -> Cow<'s, str> {
    let mut edits = Edits {
        source,
        list: Vec::new(),
    };
    walk(&mut edits);
    if edits.list.is_empty() {
        return Cow::Borrowed(source);
    }
    // At one offset: a closing parenthesis before an operator's replacement (`a~b~c`),
    // and opening calls outer first (the order of the walk).
    edits.list.sort_by_key(|e| (e.at, e.class, e.seq));
    let mut out = String::with_capacity(source.len() + edits.list.len() * 20);
    let mut cursor = 0;
    for e in &edits.list {
        out.push_str(&source[cursor..e.at]);
        out.push_str(e.text);
        cursor = e.at + e.removes;
    }
    out.push_str(&source[cursor..]);
    Cow::Owned(out)
}

/// One change to the source: `text` inserted at byte `at`, replacing `removes` bytes.
struct Edit {
    at: usize,
    class: u8,
    seq: usize,
    removes: usize,
    text: &'static str,
}

/// The edits of one source, found by walking its syntax tree.
struct Edits<'s> {
    source: &'s str,
    list: Vec<Edit>,
}

impl Edits<'_> {
    fn push(&mut self, at: usize, class: u8, removes: usize, text: &'static str) {
        let seq = self.list.len();
        self.list.push(Edit {
            at,
            class,
            seq,
            removes,
            text,
        });
    }

    /// `left OP right` (the node spans `start..end`, parentheses around the right
    /// operand included) as `call(left, right)`: the operator is the one `OP`
    /// character between the operands (only parentheses and spaces are there besides).
    fn operator(
        &mut self,
        call: &'static str,
        op: char,
        span: (usize, usize),
        left: &Expr,
        right: &Expr,
    ) {
        let (gap_start, gap_end) = (end_of(left), start_of(right));
        let Some(pos) = self
            .source
            .get(gap_start..gap_end)
            .and_then(|gap| gap.find(op))
        else {
            return;
        };
        self.push(span.0, 2, 0, call);
        self.push(gap_start + pos, 1, 1, ",");
        self.push(span.1, 0, 0, ")");
    }

    fn exprs<'a>(&mut self, list: impl IntoIterator<Item = &'a Expr<'a>>) {
        for e in list {
            self.expr(e);
        }
    }

    fn args(&mut self, args: &[CallArg<'_>]) {
        for a in args {
            match a {
                CallArg::Pos(e)
                | CallArg::Kwarg(_, e)
                | CallArg::PosSplat(e)
                | CallArg::KwargSplat(e) => {
                    self.expr(e);
                }
            }
        }
    }

    fn expr(&mut self, e: &Expr<'_>) {
        match e {
            Expr::Var(_) | Expr::Const(_) => {}
            Expr::Slice(s) => {
                self.expr(&s.expr);
                self.exprs(s.start.iter().chain(&s.stop).chain(&s.step));
            }
            Expr::UnaryOp(u) => self.expr(&u.expr),
            Expr::BinOp(b) => {
                let span = (b.span().start_offset as usize, b.span().end_offset as usize);
                match b.op {
                    BinOpKind::Concat => self.operator(CONCAT_CALL, '~', span, &b.left, &b.right),
                    BinOpKind::Add => self.operator(ADD_CALL, '+', span, &b.left, &b.right),
                    BinOpKind::Mul => self.operator(MUL_CALL, '*', span, &b.left, &b.right),
                    _ => {}
                }
                self.expr(&b.left);
                self.expr(&b.right);
            }
            Expr::Compare(c) => {
                self.expr(&c.expr);
                for op in &c.ops {
                    self.expr(&op.expr);
                }
            }
            Expr::IfExpr(i) => {
                self.expr(&i.test_expr);
                self.expr(&i.true_expr);
                self.exprs(&i.false_expr);
            }
            Expr::Filter(f) => {
                self.exprs(&f.expr);
                self.args(&f.args);
            }
            Expr::Test(t) => {
                self.expr(&t.expr);
                self.args(&t.args);
            }
            Expr::GetAttr(g) => self.expr(&g.expr),
            Expr::GetItem(g) => {
                self.expr(&g.expr);
                self.expr(&g.subscript_expr);
            }
            Expr::Call(c) => {
                self.expr(&c.expr);
                self.args(&c.args);
            }
            Expr::List(l) => self.exprs(&l.items),
            Expr::Tuple(t) => self.exprs(&t.items),
            Expr::Map(m) => {
                self.exprs(&m.keys);
                self.exprs(&m.values);
            }
        }
    }

    fn stmts(&mut self, list: &[Stmt<'_>]) {
        for s in list {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt<'_>) {
        match s {
            Stmt::Template(t) => self.stmts(&t.children),
            Stmt::EmitExpr(e) => self.expr(&e.expr),
            Stmt::EmitRaw(_) | Stmt::Continue(_) | Stmt::Break(_) => {}
            Stmt::Block(b) => self.stmts(&b.body),
            Stmt::ForLoop(f) => {
                self.expr(&f.target);
                self.expr(&f.iter);
                self.exprs(&f.filter_expr);
                self.stmts(&f.body);
                self.stmts(&f.else_body);
            }
            Stmt::IfCond(i) => {
                self.expr(&i.expr);
                self.stmts(&i.true_body);
                self.stmts(&i.false_body);
            }
            Stmt::WithBlock(w) => {
                for (target, value) in &w.assignments {
                    self.expr(target);
                    self.expr(value);
                }
                self.stmts(&w.body);
            }
            Stmt::Set(set) => {
                self.expr(&set.target);
                self.expr(&set.expr);
            }
            Stmt::SetBlock(set) => {
                self.expr(&set.target);
                self.exprs(&set.filter);
                self.stmts(&set.body);
            }
            Stmt::AutoEscape(a) => {
                self.expr(&a.enabled);
                self.stmts(&a.body);
            }
            Stmt::FilterBlock(f) => {
                self.expr(&f.filter);
                self.stmts(&f.body);
            }
            Stmt::Import(i) => {
                self.expr(&i.expr);
                self.expr(&i.name);
            }
            Stmt::FromImport(i) => {
                self.expr(&i.expr);
                for (name, alias) in &i.names {
                    self.expr(name);
                    self.exprs(alias);
                }
            }
            Stmt::Extends(e) => self.expr(&e.name),
            Stmt::Include(i) => self.expr(&i.name),
            Stmt::Macro(m) => {
                self.exprs(&m.args);
                self.exprs(&m.defaults);
                self.stmts(&m.body);
            }
            Stmt::CallBlock(c) => {
                self.expr(&c.call.expr);
                self.args(&c.call.args);
                self.exprs(&c.macro_decl.args);
                self.exprs(&c.macro_decl.defaults);
                self.stmts(&c.macro_decl.body);
            }
            Stmt::Do(d) => {
                self.expr(&d.call.expr);
                self.args(&d.call.args);
            }
        }
    }
}

fn start_of(e: &Expr<'_>) -> usize {
    e.span().start_offset as usize
}

fn end_of(e: &Expr<'_>) -> usize {
    e.span().end_offset as usize
}

fn too_long(bytes: Option<usize>) -> Error {
    let size = match bytes {
        Some(n) => format!("{n} bytes long"),
        None => format!("longer than {MAX_TEXT_BYTES} bytes"),
    };
    crate::evidence::limits::limit_error(format!(
        "the concatenated text would be {size}, more than the {MAX_TEXT_BYTES} a value \
         may take (a concatenation, `~` or `+`, that repeats or doubles its text)"
    ))
}

/// Text written up to [`MAX_TEXT_BYTES`]; past it, the write fails.
#[derive(Default)]
struct Capped(String);

impl std::fmt::Write for Capped {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.0.len() + s.len() > MAX_TEXT_BYTES {
            return Err(std::fmt::Error);
        }
        self.0.push_str(s);
        Ok(())
    }
}

/// `a ~ b`: both written as text, one after the other, refused past the limit.
fn concat(a: &Value, b: &Value) -> Result<Value, Error> {
    if let (Some(x), Some(y)) = (a.as_str(), b.as_str()) {
        return joined(x, y);
    }
    let mut out = Capped::default();
    if write!(out, "{a}{b}").is_err() {
        return Err(too_long(None));
    }
    Ok(Value::from(out.0))
}

/// Two strings joined, or the limit's error.
fn joined(x: &str, y: &str) -> Result<Value, Error> {
    let size = x.len().saturating_add(y.len());
    if size > MAX_TEXT_BYTES {
        return Err(too_long(Some(size)));
    }
    Ok(Value::from([x, y].concat()))
}

/// `a + b`: two strings joined within the limit, two lists of at most [`MAX_ITEMS`]
/// items together; integers and floats added here as minijinja adds them; anything
/// else by minijinja's own `+`.
fn add(a: Value, b: Value) -> Result<Value, Error> {
    if let (Some(x), Some(y)) = (a.as_str(), b.as_str()) {
        return joined(x, y);
    }
    if let Some(sum) = add_numbers(&a, &b) {
        return Ok(sum);
    }
    if matches!(a.kind(), ValueKind::Seq | ValueKind::Iterable)
        && matches!(b.kind(), ValueKind::Seq | ValueKind::Iterable)
    {
        let items = a.len().unwrap_or(0).saturating_add(b.len().unwrap_or(0));
        if items > MAX_ITEMS {
            return Err(crate::evidence::limits::limit_error(format!(
                "{items} items are more than the {MAX_ITEMS} a list may take"
            )));
        }
    }
    plain_add().eval(minijinja::context! { a => a, b => b })
}

/// Integers (as minijinja adds them: in 128 bits, an `i64` when it fits) and floats.
fn add_numbers(a: &Value, b: &Value) -> Option<Value> {
    if a.kind() != ValueKind::Number || b.kind() != ValueKind::Number {
        return None;
    }
    match (a.is_integer(), b.is_integer()) {
        (true, true) => {
            let x = i128::try_from(a.clone()).ok()?;
            let y = i128::try_from(b.clone()).ok()?;
            let sum = x.checked_add(y)?;
            Some(match i64::try_from(sum) {
                Ok(small) => Value::from(small),
                Err(_) => Value::from(sum),
            })
        }
        (false, false) => {
            let x = f64::try_from(a.clone()).ok()?;
            let y = f64::try_from(b.clone()).ok()?;
            Some(Value::from(x + y))
        }
        _ => None,
    }
}

/// minijinja's own `a + b`, compiled once in an environment of its own (the operator
/// does not depend on the environment).
fn plain_add() -> &'static Expression<'static, 'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    static EXPR: OnceLock<Expression<'static, 'static>> = OnceLock::new();
    EXPR.get_or_init(|| {
        let env = ENV.get_or_init(Environment::new);
        match env.compile_expression("a + b") {
            Ok(e) => e,
            Err(e) => unreachable!("a constant expression compiles: {e}"),
        }
    })
}

/// `a * b`: a text or a list repeated (either side may be the count, as minijinja
/// reads it) is refused past [`MAX_TEXT_BYTES`] or [`MAX_ITEMS`]; everything else,
/// numbers included, by minijinja's own `*`.
fn mul(a: Value, b: Value) -> Result<Value, Error> {
    use crate::evidence::limits::limit_error;
    let text = a
        .as_str()
        .map(|s| (s, &b))
        .or_else(|| b.as_str().map(|s| (s, &a)));
    if let Some((s, n)) = text {
        let size = n.as_usize().map(|n| s.len().saturating_mul(n));
        if let Some(size) = size.filter(|&size| size > MAX_TEXT_BYTES) {
            return Err(limit_error(format!(
                "the repeated text would be {size} bytes long, more than the {MAX_TEXT_BYTES} \
                 a value may take"
            )));
        }
    } else {
        let is_list = |v: &Value| matches!(v.kind(), ValueKind::Seq | ValueKind::Iterable);
        let list = if is_list(&a) {
            Some((&a, &b))
        } else {
            is_list(&b).then_some((&b, &a))
        };
        let items = list.and_then(|(l, n)| Some(l.len()?.saturating_mul(n.as_usize()?)));
        if let Some(items) = items.filter(|&items| items > MAX_ITEMS) {
            return Err(limit_error(format!(
                "{items} items are more than the {MAX_ITEMS} a list may take"
            )));
        }
    }
    plain_mul().eval(minijinja::context! { a => a, b => b })
}

/// minijinja's own `*`, compiled once in a plain environment (no rewrite), as
/// [`plain_add`] is.
fn plain_mul() -> &'static Expression<'static, 'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    static EXPR: OnceLock<Expression<'static, 'static>> = OnceLock::new();
    EXPR.get_or_init(|| {
        let env = ENV.get_or_init(Environment::new);
        match env.compile_expression("a * b") {
            Ok(e) => e,
            Err(e) => unreachable!("a constant expression compiles: {e}"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_become_calls_around_their_operands() {
        let cases = [
            ("a ~ b", "__caldera_concat(a , b)"),
            ("a~b~c", "__caldera_concat(__caldera_concat(a,b),c)"),
            (
                "(a ~ b) ~ c",
                "__caldera_concat((__caldera_concat(a , b)) , c)",
            ),
            (
                "a ~ (b ~ c)",
                "__caldera_concat(a , (__caldera_concat(b , c)))",
            ),
            ("a ~ b + c", "__caldera_add(__caldera_concat(a , b) , c)"),
            ("'x~+' ~ n|string", "__caldera_concat('x~+' , n|string)"),
            (
                "f(a ~ b, c + 1)",
                "f(__caldera_concat(a , b), __caldera_add(c , 1))",
            ),
            ("n - 1", "n - 1"),
            (
                "'é' ~ a ~ 'ü'",
                "__caldera_concat(__caldera_concat('é' , a) , 'ü')",
            ),
        ];
        for (src, want) in cases {
            assert_eq!(bounded_expression(src), want, "{src}");
        }
        assert_eq!(
            bounded_template("<% set a = a ~ a %><< a ~ '+' >>{~}"),
            "<% set a = __caldera_concat(a , a) %><< __caldera_concat(a , '+') >>{~}"
        );
        // Offsets are bytes, across lines and after text with wide characters.
        assert_eq!(
            bounded_template("é ~ ü\n<% raw %>a ~ b<% endraw %>\n<< x\n ~ y >>"),
            "é ~ ü\n<% raw %>a ~ b<% endraw %>\n<< __caldera_concat(x\n , y) >>"
        );
    }

    #[test]
    fn rewritten_operators_give_what_the_operators_give() {
        let env = crate::render::environment();
        let plain = Environment::new();
        let ctx = minijinja::context! {
            s => "ab", n => 3, f => 1.5, big => i64::MAX, l => vec![1, 2], u => (),
        };
        for src in [
            "s ~ s",
            "s ~ n ~ f ~ l ~ none",
            "s ~ missing",
            "n + n",
            "f + f",
            "n + f",
            "big + big",
            "l + l",
            "(1, 2) + (3,)",
            "s + s",
            "true + 1",
            "true + true",
            "f + none",
            "s + n",
            "missing + 1",
            "s * 3",
            "3 * s",
            "l * 2",
            "2 * l",
            "(1, 2) * 2",
            "n * n",
            "n * f",
            "big * big",
            "s * f",
            "s * -1",
            "s * s",
            "missing * 2",
            "2 ** 3 * 2",
        ] {
            let want = plain
                .compile_expression(src)
                .and_then(|e| e.eval(&ctx))
                .map(|v| format!("{v:?}"))
                .map_err(|e| e.kind());
            let got = env
                .compile_expression(&bounded_expression(src))
                .and_then(|e| e.eval(&ctx))
                .map(|v| format!("{v:?}"))
                .map_err(|e| e.kind());
            assert_eq!(got, want, "{src}");
        }
    }

    #[test]
    fn operators_inside_lists_tuples_and_maps_are_bounded_too() {
        assert_eq!(bounded_expression("[a ~ b]"), "[__caldera_concat(a , b)]");
        assert_eq!(
            bounded_expression("(a + b, 1)"),
            "(__caldera_add(a , b), 1)"
        );
    }

    #[test]
    fn a_repeat_is_bounded_like_a_concatenation_on_either_side() {
        let env = crate::render::environment();
        let eval = |src: &str| {
            crate::evidence::eval::eval_expr(&env, src, &minijinja::context! { n => 2 })
        };
        let max = MAX_TEXT_BYTES;
        // Exactly the limit is allowed, one byte more refused, the count on either side.
        assert_eq!(
            eval(&format!("('x' * {max}) | length")).ok(),
            Some(Value::from(max))
        );
        for src in [format!("'x' * {}", max + 1), format!("{} * 'x'", max + 1)] {
            let e = eval(&src).expect_err(&src);
            assert_eq!(e.kind, crate::evidence::error::ErrorKind::Limit, "{src}");
            assert!(e.message.contains("repeated text"), "{}", e.message);
        }
        // Lists: at most MAX_ITEMS items, inside a template too.
        assert!(eval(&format!("([1] * {MAX_ITEMS}) | length")).is_ok());
        let e = eval(&format!("[1, 2] * {MAX_ITEMS}")).expect_err("over");
        assert_eq!(e.kind, crate::evidence::error::ErrorKind::Limit);
        let t = bounded_template("<% set s = 'ab' * 90000000 %><< s | length >>");
        assert!(t.contains(MUL_CALL), "{t}");
        // Numbers are not repeats.
        assert_eq!(eval("n * 3").ok(), Some(Value::from(6)));
    }

    #[test]
    fn text_of_exactly_the_limit_is_allowed_and_one_byte_more_refused() {
        let half = "x".repeat(MAX_TEXT_BYTES / 2);
        // Two strings, by `~` or `+`.
        let at_limit = joined(&half, &half).map(|v| v.len());
        assert_eq!(at_limit.ok().flatten(), Some(MAX_TEXT_BYTES));
        let over = joined(&half, &format!("{half}y"));
        assert!(over.is_err_and(|e| e.to_string().contains("would be")));
        // Text and a number, written through the capped writer.
        let text = Value::from("x".repeat(MAX_TEXT_BYTES - 1));
        let at_limit = concat(&text, &Value::from(7)).map(|v| v.len());
        assert_eq!(at_limit.ok().flatten(), Some(MAX_TEXT_BYTES));
        let text = Value::from("x".repeat(MAX_TEXT_BYTES));
        assert!(concat(&text, &Value::from(7)).is_err());
    }

    #[test]
    fn lists_of_exactly_the_item_limit_add_and_one_item_more_is_refused() {
        let half = || Value::from(vec![0; MAX_ITEMS / 2]);
        let at_limit = add(half(), half()).map(|v| v.len());
        assert_eq!(at_limit.ok().flatten(), Some(MAX_ITEMS));
        let over = add(half(), Value::from(vec![0; MAX_ITEMS / 2 + 1]));
        assert!(over.is_err_and(|e| e.to_string().contains("items are more than")));
    }

    #[test]
    fn a_list_plus_a_long_string_is_minijinjas_error_not_the_item_limit() {
        let err = add(Value::from(vec![1]), Value::from("x".repeat(MAX_ITEMS)));
        assert!(err.is_err_and(|e| !e.to_string().contains("items are more than")));
    }
}
