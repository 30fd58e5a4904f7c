//! `git bmad init`.

use clap::Args;
use serde_json::json;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::session;
use crate::supervisor;

/// Set up git-bmad in this repository.
///
/// Writes a commented .bmad/config.yaml, with the project's test command when its build
/// files name one (Cargo, npm/pnpm/yarn/bun, go, mix, pytest, gradle, maven, dotnet, make),
/// and .bmad/playbooks/ (an index, a template that
/// documents every field, and the auto-feature and auto-validate playbooks), never
/// overwriting a file that is there, and sets notes.displayRef and notes.rewriteRef so
/// `git log` shows the journal and amend/rebase keep it. Safe to re-run.
#[derive(Debug, Args)]
pub struct InitArgs {}

/// Run `init`.
pub fn cmd_init(ctx: &Context, _args: &InitArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let outcome = session::init(&repo)?;
    let playbooks = supervisor::scaffold(&repo.main_workdir()?)
        .map_err(|e| CommandError::failed(format!("could not write .bmad/playbooks/: {e}")))?;
    if ctx.ui.json() {
        ctx.ui
            .print_json(&json!({"config": outcome, "playbooks": playbooks}));
        return Ok(exit::OK);
    }
    let ui = &ctx.ui;
    if outcome.config_written {
        ui.line(format!("Wrote {}", outcome.config_path.display()));
        match &outcome.test_command {
            Some(tests) => ui.line(format!(
                "  checks.test_command: {} (found {})",
                tests.command, tests.found
            )),
            None => ui.line(
                "  No test command found: set checks.test_command in it, or `tests_pass` checks (implement, QA) cannot run",
            ),
        }
    } else {
        ui.line(format!(
            "Kept the existing {}",
            outcome.config_path.display()
        ));
    }
    for file in &playbooks {
        if file.written {
            ui.line(format!("Wrote {}", file.path.display()));
        }
    }
    for entry in &outcome.git_config_added {
        ui.line(format!("Set git config {entry}"));
    }
    match (&outcome.signing_line, &outcome.signing_problem) {
        (Some(line), _) => ui.status(format!(
            "This clone signs the journals it pushes as: {line}\n  (other machines act on them once that line is in {} on main: git bmad trust)",
            session::trust::ALLOWED_SIGNERS
        )),
        (None, Some(problem)) => ui.warn(format!(
            "no signing key here ({problem}): journals work, but what this clone pushes will not be trusted elsewhere"
        )),
        (None, None) => {}
    }
    if outcome.config_written || playbooks.iter().any(|f| f.written) {
        ui.status("Next: commit it (git add .bmad && git commit -m 'Set up git-bmad'), then: git bmad start <name> [--playbook auto-feature]");
    } else {
        ui.status("Next: git bmad start <name> [--playbook auto-feature]");
    }
    Ok(exit::OK)
}
