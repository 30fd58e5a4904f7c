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

mod fields;
mod parse;

pub use parse::parse;

/// An enum of vocabulary words: each variant's word is written beside it, so reordering the
/// variants renames nothing.
macro_rules! words {
    ($(#[$meta:meta])* pub enum $name:ident { $( $(#[$doc:meta])* $variant:ident = $word:literal, )* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
        pub enum $name {
            $( $(#[$doc])* #[serde(rename = $word)] $variant, )*
        }

        impl $name {
            /// Every word, in the order the vocabulary lists them.
            pub const WORDS: &'static [&'static str] = &[$($word),*];

            /// The word in playbooks and the journal.
            pub fn as_str(&self) -> &'static str {
                match self {
                    $( $name::$variant => $word, )*
                }
            }

            fn parse(word: &str) -> Option<$name> {
                match word {
                    $( $word => Some($name::$variant), )*
                    _ => None,
                }
            }
        }
    };
}

words! {
    /// How much a step may do without a human.
    pub enum Autonomy {
        /// Runs without a human; an escalation trigger can still promote it to a gate.
        Auto = "auto",
        /// Runs without a human unless the agent reports a breaking change.
        GateOnBreaking = "gate_on_breaking",
        /// A human approves before it runs.
        AlwaysGate = "always_gate",
        /// Journaled as skipped, never run.
        Skip = "skip",
    }
}

words! {
    /// Whether a step must end with the agent's verdict (`VERDICT: PASS` or `FAIL`).
    pub enum VerdictRule {
        /// A verdict counts when given; none is no failure.
        Optional = "optional",
        /// The step judges something: no verdict is a failure (`verdict_missing`), never a
        /// pass.
        Required = "required",
    }
}

words! {
    /// What happens when a step fails and no escalation trigger applies.
    pub enum ErrorPolicy {
        /// The run halts (exit 5).
        Stop = "stop",
        /// The step runs once more; a second failure halts the run.
        RetryOnce = "retry_once",
        /// A human decides.
        Gate = "gate",
        /// The step runs once more; a second failure skips it and the run goes on. For one
        /// of several parallel reviewers: the others' findings stand (a partial failure
        /// is not a failed review); a round where every reviewer failed goes to a human.
        Skip = "skip",
    }
}

words! {
    /// What promotes a step to a human gate whatever its autonomy.
    pub enum Trigger {
        /// A postcondition was not met after the step.
        PostconditionFailure = "postcondition_failure",
        /// The agent's verdict was a failure.
        VerdictFailure = "verdict_failure",
        /// The agent reported a breaking change.
        AgreementBreakingChange = "agreement_breaking_change",
        /// The agent process failed: exit status, timeout, reported error, refused tool calls.
        SubagentError = "subagent_error",
        /// A step that must judge (`verdict: required`) ended without a verdict.
        VerdictMissing = "verdict_missing",
        /// A hook, the guard or the checkpoint's secret scan refused something during the
        /// step. Always a gate, whatever the step's `on_error` and `escalate_on`.
        PolicyViolation = "policy_violation",
    }
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
    /// The step wrote or changed a checklist (`checklists/*.md`) in the feature directory,
    /// as `/speckit.checklist` does: an older checklist left from before is no evidence.
    ChecklistWritten,
    /// A file or directory exists (path relative to the worktree).
    FileExists(String),
    /// The test command exits 0 (`checks.test_command` when none is given).
    TestsPass(Option<String>),
    /// The step changed something in the worktree.
    DiffNonempty,
    /// The step changed a file none of these names (paths, directories above, `*`/`?`
    /// patterns): work beyond bookkeeping, such as a story's status line.
    ChangedBeyond(Vec<String>),
}

/// Names of the vocabulary, for validation messages and the template.
pub mod vocabulary {
    /// Autonomy levels.
    pub const AUTONOMY: &[&str] = super::Autonomy::WORDS;
    /// Error policies.
    pub const ERROR_POLICY: &[&str] = super::ErrorPolicy::WORDS;
    /// Escalation triggers.
    pub const TRIGGER: &[&str] = super::Trigger::WORDS;
    /// Artifact checks (`file_exists` and `tests_pass` take a value).
    pub const CHECK: &[&str] = &[
        "spec_exists",
        "plan_exists",
        "tasks_exist",
        "tasks_all_checked",
        "checklist_written",
        "file_exists: <path>",
        "tests_pass",
        "tests_pass: <command>",
        "diff_nonempty",
        "changed_beyond: [<path or pattern>, ...]",
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
        "verdict",
        "timeout",
        "no_progress",
        "when",
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

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Check::SpecExists => f.write_str("spec_exists"),
            Check::PlanExists => f.write_str("plan_exists"),
            Check::TasksExist => f.write_str("tasks_exist"),
            Check::TasksAllChecked => f.write_str("tasks_all_checked"),
            Check::ChecklistWritten => f.write_str("checklist_written"),
            Check::FileExists(path) => write!(f, "file_exists: {path}"),
            Check::TestsPass(None) => f.write_str("tests_pass"),
            Check::TestsPass(Some(cmd)) => write!(f, "tests_pass: {cmd}"),
            Check::DiffNonempty => f.write_str("diff_nonempty"),
            Check::ChangedBeyond(paths) => write!(f, "changed_beyond: [{}]", paths.join(", ")),
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
    /// Whether it must end with a verdict.
    pub verdict: VerdictRule,
    /// Wall-clock limit of one attempt.
    #[serde(serialize_with = "serialize_secs")]
    pub timeout: Duration,
    /// An attempt that changes nothing in the worktree for this long is abandoned: its
    /// agent is killed and the step fails.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_opt_secs"
    )]
    pub no_progress: Option<Duration>,
    /// Run only when this holds; otherwise the step is journaled as skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
    /// Line in the playbook file.
    pub line: usize,
    /// Line and column of its command.
    #[serde(skip)]
    pub command_at: (usize, usize),
}

/// A condition on an earlier step's result that decides whether a step runs: review→fix
/// rounds unrolled into plain steps, each round running only while findings remain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum When {
    /// The named step finished with open MUST-FIX findings in its answer (read by the
    /// decision engine's review reader).
    Findings(String),
}

impl fmt::Display for When {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            When::Findings(step) => write!(f, "findings: {step}"),
        }
    }
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

pub use crate::diagnostic::Diagnostic;

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

pub use crate::time::parse_duration;

fn serialize_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_secs())
}

fn serialize_opt_secs<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_u64(d.as_secs()),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn words_read_back() {
        for word in Autonomy::WORDS {
            assert_eq!(Autonomy::parse(word).map(|a| a.as_str()), Some(*word));
        }
        assert_eq!(
            Trigger::parse("verdict_failure"),
            Some(Trigger::VerdictFailure)
        );
        assert_eq!(ErrorPolicy::RetryOnce.as_str(), "retry_once");
        assert_eq!(ErrorPolicy::parse("explode"), None);
    }
}
