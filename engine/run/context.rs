//! The run context: the inputs joined by repo id, plus the suite's named inputs and its
//! own evidence. Every judge of a run reads the same context.

use std::path::Path;

use indexmap::IndexMap;
use minijinja::Environment;

use crate::diag::Diagnostic;
use crate::doc::Doc;
use crate::evidence::eval::Context;
use crate::load::inputs::Inputs;
use crate::load::suite::Suite;

/// Builds the run context and adds the suite's own evidence to it. Suite evidence that
/// cannot be computed stops the run: every judge would read it.
pub(crate) fn shared_context(
    env: &Environment<'static>,
    suite: &Suite,
    inputs: &Inputs,
) -> Result<Context, Vec<Diagnostic>> {
    let mut ctx = build_context(suite, inputs);
    if suite.evidence.is_empty() {
        return Ok(ctx);
    }
    let shared = crate::evidence::eval::evaluate(env, &suite.evidence, &ctx)
        .map_err(|e| vec![evidence_error(suite, &e)])?;
    for (k, v) in shared {
        ctx.names.insert(k, v);
    }
    Ok(ctx)
}

/// Suite evidence that could not be computed, located in suite.yaml.
pub(crate) fn evidence_error(suite: &Suite, e: &crate::evidence::eval::EvalError) -> Diagnostic {
    e.to_diagnostic()
        .in_file(&suite.file)
        .at(suite.index.value_span(&e.key_path))
        .key(&e.key_path)
}

/// The suite's own evidence as computed in `ctx`, in the order `suite.yaml` writes it,
/// without private `_names` (working values, kept out of results as a judge's are).
/// Reports show it: every judge's verdict rests on it.
pub(crate) fn suite_evidence(suite: &Suite, ctx: &Context) -> IndexMap<String, Doc> {
    suite
        .evidence
        .iter()
        .map(|(name, _)| name)
        .filter(|name| !crate::evidence::eval::is_private(name))
        .filter_map(|name| Some((name.clone(), ctx.names.get(name)?.clone())))
        .collect()
}

/// Builds the context: `results`, `truth`, `repos` (the join: each repo's `id`, its
/// result `file` and that file's `stem`, `result` and `truth`), `suite`, `inputs`.
pub(crate) fn build_context(suite: &Suite, inputs: &Inputs) -> Context {
    let results = Doc::object(
        inputs
            .results
            .iter()
            .map(|d| (d.id.as_str(), d.doc.clone())),
    );
    let truth = Doc::object(inputs.truth.iter().map(|d| (d.id.as_str(), d.doc.clone())));
    let repos = Doc::from(
        inputs
            .results
            .iter()
            .map(|r| {
                let t = inputs
                    .truth
                    .iter()
                    .find(|t| t.id == r.id)
                    .map_or(Doc::Null, |t| t.doc.clone());
                let (file, stem) = file_and_stem(&r.file, &inputs.results_dir);
                Doc::object([
                    ("id", Doc::from(r.id.as_str())),
                    ("file", Doc::from(file.as_str())),
                    ("stem", Doc::from(stem.as_str())),
                    ("result", r.doc.clone()),
                    ("truth", t),
                ])
            })
            .collect::<Vec<_>>(),
    );
    let root = &suite.confinement.root;
    let suite_doc = Doc::object([
        ("name", Doc::from(suite.spec.suite.as_str())),
        (
            "description",
            suite
                .spec
                .description
                .as_deref()
                .map_or(Doc::Null, Doc::from),
        ),
        (
            "results_dir",
            Doc::from(project_relative(&inputs.results_dir, root).as_str()),
        ),
        (
            "ground_truth_dir",
            inputs
                .truth_dir
                .as_deref()
                .map_or(Doc::Null, |d| Doc::from(project_relative(d, root).as_str())),
        ),
    ]);
    let named = Doc::object(inputs.named.iter().map(|(k, v)| (k.as_str(), v.clone())));
    let mut names = IndexMap::new();
    names.insert("results".to_owned(), results);
    names.insert("truth".to_owned(), truth);
    names.insert("repos".to_owned(), repos);
    names.insert("suite".to_owned(), suite_doc);
    names.insert("inputs".to_owned(), named);
    Context { names }
}

