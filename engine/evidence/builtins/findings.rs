//! `match_findings`: the one-to-one finding matcher of `score::matcher` (key equality or
//! a weighted field similarity, Hungarian assignment, exact / partial / missed labels)
//! for judges that compare findings with ground truth by more than an id.

use minijinja::value::{Rest, Value, ValueOrKwargs};
use minijinja::{Error, ErrorKind};

use super::args::Args;
use crate::doc::Doc;
use crate::score::matcher::{MatcherConfig, match_findings as run_matcher};

/// `match_findings(findings, truths, config)`: `config` is a matcher declaration such as
/// `{'by': {'similarity': [{'finding': 'file', 'compare': 'same_base_name'}]}, 'threshold': 0.5}`.
/// Returns `{tp, fp, fn, precision, recall, f1, exact, partial, pairs, unmatched_findings,
/// unmatched_truths, near_misses}`; pairs carry `finding`/`truth` indices, `score`, `label`.
pub(crate) fn match_findings(raw: Rest<ValueOrKwargs>) -> Result<Value, Error> {
    let args = Args::bind("match_findings", &["findings", "truths", "config"], 3, raw)?;
    let list = |i: usize| -> Result<Vec<serde_json::Value>, Error> {
        match Doc::from_value(&args.raw(i)) {
            Doc::Array(items) => Ok(items.iter().map(Doc::to_json).collect()),
            Doc::Null => Ok(Vec::new()),
            other => Err(Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "match_findings(): argument '{}' must be a list, got {}",
                    ["findings", "truths"][i],
                    other.type_name()
                ),
            )),
        }
    };
    let findings = list(0)?;
    let truths = list(1)?;
    let config_json = Doc::from_value(&args.raw(2)).to_json();
    let config: MatcherConfig = serde_json::from_value(config_json).map_err(|e| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("match_findings(): argument 'config' is not a matcher declaration: {e}"),
        )
    })?;
    let outcome = run_matcher(&findings, &truths, &config).map_err(|e| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("match_findings(): {e}"),
        )
    })?;
    let metrics = outcome.metrics();
    let mut doc = serde_json::to_value(&outcome).unwrap_or_default();
    if let Some(map) = doc.as_object_mut() {
        let counts = map.remove("counts").unwrap_or_default();
        for key in ["tp", "fp", "fn"] {
            map.insert(key.into(), counts.get(key).cloned().unwrap_or_default());
        }
        if let Ok(serde_json::Value::Object(m)) = serde_json::to_value(metrics) {
            for (k, v) in m {
                map.entry(k).or_insert(v);
            }
        }
    }
    Ok(Doc::from_json(&doc).to_value())
}

#[cfg(test)]
mod tests {
    fn eval(expr: &str) -> serde_json::Value {
        let env = crate::render::environment();
        let v = env.compile_expression(expr).unwrap().eval(()).unwrap();
        crate::doc::Doc::from_value(&v).to_json()
    }

    #[test]
    fn matches_by_similarity_one_to_one() {
        let out = eval(
            "match_findings(
                [{'file': 'src/app/main.tf', 'rule': 'public bucket'}, {'file': 'x.tf', 'rule': 'open port'}],
                [{'file': 'main.tf', 'rule': 'bucket is public'}],
                {'by': {'similarity': [{'finding': 'file', 'compare': 'same_base_name'}, {'finding': 'rule', 'compare': 'shared_words'}]}, 'threshold': 0.5})",
        );
        assert_eq!(out["tp"], 1);
        assert_eq!(out["fp"], 1);
        assert_eq!(out["fn"], 0);
        assert_eq!(out["pairs"][0]["finding"], 0);
        assert_eq!(out["pairs"][0]["truth"], 0);
    }

    #[test]
    fn empty_inputs_and_bad_config() {
        let out = eval("match_findings([], [], {'by': {'key': [{'finding': 'id'}]}})");
        assert_eq!(out["tp"], 0);
        assert_eq!(out["precision"], 0.0);
        let env = crate::render::environment();
        let err = env
            .compile_expression("match_findings([], [], {'by': 'nothing'})")
            .unwrap()
            .eval(())
            .unwrap_err();
        assert!(err.to_string().contains("matcher declaration"), "{err}");
    }
}
