//! `git bmad completions <shell>`: shell completions from the same clap definitions as the
//! help text and the man pages.

use std::io::Write;

use clap::Args;
use clap_complete::Shell;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;

/// Print shell completions for git-bmad
///
/// bash: `git bmad completions bash > ~/.local/share/bash-completion/completions/git-bmad`;
/// zsh: into a directory on `$fpath` as `_git-bmad`; fish:
/// `git bmad completions fish > ~/.config/fish/completions/git-bmad.fish`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Run `completions`.
pub fn cmd_completions(_ctx: &Context, args: &CompletionsArgs) -> Result<u8, CommandError> {
    let mut cmd = crate::cli::command().name("git-bmad");
    // clap_complete panics when its writer fails, so it writes to memory; a reader that
    // stops early (`| head`) is then no error, as for every other command.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "git-bmad", &mut script);
    let _ = std::io::stdout().lock().write_all(&script);
    Ok(exit::OK)
}
