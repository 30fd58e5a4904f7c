//! References: reads, compare-and-swap updates, deletion, listing by prefix.
//!
//! Every state change of git-bmad is one of these CAS updates. A writer that loses the race
//! gets [`CasOutcome::Conflict`] and re-reads, rebuilds and retries; nothing is overwritten
//! blindly. A lock file left behind by a process killed mid-update would block every later
//! writer forever, so a lock older than [`STALE_LOCK_AGE`] is treated as abandoned.

use std::path::PathBuf;
use std::time::Duration;

use gix::bstr::ByteSlice;
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
use gix::refs::{FullName, Target};

use super::error::{Error, Result};
use super::repo::Repo;
use super::ObjectId;

/// A ref lock older than this belongs to a dead process: our updates hold locks for
/// milliseconds.
pub const STALE_LOCK_AGE: Duration = Duration::from_secs(3);

/// A lock file of git's own (`packed-refs.lock`, `index.lock`) older than this has no live
/// owner: git holds them for the length of one command.
pub const ABANDONED_GIT_LOCK: Duration = Duration::from_secs(10);

/// The result of one compare-and-swap attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CasOutcome {
    /// The ref now has the new value.
    Updated,
    /// The ref did not have the expected value (or was locked by a live writer).
    Conflict,
}

impl Repo {
    /// The object a ref points to (through symbolic refs, not through annotated tags: the
    /// value a compare-and-swap compares), or `None` if it does not exist.
    pub fn read_ref(&self, name: &str) -> Result<Option<ObjectId>> {
        let found = self
            .gix()
            .try_find_reference(name)
            .map_err(|e| Error::gix(format!("could not read {name}"), e))?;
        match found {
            None => Ok(None),
            Some(mut reference) => reference
                .follow_to_object()
                .map(|id| Some(id.detach()))
                .map_err(|e| Error::gix(format!("could not resolve {name}"), e)),
        }
    }

    /// The ref a symbolic ref names (`refs/remotes/origin/HEAD` → `refs/remotes/origin/main`),
    /// or `None` when it does not exist or is not symbolic.
    pub fn symbolic_target(&self, name: &str) -> Result<Option<String>> {
        let found = self
            .gix()
            .try_find_reference(name)
            .map_err(|e| Error::gix(format!("could not read {name}"), e))?;
        Ok(found.and_then(|reference| match reference.target() {
            gix::refs::TargetRef::Symbolic(target) => Some(target.as_bstr().to_string()),
            gix::refs::TargetRef::Object(_) => None,
        }))
    }

    /// Set `name` to `new` if it currently is `expected` (`None`: must not exist).
    ///
    /// Writes a reflog entry even for refs outside `refs/heads` (git would not), so the history
    /// of `refs/bmad/*` survives in `logs/`.
    pub fn cas_ref(
        &self,
        name: &str,
        expected: Option<ObjectId>,
        new: ObjectId,
        message: &str,
    ) -> Result<CasOutcome> {
        let edit = RefEdit {
            change: Change::Update {
                log: LogChange {
                    mode: RefLog::AndReference,
                    force_create_reflog: true,
                    message: message.into(),
                },
                expected: previous(expected),
                new: Target::Object(new),
            },
            name: full_name(name)?,
            deref: false,
        };
        self.apply(name, edit)
    }

    /// Delete `name` if it currently is `expected`.
    pub fn delete_ref(&self, name: &str, expected: ObjectId) -> Result<CasOutcome> {
        let edit = RefEdit {
            change: Change::Delete {
                expected: previous(Some(expected)),
                log: RefLog::AndReference,
            },
            name: full_name(name)?,
            deref: false,
        };
        self.apply(name, edit)
    }

    /// [`cas_ref`](Self::cas_ref) for a writer that has one value to write: a conflict
    /// while the ref still holds `expected` is a lock, waited for until it is stale (and
    /// cleared) or gone. A ref that moved is the caller's to judge.
    pub fn cas_ref_waiting(
        &self,
        name: &str,
        expected: Option<ObjectId>,
        new: ObjectId,
        message: &str,
    ) -> Result<CasOutcome> {
        self.waiting(name, expected, || {
            self.cas_ref(name, expected, new, message)
        })
    }

    /// [`delete_ref`](Self::delete_ref), waiting out a lock like
    /// [`cas_ref_waiting`](Self::cas_ref_waiting).
    pub fn delete_ref_waiting(&self, name: &str, expected: ObjectId) -> Result<CasOutcome> {
        self.waiting(name, Some(expected), || self.delete_ref(name, expected))
    }

