//! `sh -c <command>`: a step that is a shell command, not an agent. Plain text output; the
//! final text is the end of stdout.

use super::{strings, Adapter, Call};
use crate::config::CliConfig;
use crate::runner::error::Result;

/// The adapter.
pub struct Shell;

impl Adapter for Shell {
    fn name(&self) -> &'static str {
        "shell"
    }

    fn is_agent(&self) -> bool {
        false
    }

    fn program(&self, _cli: &CliConfig) -> Result<String> {
        Ok("sh".into())
    }

    fn command_line(&self, _cli: &CliConfig, call: &Call) -> (Vec<String>, Option<Vec<u8>>) {
        (strings(&["-c", call.prompt]), None)
    }

    fn config_problems(&self, cli: &CliConfig) -> Vec<String> {
        if *cli == CliConfig::default() {
            Vec::new()
        } else {
            vec!["runners.shell: the shell runner is always `sh -c`; it takes no settings".into()]
        }
    }
}
