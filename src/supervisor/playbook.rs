//! Playbooks: the YAML a user writes, parsed into [`Playbook`] and validated strictly.
//!
//! Validation reports every violation at once, each with its line and column, the field
//! and, for vocabulary, the allowed values: a playbook that fails at step 6 of a night's run
//! because of a typo is the failure this exists to prevent. Unknown fields are errors too; a
//! misspelt `on_eror:` silently ignored is a policy the user believes in and does not have.

use std::fmt;
use std::path::{Component, Path};
use std::time::Duration;

use serde::Serialize;

use crate::config::yaml::{self, Node, Value};

/// How much a step may do without a human.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Autonomy {
    /// Runs without a human; an escalation trigger can still promote it to a gate.
    Auto,
    /// Runs without a human unless the agent reports a breaking change.
    GateOnBreaking,
    /// A human approves before it runs.
    AlwaysGate,
    /// Journaled as skipped, never run.
    Skip,
}

/// What happens when a step fails and no escalation trigger applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorPolicy {
    /// The run halts (exit 5).
    Stop,
    /// The step runs once more; a second failure halts the run.
    RetryOnce,
    /// A human decides.
    Gate,
}

/// What promotes a step to a human gate whatever its autonomy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// A postcondition was not met after the step.
    PostconditionFailure,
    /// The agent's verdict was a failure.
    VerdictFailure,
    /// The agent reported a breaking change.
    AgreementBreakingChange,
    /// The agent process failed: exit status, timeout, reported error, refused tool calls.
    SubagentError,
}

/// An artifact check, for preconditions and postconditions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// The spec-kit feature has `spec.md`.
    SpecExists,
    /// The spec-kit feature has `plan.md`.
    PlanExists,
    /// The spec-kit feature has `tasks.md`.
    TasksExist,
    /// Every task in the feature's `tasks.md` is checked.
    TasksAllChecked,
    /// A file or directory exists (path relative to the worktree).
    FileExists(String),
    /// The test command exits 0 (`checks.test_command` when none is given).
    TestsPass(Option<String>),
    /// The step changed something in the worktree.
    DiffNonempty,
}

/// Names of the vocabulary, for validation messages and the template.
pub mod vocabulary {
    /// Autonomy levels.
    pub const AUTONOMY: &[&str] = &["auto", "gate_on_breaking", "always_gate", "skip"];
    /// Error policies.
    pub const ERROR_POLICY: &[&str] = &["stop", "retry_once", "gate"];
    /// Escalation triggers.
    pub const TRIGGER: &[&str] = &[
        "postcondition_failure",
        "verdict_failure",
        "agreement_breaking_change",
        "subagent_error",
    ];
    /// Artifact checks (`file_exists` and `tests_pass` take a value).
    pub const CHECK: &[&str] = &[
        "spec_exists",
        "plan_exists",
        "tasks_exist",
        "tasks_all_checked",
        "file_exists: <path>",
        "tests_pass",
        "tests_pass: <command>",
        "diff_nonempty",
    ];
    /// Fields of a step.
    pub const STEP_FIELDS: &[&str] = &[
        "id",
        "command",
        "description",
        "runner",
        "role",
        "autonomy",
        "preconditions",
        "postconditions",
        "on_error",
        "escalate_on",
        "timeout",
    ];
    /// Fields of a parallel phase.
    pub const PHASE_FIELDS: &[&str] = &["phase", "parallel"];
    /// Top-level fields.
    pub const TOP_FIELDS: &[&str] = &[
        "name",
        "description",
        "version",
        "limits",
        "defaults",
        "steps",
    ];
    /// Fields of `limits`.
    pub const LIMIT_FIELDS: &[&str] = &["max_invocations", "max_run_time"];
    /// Fields of `defaults`.
    pub const DEFAULT_FIELDS: &[&str] = &[
        "runner",
        "role",
        "autonomy",
        "on_error",
        "escalate_on",
        "timeout",
    ];
}

impl Autonomy {
    /// Every value, in the order of its vocabulary.
    const ALL: [Autonomy; 4] = [
        Autonomy::Auto,
        Autonomy::GateOnBreaking,
        Autonomy::AlwaysGate,
        Autonomy::Skip,
    ];

