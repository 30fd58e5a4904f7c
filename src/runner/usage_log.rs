//! The log an agent CLI appends each model request's usage to as it runs (Copilot CLI's
//! OpenTelemetry file, Gemini CLI's record of responses): a folder of git-bmad's own for
//! each invocation, shown writable in its walls, read as it grows (a budget stops the CLI
//! within a request of reaching it) and once more when the CLI has ended (what it spent,
//! where its output does not say).

use std::io::BufRead;
use std::path::{Path, PathBuf};

use super::adapter::{Adapter, AgentResult, ModelUsage};
use super::error::{Error, Result};
use super::sandbox::{self, Contained};

/// The file a CLI logs its requests to ([`Adapter::writes_usage_log`]), in a folder of its
/// own that the walls show writable and that is gone with this.
pub(super) struct UsageLog {
    folder: tempfile::TempDir,
    file: PathBuf,
}

impl UsageLog {
    /// A record is a line; one longer than this was not written by the CLI.
    const LINE_LIMIT: u64 = 1 << 20;

    pub(super) fn new() -> Result<UsageLog> {
        let folder = tempfile::Builder::new()
            .prefix("bmad-usage-")
            .tempdir()
            .map_err(|source| Error::Scratch { source })?;
        // Canonical, as the walls name places.
        let file = std::fs::canonicalize(folder.path())
            .unwrap_or_else(|_| folder.path().to_owned())
            .join("usage.jsonl");
        Ok(UsageLog { folder, file })
    }

    pub(super) fn file(&self) -> &Path {
        &self.file
    }

    /// `sandbox` with the log's folder writable inside.
    pub(super) fn shown_in(&self, sandbox: Option<Contained>) -> Option<Contained> {
        sandbox.map(|mut contained| {
            let folder = self.file.parent().unwrap_or(self.folder.path());
            contained
                .walls
                .mounts
                .push(sandbox::Mount::writable(folder));
            contained
        })
    }

    /// Every request the CLI logged, read by its adapter ([`Adapter::request_usage`]):
    /// `result`'s usage where the CLI's output holds none (it prints none, or was stopped
    /// before its end); what it printed is its own account, the log stood in for it while it
    /// ran. Where a budget counts what it spends, one that ended well fails when the log
    /// was its only account and git-bmad cannot read it, or when the log shows fewer
    /// requests than its output announced (the log is in reach of the agent's commands;
    /// its output is not): the budget would not see them.
    pub(super) fn read_into(self, adapter: &dyn Adapter, budgeted: bool, result: &mut AgentResult) {
        let printed = !result.usage.is_empty();
        let why = match self.requests(adapter) {
            Ok(requests) => {
                let logged = requests.len();
                if !printed {
                    for request in requests {
                        super::adapter::add_request(&mut result.usage, Some(request));
                    }
                }
                match adapter.requests_announced(result) {
                    Some(announced) if announced > logged => format!(
                        "it shows {logged} of the {announced} model requests its output announced"
                    ),
                    _ => return,
                }
            }
            Err(_) if printed => return,
            Err(e) => e.to_string(),
        };
        // One stopped before its end logs what it had, and fails already.
        if !result.exit.success() {
            return;
        }
        tracing::warn!("{}'s usage log is short: {why}", result.runner);
        if budgeted && result.reported_error.is_none() {
            result.reported_error = Some(format!(
                "{} left no whole usage log git-bmad can read ({why}), so what it spent is unknown",
                result.runner
            ));
        }
    }

    /// The requests logged, in order. What the walled CLI (or a step of it) left there is
    /// opened with no symlink followed out of the folder and no FIFO waited on.
    fn requests(&self, adapter: &dyn Adapter) -> std::io::Result<Vec<ModelUsage>> {
        let mut lines = std::io::BufReader::new(crate::fs::open_private(&self.file)?);
        let mut requests = Vec::new();
        let mut line = Vec::new();
        loop {
            line.clear();
            let read =
                std::io::Read::take(&mut lines, Self::LINE_LIMIT).read_until(b'\n', &mut line)?;
            if read == 0 {
                return Ok(requests);
            }
            let record = serde_json::from_slice(&line).ok();
            requests.extend(record.and_then(|r| adapter.request_usage(&r)));
        }
    }
}
