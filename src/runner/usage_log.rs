//! The log an agent CLI appends each model request's usage to as it runs, read as it grows
//! (a budget stops the CLI within a request of reaching it) and once more when the CLI has
//! ended (what it spent, where its output does not say). Either a file git-bmad names, in a
//! folder of its own for each invocation that the walls show writable (Copilot CLI's
//! OpenTelemetry file, Gemini CLI's record of responses), or the CLI's own log of the
//! session it announces, under the home it runs with (Codex's rollout).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::adapter::{Adapter, AgentResult, ModelUsage};
use super::error::{Error, Result};
use super::sandbox::{self, Contained};

/// Where a CLI logs its requests.
pub(super) struct UsageLog {
    place: Place,
    /// The session the CLI announced as it ran, where the log is its session's.
    session: OnceLock<String>,
}

enum Place {
    /// A file git-bmad names ([`LogsUsage::ToNamedFile`](super::adapter::LogsUsage::ToNamedFile)),
    /// in a folder of its own that is gone with this.
    Named {
        folder: tempfile::TempDir,
        file: PathBuf,
    },
    /// The CLI's own log of a session ([`Adapter::session_log`]), under `home` (as git-bmad
    /// sees it), with the variables it runs with.
    Session {
        home: PathBuf,
        env: Vec<(String, String)>,
    },
}

impl UsageLog {
    /// A file for the CLI to log to.
    pub(super) fn named() -> Result<UsageLog> {
        let folder = tempfile::Builder::new()
            .prefix("bmad-usage-")
            .tempdir()
            .map_err(|source| Error::Scratch { source })?;
        // Canonical, as the walls name places.
        let file = std::fs::canonicalize(folder.path())
            .unwrap_or_else(|_| folder.path().to_owned())
            .join("usage.jsonl");
        Ok(UsageLog {
            place: Place::Named { folder, file },
            session: OnceLock::new(),
        })
    }

    /// The log the CLI keeps of its session under `home`, run with `env`.
    pub(super) fn of_session(home: PathBuf, env: Vec<(String, String)>) -> UsageLog {
        UsageLog {
            place: Place::Session { home, env },
            session: OnceLock::new(),
        }
    }

    /// The file git-bmad names for the CLI, if it names one.
    pub(super) fn named_file(&self) -> Option<&Path> {
        match &self.place {
            Place::Named { file, .. } => Some(file),
            Place::Session { .. } => None,
        }
    }

    /// Note the session `event` (a line of the CLI's output) announces, if it does.
    pub(super) fn hear(&self, adapter: &dyn Adapter, event: &serde_json::Value) {
        if let Some(id) = adapter.announced_session(event) {
            let _ = self.session.set(id);
        }
    }

    /// The log's file, once it is known.
    pub(super) fn file(&self, adapter: &dyn Adapter) -> Option<PathBuf> {
        match &self.place {
            Place::Named { file, .. } => Some(file.clone()),
            Place::Session { home, env } => adapter.session_log(home, env, self.session.get()?),
        }
    }

    /// `sandbox` with a named log's folder writable inside.
    pub(super) fn shown_in(&self, sandbox: Option<Contained>) -> Option<Contained> {
        let Place::Named { folder, file } = &self.place else {
            return sandbox;
        };
        sandbox.map(|mut contained| {
            let folder = file.parent().unwrap_or(folder.path());
            contained
                .walls
                .mounts
                .push(sandbox::Mount::writable(folder));
            contained
        })
    }

    /// The requests the CLI logged (`logged`, read by its adapter's
    /// [`Adapter::request_usage`] as the log grew): `result`'s usage where the CLI's output
    /// holds none (it prints none, or was stopped before its end); what it printed is its own
    /// account, the log stood in for it while it ran. Where a budget counts what it spends,
    /// one that ended well fails when the log was its only account and showed nothing, or
    /// when it shows fewer requests than its output announced (the log is in reach of the
    /// agent's commands; its output is not): the budget would not see them.
    pub(super) fn read_into(
        &self,
        adapter: &dyn Adapter,
        budgeted: bool,
        logged: Vec<ModelUsage>,
        result: &mut AgentResult,
    ) {
        let printed = !result.usage.is_empty();
        let count = logged.len();
        if !printed {
            for request in logged {
                super::adapter::add_request(&mut result.usage, Some(request));
            }
        }
        let announced = adapter.requests_announced(result);
        let short = match announced {
            Some(announced) => announced > count,
            None => count == 0 && !printed,
        };
        // One stopped before its end logged what it had, and fails already.
        if !short || !result.exit.success() {
            return;
        }
        // Why, as the file's place says it (gone, not a file, a link out of the folder).
        let why = match self.file(adapter).map(|f| crate::fs::open_private(&f)) {
            Some(Err(e)) => e.to_string(),
            None => "no log of its session was found".to_owned(),
            Some(Ok(_)) => format!(
                "it shows {count} of the {} model requests its output announced",
                announced.unwrap_or(0)
            ),
        };
        tracing::warn!("{}'s usage log is short: {why}", result.runner);
        if budgeted && result.reported_error.is_none() {
            result.reported_error = Some(format!(
                "{} left no whole usage log git-bmad can read ({why}), so what it spent is unknown",
                result.runner
            ));
        }
    }
}