/// Where a result came from, as a judge that chooses its mode by file name or folder
/// reads it: the path relative to the results folder with `/` between its parts (the
/// run folder included: `gamma/output.json`), and the file name without `.json` or
/// `.json.gz`.
/// A file outside the folder (never the case for a folder that was listed) gives its
/// name alone.
fn file_and_stem(file: &Path, results_dir: &Path) -> (String, String) {
    let relative = file
        .strip_prefix(results_dir)
        .ok()
        .or_else(|| file.file_name().map(Path::new))
        .unwrap_or(file);
    let parts: Vec<String> = relative
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    (parts.join("/"), crate::load::gzip::document_stem(file))
}

/// A folder as a judge may name it: relative to the project root with `/` between its
/// parts (`ground-truth/trivy/outputs`, `.` for the root), or its name alone when it is
/// outside the project, so no path of the machine that ran it reaches a result.
fn project_relative(dir: &Path, root: &Path) -> String {
    let dir = crate::load::confine::resolve(dir);
    let parts: Vec<String> = match dir.strip_prefix(root) {
        Ok(inside) => inside
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect(),
        Err(_) => dir
            .file_name()
            .map(|n| vec![n.to_string_lossy().into_owned()])
            .unwrap_or_default(),
    };
    if parts.is_empty() {
        return ".".to_owned();
    }
    parts.join("/")
}

/// The context of one repo for a per-repo judge: the run context plus `repo`, `id`,
/// `result`, and `truth` narrowed to this repo's ground truth (null when it has none).
///
/// `repos` and `results` are narrowed too, to this repo alone (`[repo]` and
/// `{id: result}`): a per-repo judge judges one repo, so nothing it reads may be another
/// repo's. Written as a suite judge would (`repos[0].id`, `$.repos[*]`), it still reads
/// its own repo, and its verdict on a repo is the one `caldera calibrate` gets judging
/// that repo alone. Suite evidence, computed once over every repo, is left as it is.
pub(crate) fn repo_context(ctx: &Context, repo: &Doc) -> Context {
    let mut names = ctx.names.clone();
    let id = repo.field("id").cloned().unwrap_or(Doc::Null);
    let result = repo.field("result").cloned().unwrap_or(Doc::Null);
    let key = id.as_str().unwrap_or_default().to_owned();
    names.insert("repos".to_owned(), Doc::from(vec![repo.clone()]));
    names.insert(
        "results".to_owned(),
        Doc::object([(key.as_str(), result.clone())]),
    );
    names.insert("repo".to_owned(), repo.clone());
    names.insert("id".to_owned(), id);
    names.insert("result".to_owned(), result);
    names.insert(
        "truth".to_owned(),
        repo.field("truth").cloned().unwrap_or(Doc::Null),
    );
    Context { names }
}

#[cfg(test)]
mod tests {
    use super::file_and_stem;
    use std::path::Path;

    #[test]
    fn file_is_relative_to_the_results_folder_and_stem_drops_the_extension() {
        let dir = Path::new("suite/data/results");
        assert_eq!(
            file_and_stem(&dir.join("alpha.json"), dir),
            ("alpha.json".to_owned(), "alpha".to_owned())
        );
        assert_eq!(
            file_and_stem(&dir.join("run-7").join("output.json"), dir),
            ("run-7/output.json".to_owned(), "output".to_owned())
        );
        // Never a path from elsewhere on the machine: the name alone.
        assert_eq!(
            file_and_stem(Path::new("/elsewhere/secret/x.json"), dir),
            ("x.json".to_owned(), "x".to_owned())
        );
    }
}
