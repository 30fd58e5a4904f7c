//! The one error type of the CLI, and the exit codes of `docs/architecture.md` §6 ("Exit codes").

use std::fmt::Write as _;

use crate::git;
use crate::runner;
use crate::session;
use crate::supervisor;

/// Exit codes, all in one place.
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// The operation failed; the message says why and what to do.
    pub const FAILED: u8 = 1;
    /// Usage or invalid input.
    pub const USAGE: u8 = 2;
    /// Halted at a gate, waiting for a human.
    pub const GATED: u8 = 3;
    /// Refused by policy.
    pub const POLICY: u8 = 4;
    /// A step failed under a `stop` policy.
    pub const STEP_FAILED: u8 = 5;
    /// A run reached its cap on agent invocations.
    pub const INVOCATION_LIMIT: u8 = 6;
    /// A run reached its time limit.
    pub const RUN_TIME_LIMIT: u8 = 7;
    /// Interrupted; state was saved.
    pub const INTERRUPTED: u8 = 130;

    /// Every code above, for the contract's test and the reference.
    pub const ALL: &[u8] = &[
        OK,
        FAILED,
        USAGE,
        GATED,
        POLICY,
        STEP_FAILED,
        INVOCATION_LIMIT,
        RUN_TIME_LIMIT,
        INTERRUPTED,
    ];
}

/// A command's failure: a message, its causes, hints, and the exit code.
#[derive(Debug)]
pub struct CommandError {
    /// The exit code.
    pub code: u8,
    /// The error, with its source chain.
    pub error: Box<dyn std::error::Error + Send + Sync>,
    /// What to try next.
    pub hints: Vec<String>,
}

impl CommandError {
    /// A failed operation (exit 1) with a plain message.
    pub fn failed(message: impl Into<String>) -> Self {
        CommandError {
            code: exit::FAILED,
            error: message.into().into(),
            hints: Vec::new(),
        }
    }

    /// Bad input (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        CommandError {
            code: exit::USAGE,
            error: message.into().into(),
            hints: Vec::new(),
        }
    }

    /// Refused by policy (exit 4).
    pub fn policy(message: impl Into<String>) -> Self {
        CommandError {
            code: exit::POLICY,
            error: message.into().into(),
            hints: Vec::new(),
        }
    }

    /// An error with its exit code and, maybe, a hint.
    fn coded(
        code: u8,
        error: impl std::error::Error + Send + Sync + 'static,
        hint: Option<String>,
    ) -> Self {
        CommandError {
            code,
            error: Box::new(error),
            hints: hint.into_iter().collect(),
        }
    }

    /// Add a hint.
    pub fn hinted(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }

    /// The text printed on stderr.
    pub fn render(&self) -> String {
        let mut text = format!("error: {}\n", self.error);
        let mut source = self.error.source();
        while let Some(cause) = source {
            let _ = writeln!(text, "caused by: {cause}");
            source = cause.source();
        }
        for hint in &self.hints {
            let _ = writeln!(text, "hint: {hint}");
        }
        text
    }

    /// The error as JSON, for `--json` callers.
    pub fn to_json(&self) -> serde_json::Value {
        let mut causes = Vec::new();
        let mut source = self.error.source();
        while let Some(cause) = source {
            causes.push(cause.to_string());
            source = cause.source();
        }
        serde_json::json!({
            "error": self.error.to_string(),
            "causes": causes,
            "hints": self.hints,
            "exit_code": self.code,
        })
    }
}

impl From<session::Error> for CommandError {
    fn from(e: session::Error) -> Self {
        let code = if e.is_usage() {
            exit::USAGE
        } else if matches!(
            e,
            session::Error::SecretInWorktree { .. }
                | session::Error::PushRefused { .. }
                | session::Error::RefusedTrees { .. }
                | session::Error::MovedOutside { .. }
        ) {
            exit::POLICY
        } else {
            exit::FAILED
        };
        let hints = match &e {
            session::Error::LivesElsewhere { name, .. } => vec![format!(
                "git bmad sync shows its progress here; git bmad resume {name} brings it back (--steal if it is running there)"
            )],
            _ => Vec::new(),
        };
        CommandError {
            code,
            error: Box::new(e),
            hints,
        }
    }
}

impl From<session::LocateError> for CommandError {
    fn from(e: session::LocateError) -> Self {
        session::Error::from(e).into()
    }
}

impl From<git::Error> for CommandError {
    fn from(e: git::Error) -> Self {
        session::Error::from(e).into()
    }
}

impl From<crate::policy::Error> for CommandError {
    fn from(e: crate::policy::Error) -> Self {
        match e {
            crate::policy::Error::Git(inner) => inner.into(),
            crate::policy::Error::Session(inner) => inner.into(),
            other => CommandError::coded(exit::FAILED, other, None),
        }
    }
}

