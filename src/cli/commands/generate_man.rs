//! The man pages, from the clap definitions: `git bmad generate-man <dir>` (hidden, for
//! packagers) and the user's own copy.
//!
//! `git bmad --help` is answered by git with `man git-bmad`, which never runs us. man finds
//! pages beside the binary (`<prefix>/bin` → `<prefix>/share/man`), so a binary installed by
//! `cargo install` alone (in `~/.cargo/bin`) gets its pages in `~/.cargo/share/man` the first
//! time it runs, or by `git bmad install-man`; no root needed.

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

/// `<prefix>/share/man/man1` for the running binary in `<prefix>/bin`.
pub fn man_dir_beside_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
    Some(exe.parent()?.parent()?.join("share/man/man1"))
}

/// Write every page into `dir`; the paths written.
pub fn install_pages(dir: &std::path::Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for (name, page) in man_pages() {
        let path = dir.join(name);
        crate::fs::write_atomically(&path, &page, Some(0o644))?;
        written.push(path);
    }
    Ok(written)
}

/// Put this version's pages beside the binary unless they are there already. Best effort
/// and silent, and only in a prefix under `$HOME` (`~/.cargo`, `~/.local`): a system prefix
/// gets its pages from its package or from `git bmad install-man`, never behind root's back.
pub fn ensure_installed() {
    let Some(dir) = man_dir_beside_binary() else {
        return;
    };
    let home = crate::env::Var::Home.path();
    let home = home.map(|h| std::fs::canonicalize(&h).unwrap_or(h));
    if !home.is_some_and(|h| h.as_os_str().len() > 1 && dir.starts_with(&h)) {
        return;
    }
    let stamp = format!("git-bmad {}", env!("CARGO_PKG_VERSION"));
    let current = std::fs::read(dir.join("git-bmad.1"))
        .is_ok_and(|page| page.windows(stamp.len()).any(|w| w == stamp.as_bytes()));
    if current {
        return;
    }
    if let Err(e) = install_pages(&dir) {
        tracing::debug!(error = %e, dir = %dir.display(), "man pages not installed");
    }
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
