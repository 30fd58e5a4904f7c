//! Any agent git-bmad has no adapter for, from `runners.generic.command`: `{prompt}` in an
//! argument is replaced by the prompt, else the prompt goes on stdin. Plain text output.
//! With `protocol: acp` the command starts any ACP agent (Claude Code's or Codex's ACP
//! adapter), which gets its prompt over the protocol.

use std::path::PathBuf;

use super::{Adapter, Call};
use crate::config::{CliConfig, Protocol};
use crate::runner::error::{Error, Result};

/// The adapter.
pub struct Generic;

impl Adapter for Generic {
    fn name(&self) -> &'static str {
        "generic"
    }

    fn program(&self, cli: &CliConfig) -> Result<String> {
        cli.command
            .first()
            .cloned()
            .ok_or(Error::GenericUnconfigured)
    }

    fn command_line(&self, cli: &CliConfig, call: &Call) -> (Vec<String>, Option<Vec<u8>>) {
        let rest = cli.command.get(1..).unwrap_or_default();
        let templated = rest.iter().any(|a| a.contains("{prompt}"));
        let args = rest
            .iter()
            .map(|a| a.replace("{prompt}", call.prompt))
            .collect();
        (args, (!templated).then(|| call.prompt.as_bytes().to_vec()))
    }

    /// Its whole command is the ACP server's (`[npx, claude-code-acp]`).
    fn acp_args(&self, cli: &CliConfig) -> Option<Vec<String>> {
        Some(cli.command.get(1..).unwrap_or_default().to_vec())
    }

    /// Any of the places the known CLIs look, and GitHub's prompt files.
    fn command_files(&self, name: &str) -> Vec<PathBuf> {
        let mut all: Vec<PathBuf> = super::Kind::all()
            .filter(|k| k.as_str() != self.name())
            .flat_map(|k| k.adapter().command_files(name))
            .collect();
        all.push(PathBuf::from(format!(".github/prompts/{name}.prompt.md")));
        all
    }

    fn config_problems(&self, cli: &CliConfig) -> Vec<String> {
        let mut problems = Vec::new();
        if cli.program.is_some() || cli.args.is_some() {
            problems.push(
                "runners.generic: give the whole command line as `command: [program, args…]`"
                    .into(),
            );
        }
        if cli.protocol == Protocol::Acp && cli.command.iter().any(|a| a.contains("{prompt}")) {
            problems.push(
                "runners.generic.command: an ACP agent gets its prompt over the protocol; drop `{prompt}`"
                    .into(),
            );
        }
        problems
    }
}
