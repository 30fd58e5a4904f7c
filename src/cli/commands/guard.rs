//! `git bmad guard`: the agent tool-call guard.

use std::io::Read;

use clap::Args;
use serde_json::Value;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::config::Config;
use crate::git::Repo;
use crate::policy::{self, guard};

/// Judge an agent's shell command before it runs (Claude Code PreToolUse protocol).
///
/// Reads the hook JSON on stdin. Blocks, with exit 2 and the reason on stderr, commands that
/// force-push, push to or delete a protected branch, bypass the git hooks (--no-verify, -n,
/// core.hooksPath, HUSKY=0) or merge pull requests. Other tools and commands pass (exit 0).
/// Install it with `git bmad hooks install --agent claude`.
#[derive(Debug, Args)]
pub struct GuardArgs {}

/// Exit code that makes Claude Code block the tool call.
const BLOCK: u8 = 2;

/// Run `guard`.
pub fn cmd_guard(ctx: &Context, _args: &GuardArgs) -> Result<u8, CommandError> {
    let mut input = String::new();
    if let Err(e) = std::io::stdin().take(4 << 20).read_to_string(&mut input) {
        eprintln!("git-bmad guard: cannot read the tool call ({e}); blocking to be safe");
        return Ok(BLOCK);
    }
    let call: Value = match serde_json::from_str(&input) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("git-bmad guard: the tool call is not JSON ({e}); blocking to be safe");
            return Ok(BLOCK);
        }
    };
    let tool = call["tool_name"].as_str().unwrap_or_default();
    let Some(command) = call["tool_input"]["command"]
        .as_str()
        .filter(|_| matches!(tool, "Bash" | "shell" | "run_shell_command"))
    else {
        return Ok(exit::OK);
    };
    let cwd = call["cwd"]
        .as_str()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| ctx.cwd.clone());
    let repo = Repo::discover(&cwd).ok();
    let protected = repo
        .as_ref()
        .and_then(|r| policy::protected_refs(r).ok())
        .unwrap_or_else(|| Config::default().protected_refs());
    let Some(block) = guard::check_command(command, &protected) else {
        return Ok(exit::OK);
    };
    eprintln!(
        "git-bmad guard blocked this command [{}]: {}. Instead: {}.",
        block.rule, block.reason, block.instead
    );
    if let Some(repo) = &repo {
        policy::record_violation(repo, "guard", block.rule, command, &block.reason);
    }
    Ok(BLOCK)
}
