//! Reading a playbook's YAML into a [`Playbook`], every violation reported with its place.

use std::time::Duration;

use super::fields::{join, Parser};
use super::{
    check_inside_repo, vocabulary, Autonomy, Check, Diagnostic, ErrorPolicy, Limits, Phase,
    Playbook, Severity, Step, Trigger, VerdictRule, When, DEFAULT_STEP_TIMEOUT,
};
use crate::config::yaml::{self, Node, Value};

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

impl Parser {
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

    /// `when: {findings: <step>}`.
    fn when(&mut self, node: &Node, field: &str) -> Option<When> {
        let entries = self.map(node, field, &["findings"])?;
        let Some((_, value)) = entries.first() else {
            self.error(node, field, "empty; write `when: {findings: <step id>}`");
            return None;
        };
        self.string(value, &join(field, "findings"))
            .map(When::Findings)
    }

    fn check_ids(&mut self, phases: &[Phase], items: &[Node]) {
        let mut seen: Vec<&str> = Vec::new();
        for phase in phases {
            for step in &phase.steps {
                let Some(When::Findings(of)) = &step.when else {
                    continue;
                };
                // The step it reads must have finished before it: an earlier phase.
                if !seen.contains(&of.as_str()) {
                    let id = &step.id;
                    let why = format!("step {id:?} reads the findings of {of:?}, which is not a step before its phase");
                    self.error_at(step.line, 1, "when", why);
                }
            }
            seen.extend(phase.steps.iter().map(|s| s.id.as_str()));
            // A parallel phase's reviewers are read together by its name.
            seen.extend(phase.parallel.then_some(phase.id.as_str()));
        }
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
            verdict: VerdictRule::Optional,
            timeout: defaults.timeout,
            no_progress: None,
            when: None,
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
                "verdict" => match self.word(value, &f, VerdictRule::WORDS, VerdictRule::parse) {
                    Some(v) => step.verdict = v,
                    None => ok = false,
                },
                "timeout" => match self.duration(value, &f) {
                    Some(d) => step.timeout = d,
                    None => ok = false,
                },
                "no_progress" => match self.duration(value, &f) {
                    Some(d) => step.no_progress = Some(d),
                    None => ok = false,
                },
                "preconditions" => step.preconditions = self.checks(value, &f),
                "postconditions" => step.postconditions = self.checks(value, &f),
                "when" => match self.when(value, &f) {
                    Some(w) => step.when = Some(w),
                    None => ok = false,
                },
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
            ("checklist_written", None) => Check::ChecklistWritten,
            ("diff_nonempty", None) => Check::DiffNonempty,
            ("changed_beyond", Some(list)) => {
                let items = self.list(list, field)?;
                let mut named = Vec::new();
                for item in items {
                    named.push(self.string(item, field)?);
                }
                Check::ChangedBeyond(named)
            }
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
            ("changed_beyond", None) => {
                self.error(
                    node,
                    field,
                    "changed_beyond needs the paths that do not count: `changed_beyond: [docs/status.md]`",
                );
                return None;
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

fn valid_id(id: &str) -> bool {
    id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
