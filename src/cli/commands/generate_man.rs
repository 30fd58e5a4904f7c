//! `git bmad generate-man <dir>` (hidden): the man pages, from the clap definitions.

use std::path::PathBuf;

use clap::Args;

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;

/// Write git-bmad.1 and one git-bmad-<command>.1 per command into DIR.
#[derive(Debug, Args)]
pub struct GenerateManArgs {
    /// Where to write the pages
    pub dir: PathBuf,
}

/// Run `generate-man`.
pub fn cmd_generate_man(ctx: &Context, args: &GenerateManArgs) -> Result<u8, CommandError> {
    std::fs::create_dir_all(&args.dir).map_err(|e| {
        CommandError::failed(format!("could not create {}: {e}", args.dir.display()))
    })?;
    for (name, page) in man_pages() {
        let path = args.dir.join(&name);
        std::fs::write(&path, page).map_err(|e| {
            CommandError::failed(format!("could not write {}: {e}", path.display()))
        })?;
        ctx.ui.line(path.display().to_string());
    }
    Ok(exit::OK)
}

/// Every man page: (file name, roff text).
pub fn man_pages() -> Vec<(String, Vec<u8>)> {
    let root = crate::cli::command().name("git-bmad");
    let mut pages = Vec::new();
    let mut render = |name: String, cmd: clap::Command| {
        let mut out = Vec::new();
        // Rendering into a Vec cannot fail.
        let _ = clap_mangen::Man::new(cmd).render(&mut out);
        pages.push((format!("{name}.1"), out));
    };
    for sub in root.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("git-bmad-{}", sub.get_name());
        render(
            name.clone(),
            sub.clone().name(name).version(env!("CARGO_PKG_VERSION")),
        );
    }
    render("git-bmad".into(), root);
    pages
}