    fn parse(s: &str) -> Option<Autonomy> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// The name in playbooks and the journal.
    pub fn as_str(&self) -> &'static str {
        vocabulary::AUTONOMY[*self as usize]
    }
}

impl ErrorPolicy {
    /// Every value, in the order of its vocabulary.
    const ALL: [ErrorPolicy; 3] = [ErrorPolicy::Stop, ErrorPolicy::RetryOnce, ErrorPolicy::Gate];

    fn parse(s: &str) -> Option<ErrorPolicy> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// The name in playbooks and the journal.
    pub fn as_str(&self) -> &'static str {
        vocabulary::ERROR_POLICY[*self as usize]
    }
}

impl Trigger {
    /// Every value, in the order of its vocabulary.
    const ALL: [Trigger; 4] = [
        Trigger::PostconditionFailure,
        Trigger::VerdictFailure,
        Trigger::AgreementBreakingChange,
        Trigger::SubagentError,
    ];

    fn parse(s: &str) -> Option<Trigger> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// The name in playbooks and the journal.
    pub fn as_str(&self) -> &'static str {
        vocabulary::TRIGGER[*self as usize]
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Check::SpecExists => f.write_str("spec_exists"),
            Check::PlanExists => f.write_str("plan_exists"),
            Check::TasksExist => f.write_str("tasks_exist"),
            Check::TasksAllChecked => f.write_str("tasks_all_checked"),
            Check::FileExists(path) => write!(f, "file_exists: {path}"),
            Check::TestsPass(None) => f.write_str("tests_pass"),
            Check::TestsPass(Some(cmd)) => write!(f, "tests_pass: {cmd}"),
            Check::DiffNonempty => f.write_str("diff_nonempty"),
        }
    }
}

/// Run-wide limits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Agent and command invocations in the whole run, retries included.
    pub max_invocations: u32,
    /// Time spent in steps, summed over the whole run (crashes and gates not counted).
    #[serde(serialize_with = "serialize_secs")]
    pub max_run_time: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_invocations: 50,
            max_run_time: Duration::from_secs(8 * 3600),
        }
    }
}

/// The per-step timeout when neither the step nor `defaults` sets one.
pub const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// One step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    /// Unique within the playbook.
    pub id: String,
    /// A slash command (`/speckit.plan`), a prompt, or for the shell runner a command line.
    pub command: String,
    /// What it is for, shown at gates.
    pub description: Option<String>,
    /// Runner name (`claude`, `codex`, `gemini`, `shell`, `generic`).
    pub runner: Option<String>,
    /// Role, mapped to a runner by `runners.roles` in `.bmad/config.yaml`.
    pub role: Option<String>,
    /// Autonomy level.
    pub autonomy: Autonomy,
    /// Checked before the step runs.
    pub preconditions: Vec<Check>,
    /// Checked after the step ran.
    pub postconditions: Vec<Check>,
    /// What a failure does.
    pub on_error: ErrorPolicy,
    /// What promotes it to a gate.
    pub escalate_on: Vec<Trigger>,
    /// Wall-clock limit of one attempt.
    #[serde(serialize_with = "serialize_secs")]
    pub timeout: Duration,
    /// Line in the playbook file.
    pub line: usize,
    /// Line and column of its command.
    #[serde(skip)]
    pub command_at: (usize, usize),
}

/// Steps that run one after the other are phases of one step; a `parallel:` group is a phase
/// whose steps run at the same time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Phase {
    /// The phase name (the step id for a phase of one).
    pub id: String,
    /// Whether its steps run at the same time.
    pub parallel: bool,
    /// Its steps.
    pub steps: Vec<Step>,
}

/// A validated playbook.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Playbook {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: Option<String>,
    /// Run-wide limits.
    pub limits: Limits,
    /// Phases, in order.
    pub phases: Vec<Phase>,
}

impl Playbook {
    /// Every step, in order.
    pub fn steps(&self) -> impl Iterator<Item = &Step> {
        self.phases.iter().flat_map(|p| p.steps.iter())
    }

    /// The step with this id.
    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps().find(|s| s.id == id)
    }
}

pub use crate::diagnostic::Severity;

/// One finding, with where it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// The field, as a path (`steps[2].autonomy`).
    pub field: String,
    /// What is wrong and what would be right.
    pub message: String,
}