impl From<supervisor::Error> for CommandError {
    fn from(e: supervisor::Error) -> Self {
        use supervisor::Error as E;
        let e = match e {
            E::Session(inner) => return inner.into(),
            other => other,
        };
        let (code, hint) = match &e {
            E::Session(_) => (exit::FAILED, None),
            E::Runner(runner::Error::NotInstalled { runner, .. }) => (
                exit::FAILED,
                Some(format!(
                    "install it, name another executable with runners.{runner}.program in .bmad/config.yaml, or give the step another runner"
                )),
            ),
            // The configuration cannot count what the run would spend: fix it, nothing ran.
            E::Runner(runner::Error::BudgetCannotCount { .. }) => (
                exit::USAGE,
                Some("a step's model is its role's (the playbook's `role:`, then orchestration.agents.<role>.model in .bmad/config.yaml) or --model in runners.<runner>.args; a price goes under orchestration.prices.<model>: {input, output} in US dollars per million tokens".into()),
            ),
            E::Runner(_)
            | E::Policy(_)
            | E::Read { .. }
            | E::StoredPlaybook { .. }
            | E::Aborted { .. }
            | E::Stuck { .. }
            | E::RunInProgress { .. } => (exit::FAILED, None),
            E::NoRun { .. } => (exit::FAILED, None),
            E::BudgetNotResumed { .. } => (
                exit::USAGE,
                Some("for a run that goes on, raise orchestration.budget_usd in .bmad/config.yaml; `git bmad resume` without --budget-usd continues it".into()),
            ),
            E::Uncontained { .. } => (
                exit::FAILED,
                Some("`git bmad doctor` names the command that enables bubblewrap here; runners.sandbox: required takes either layer (bubblewrap or Landlock), and auto runs uncontained where neither holds".into()),
            ),
            E::Invalid { .. } => (
                exit::USAGE,
                Some("fix the lines above; `git bmad playbook validate <file>` checks again without running anything".into()),
            ),
            E::UnknownPlaybook { .. } => (exit::USAGE, Some("`git bmad playbook list` shows the playbooks there are".into())),
            E::NoPlaybook { .. } => (
                exit::USAGE,
                Some("git bmad run auto-feature   (or a file; `git bmad playbook list` shows them)".into()),
            ),
            E::OtherPlaybook { .. } | E::NoGate { .. } => (exit::USAGE, None),
            E::UnknownAnswer { gate, .. } => (
                exit::GATED,
                Some(format!(
                    "answer one of: {} (e.g. git bmad answer {} -m \"why\")",
                    gate.kind.options().iter().map(|a| a.as_str()).collect::<Vec<_>>().join(", "),
                    gate.kind.options()[0].as_str()
                )),
            ),
        };
        CommandError::coded(code, e, hint)
    }
}

impl From<runner::Error> for CommandError {
    fn from(e: runner::Error) -> Self {
        supervisor::Error::from(e).into()
    }
}

impl From<crate::bmad::workflow::Error> for CommandError {
    fn from(e: crate::bmad::workflow::Error) -> Self {
        use crate::bmad::workflow::Error as E;
        let (code, hint) = match &e {
            E::Read { .. } => (exit::FAILED, None),
            E::NotAWorkflow { .. } => (exit::USAGE, None),
        };
        CommandError::coded(code, e, hint)
    }
}

impl From<crate::epic::Error> for CommandError {
    fn from(e: crate::epic::Error) -> Self {
        match e {
            crate::epic::Error::Bmad(e) => e.into(),
            crate::epic::Error::Session(e) => e.into(),
            crate::epic::Error::Supervisor(e) => e.into(),
            e @ (crate::epic::Error::NoSuchEpic { .. }
            | crate::epic::Error::NoSuchStory { .. }
            | crate::epic::Error::AmbiguousStory { .. }
            | crate::epic::Error::NoGate { .. }) => CommandError::coded(exit::USAGE, e, None),
            // The gate is still open: the answer was not one it takes.
            e @ crate::epic::Error::UnknownAnswer { .. } => {
                CommandError::coded(exit::GATED, e, None)
            }
            e @ (crate::epic::Error::Gh(_)
            | crate::epic::Error::NoRun(_)
            | crate::epic::Error::Judge(_)
            | crate::epic::Error::NoVouchedRun { .. }
            | crate::epic::Error::Actions(_)
            | crate::epic::Error::Write { .. }) => CommandError::coded(exit::FAILED, e, None),
        }
    }
}

impl From<crate::bmad::Error> for CommandError {
    fn from(e: crate::bmad::Error) -> Self {
        use crate::bmad::Error as E;
        let (code, hint) = match &e {
            E::IllegalTransition { .. } => (exit::POLICY, None),
            E::ChangedMeanwhile { .. }
            | E::NotEditable { .. }
            | E::Io { .. }
            | E::NothingFound { .. } => (exit::FAILED, None),
            E::UnknownKey { .. } => (exit::USAGE, None),
            E::Parse { .. } | E::Cycle { .. } => (exit::USAGE, None),
        };
        CommandError::coded(code, e, hint)
    }
}