    fn waiting(
        &self,
        name: &str,
        expected: Option<ObjectId>,
        mut attempt: impl FnMut() -> Result<CasOutcome>,
    ) -> Result<CasOutcome> {
        let started = std::time::Instant::now();
        loop {
            let outcome = attempt()?;
            if outcome == CasOutcome::Updated
                || self.read_ref(name)? != expected
                || started.elapsed() > STALE_LOCK_AGE * 2
            {
                return Ok(outcome);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn apply(&self, name: &str, edit: RefEdit) -> Result<CasOutcome> {
        let mut cleared_stale_lock = false;
        let committer = self.signature(super::identity::Role::Committer)?;
        let mut time = Default::default();
        let committer = committer.to_ref(&mut time);
        loop {
            let edited = self
                .gix()
                .edit_references_as([edit.clone()], Some(committer));
            match edited {
                Ok(_) => return Ok(CasOutcome::Updated),
                Err(e) => {
                    // gix reports a held lock as a plain error after its own short wait; to us
                    // it is contention like any other, unless its owner is dead.
                    let locked = is_lock_contention(&e);
                    if locked && !cleared_stale_lock && self.clear_stale_lock(name) {
                        cleared_stale_lock = true;
                        continue;
                    }
                    // A `packed-refs.lock` is git's, not ours to remove; one this old has no
                    // live owner, and waiting for it would only spin.
                    let packed_lock = self.common_path("packed-refs.lock");
                    if locked && lock_age(&packed_lock).is_some_and(|age| age >= ABANDONED_GIT_LOCK)
                    {
                        return Err(self.contention(name, 1));
                    }
                    if locked || e.dominant_class() == Some(gix::error::Class::Conflict) {
                        return Ok(CasOutcome::Conflict);
                    }
                    return Err(Error::gix(format!("could not update {name}"), e));
                }
            }
        }
    }

    /// Why updates of `name` kept failing after `attempts`: a lock file that is still there
    /// ([`Error::Locked`], naming it), or else other writers ([`Error::Contended`]).
    pub fn contention(&self, name: &str, attempts: u32) -> Error {
        let locks = [self.lock_path(name), self.common_path("packed-refs.lock")];
        for lock in locks {
            if let Some(age) = lock_age(&lock) {
                return Error::Locked {
                    name: name.to_owned(),
                    lock,
                    age,
                };
            }
        }
        Error::Contended {
            name: name.to_owned(),
            attempts,
        }
    }

    /// Remove `<ref>.lock` if a dead process left it; true if one was removed.
    fn clear_stale_lock(&self, name: &str) -> bool {
        let lock = self.lock_path(name);
        if lock_age(&lock).is_none_or(|age| age < STALE_LOCK_AGE) {
            return false;
        }
        tracing::warn!(lock = %lock.display(), "removing a stale ref lock left by a dead process");
        std::fs::remove_file(&lock).is_ok()
    }

    /// Whether `packed-refs` records `name` at `value` while no `pack-refs` holds its lock:
    /// `git pack-refs` deletes a loose ref only after writing that same line.
    pub fn is_packed_at(&self, name: &str, value: &str) -> bool {
        if self.common_path("packed-refs.lock").exists() {
            return false;
        }
        let line = format!("{value} {name}");
        std::fs::read_to_string(self.common_path("packed-refs"))
            .is_ok_and(|packed| packed.lines().any(|l| l == line))
    }

    /// Where git keeps the lock file of a loose shared ref.
    pub fn lock_path(&self, name: &str) -> PathBuf {
        self.common_path(&format!("{name}.lock"))
    }

    /// git's own lock files that exist now: the shared ones (`packed-refs.lock`,
    /// `config.lock`, `HEAD.lock`, `shallow.lock`, each loose ref's) and, for each of
    /// `worktree_git_dirs`, its `index.lock` and `HEAD.lock`. Locks under `refs/bmad/` and
    /// `refs/notes/bmad/` are git-bmad's own and left out: its writers clear them once stale.
    pub fn git_lock_files(&self, worktree_git_dirs: &[PathBuf]) -> Vec<PathBuf> {
        let common = self.common_dir();
        let mut found: Vec<PathBuf> = [
            "packed-refs.lock",
            "config.lock",
            "HEAD.lock",
            "shallow.lock",
        ]
        .iter()
        .map(|name| common.join(name))
        .chain(
            worktree_git_dirs
                .iter()
                .flat_map(|dir| [dir.join("index.lock"), dir.join("HEAD.lock")]),
        )
        .filter(|lock| lock.is_file())
        .collect();
        let ours = [common.join("refs/bmad"), common.join("refs/notes/bmad")];
        let mut stack = vec![common.join("refs")];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    if !ours.contains(&path) {
                        stack.push(path);
                    }
                } else if path.extension().is_some_and(|e| e == "lock") {
                    found.push(path);
                }
            }
        }
        found.sort();
        found.dedup();
        found
    }

    /// `name`'s reflog, oldest first: for each entry the value before, the value it set and
    /// its message; empty when the ref keeps none (or an expired one).
    pub fn reflog(&self, name: &str) -> Result<Vec<(ObjectId, ObjectId, String)>> {
        let path = self.common_path(&format!("logs/{name}"));
        let text = match std::fs::read(&path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io("could not read", path, e)),
        };
        Ok(parse_reflog(&text, self.gix().object_hash().len_in_hex()))
    }

    /// All refs whose full name starts with `prefix` (which should end in `/`), with their
    /// peeled targets, sorted by name.
    pub fn refs_with_prefix(&self, prefix: &str) -> Result<Vec<(String, ObjectId)>> {
        let platform = self
            .gix()
            .references()
            .map_err(|e| Error::gix(format!("could not list {prefix}*"), e))?;
        let iter = platform
            .prefixed(prefix)
            .map_err(|e| Error::gix(format!("could not list {prefix}*"), e))?;
        let mut out = Vec::new();
        for reference in iter {
            let mut reference = reference
                .map_err(|e| Error::gix(format!("could not read a ref under {prefix}"), e))?;
            let name = reference.name().as_bstr().to_str_lossy().into_owned();
            let id = reference
                .peel_to_id()
                .map_err(|e| Error::gix(format!("could not resolve {name}"), e))?;
            out.push((name, id.detach()));
        }
        out.sort();
        Ok(out)
    }
}

