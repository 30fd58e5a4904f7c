//! `git bmad hook <name> …` (hidden): what the installed shims run.

use crate::cli::ui::safe_for_terminal;
use std::io::{Read, Write};

use clap::Args;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::policy::{self, dispatch};

/// Run the git-bmad check for a git hook, then the user's hook of the same name.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// The hook name, as git calls it
    pub name: String,
    /// The hook's arguments
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// Run `hook`.
pub fn cmd_hook(ctx: &Context, args: &HookArgs) -> Result<u8, CommandError> {
    let mut input = Vec::new();
    if dispatch::reads_input(&args.name) {
        std::io::stdin()
            .read_to_end(&mut input)
            .map_err(|e| CommandError::failed(format!("could not read the hook's input: {e}")))?;
    }
    let repo = ctx.repo()?;
    let git_pid = std::os::unix::process::parent_id();
    let report = dispatch::check(&repo, &args.name, &args.args, &input, git_pid)?;
    print(&report);
    if !report.passed() {
        return Ok(exit::POLICY);
    }
    let Some(chained) = crate::env::Var::ChainedHook.os() else {
        return Ok(exit::OK);
    };
    let code = dispatch::run_chained(&repo, std::path::Path::new(&chained), &args.args, &input)?;
    Ok(match code {
        0 => exit::OK,
        code => u8::try_from(code).unwrap_or(exit::FAILED).max(1),
    })
}

fn print(report: &dispatch::HookReport) {
    let mut err = std::io::stderr().lock();
    for f in report.secrets.iter().chain(&report.warnings) {
        let tag = if report.secrets.contains(f) {
            "secret"
        } else {
            "warning"
        };
        // File names and excerpts are the committer's (an agent's): shown, never obeyed.
        let line = format!(
            "git-bmad: {}: {tag}: {} [{}] {}",
            f.location(),
            f.description,
            f.rule,
            f.excerpt
        );
        let _ = writeln!(err, "{}", safe_for_terminal(&line));
    }
    if !report.warnings.is_empty() && report.may_allow {
        let _ = writeln!(
            err,
            "  a false positive? put `{}` on its line (humans only; agents cannot)",
            policy::secrets::ALLOW_MARKER
        );
    }
    if !report.secrets.is_empty() {
        let _ = writeln!(err, "git-bmad: commit refused: {} secret(s) staged. Unstage them (git restore --staged <file>), keep credentials out of the repository, and rotate any that were real.", report.secrets.len());
        return;
    }
    for r in &report.refusals {
        let line = format!(
            "git-bmad: {} refused [{}] {}: {}",
            report.what, r.rule, r.refname, r.reason
        );
        let _ = writeln!(err, "{}", safe_for_terminal(&line));
        let _ = writeln!(err, "  instead: {}", r.instead);
    }
    for note in &report.notes {
        let _ = writeln!(err, "git-bmad: warning: {}", safe_for_terminal(note));
    }
}
