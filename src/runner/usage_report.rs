//! The file an agent CLI writes what it used to when it ends (Copilot CLI's
//! `--usage-output-file`): a folder of git-bmad's own for each invocation, shown writable in
//! its walls, read once the CLI has ended.

use std::path::{Path, PathBuf};

use super::adapter::{Adapter, AgentResult};
use super::error::{Error, Result};
use super::sandbox::{self, Contained};

/// The file a CLI writes its usage to when it ends ([`Adapter::writes_usage_file`]), in a
/// folder of its own that the walls show writable and that is gone with this.
pub(super) struct UsageReport {
    folder: tempfile::TempDir,
    file: PathBuf,
}

impl UsageReport {
    /// Its usage file cannot be large; one that is was not written by the CLI.
    const LIMIT: u64 = 4 << 20;

    pub(super) fn new() -> Result<UsageReport> {
        let folder = tempfile::Builder::new()
            .prefix("bmad-usage-")
            .tempdir()
            .map_err(|source| Error::Scratch { source })?;
        // Canonical, as the walls name places.
        let file = std::fs::canonicalize(folder.path())
            .unwrap_or_else(|_| folder.path().to_owned())
            .join("usage.json");
        Ok(UsageReport { folder, file })
    }

    pub(super) fn file(&self) -> &Path {
        &self.file
    }

    /// `sandbox` with the report's folder writable inside.
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

    /// What the CLI wrote, read into `result` by its adapter. Where a budget counts what it
    /// spends, one that ended well with no report git-bmad can read fails: the budget would
    /// not see it (one killed before its end writes none, and fails already).
    pub(super) fn read_into(self, adapter: &dyn Adapter, budgeted: bool, result: &mut AgentResult) {
        use std::io::Read;
        let mut bytes = Vec::new();
        // What the walled CLI (or a step of it) left there: no symlink followed out of the
        // folder, no FIFO waited on.
        let read = crate::fs::open_private(&self.file)
            .and_then(|f| f.take(Self::LIMIT).read_to_end(&mut bytes));
        let why = match read.map(|_| serde_json::from_slice::<serde_json::Value>(&bytes)) {
            Ok(Ok(report)) => return adapter.read_usage_file(&report, result),
            Ok(Err(e)) => format!("it is not JSON: {e}"),
            Err(e) => e.to_string(),
        };
        if !result.exit.success() {
            return;
        }
        tracing::warn!("{} left no usage report: {why}", result.runner);
        if budgeted && result.reported_error.is_none() {
            result.reported_error = Some(format!(
                "{} wrote no usage report git-bmad can read ({why}), so what it spent is unknown",
                result.runner
            ));
        }
    }
}
