//! The structural rules of the loader that draft-07 can say, added to the generated
//! schemas so an editor refuses what `caldera validate` refuses.
//!
//! schemars sees types, not the loader's checks across keys ("`bands` need a `metric`"),
//! so these are added after generation, keyed by the definition they belong to (its Rust
//! name, before definitions are renamed for users). A definition that is not there (the
//! schema of another file) is left alone; a new key added to a spec type needs nothing
//! here unless it takes part in such a rule.
//!
//! What draft-07 cannot say is left to `caldera validate` and said in the key's
//! description: that decision rows go from high to low, that a `scale` or
//! `sub_score_scale` goes from low to high.

use serde_json::{Value, json};

/// The key is given: present and not `null` (the loader reads `null` as absent).
fn given(key: &str) -> Value {
    json!({"type": "object", "required": [key], "properties": {key: {"not": {"type": "null"}}}})
}

/// The key is absent or `null`.
fn absent(key: &str) -> Value {
    json!({"not": given(key)})
}

/// `if` the condition holds `then` the consequence must.
fn when(condition: Value, then: Value) -> Value {
    json!({"if": condition, "then": then})
}

/// The rules of each definition, by its Rust name.
fn rules_of(definition: &str) -> Vec<Value> {
    match definition {
        // A band table over a metric, or a score of its own: never both, never neither
        // (and a second metric bounds bands, so it goes with them).
        "HeuristicSpec" => vec![
            when(
                given("score"),
                json!({"allOf": [absent("metric"), absent("bands"), absent("and_metric")]}),
            ),
            when(given("bands"), given("metric")),
            when(given("metric"), given("bands")),
            when(absent("metric"), given("score")),
        ],
        // `pattern` is the regex kind's, and that kind needs one (`json` is the default).
        "VerdictFormat" => vec![json!({
            "if": {"type": "object", "required": ["kind"], "properties": {"kind": {"const": "regex"}}},
            "then": given("pattern"),
            "else": absent("pattern"),
        })],
        // A record list computes a record of fields or a value per item.
        "RecordsSpec" => vec![when(
            absent("value"),
            json!({
                "type": "object",
                "required": ["fields"],
                "properties": {"fields": {"type": "object", "minProperties": 1}}
            }),
        )],
        // Exactly one of `file` and `newest`.
        "NamedInput" => vec![json!({
            "if": given("file"),
            "then": absent("newest"),
            "else": given("newest"),
        })],
        _ => Vec::new(),
    }
}

/// The longest decision table whose row shapes the schema checks: draft-07 cannot
/// address "the last item", so each length up to this one is spelled out as a tuple;
/// longer tables are left to `caldera validate`.
const DECISION_ROWS_CHECKED: usize = 12;

/// Every row but the last has a `min`, the last has none.
fn decision_shapes(row_ref: &str) -> Value {
    let with_min = json!({"allOf": [{"$ref": row_ref}, given("min")]});
    let without_min = json!({"allOf": [{"$ref": row_ref}, absent("min")]});
    let mut shapes: Vec<Value> = (1..=DECISION_ROWS_CHECKED)
        .map(|n| {
            let mut items = vec![with_min.clone(); n - 1];
            items.push(without_min.clone());
            json!({"type": "array", "minItems": n, "maxItems": n, "items": items})
        })
        .collect();
    shapes.push(json!({"type": "array", "minItems": DECISION_ROWS_CHECKED + 1}));
    // No table: the default one.
    shapes.push(json!({"type": "null"}));
    json!({"anyOf": shapes})
}

/// Adds every rule to `root` (a generated schema, definitions not yet renamed).
pub(super) fn add(root: &mut Value) {
    if let Some(definitions) = root.get_mut("definitions").and_then(Value::as_object_mut) {
        for (name, definition) in definitions.iter_mut() {
            append_all_of(definition, rules_of(name));
        }
    }
    let decision = root
        .get_mut("properties")
        .and_then(|p| p.get_mut("decision"));
    if let Some(decision) = decision
        && let Some(row_ref) = decision
            .pointer("/items/$ref")
            .and_then(Value::as_str)
            .map(str::to_owned)
    {
        append_all_of(decision, vec![decision_shapes(&row_ref)]);
    }
}

/// Adds `rules` to the `allOf` of `schema` (created when needed).
fn append_all_of(schema: &mut Value, rules: Vec<Value>) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    if rules.is_empty() {
        return;
    }
    let all_of = map
        .entry("allOf")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Some(list) = all_of.as_array_mut() {
        list.extend(rules);
    }
}
