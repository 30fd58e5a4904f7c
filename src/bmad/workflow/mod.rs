//! BMAD workflows as a model: `workflow.yaml` with its variables resolved, instruction files
//! as ordered steps with their tags, step-file workflows as a chain of files, and the
//! templates they fill.
//!
//! Three formats are in use at once (§0), so [`load`] takes any of them — `workflow.yaml`,
//! `instructions.{xml,md}`, `workflow.md` (step chain or embedded `<workflow>`), `SKILL.md`,
//! a step file — and returns one [`Workflow`]. Nothing here runs a workflow; a later runner
//! executes this model step by step.
//!
//! - [`markup`]: the lenient tag reader;
//! - [`instructions`]: steps, tags, jumps and calls;
//! - [`frontmatter`]: markdown frontmatter, tolerant of BMAD's sloppy files;
//! - [`resolve`]: where the install, the project and the config are, and variable resolution;
//! - [`config`]: the `workflow.yaml` format;
//! - [`steps`]: step-file chains and `stepsCompleted`;
//! - [`lint`]: the problems a workflow author should fix;
//! - [`template`]: `{{…}}` templates.

pub mod config;
pub mod frontmatter;
pub mod instructions;
pub mod lint;
pub mod markup;
pub mod resolve;
pub mod steps;
mod team;
pub mod template;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use resolve::Env;

pub use crate::diagnostic::Severity;

pub use crate::diagnostic::Diagnostic;

/// Which format a file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// `workflow.yaml` (+ its instructions).
    WorkflowYaml,
    /// An instruction file on its own.
    Instructions,
    /// `workflow.md` / `SKILL.md` with an embedded `<workflow>`.
    Embedded,
    /// `workflow.md` pointing at step files.
    StepFiles,
    /// A v4 team workflow (`.bmad-core/workflows/*.yaml`: `workflow: {id, name, sequence}`),
    /// which BMAD v4's orchestrator agent walks, not the v6 engine.
    TeamWorkflow,
}

/// A loaded workflow, whatever its format.
#[derive(Clone, Debug, Serialize)]
pub struct Workflow {
    /// The file loaded.
    pub file: String,
    /// Its format.
    pub format: Format,
    /// `name`, when known.
    pub name: Option<String>,
    /// The `workflow.yaml`, resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<config::WorkflowYaml>,
    /// The instruction file, when one was read (`workflow.yaml`'s `instructions`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions_file: Option<String>,
    /// Steps and tags (instruction-based formats).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<instructions::Instructions>,
    /// The step chain (step-file workflows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain: Option<steps::Chain>,
    /// Everything noticed while loading, and lint findings once [`lint::lint`] ran.
    pub diagnostics: Vec<Diagnostic>,
    /// The BMAD install the file sits in (found once per load; every resolver maps
    /// `{project-root}/_bmad/…` to it).
    #[serde(skip)]
    pub install: Option<PathBuf>,
}

impl Workflow {
    /// An empty model of `file`, to be filled by its loader.
    pub fn new(file: String, format: Format, name: Option<String>) -> Workflow {
        Workflow {
            file,
            format,
            name,
            config: None,
            instructions_file: None,
            instructions: None,
            chain: None,
            diagnostics: Vec::new(),
            install: None,
        }
    }

    /// Whether any finding is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }
}

/// Errors that stop a file from loading at all.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file cannot be read.
    #[error("could not read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Not a workflow format this knows.
    #[error("{} is not a BMAD workflow file (workflow.yaml, instructions.xml|md, workflow.md, SKILL.md or a step file)", path.display())]
    NotAWorkflow {
        /// The file.
        path: PathBuf,
    },
}

/// Read a file as text.
pub(crate) fn read_text(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// Load any workflow file, resolve it in `env`, and lint it.
pub fn load(path: &Path, env: &Env) -> Result<Workflow, Error> {
    let text = read_text(path)?;
    // Canonical, so paths show relative to the (canonical) project root.
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let path = canonical.as_path();
    let shown = env.shown(path);
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let install = env.install_of(path);
    let not_a_workflow = || Error::NotAWorkflow {
        path: path.to_path_buf(),
    };
    let mut wf = if name.ends_with(".yaml") || name.ends_with(".yml") {
        config::load(path, &text, env, install.clone())
    } else if name.ends_with(".md") || name.ends_with(".xml") {
        let mut diagnostics = Vec::new();
        let doc = frontmatter::read(&text, &shown, &mut diagnostics);
        let doc_name = doc.str("name").map(str::to_owned);
        // Instruction files are read whole; a workflow.md or SKILL.md from its <workflow>.
        let whole_file = name.starts_with("instructions") || name.ends_with(".xml");
        let block = if whole_file {
            Some((0, 0))
        } else {
            embedded_workflow(doc.body)
        };
        let mut wf = if let Some((start, line)) = block {
            let format = if whole_file {
                Format::Instructions
            } else {
                Format::Embedded
            };
            let mut wf = Workflow::new(shown.clone(), format, doc_name);
            let mut parsed = instructions::parse(&doc.body[start..], doc.body_line + line, &shown);
            diagnostics.append(&mut parsed.diagnostics);
            wf.instructions = Some(parsed);
            wf
        } else if doc.present || name.starts_with("step") || name == "workflow.md" {
            let mut wf = Workflow::new(shown.clone(), Format::StepFiles, doc_name);
            wf.chain = Some(steps::follow(
                path,
                &doc,
                env,
                install.clone(),
                &mut diagnostics,
            ));
            wf
        } else {
            return Err(not_a_workflow());
        };
        wf.diagnostics = diagnostics;
        wf
    } else {
        return Err(not_a_workflow());
    };
    wf.install = install;
    lint::lint(&mut wf, env);
    Ok(wf)
}

/// Where a `<workflow>` block starts in a markdown body: (byte offset, line offset), skipping
/// fenced code so a quoted example does not count.
/// Whether a `SKILL.md` is a workflow git-bmad can read: it has frontmatter (an agent
/// skill) or a `<workflow>` block. BMAD's web bundles (`web-bundles/*/SKILL.md`) have
/// neither: they are chat protocols in prose, pasted into a web assistant.
pub fn is_workflow_skill(text: &str) -> bool {
    let mut ignored = Vec::new();
    let doc = frontmatter::read(text, "SKILL.md", &mut ignored);
    doc.present || embedded_workflow(doc.body).is_some()
}

fn embedded_workflow(body: &str) -> Option<(usize, usize)> {
    let mut offset = 0;
    let mut fenced = false;
    for (i, line) in body.split_inclusive('\n').enumerate() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
        } else if !fenced && (t.starts_with("<workflow>") || t.starts_with("<workflow ")) {
            return Some((offset, i));
        }
        offset += line.len();
    }
    None
}