impl Diagnostic {
    /// `file:line:col: severity: field: message`.
    pub fn render(&self, file: &str) -> String {
        let severity = self.severity.as_str();
        format!(
            "{file}:{}:{}: {severity}: {}: {}",
            self.line, self.col, self.field, self.message
        )
    }
}

/// Parse and validate a playbook's text; `None` when there is any error.
pub fn parse(text: &str, fallback_name: &str) -> (Option<Playbook>, Vec<Diagnostic>) {
    let mut p = Parser::default();
    let root = match yaml::parse(text) {
        Ok(Some(root)) => root,
        Ok(None) => {
            p.error_at(
                1,
                1,
                "steps",
                "the playbook is empty; it needs at least one step",
            );
            return (None, p.diagnostics);
        }
        Err(e) => {
            p.error_at(
                e.line,
                e.col,
                "(yaml)",
                format!("not valid YAML: {}", e.message),
            );
            return (None, p.diagnostics);
        }
    };
    let playbook = p.playbook(&root, fallback_name);
    let ok = !p.diagnostics.iter().any(|d| d.severity == Severity::Error);
    (ok.then_some(playbook).flatten(), p.diagnostics)
}

/// Step settings that `defaults:` provides.
#[derive(Clone, Debug)]
struct Defaults {
    runner: Option<String>,
    role: Option<String>,
    autonomy: Autonomy,
    on_error: ErrorPolicy,
    escalate_on: Vec<Trigger>,
    timeout: Duration,
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults {
            runner: None,
            role: None,
            autonomy: Autonomy::Auto,
            on_error: ErrorPolicy::Stop,
            escalate_on: Vec::new(),
            timeout: DEFAULT_STEP_TIMEOUT,
        }
    }
}

#[derive(Default)]
struct Parser {
    diagnostics: Vec<Diagnostic>,
}

