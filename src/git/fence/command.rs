//! A linked worktree's view of its repository for commands walled by Landlock alone (a
//! step's test run, `git bmad contain`, a worktree's hook git-bmad's own git fires).
//!
//! Walls that hide a config holding a credential (`http.<url>.extraheader`, a password in a
//! remote's URL) show bubblewrap's copy without it in its place; Landlock can only deny the
//! file, and git does not run at all without its repository's config. So, for the command's
//! time, the worktree's `commondir` names a shadow of the common dir: the credential-free copy
//! as its `config`, a link to everything else of the real one. Not an environment variable
//! (`GIT_COMMON_DIR`): every repository a test suite makes would take it for its own.
//!
//! Commands in the same worktree share the shadow: each holds its lock shared, and the last
//! to end puts the worktree's `commondir` back. One killed leaves it for the next command
//! (or `doctor --fix`) to put back, as a killed step's shadow is ([`super::abandoned_shadow`]).

use std::fs::File;
use std::path::{Path, PathBuf};

use super::linked_git_dir;
use super::shadow::{link_entries, put_back};
use crate::git::error::{Error, Result};
use crate::git::shadow_place::{COMMAND_SHADOWS, COMMONDIR_KEPT, HOLDERS};
use crate::git::Repo;

/// A worktree's `commondir` naming the command shadow, put back when the last holder drops it.
#[derive(Debug)]
pub struct CommandShadow {
    link: PathBuf,
    named: Vec<u8>,
    kept: Vec<u8>,
    holders: File,
}

impl Repo {
    /// The command shadow of the linked worktree at `worktree`, held until it is dropped; `None`
    /// when git there needs none: the config holds no credential, `worktree` is the main
    /// worktree (whose own git dir Landlock leaves readable) or not this repository's, or a
    /// step's fence stands in for the common dir already (its copy holds no credential).
    pub fn command_shadow(&self, worktree: &Path) -> Result<Option<CommandShadow>> {
        let Some(config) = self.config_without_credentials()? else {
            return Ok(None);
        };
        let common = self.common_dir().to_owned();
        let Ok((_, git_dir)) = linked_git_dir(&common, worktree) else {
            return Ok(None);
        };
        let Some(name) = git_dir.file_name() else {
            return Ok(None);
        };
        let place = common.join(COMMAND_SHADOWS).join(name);
        let io = |path: &Path| {
            let path = path.to_owned();
            move |e| Error::Io {
                op: "could not set up the command shadow at",
                path,
                source: e,
            }
        };
        std::fs::create_dir_all(place.join("copies")).map_err(io(&place))?;
        let holders = File::create(place.join(HOLDERS)).map_err(io(&place))?;
        // Shared: a holder ending now puts the link back before this one reads it.
        hold(&holders).map_err(io(&place.join(HOLDERS)))?;
        let link = git_dir.join("commondir");
        let now = std::fs::read(&link).map_err(io(&link))?;
        let named = format!("{}\n", place.join("copies").display()).into_bytes();
        if now != named {
            let names = git_dir.join(String::from_utf8_lossy(&now).trim());
            if std::fs::canonicalize(names).ok() != std::fs::canonicalize(&common).ok() {
                return Ok(None);
            }
            refresh(&common, &place.join("copies"), &config).map_err(io(&place))?;
            // Kept first: a kill between the two leaves the place able to put it back.
            crate::fs::write_atomically(&place.join(COMMONDIR_KEPT), &now, None)
                .map_err(io(&place))?;
            crate::fs::write_atomically(&link, &named, None).map_err(io(&link))?;
        }
        let kept = std::fs::read(place.join(COMMONDIR_KEPT)).map_err(io(&place))?;
        Ok(Some(CommandShadow {
            link,
            named,
            kept,
            holders,
        }))
    }
}

/// How long a command waits for a holder that is putting the link back: an instant, but for
/// a process that holds the lock to keep others out (one a contained step left behind).
const WAIT_FOR_HOLDERS: std::time::Duration = std::time::Duration::from_secs(10);

/// Take `holders` shared, waiting at most [`WAIT_FOR_HOLDERS`] rather than forever.
fn hold(holders: &File) -> std::io::Result<()> {
    let deadline = std::time::Instant::now() + WAIT_FOR_HOLDERS;
    loop {
        match holders.try_lock_shared() {
            Ok(()) => return Ok(()),
            Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(std::io::Error::other(format!(
                    "held whole by another process for {}s (a process a contained step left running?); end it, then try again",
                    WAIT_FOR_HOLDERS.as_secs()
                )))
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// Make `shadow` the common dir `common` less its config: `config` the copy at `config`.
fn refresh(common: &Path, shadow: &Path, config: &Path) -> std::io::Result<()> {
    link_entries(common, shadow, &|f| f == "config")?;
    let at = shadow.join("config");
    if std::fs::read_link(&at).ok().as_deref() != Some(config) {
        let _ = std::fs::remove_file(&at);
        std::os::unix::fs::symlink(config, &at)?;
    }
    Ok(())
}

impl Drop for CommandShadow {
    fn drop(&mut self) {
        // The last holder (the only one that can take the lock whole) puts the link back.
        let _ = self.holders.unlock();
        if self.holders.try_lock().is_err() {
            return;
        }
        if std::fs::read(&self.link).is_ok_and(|now| now == self.named) {
            if let Err(e) = put_back(&self.link, &self.kept) {
                tracing::error!("could not put back {}: {e}", self.link.display());
            }
        }
    }
}
