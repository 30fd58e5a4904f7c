//! `workflow.yaml`: every field kept, every variable resolved, every path checked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::resolve::{self, Problem, Resolver};
use super::{instructions, Diagnostic, Env, Format, Workflow};
use crate::config::yaml::{self, Node};

/// Fields every workflow.yaml must have (AC-1.2.2).
const REQUIRED: &[&str] = &["name", "instructions", "config_source"];

/// A resolved variable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Variable {
    /// Its name (the top-level key).
    pub name: String,
    /// As written.
    pub raw: String,
    /// Resolved (`{{…}}` left for run time).
    pub value: String,
    /// Where it is written.
    pub line: usize,
}

/// What the workflow produces.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "path")]
pub enum Template {
    /// No `template` field.
    None,
    /// `template: false`: an action workflow, no document.
    Action,
    /// A template file.
    File(String),
}

/// An `input_file_patterns` entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InputPattern {
    /// Its name (`architecture`, `epics`, …).
    pub name: String,
    /// Its fields (`whole`, `sharded`, `load_strategy`, …), resolved.
    pub fields: Vec<(String, String)>,
}

/// A workflow.yaml, resolved.
#[derive(Clone, Debug, Serialize)]
pub struct WorkflowYaml {
    /// The config file used, if one was found.
    pub config_file: Option<String>,
    /// `template`.
    pub template: Template,
    /// `instructions`, resolved.
    pub instructions: Option<String>,
    /// `validation`, resolved.
    pub validation: Option<String>,
    /// `default_output_file`, resolved.
    pub default_output_file: Option<String>,
    /// `standalone`.
    pub standalone: Option<bool>,
    /// `web_bundle`: `false`, or a mapping (kept as its kind).
    pub web_bundle: Option<String>,
    /// Every scalar top-level field, in file order (unknown ones included).
    pub variables: Vec<Variable>,
    /// `input_file_patterns`.
    pub input_file_patterns: Vec<InputPattern>,
    /// Other structured fields (`variables:`, `recommended_inputs`, …), by name and kind.
    pub other_fields: Vec<(String, String)>,
    /// `{{…}}` placeholders left for run time.
    pub runtime_variables: Vec<String>,
    /// `{name}` nothing defines.
    pub unresolved: Vec<String>,
}

impl WorkflowYaml {
    /// The config keys the workflow reads with `{config_source}:key`, in the order it first
    /// uses them: what a preflight must find set.
    pub fn config_source_keys(&self) -> Vec<String> {
        const MARK: &str = "{config_source}:";
        let mut keys: Vec<String> = Vec::new();
        for v in &self.variables {
            let mut rest = v.raw.as_str();
            while let Some(at) = rest.find(MARK) {
                rest = &rest[at + MARK.len()..];
                let key: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
                    .collect();
                if !key.is_empty() && !keys.contains(&key) {
                    keys.push(key);
                }
            }
        }
        keys
    }

    /// A resolved variable's value.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.variables
            .iter()
            .find(|v| v.name == name)
            .map(|v| v.value.as_str())
    }
}