impl Parser {
    fn error_at(&mut self, line: usize, col: usize, field: &str, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic {
            severity: Severity::Error,
            line,
            col,
            field: field.to_owned(),
            message: message.into(),
        });
    }

    fn error(&mut self, node: &Node, field: &str, message: impl Into<String>) {
        self.error_at(node.line, node.col, field, message);
    }

    fn warn(&mut self, node: &Node, field: &str, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic {
            severity: Severity::Warning,
            line: node.line,
            col: node.col,
            field: field.to_owned(),
            message: message.into(),
        });
    }

    /// The entries of a mapping, reporting unknown keys; `None` if it is not a mapping.
    fn map<'a>(
        &mut self,
        node: &'a Node,
        field: &str,
        allowed: &[&str],
    ) -> Option<&'a [(Node, Node)]> {
        let Some(entries) = node.as_map() else {
            self.error(
                node,
                field,
                format!("expected a mapping, found {}", node.kind()),
            );
            return None;
        };
        let mut seen: Vec<&str> = Vec::new();
        for (key, _) in entries {
            let name = key.as_str().unwrap_or_default();
            let path = join(field, name);
            if !allowed.contains(&name) {
                self.error(
                    key,
                    &path,
                    format!("unknown field; allowed: {}", allowed.join(", ")),
                );
            } else if seen.contains(&name) {
                self.error(key, &path, "given twice");
            }
            seen.push(name);
        }
        Some(entries)
    }

    fn string(&mut self, node: &Node, field: &str) -> Option<String> {
        match node.as_str() {
            Some(s) if !s.trim().is_empty() => Some(s.to_owned()),
            _ => {
                self.error(node, field, format!("expected text, found {}", node.kind()));
                None
            }
        }
    }

    fn word<T>(
        &mut self,
        node: &Node,
        field: &str,
        allowed: &[&str],
        parse: fn(&str) -> Option<T>,
    ) -> Option<T> {
        let text = self.string(node, field)?;
        let value = parse(&text);
        if value.is_none() {
            self.error(
                node,
                field,
                format!(
                    "{text:?} is not allowed; allowed values: {}",
                    allowed.join(", ")
                ),
            );
        }
        value
    }

    fn duration(&mut self, node: &Node, field: &str) -> Option<Duration> {
        let text = self.string(node, field)?;
        let value = parse_duration(&text);
        if value.is_none() {
            self.error(
                node,
                field,
                format!("{text:?} is not a duration; write e.g. 90s, 30m, 2h or 1h30m"),
            );
        }
        value
    }

    fn triggers(&mut self, node: &Node, field: &str) -> Vec<Trigger> {
        let Some(items) = self.list(node, field) else {
            return Vec::new();
        };
        items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| {
                self.word(
                    item,
                    &format!("{field}[{i}]"),
                    vocabulary::TRIGGER,
                    Trigger::parse,
                )
            })
            .collect()
    }

    fn list<'a>(&mut self, node: &'a Node, field: &str) -> Option<&'a [Node]> {
        match &node.value {
            Value::Seq(items) => Some(items),
            Value::Null => Some(&[]),
            _ => {
                self.error(
                    node,
                    field,
                    format!("expected a list, found {}", node.kind()),
                );
                None
            }
        }
    }

    fn playbook(&mut self, root: &Node, fallback_name: &str) -> Option<Playbook> {
        let entries = self.map(root, "(top)", vocabulary::TOP_FIELDS)?;
        let mut name = fallback_name.to_owned();
        let mut description = None;
        let mut limits = Limits::default();
        let mut defaults = Defaults::default();
        let mut steps_node = None;
        // `defaults` must be known before the steps, wherever it is written.
        if let Some(node) = root.get("defaults") {
            defaults = self.defaults(node);
        }
        for (key, value) in entries {
            match key.as_str().unwrap_or_default() {
                "name" => name = self.string(value, "name").unwrap_or(name),
                "description" => description = self.string(value, "description"),
                "version" if value.as_str() != Some("1") => self.error(
                    value,
                    "version",
                    format!("{value} is not supported; allowed values: 1"),
                ),
                "limits" => limits = self.limits(value),
                "steps" => steps_node = Some(value),
                _ => {}
            }
        }
        let Some(steps_node) = steps_node else {
            self.error(root, "steps", "missing; a playbook needs at least one step");
            return None;
        };
        let items = self.list(steps_node, "steps")?;
        if items.is_empty() {
            self.error(
                steps_node,
                "steps",
                "empty; a playbook needs at least one step",
            );
            return None;
        }
        let mut phases = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let field = format!("steps[{i}]");
            if item.get("parallel").is_some() {
                if let Some(phase) = self.parallel(item, &field, &defaults) {
                    phases.push(phase);
                }
            } else if let Some(step) = self.step(item, &field, &defaults) {
                phases.push(Phase {
                    id: step.id.clone(),
                    parallel: false,
                    steps: vec![step],
                });
            }
        }
        self.check_ids(&phases, items);
        Some(Playbook {
            name,
            description,
            limits,
            phases,
        })
    }

    fn check_ids(&mut self, phases: &[Phase], items: &[Node]) {
        let mut seen: Vec<&str> = Vec::new();
        for step in phases.iter().flat_map(|p| &p.steps) {
            if seen.contains(&step.id.as_str()) {
                let at = items
                    .iter()
                    .flat_map(|n| {
                        std::iter::once(n)
                            .chain(n.get("parallel").and_then(Node::as_seq).unwrap_or_default())
                    })
                    .filter_map(|n| n.get("id"))
                    .filter(|n| n.as_str() == Some(step.id.as_str()))
                    .nth(1);
                let (line, col) = at.map_or((step.line, 1), |n| (n.line, n.col));
                self.error_at(
                    line,
                    col,
                    "id",
                    format!("duplicate step id {:?}; ids must be unique", step.id),
                );
            }
            seen.push(&step.id);
        }
    }

    fn limits(&mut self, node: &Node) -> Limits {
        let mut limits = Limits::default();
        let Some(entries) = self.map(node, "limits", vocabulary::LIMIT_FIELDS) else {
            return limits;
        };
        for (key, value) in entries {
            match key.as_str().unwrap_or_default() {
                "max_invocations" => {
                    match value
                        .as_str()
                        .and_then(|s| s.parse::<u32>().ok())
                        .filter(|n| *n > 0)
                    {
                        Some(n) => limits.max_invocations = n,
                        None => self.error(
                            value,
                            "limits.max_invocations",
                            "expected a whole number above 0",
                        ),
                    }
                }
                "max_run_time" => {
                    if let Some(d) = self.duration(value, "limits.max_run_time") {
                        limits.max_run_time = d;
                    }
                }
                _ => {}
            }
        }
        limits
    }

    fn defaults(&mut self, node: &Node) -> Defaults {
        let mut defaults = Defaults::default();
        let Some(entries) = self.map(node, "defaults", vocabulary::DEFAULT_FIELDS) else {
            return defaults;
        };
        for (key, value) in entries {
            let field = join("defaults", key.as_str().unwrap_or_default());
            match key.as_str().unwrap_or_default() {
                "runner" => defaults.runner = self.runner(value, &field),
                "role" => defaults.role = self.string(value, &field),
                "autonomy" => {
                    if let Some(a) = self.word(value, &field, vocabulary::AUTONOMY, Autonomy::parse)
                    {
                        defaults.autonomy = a;
                    }
                }
                "on_error" => {
                    if let Some(p) =
                        self.word(value, &field, vocabulary::ERROR_POLICY, ErrorPolicy::parse)
                    {
                        defaults.on_error = p;
                    }
                }
                "escalate_on" => defaults.escalate_on = self.triggers(value, &field),
                "timeout" => {
                    if let Some(d) = self.duration(value, &field) {
                        defaults.timeout = d;
                    }
                }
                _ => {}
            }
        }
        defaults
    }

    fn runner(&mut self, node: &Node, field: &str) -> Option<String> {
        let name = self.string(node, field)?;
        if crate::runner::Kind::parse(&name).is_err() {
            self.error(
                node,
                field,
                format!(
                    "{name:?} is not a runner; allowed values: {}",
                    crate::runner::Kind::names()
                ),
            );
            return None;
        }
        Some(name)
    }

    fn parallel(&mut self, node: &Node, field: &str, defaults: &Defaults) -> Option<Phase> {
        self.map(node, field, vocabulary::PHASE_FIELDS)?;
        let id = match node.get("phase") {
            Some(n) => self.string(n, &join(field, "phase"))?,
            None => format!("phase-{}", node.line),
        };
        let list_field = join(field, "parallel");
        let items = self.list(node.get("parallel")?, &list_field)?;
        if items.is_empty() {
            self.error(node, &list_field, "empty; a parallel phase needs steps");
            return None;
        }
        if items.len() == 1 {
            self.warn(
                node,
                &list_field,
                "a parallel phase of one step runs like a plain step",
            );
        }
        let steps: Vec<Step> = items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| {
                if item.get("parallel").is_some() {
                    self.error(
                        item,
                        &format!("{list_field}[{i}]"),
                        "parallel phases cannot be nested",
                    );
                    return None;
                }
                self.step(item, &format!("{list_field}[{i}]"), defaults)
            })
            .collect();
        Some(Phase {
            id,
            parallel: true,
            steps,
        })
    }

    fn step(&mut self, node: &Node, field: &str, defaults: &Defaults) -> Option<Step> {
        let entries = self.map(node, field, vocabulary::STEP_FIELDS)?;
        let mut step = Step {
            id: String::new(),
            command: String::new(),
            description: None,
            runner: defaults.runner.clone(),
            role: defaults.role.clone(),
            autonomy: defaults.autonomy,
            preconditions: Vec::new(),
            postconditions: Vec::new(),
            on_error: defaults.on_error,
            escalate_on: defaults.escalate_on.clone(),
            timeout: defaults.timeout,
            line: node.line,
            command_at: (node.line, node.col),
        };
        let mut ok = true;
        for (key, value) in entries {
            let name = key.as_str().unwrap_or_default();
            let f = join(field, name);
            match name {
                "id" => {
                    match self.string(value, &f) {
                        Some(id) if valid_id(&id) => step.id = id,
                        Some(id) => {
                            self.error(value, &f, format!("{id:?} is not a usable id; use letters, digits, '-', '_' and '.'"));
                            ok = false;
                        }
                        None => ok = false,
                    }
                }
                "command" => match self.string(value, &f) {
                    Some(c) => {
                        step.command = c;
                        step.command_at = (value.line, value.col);
                    }
                    None => ok = false,
                },
                "description" => step.description = self.string(value, &f),
                "runner" => step.runner = self.runner(value, &f),
                "role" => step.role = self.string(value, &f),
                "autonomy" => match self.word(value, &f, vocabulary::AUTONOMY, Autonomy::parse) {
                    Some(a) => step.autonomy = a,
                    None => ok = false,
                },
                "on_error" => {
                    match self.word(value, &f, vocabulary::ERROR_POLICY, ErrorPolicy::parse) {
                        Some(p) => step.on_error = p,
                        None => ok = false,
                    }
                }
                "escalate_on" => step.escalate_on = self.triggers(value, &f),
                "timeout" => match self.duration(value, &f) {
                    Some(d) => step.timeout = d,
                    None => ok = false,
                },
                "preconditions" => step.preconditions = self.checks(value, &f),
                "postconditions" => step.postconditions = self.checks(value, &f),
                _ => {}
            }
        }
        if node.get("id").is_none() {
            self.error(node, &join(field, "id"), "missing; every step needs an id");
            ok = false;
        }
        if node.get("command").is_none() {
            self.error(node, &join(field, "command"), "missing; every step needs a command (a slash command such as /speckit.plan, a prompt, or with runner: shell a command line)");
            ok = false;
        }
        ok.then_some(step)
    }

    fn checks(&mut self, node: &Node, field: &str) -> Vec<Check> {
        let Some(items) = self.list(node, field) else {
            return Vec::new();
        };
        let mut checks = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let f = format!("{field}[{i}]");
            if let Some(check) = self.check(item, &f) {
                checks.push(check);
            }
        }
        checks
    }

    fn check(&mut self, node: &Node, field: &str) -> Option<Check> {
        let allowed = vocabulary::CHECK.join(", ");
        let (name, arg) = match &node.value {
            Value::Scalar(s) => (s.as_str(), None),
            Value::Map(entries) if entries.len() == 1 => (
                entries[0].0.as_str().unwrap_or_default(),
                Some(&entries[0].1),
            ),
            _ => {
                self.error(
                    node,
                    field,
                    format!(
                        "expected a check, found {}; allowed: {allowed}",
                        node.kind()
                    ),
                );
                return None;
            }
        };
        let check = match (name, arg) {
            ("spec_exists", None) => Check::SpecExists,
            ("plan_exists", None) => Check::PlanExists,
            ("tasks_exist", None) => Check::TasksExist,
            ("tasks_all_checked", None) => Check::TasksAllChecked,
            ("diff_nonempty", None) => Check::DiffNonempty,
            ("tests_pass", None) => Check::TestsPass(None),
            ("tests_pass", Some(cmd)) => Check::TestsPass(Some(self.string(cmd, field)?)),
            ("file_exists", Some(path_node)) => {
                let path = self.string(path_node, field)?;
                if let Err(why) = check_inside_repo(&path) {
                    self.error(
                        path_node,
                        field,
                        format!("{path:?} {why}; paths in a playbook stay inside the repository"),
                    );
                    return None;
                }
                Check::FileExists(path)
            }
            ("file_exists", None) => {
                self.error(
                    node,
                    field,
                    "file_exists needs a path: `file_exists: docs/plan.md`",
                );
                return None;
            }
            (_, Some(_)) if vocabulary::CHECK.contains(&name) => {
                self.error(node, field, format!("{name} takes no value"));
                return None;
            }
            _ => {
                self.error(
                    node,
                    field,
                    format!("{name:?} is not an artifact check; allowed: {allowed}"),
                );
                return None;
            }
        };
        Some(check)
    }
}

