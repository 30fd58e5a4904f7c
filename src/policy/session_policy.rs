//! The policy every session operation obeys, as the session layer asks for it
//! ([`crate::session::Policy`]): no file with a secret in it enters git, and a new session
//! worktree gets the policy hooks (and the user's own, where they live at a relative path).

use std::path::Path;
use std::sync::Mutex;

use crate::git::Repo;

use super::hooks;
use super::secrets::{scan_file, Finding};

/// The policy of this repository for session operations. One per command, made by the
/// composition root; it keeps the secrets it refused, for the command to report.
#[derive(Debug, Default)]
pub struct SessionPolicy {
    found: Mutex<Vec<Finding>>,
}

impl SessionPolicy {
    /// The secrets refused since the last call, in the order the files came.
    pub fn take_found(&self) -> Vec<Finding> {
        std::mem::take(&mut *self.found.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl crate::session::Policy for SessionPolicy {
    fn admit(&self, path: &str, bytes: &[u8], committed: &dyn Fn() -> bool) -> bool {
        let found = scan_file(path, bytes);
        if found.is_empty() || committed() {
            return true;
        }
        self.found
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(found);
        false
    }

    fn prepare_worktree(&self, main: &Repo, worktree: &Path) -> Vec<String> {
        let mut warnings = Vec::new();
        // Husky-style relative core.hooksPath: the new worktree needs its own copy.
        if let Err(e) = hooks::prepare_worktree(main, worktree) {
            warnings.push(format!("could not give the new worktree your hooks: {e}"));
        }
        match main.open_worktree(worktree) {
            Ok(wt) => warnings.extend(hooks::guard(&wt)),
            Err(e) => warnings.push(format!("could not check the policy hooks: {e}")),
        }
        warnings
    }
}