/// Load `workflow.yaml` at `path` (text already read, `install` found), its config and its
/// instructions.
pub fn load(path: &Path, text: &str, env: &Env, install: Option<PathBuf>) -> Workflow {
    let file = env.shown(path);
    let mut diagnostics = Vec::new();
    let mut wf = Workflow::new(file.clone(), Format::WorkflowYaml, None);
    let root = match yaml::parse(text) {
        Ok(Some(root)) if root.as_map().is_some() => root,
        Ok(other) => {
            diagnostics.push(Diagnostic::error(
                &file,
                1,
                1,
                format!(
                    "a workflow.yaml is a mapping of fields; this is {}",
                    other.as_ref().map_or("empty", |n| n.kind())
                ),
            ));
            wf.diagnostics = diagnostics;
            return wf;
        }
        Err(e) => {
            diagnostics.push(
                Diagnostic::error(
                    &file,
                    e.line,
                    e.col,
                    format!("not valid YAML: {}", e.message),
                )
                .hint("fix the YAML syntax at this position"),
            );
            wf.diagnostics = diagnostics;
            return wf;
        }
    };
    if let Some(team) = root.get("workflow").filter(|w| w.as_map().is_some()) {
        wf.format = Format::TeamWorkflow;
        wf.name = team.get("name").and_then(Node::as_str).map(str::to_owned);
        wf.diagnostics = super::team::lint_team_workflow(team, &file);
        return wf;
    }
    let entries = root.as_map().unwrap_or_default();
    diagnostics.extend(
        REQUIRED
            .iter()
            .filter(|key| root.get(key).is_none())
            .map(|key| {
                Diagnostic::error(&file, 1, 1, format!("required field `{key}` is missing")).hint(
                    format!("add `{key}:`; BMAD's engine cannot run the workflow without it"),
                )
            }),
    );
    let order = scalar_fields(entries, &file, &mut diagnostics);
    let raw: BTreeMap<String, String> = order
        .iter()
        .map(|(name, value, ..)| (name.clone(), value.clone()))
        .collect();
    let mut resolver = Resolver::new(env, install, raw.clone());
    // The config: `--config` if given, else config_source.
    let config_path = match &env.config_override {
        Some(p) => Some(p.clone()),
        None => raw
            .get("config_source")
            .and_then(|c| resolver.text(c).ok())
            .map(PathBuf::from),
    };
    let config_file = config_path
        .as_deref()
        .and_then(|cp| read_module_config(cp, env, &root, &file, &mut resolver, &mut diagnostics));
    let (variables, unresolvable) = resolve_variables(
        &order,
        &mut resolver,
        config_file.as_deref(),
        &file,
        &mut diagnostics,
    );
    let value_of = |name: &str| {
        variables
            .iter()
            .find(|v| v.name == name)
            .map(|v| v.value.clone())
    };
    check_locality(&variables, env, &root, &file, &mut diagnostics);
    // A relative file (`./instructions.md`, `template.md`) is beside the workflow file, as
    // BMAD's skills write them since v6.3 and its loader reads them; never the directory
    // git-bmad runs in.
    let beside = |value: String| -> String {
        let relative = Path::new(&value).is_relative() && !value.contains("://");
        match path.parent() {
            Some(dir) if relative => dir
                .join(&value)
                .components()
                .filter(|c| !matches!(c, std::path::Component::CurDir))
                .collect::<PathBuf>()
                .to_string_lossy()
                .into_owned(),
            _ => value,
        }
    };
    let template = match root.get("template") {
        None => Template::None,
        Some(n) if n.as_str() == Some("false") => Template::Action,
        Some(_) => match value_of("template") {
            Some(t) if !t.is_empty() => Template::File(beside(t)),
            _ => Template::None,
        },
    };
    let input_file_patterns = input_patterns(&root, &mut resolver);
    let other_fields = other_fields(entries);
    let instructions = value_of("instructions")
        .filter(|i| !i.is_empty() && !unresolvable.contains(&"instructions"))
        .map(beside);
    let mut config = WorkflowYaml {
        config_file,
        template,
        instructions: instructions.clone(),
        validation: value_of("validation").filter(|v| !v.is_empty()).map(beside),
        default_output_file: value_of("default_output_file"),
        standalone: root
            .get("standalone")
            .and_then(Node::as_str)
            .map(|s| s == "true"),
        web_bundle: root.get("web_bundle").map(|n| match n.as_str() {
            Some(s) => s.to_owned(),
            None => n.kind().to_owned(),
        }),
        variables,
        input_file_patterns,
        other_fields,
        runtime_variables: Vec::new(),
        unresolved: Vec::new(),
    };
    if let Some(i) = &instructions {
        read_instructions(i, env, &root, &file, &mut wf, &mut diagnostics);
    }
    if !unresolvable.contains(&"template") {
        check_template(&config.template, env, &root, &file, &mut diagnostics);
    }
    config.runtime_variables = resolver.runtime.clone();
    config.unresolved = resolver.unresolved.clone();
    wf.name = config.var("name").map(str::to_owned);
    wf.config = Some(config);
    wf.diagnostics = diagnostics;
    wf
}

