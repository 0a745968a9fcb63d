//! A suite's `model_catalogue:` file: read inside the project, parsed with locations,
//! its dates checked, so a wrong price or date is a diagnostic at load and never a
//! wrong cost or a missed end-of-life warning at run time.

use std::path::Path;

use crate::diag::{Code, Diagnostic};
use crate::load::confine::Confinement;
use crate::load::yaml::{self, KeyIndex};
use crate::spec::catalogue::CatalogueSpec;
use crate::spec::suite::SuiteSpec;

/// A catalogue larger than this is refused: the built-in one is a few kilobytes.
const MAX_BYTES: u64 = 1 << 20;

/// The suite's catalogue, when it names one that reads; problems go to `diags`.
pub(crate) fn read(
    spec: &SuiteSpec,
    (file, index): (&Path, &KeyIndex),
    dir: &Path,
    confinement: &Confinement,
    diags: &mut Vec<Diagnostic>,
) -> Option<CatalogueSpec> {
    let rel = spec.model_catalogue.as_deref()?;
    let path = dir.join(rel);
    let at = |d: Diagnostic| {
        d.in_file(file)
            .at(index.value_span("model_catalogue"))
            .key("model_catalogue")
    };
    if !confinement.permits(&path) {
        diags.push(at(Diagnostic::error(
            Code::InputOutsideProject,
            format!("`{rel}` resolves outside the project"),
        )
        .help(
            "keep the catalogue inside the project, or pass --root / --allow-outside-root",
        )));
        return None;
    }
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() && m.len() <= MAX_BYTES => {}
        Ok(m) if m.is_file() => {
            diags.push(at(Diagnostic::error(
                Code::Io,
                format!(
                    "`{rel}` is {} bytes; a model catalogue may have at most {MAX_BYTES}",
                    m.len()
                ),
            )));
            return None;
        }
        Ok(_) => {
            diags.push(at(Diagnostic::error(
                Code::Io,
                format!("`{rel}` is not a regular file"),
            )));
            return None;
        }
        Err(e) => {
            diags.push(at(Diagnostic::error(
                Code::MissingPath,
                format!("cannot read the model catalogue `{rel}`: {e}"),
            )));
            return None;
        }
    }
    let source = match yaml::read_text(&path) {
        Ok(s) => s,
        Err(d) => {
            diags.push(d);
            return None;
        }
    };
    let parsed = match yaml::parse::<CatalogueSpec>(&path, &source) {
        Ok(p) => p,
        Err(d) => {
            diags.extend(d);
            return None;
        }
    };
    let before = diags.len();
    check_dates(&parsed.value, &path, &parsed.index, diags);
    (diags.len() == before).then_some(parsed.value)
}

/// Every date is a real day (`2026-02-30` has the right shape and no day).
fn check_dates(spec: &CatalogueSpec, path: &Path, index: &KeyIndex, diags: &mut Vec<Diagnostic>) {
    for (id, model) in &spec.models {
        for (key, value) in [
            ("deprecated", &model.deprecated),
            ("end_of_life", &model.end_of_life),
        ] {
            let Some(day) = value else { continue };
            if chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").is_ok() {
                continue;
            }
            let key_path = format!("models.{id}.{key}");
            diags.push(
                Diagnostic::error(Code::WrongType, format!("`{day}` is not a date"))
                    .in_file(path)
                    .at(index.value_span(&key_path))
                    .key(key_path)
                    .help("write the day as YYYY-MM-DD, for example 2026-11-30"),
            );
        }
    }
}