/// A reflog's entries: `<old> <new> <ident> <time> <tz>\t<message>` a line, ids of
/// `hex_len` digits. git writes an entry in several pieces, so a writer killed mid-line
/// leaves any prefix of one without its end, and the next entry is appended to it: each
/// line's last entry header (searched at every position, since a torn prefix may end in hex
/// or in a header of its own) is the one that counts. Its message follows the first tab
/// after it; a header with no tab after it is a torn entry with no message. A line with no
/// header is skipped.
fn parse_reflog(text: &str, hex_len: usize) -> Vec<(ObjectId, ObjectId, String)> {
    let hex = |bytes: &[u8]| bytes.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    // Where a header `<old> <new> ` starts, and its length.
    let is_header = |line: &[u8], at: usize| {
        let end = at + 2 * hex_len + 2;
        line.get(at..end).is_some_and(|h| {
            h[hex_len] == b' '
                && h[end - at - 1] == b' '
                && hex(&h[..hex_len])
                && hex(&h[hex_len + 1..end - at - 1])
        })
    };
    let header_len = 2 * hex_len + 2;
    text.lines()
        .filter_map(|line| {
            let bytes = line.as_bytes();
            // From the end: the last header is the one that counts.
            let mut headers = (0..bytes.len()).rev().filter(|&at| is_header(bytes, at));
            // git writes no tab into a message, so a header inside one has no tab after it.
            let at = headers
                .clone()
                .find(|&at| bytes[at + header_len..].contains(&b'\t'))
                .or_else(|| headers.next())?;
            let old = ObjectId::from_hex(&bytes[at..at + hex_len]).ok()?;
            let new = ObjectId::from_hex(&bytes[at + hex_len + 1..at + header_len - 1]).ok()?;
            let rest = &line[at + header_len..];
            let message = rest.split_once('\t').map_or("", |(_, message)| message);
            Some((old, new, message.to_owned()))
        })
        .collect()
}

/// How long ago a lock file was made; `None` if there is none.
pub fn lock_age(lock: &std::path::Path) -> Option<Duration> {
    let meta = std::fs::metadata(lock).ok()?;
    Some(
        meta.modified()
            .ok()
            .and_then(|m| m.elapsed().ok())
            .unwrap_or_default(),
    )
}

/// Whether an update failed because another process held the ref's lock file: somewhere in
/// the error chain is the lock file's "already exists".
fn is_lock_contention(error: &gix::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::AlreadyExists)
        {
            return true;
        }
        source = e.source();
    }
    false
}

fn previous(expected: Option<ObjectId>) -> PreviousValue {
    match expected {
        Some(id) => PreviousValue::MustExistAndMatch(Target::Object(id)),
        None => PreviousValue::MustNotExist,
    }
}

fn full_name(name: &str) -> Result<FullName> {
    FullName::try_from(name).map_err(|e| {
        Error::gix(
            format!("invalid ref name {name:?}"),
            gix::Error::from_error(e),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reflog_line_torn_anywhere_by_a_kill_does_not_hide_the_entry_appended_to_it() {
        let (a, b, c, d) = (
            "a".repeat(40),
            "b".repeat(40),
            "c".repeat(40),
            "d".repeat(40),
        );
        let first = format!("{a} {b} git-bmad <x@y> 1764300000 +0000\tbmad journal: one #1\n");
        let torn = format!("{b} {c} git-bmad <x@y> 1764300001 +0000\tbmad journal: two #2");
        let appended = format!("{b} {d} git-bmad <x@y> 1764300002 +0000\tbmad checkpoint: three");
        // The killed writer's entry may end after any of its bytes (git writes it piecewise).
        for cut in 0..=torn.len() {
            let text = format!("{first}{}{appended}\n", &torn[..cut]);
            let entries = parse_reflog(&text, 40);
            let last = entries.last().expect("an entry");
            assert_eq!(
                (last.0.to_string(), last.1.to_string(), last.2.as_str()),
                (b.clone(), d.clone(), "bmad checkpoint: three"),
                "torn after {cut} bytes: {text:?}"
            );
            assert_eq!(entries[0].2, "bmad journal: one #1");
        }
        // Torn and nothing after it: the values, with no message to vouch for them.
        let entries = parse_reflog(&format!("{first}{}", &torn[..100]), 40);
        assert_eq!((entries[1].1.to_string(), entries[1].2.as_str()), (c, ""));
        assert!(parse_reflog("torn half a line", 40).is_empty());
    }
}