/// Read the module config at `cp` into `resolver`; its path as shown, when it could be read.
fn read_module_config(
    cp: &Path,
    env: &Env,
    root: &Node,
    file: &str,
    resolver: &mut Resolver<'_>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<String> {
    match std::fs::read_to_string(cp) {
        Ok(t) => match resolve::read_config(&t) {
            Ok(values) => {
                resolver.config = Some(values);
                return Some(env.shown(cp));
            }
            Err(e) => diagnostics.push(Diagnostic::error(
                &env.shown(cp),
                0,
                0,
                format!("the module config is not valid YAML: {e}"),
            )),
        },
        Err(_) => {
            let (line, col) = position(root, "config_source");
            let d = Diagnostic::error(
                file,
                line,
                col,
                format!("config_source {} does not exist", env.shown(cp)),
            )
            .hint("install BMAD in this project, or pass --config with the module config");
            diagnostics.push(if env.lenient_config {
                Diagnostic {
                    severity: super::Severity::Warning,
                    ..d
                }
            } else {
                d
            });
        }
    }
    None
}

/// Local files only, and outputs stay in the project.
fn check_locality(
    variables: &[Variable],
    env: &Env,
    root: &Node,
    file: &str,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let value_of = |name: &str| {
        variables
            .iter()
            .find(|v| v.name == name)
            .map(|v| v.value.clone())
    };
    for key in ["instructions", "template", "validation"] {
        if let Some(v) = value_of(key).filter(|v| v.contains("://")) {
            let (line, col) = position(root, key);
            diagnostics.push(
                Diagnostic::error(
                    file,
                    line,
                    col,
                    format!("`{key}` is a URL ({v}): only local files are allowed"),
                )
                .hint("download it into the install and point at the file"),
            );
        }
    }
    for v in variables {
        let is_output = v.name == "default_output_file"
            || v.name.ends_with("_output_file")
            || v.name == "output_folder";
        if let Some(why) = is_output
            .then(|| resolve::escapes(&v.value, &env.project_root))
            .flatten()
        {
            let (line, col) = position(root, &v.name);
            diagnostics.push(
                Diagnostic::error(
                    file,
                    line,
                    col,
                    format!(
                        "output path `{}` ({}) would leave the project: {why}",
                        v.name, v.value
                    ),
                )
                .hint("write outputs under the project, e.g. {output_folder}/…"),
            );
        }
    }
}

/// `input_file_patterns`, each pattern's fields resolved (left as written where they cannot
/// be).
fn input_patterns(root: &Node, resolver: &mut Resolver<'_>) -> Vec<InputPattern> {
    let mut input_file_patterns = Vec::new();
    if let Some(patterns) = root.get("input_file_patterns").and_then(Node::as_map) {
        for (k, v) in patterns {
            let fields = v
                .as_map()
                .unwrap_or_default()
                .iter()
                .filter_map(|(fk, fv)| {
                    let text = fv.as_str()?;
                    Some((
                        fk.as_str().unwrap_or_default().to_owned(),
                        resolver.text(text).unwrap_or_else(|_| text.to_owned()),
                    ))
                })
                .collect();
            input_file_patterns.push(InputPattern {
                name: k.as_str().unwrap_or_default().to_owned(),
                fields,
            });
        }
    }
    input_file_patterns
}

/// Every scalar field's value, resolved; with the names that could not be (reported once,
/// their paths are not checked again).
fn resolve_variables<'o>(
    order: &'o [(String, String, usize, usize)],
    resolver: &mut Resolver<'_>,
    config_file: Option<&str>,
    file: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> (Vec<Variable>, Vec<&'o str>) {
    let mut variables = Vec::new();
    // Variables already reported as unresolvable: their paths are not checked again.
    let mut unresolvable: Vec<&str> = Vec::new();
    for (name, raw_value, line, col) in order {
        let value = match resolver.var(name) {
            Ok(v) => v,
            // Without a config, the missing config is the one finding, already made.
            Err(Problem::NoConfig(_)) => {
                unresolvable.push(name);
                raw_value.clone()
            }
            Err(problem) => {
                unresolvable.push(name);
                let (message, hint) = describe(&problem, config_file);
                diagnostics.push(
                    Diagnostic::error(file, *line, *col, format!("`{name}`: {message}")).hint(hint),
                );
                raw_value.clone()
            }
        };
        variables.push(Variable {
            name: name.clone(),
            raw: raw_value.clone(),
            value,
            line: *line,
        });
    }
    (variables, unresolvable)
}

