//! `git bmad policy export`: the same rules, for the server.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::policy::{export, protected_refs};

/// Export the policy for the server, which is the only place that stops what client hooks
/// cannot: `git push --no-verify`, another git client, a hook someone removed.
#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// What to do
    #[command(subcommand)]
    pub action: PolicyAction,
}

/// The `policy` actions.
#[derive(Debug, Subcommand)]
pub enum PolicyAction {
    /// Write the rules in a form the server enforces: a pre-receive hook, GitHub rulesets or
    /// GitLab settings (protected branches: this repository's main, master, configured ones
    /// and session bases)
    Export(ExportArgs),
}

/// `policy export` arguments.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("format").required(true).multiple(false)))]
pub struct ExportArgs {
    /// A pre-receive hook (sh, git and GNU grep; no git-bmad needed on the server):
    /// install it as hooks/pre-receive of the server's repository
    #[arg(long, group = "format")]
    pub pre_receive: bool,
    /// GitHub repository rulesets (JSON array): create each with
    /// `gh api repos/OWNER/REPO/rulesets --input -`
    #[arg(long, group = "format")]
    pub github_ruleset: bool,
    /// GitLab protected branches, protected tags and push rule (JSON), for the
    /// /protected_branches, /protected_tags and /push_rule project endpoints
    #[arg(long, group = "format")]
    pub gitlab: bool,
    /// Write to this file instead of standard output (a pre-receive hook is made executable)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Run `policy`.
pub fn cmd_policy(ctx: &Context, args: &PolicyArgs) -> Result<u8, CommandError> {
    let PolicyAction::Export(args) = &args.action;
    let repo = ctx.repo()?;
    let protected = protected_refs(&repo).map_err(|e| CommandError::failed(e.to_string()))?;
    let (text, mode, how) = if args.pre_receive {
        (
            export::pre_receive(&protected),
            Some(0o755),
            "install it as hooks/pre-receive in the server's repository",
        )
    } else if args.github_ruleset {
        (
            pretty(&export::github_rulesets(&protected)),
            None,
            "create each ruleset: jq -c '.[]' FILE | while read -r r; do echo \"$r\" | gh api repos/OWNER/REPO/rulesets --input -; done (enable secret scanning push protection in the repository's settings too)",
        )
    } else {
        (
            pretty(&export::gitlab(&protected)),
            None,
            "POST each protected_branches and protected_tags entry to /projects/:id/protected_branches and /protected_tags, and PUT push_rule to /projects/:id/push_rule",
        )
    };
    match &args.output {
        Some(path) => {
            crate::fs::write_atomically(path, text.as_bytes(), mode).map_err(|e| {
                CommandError::failed(format!("could not write {}: {e}", path.display()))
            })?;
            ctx.ui.status(format!("Wrote {}: {how}", path.display()));
        }
        None => {
            print!("{text}");
            ctx.ui.status(format!("Next: {how}"));
        }
    }
    Ok(exit::OK)
}

fn pretty(value: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}