fn join(field: &str, name: &str) -> String {
    if field == "(top)" {
        name.to_owned()
    } else {
        format!("{field}.{name}")
    }
}

fn valid_id(id: &str) -> bool {
    id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Refuse paths that leave the repository: absolute, `~`, or with a `..` component.
pub fn check_inside_repo(path: &str) -> Result<(), &'static str> {
    if path.starts_with('~') {
        return Err("starts with ~");
    }
    let p = Path::new(path);
    if p.is_absolute() {
        return Err("is absolute");
    }
    if p.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err("goes up with ..");
    }
    Ok(())
}

/// `90s`, `30m`, `2h`, `1h30m`, or plain seconds; zero is not a duration.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<u64>() {
        return (secs > 0).then(|| Duration::from_secs(secs));
    }
    let mut total = 0u64;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86400,
            _ => return None,
        };
        let n: u64 = number.parse().ok()?;
        total = total.checked_add(n.checked_mul(unit)?)?;
        number.clear();
    }
    (number.is_empty() && total > 0).then(|| Duration::from_secs(total))
}

fn serialize_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(text: &str) -> Vec<String> {
        let (_, diags) = parse(text, "t");
        diags.iter().map(|d| d.render("p.yaml")).collect()
    }

    #[test]
    fn a_full_playbook() {
        let text = r#"
name: demo
limits: { max_invocations: 9, max_run_time: 1h }
defaults:
  on_error: retry_once
  timeout: 10m
steps:
  - id: plan
    command: /speckit.plan
    preconditions: [spec_exists]
    postconditions: [plan_exists, {file_exists: specs/x/plan.md}]
    escalate_on: [postcondition_failure]
  - phase: checks
    parallel:
      - {id: lint, command: "cargo clippy", runner: shell, on_error: gate}
      - {id: test, command: "cargo test", runner: shell, postconditions: [{tests_pass: cargo test}]}
  - id: pr
    command: gh pr create --fill
    runner: shell
    autonomy: always_gate
"#;
        let (playbook, diags) = parse(text, "fallback");
        assert!(diags.is_empty(), "{diags:?}");
        let p = playbook.unwrap();
        assert_eq!(p.name, "demo");
        assert_eq!(p.limits.max_invocations, 9);
        assert_eq!(p.phases.len(), 3);
        assert!(p.phases[1].parallel);
        let plan = p.step("plan").unwrap();
        assert_eq!(plan.on_error, ErrorPolicy::RetryOnce);
        assert_eq!(plan.timeout, Duration::from_secs(600));
        assert_eq!(
            plan.postconditions[1],
            Check::FileExists("specs/x/plan.md".into())
        );
        assert_eq!(p.step("lint").unwrap().on_error, ErrorPolicy::Gate);
        assert_eq!(p.step("pr").unwrap().autonomy, Autonomy::AlwaysGate);
        assert_eq!(p.step("pr").unwrap().line, 17);
    }

    #[test]
    fn every_violation_with_its_position() {
        let text = "steps:\n  - id: a\n    command: /x\n    autonomy: auto_always\n  - id: a\n    comand: /y\n  - id: c\n    command: /z\n    on_error: explode\n    postconditions: [file_exists: ../etc/passwd, made_up]\n";
        let e = errors(text);
        let expect = [
            "p.yaml:4:15: error: steps[0].autonomy: \"auto_always\" is not allowed; allowed values: auto, gate_on_breaking, always_gate, skip",
            "p.yaml:6:5: error: steps[1].comand: unknown field",
            "p.yaml:5:5: error: steps[1].command: missing",
            "p.yaml:9:15: error: steps[2].on_error: \"explode\" is not allowed; allowed values: stop, retry_once, gate",
            "p.yaml:10:35: error: steps[2].postconditions[0]: \"../etc/passwd\" goes up with ..",
            "p.yaml:10:50: error: steps[2].postconditions[1]: \"made_up\" is not an artifact check",
        ];
        for want in expect {
            assert!(
                e.iter().any(|l| l.starts_with(want)),
                "missing {want}\nin {e:#?}"
            );
        }
        assert_eq!(e.len(), expect.len(), "{e:#?}");
    }

    #[test]
    fn empty_and_duplicate() {
        assert!(
            errors("steps: []\n")[0].contains("steps: empty; a playbook needs at least one step")
        );
        assert!(errors("")[0].contains("the playbook is empty"));
        assert!(errors("name: x\n")[0].contains("steps: missing"));
        let e = errors("steps:\n  - {id: a, command: x}\n  - {id: a, command: y}\n");
        assert_eq!(
            e,
            ["p.yaml:3:10: error: id: duplicate step id \"a\"; ids must be unique"]
        );
        assert!(errors("steps: [\n")[0].contains("not valid YAML"));
        assert!(errors("- a\n- b\n")[0].contains("expected a mapping, found a list"));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("120"), Some(Duration::from_secs(120)));
        for bad in ["", "0", "0s", "5x", "m", "10m5", "-1s"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn no_panic_on_odd_yaml() {
        for text in [
            "steps: x",
            "steps: [1, [2], {a: b}]",
            "steps:\n  - id: [1]\n    command: {}\n",
            "? [a]\n: b\n",
            "steps:\n  - parallel: x\n",
            "steps:\n  - parallel: [{parallel: []}]\n",
            "steps: *a\n",
        ] {
            let (p, d) = parse(text, "t");
            assert!(p.is_none() && !d.is_empty(), "{text}");
        }
    }
}
