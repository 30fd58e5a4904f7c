//! `git bmad scan`.

use clap::Args;
use serde_json::json;

use crate::cli::error::{exit, CommandError};
use crate::cli::ui::Style;
use crate::cli::Context;
use crate::policy::scan::{self, Source};
use crate::policy::secrets::{Confidence, Options, ALLOW_MARKER};
use crate::session;

/// Scan for secrets: the staged changes (default), files, or a range of commits.
///
/// High-confidence findings (API keys, tokens, private keys, passwords in URLs, .env and key
/// files) exit with 4; lower-confidence ones are warnings. A human can accept a false positive
/// by writing `bmad:allow` on its line; in a session worktree (agents) that is not honoured.
#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Scan what the next commit would contain (the default when nothing else is named)
    #[arg(long, conflicts_with = "targets")]
    pub staged: bool,
    /// Files or directories, or one revision range such as main..HEAD
    pub targets: Vec<String>,
    /// Ignore `bmad:allow` comments, as for agents
    #[arg(long)]
    pub strict: bool,
}

/// Run `scan`.
pub fn cmd_scan(ctx: &Context, args: &ScanArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    let source = if args.staged {
        Source::Staged
    } else {
        Source::from_args(&ctx.cwd, &args.targets)
    };
    let in_session = session::locate(session::Repo::of(&repo), None).is_ok();
    let options = Options {
        honour_allow_comments: !(args.strict || in_session),
    };
    let findings = scan::scan(&repo, &source, options).map_err(|e| match e {
        scan::Error::NotAPathOrRange(_) => CommandError::usage(e.to_string()),
        other => CommandError::failed(other.to_string()),
    })?;
    let blocking = findings
        .iter()
        .filter(|f| f.confidence == Confidence::High)
        .count();
    let code = if blocking > 0 { exit::POLICY } else { exit::OK };
    if ctx.ui.json() {
        ctx.ui
            .print_json(&json!({"blocking": blocking, "findings": findings}));
        return Ok(code);
    }
    let ui = &ctx.ui;
    for f in &findings {
        let (tag, style) = match f.confidence {
            Confidence::High => ("secret", Style::Red),
            Confidence::Low => ("warning", Style::Yellow),
        };
        let commit = f
            .commit
            .as_deref()
            .map(|c| format!(" (commit {})", &c[..c.len().min(10)]))
            .unwrap_or_default();
        ui.line(format!(
            "{}: {}: {} [{}]{commit}{}",
            f.location(),
            ui.paint(tag, style),
            f.description,
            f.rule,
            if f.excerpt.is_empty() {
                String::new()
            } else {
                format!(": {}", f.excerpt)
            }
        ));
    }
    if blocking > 0 {
        ui.status(format!(
            "\n{blocking} secret(s) found. Remove them (and rotate any that were real) before committing or pushing; \
             keep credentials in the environment or a secret manager."
        ));
    } else if !findings.is_empty() {
        ui.status(format!(
            "\n{} warning(s). If one is a false positive in your own change, put `{ALLOW_MARKER}` on its line{}.",
            findings.len(),
            if options.honour_allow_comments { "" } else { " (not honoured for agents in session worktrees)" }
        ));
    } else {
        ui.status("No secrets found.");
    }
    Ok(code)
}
