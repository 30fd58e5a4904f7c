//! `git bmad guard`: the agent tool-call guard.

use std::io::Read;

use clap::Args;
use serde_json::Value;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::git::Repo;
use crate::policy::guard;

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
    let Some(call) = guard::ToolCall::from_json(&call) else {
        return Ok(exit::OK);
    };
    let cwd = call.cwd.clone().unwrap_or_else(|| ctx.cwd.clone());
    let repo = Repo::discover(&cwd).ok();
    let Some(block) = guard::judge(repo.as_ref(), &call.command) else {
        return Ok(exit::OK);
    };
    eprintln!(
        "git-bmad guard blocked this command [{}]: {}. Instead: {}.",
        block.rule, block.reason, block.instead
    );
    Ok(BLOCK)
}