/// The scalar fields in file order, each with its line and column; a duplicate keeps its
/// first place and takes the last value.
fn scalar_fields(
    entries: &[(Node, Node)],
    file: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<(String, String, usize, usize)> {
    let mut order: Vec<(String, String, usize, usize)> = Vec::new();
    for (k, v) in entries {
        let Some(key) = k.as_str() else { continue };
        let value = match (&v.value, v.as_str()) {
            (_, Some(s)) => s.to_owned(),
            (yaml::Value::Null, _) => String::new(),
            _ => continue,
        };
        match order.iter_mut().find(|(name, ..)| name == key) {
            Some(slot) => {
                diagnostics.push(Diagnostic::warning(
                    file,
                    k.line,
                    k.col,
                    format!("duplicate field `{key}`: the last value is used"),
                ));
                *slot = (key.to_owned(), value, k.line, v.col);
            }
            None => order.push((key.to_owned(), value, k.line, v.col)),
        }
    }
    order
}

/// The instructions file `i`, read and parsed like any instruction file, into `wf`.
fn read_instructions(
    i: &str,
    env: &Env,
    root: &Node,
    file: &str,
    wf: &mut Workflow,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let ipath = PathBuf::from(i);
    let (line, col) = position(root, "instructions");
    match std::fs::read_to_string(&ipath) {
        Ok(t) => {
            let shown = env.shown(&ipath);
            let mut parsed = instructions::parse(&t, 1, &shown);
            diagnostics.append(&mut parsed.diagnostics);
            wf.instructions_file = Some(shown);
            wf.instructions = Some(parsed);
        }
        Err(_) if !i.contains("://") => diagnostics.push(
            Diagnostic::error(
                file,
                line,
                col,
                format!("instructions file {} does not exist", env.shown(&ipath)),
            )
            .hint("check installed_path and instructions"),
        ),
        Err(_) => {}
    }
}

/// A template file that is not there.
fn check_template(
    template: &Template,
    env: &Env,
    root: &Node,
    file: &str,
    diagnostics: &mut Vec<Diagnostic>,
) {
    if let Template::File(t) = template {
        if !Path::new(t).is_file() && !t.contains("://") {
            let (line, col) = position(root, "template");
            diagnostics.push(Diagnostic::error(
                file,
                line,
                col,
                format!("template {} does not exist", env.shown(Path::new(t))),
            ));
        }
    }
}

/// The fields that are not scalars (and not `input_file_patterns`), with their kind.
fn other_fields(entries: &[(Node, Node)]) -> Vec<(String, String)> {
    entries
        .iter()
        .filter(|(k, v)| {
            v.as_str().is_none()
                && !matches!(v.value, yaml::Value::Null)
                && k.as_str() != Some("input_file_patterns")
        })
        .map(|(k, v)| {
            (
                k.as_str().unwrap_or_default().to_owned(),
                v.kind().to_owned(),
            )
        })
        .collect()
}

/// Line and column of a top-level field's value.
fn position(root: &Node, key: &str) -> (usize, usize) {
    root.as_map()
        .unwrap_or_default()
        .iter()
        .find(|(k, _)| k.as_str() == Some(key))
        .map_or((1, 1), |(k, v)| {
            if matches!(v.value, yaml::Value::Null) {
                (k.line, k.col)
            } else {
                (v.line, v.col)
            }
        })
}

fn describe(problem: &Problem, config: Option<&str>) -> (String, String) {
    match problem {
        Problem::NoConfig(key) => (
            format!("`{{config_source}}:{key}` cannot be resolved: no module config was loaded"),
            "install BMAD in this project, or pass --config with the module config".into(),
        ),
        Problem::MissingKey(key) => (
            format!(
                "`{{config_source}}:{key}`: {} has no `{key}`",
                config.unwrap_or("the config")
            ),
            format!("add `{key}:` to the module config"),
        ),
        Problem::Cycle(chain) => (
            format!("variables refer to each other: {}", chain.join(" → ")),
            "break the cycle by giving one of them a value of its own".into(),
        ),
    }
}
