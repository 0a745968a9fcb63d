//! Prompt checks: the file exists inside the project, the template compiles, and every
//! `evidence.x` it reads is defined (or guarded with `is defined`); plus the warning for
//! evidence nothing reads.

use std::path::Path;

use super::{JudgeCx, PromptFile, find_word};
use crate::diag::{Code, Diagnostic, Span, did_you_mean_help};
use crate::load::names::template_code;
use crate::spec::judge::JudgeSpec;

/// The names a prompt template sees.
const PROMPT_NAMES: &[&str] = &["evidence", "response_format", "cache_break"];

impl JudgeCx<'_> {
    pub(super) fn check_prompt(
        &mut self,
        spec: &JudgeSpec,
        names: &[String],
    ) -> Option<PromptFile> {
        let rel = spec.prompt.as_ref()?;
        let dir = self.file.parent().unwrap_or(Path::new("."));
        let path = dir.join(rel);
        let canonical = match path.canonicalize() {
            Ok(p) => p,
            Err(_) => {
                let d = Diagnostic::error(
                    Code::PromptMissing,
                    format!("prompt file `{rel}` does not exist"),
                )
                .note(format!("looked for {}", crate::diag::display_path(&path)));
                let d = self.diag(d, "prompt");
                self.push(d);
                return None;
            }
        };
        let confinement = self.checker.confinement;
        if !confinement.permits(&canonical) {
            let root = &confinement.root;
            let d = Diagnostic::error(
                Code::PromptOutsideProject,
                format!("prompt file `{rel}` resolves outside the project"),
            )
            .note(format!(
                "project root: {}",
                crate::diag::display_path(root)
            ))
            .help("keep prompts under the project's `prompts/` folder, or pass --root / --allow-outside-root");
            let d = self.diag(d, "prompt");
            self.push(d);
            return None;
        }
        let text = match std::fs::read_to_string(&canonical) {
            Ok(t) => t,
            Err(e) => {
                let d = Diagnostic::error(Code::Io, format!("cannot read prompt `{rel}`: {e}"));
                let d = self.diag(d, "prompt");
                self.push(d);
                return None;
            }
        };
        let env = self.checker.env;
        match env.template_from_str(&text) {
            Ok(tmpl) => {
                self.check_prompt_names(&tmpl, &text, &canonical, names);
                let code = template_code(&text);
                static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
                // ASCII, like minijinja's identifiers: Unicode `\b` and `\w` made this
                // one regex a tenth of the work before a run's first model call.
                let re = RE.get_or_init(|| {
                    regex::Regex::new(r"(?-u:\b)evidence\.([A-Za-z_][A-Za-z0-9_]*)")
                        .unwrap_or_else(|_| unreachable!())
                });
                for cap in re.captures_iter(&code) {
                    let Some(m) = cap.get(1) else { continue };
                    let name = m.as_str();
                    self.used.insert(name.to_owned());
                    if !names.iter().any(|n| n == name) {
                        // The prompt may guard it with `is defined`; a guarded name is fine.
                        if code.contains(&format!("evidence.{name} is defined")) {
                            continue;
                        }
                        let d = Diagnostic::error(
                            Code::UnknownName,
                            format!(
                                "prompt reads `evidence.{name}`, which this judge does not define"
                            ),
                        )
                        .in_file(&canonical)
                        .at(find_word(&text, &format!("evidence.{name}")).map(|at| {
                            Span::from_offsets(&text, at, at + "evidence.".len() + name.len())
                        }))
                        .maybe_help(did_you_mean_help(name, names.iter().map(String::as_str)));
                        self.push(d);
                    }
                }
                if code
                    .split(|c: char| !c.is_alphanumeric() && c != '_' && c != '.')
                    .any(|w| w == "evidence")
                {
                    self.used.insert("*".into());
                }
            }
            Err(e) => {
                let line = e.line().unwrap_or(1);
                let d = Diagnostic::error(
                    Code::TemplateSyntax,
                    format!(
                        "prompt template does not compile: {}",
                        crate::evidence::limits::error_text(&e)
                    ),
                )
                .in_file(&canonical)
                .at(Some(Span::at_line_col(&text, line, 1, 1)));
                self.push(d);
                return None;
            }
        }
        Some(PromptFile {
            path: canonical,
            text,
        })
    }

    /// A prompt sees `evidence`, `response_format` and the built-in functions; any other
    /// name would render as an empty string, so it is an error here.
    fn check_prompt_names(
        &mut self,
        tmpl: &minijinja::Template<'_, '_>,
        text: &str,
        file: &Path,
        names: &[String],
    ) {
        let mut free: Vec<String> = tmpl.undeclared_variables(false).into_iter().collect();
        free.sort();
        for name in free {
            if PROMPT_NAMES.contains(&name.as_str()) || self.checker.known.is_global(&name) {
                continue;
            }
            let help = if names.contains(&name) {
                format!("evidence is read as `evidence.{name}`")
            } else if crate::render::CONTEXT_NAMES
                .iter()
                .chain(crate::render::REPO_SCOPE_NAMES)
                .any(|n| *n == name)
            {
                format!(
                    "the run context is not passed to prompts; compute what the prompt needs as evidence (e.g. `{name}: << {name} >>`) and write `evidence.{name}`"
                )
            } else {
                did_you_mean_help(&name, names.iter().map(String::as_str))
                    .map(|h| h.replacen('`', "`evidence.", 1))
                    .unwrap_or_else(|| {
                        "a prompt sees `evidence` (the judge's evidence) and `response_format`"
                            .into()
                    })
            };
            let d = Diagnostic::error(
                Code::UnknownName,
                format!("prompt reads `{name}`, which is not defined where it renders (it would print as an empty string)"),
            )
            .in_file(file)
            .at(find_word(text, &name).map(|at| Span::from_offsets(text, at, at + name.len())))
            .help(help);
            self.push(d);
        }
    }

    pub(super) fn warn_unused(
        &mut self,
        spec: &JudgeSpec,
        names: &[String],
        prompt: Option<&PromptFile>,
    ) {
        if self.used.contains("*") || (prompt.is_none() && spec.heuristic.is_none()) {
            return;
        }
        for name in names {
            if !self.used.contains(name) {
                let d = Diagnostic::warning(
                    Code::UnusedEvidence,
                    format!(
                        "evidence `{name}` is never read by the heuristic, assertions or prompt"
                    ),
                )
                .help("remove it, or use it (a prompt's `<< evidence >>` shows every name)");
                let d = self.key_diag(d, &format!("evidence.{name}"));
                self.push(d);
            }
        }
    }
}
