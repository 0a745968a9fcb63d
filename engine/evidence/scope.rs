//! Name lookup for expressions: layered scopes (run context, evidence so far, the current
//! record item, fields so far), read lazily so nothing is copied per evaluation.

use std::sync::Arc;

use indexmap::IndexMap;
use minijinja::value::{Enumerator, Object, Value};

/// A stack of name layers; later layers shadow earlier ones.
#[derive(Debug, Clone, Default)]
pub(crate) struct NameStack {
    layers: Vec<Value>,
}

impl NameStack {
    /// An empty scope.
    pub(crate) fn new() -> NameStack {
        NameStack::default()
    }

    /// Adds a layer: any map-like value (a map, a wrapped JSON object, another scope).
    pub(crate) fn with(mut self, layer: Value) -> NameStack {
        self.layers.push(layer);
        self
    }

    /// Adds a layer of named values.
    pub(crate) fn with_names(self, names: IndexMap<String, Value>) -> NameStack {
        self.with(Value::from_object(
            names
                .into_iter()
                .map(|(k, v)| (Value::from(k), v))
                .collect::<IndexMap<Value, Value>>(),
        ))
    }

    /// The scope as a value to evaluate expressions in.
    pub(crate) fn into_value(self) -> Value {
        Value::from_object(self)
    }
}

impl Object for NameStack {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let name = key.as_str()?;
        self.layers.iter().rev().find_map(|layer| {
            let v = layer.get_attr(name).ok()?;
            (!v.is_undefined()).then_some(v)
        })
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let mut keys: Vec<Value> = Vec::new();
        for layer in &self.layers {
            if let Ok(iter) = layer.try_iter() {
                for k in iter {
                    if !keys.contains(&k) {
                        keys.push(k);
                    }
                }
            }
        }
        Enumerator::Values(keys)
    }
}
