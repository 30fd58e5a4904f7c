//! `git bmad install-man [DIR]`: put the man pages where `man` (and so `git bmad --help`)
//! finds them, without root.

use std::path::PathBuf;

use clap::Args;

use super::generate_man::{install_pages, man_dir_beside_binary};
use crate::cli::error::{exit, CommandError};
use crate::cli::Context;

/// Install the man pages so that `git bmad --help` works
///
/// By default they go beside the binary (`<prefix>/share/man/man1` for `<prefix>/bin`), where
/// `man` looks without any configuration: `~/.cargo/share/man` after `cargo install`.
#[derive(Debug, Args)]
pub struct InstallManArgs {
    /// Another directory (then add its parent to MANPATH)
    pub dir: Option<PathBuf>,
}

/// Run `install-man`.
pub fn cmd_install_man(ctx: &Context, args: &InstallManArgs) -> Result<u8, CommandError> {
    let dir = match args.dir.clone().or_else(man_dir_beside_binary) {
        Some(dir) => dir,
        None => {
            return Err(CommandError::failed(
                "cannot tell where this binary is installed; name a directory: git bmad install-man ~/.local/share/man/man1",
            ))
        }
    };
    let written = install_pages(&dir).map_err(|e| {
        CommandError::failed(format!(
            "could not write the man pages into {}: {e}",
            dir.display()
        ))
        .hinted("name a directory you can write: git bmad install-man ~/.local/share/man/man1")
    })?;
    if ctx.ui.json() {
        ctx.ui
            .print_json(&serde_json::json!({"dir": dir, "pages": written.len()}));
    } else {
        ctx.ui.line(format!(
            "Installed {} man pages in {}.",
            written.len(),
            dir.display()
        ));
        ctx.ui
            .status("`git bmad --help` now opens them (`man git-bmad`).");
    }
    Ok(exit::OK)
}
