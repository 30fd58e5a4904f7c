//! The refs a session's authority rests on (its checkpoints, its journal), checked against
//! git-bmad's own record of them. Every write of git-bmad's is a ref update that logs
//! `bmad …` in the ref's reflog; a ref whose value is not the one the newest such entry set
//! was moved by something else (`git update-ref`, `git notes`, a file written under
//! `.git`), and nothing git-bmad did vouches for what it now holds.

use super::error::Result;
use super::id::SessionId;
use super::{checkpoints_ref, notes_ref};
use crate::git::ObjectId;

/// A ref moved by something other than git-bmad.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignMove {
    /// The ref.
    pub name: String,
    /// What it holds now.
    pub now: ObjectId,
    /// What git-bmad last set it to.
    pub recorded: ObjectId,
    /// Who moved it, as far as the reflog says.
    pub by: String,
}

impl ForeignMove {
    /// The problem, in a line.
    pub fn describe(&self) -> String {
        format!(
            "{} was moved outside git-bmad ({}): it holds {} where git-bmad last wrote {}",
            self.name,
            self.by,
            self.now.to_hex_with_len(10),
            self.recorded.to_hex_with_len(10)
        )
    }

    /// The command that puts git-bmad's record back.
    pub fn fix(&self) -> String {
        format!(
            "git update-ref {} {} {}",
            self.name, self.recorded, self.now
        )
    }
}

/// An error naming what moved, when any of the session's refs was moved outside git-bmad:
/// what every command that would act on the session's record checks first.
pub fn ensure_vouched(repo: &super::Repo, id: &SessionId) -> Result<()> {
    let repo = &repo.git;
    let moved = foreign_moves(super::Repo::of(repo), id)?;
    if moved.is_empty() {
        return Ok(());
    }
    let list = |f: fn(&ForeignMove) -> String| moved.iter().map(f).collect::<Vec<_>>().join("; ");
    Err(super::Error::MovedOutside {
        session: id.to_string(),
        what: list(ForeignMove::describe),
        fix: list(ForeignMove::fix),
    })
}

/// The session's refs that something other than git-bmad moved.
pub fn foreign_moves(repo: &super::Repo, id: &SessionId) -> Result<Vec<ForeignMove>> {
    let repo = &repo.git;
    let mut found = Vec::new();
    for name in [checkpoints_ref(id), notes_ref(id)] {
        let Some(now) = repo.read_ref(&name)? else {
            continue;
        };
        let builds_on = |recorded: ObjectId, now: ObjectId| {
            matches!(repo.is_ancestor(recorded, now), Ok(Some(true)))
        };
        if let Some(moved) = judge(&name, now, &repo.reflog(&name)?, &builds_on) {
            found.push(moved);
        }
    }
    Ok(found)
}

/// Whether `now` is what git-bmad's newest entry in `reflog` set; without one, there is no
/// record to hold it to. A write git-bmad logged and was killed before it applied leaves
/// the value before: that is git-bmad's own, not a foreign move. A value that builds on
/// the record (`builds_on(recorded, now)`) with no entry of anyone's is not held against
/// it either: a kill can leave git-bmad's own write so, and what such a value adds is
/// judged where it is read (the journal's hash chain, each checkpoint's trailers). Moved
/// back, or moved by a git command that logged itself, it is foreign.
fn judge(
    name: &str,
    now: ObjectId,
    reflog: &[(ObjectId, ObjectId, String)],
    builds_on: &dyn Fn(ObjectId, ObjectId) -> bool,
) -> Option<ForeignMove> {
    let ours = |message: &str| message.starts_with("bmad");
    let newest = reflog.last()?;
    if ours(&newest.2) && newest.0 == now {
        return None;
    }
    let (_, recorded, _) = reflog.iter().rev().find(|(_, _, m)| ours(m))?;
    if *recorded == now {
        return None;
    }
    let by = match newest {
        (_, _, message) if message.is_empty() => "by a git command that left no message".to_owned(),
        (_, _, message) if !ours(message) => format!("by `{message}`"),
        _ if builds_on(*recorded, now) => return None,
        _ => "with no reflog entry: a file written under .git".to_owned(),
    };
    Some(ForeignMove {
        name: name.to_owned(),
        now,
        recorded: *recorded,
        by,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> ObjectId {
        ObjectId::from_hex(format!("{n:040x}").as_bytes()).unwrap()
    }

    fn never(_: ObjectId, _: ObjectId) -> bool {
        false
    }

    fn entry(old: u8, new: u8, message: &str) -> (ObjectId, ObjectId, String) {
        (id(old), id(new), message.to_owned())
    }

    #[test]
    fn only_what_git_bmad_last_wrote_is_vouched_for() {
        let log = vec![
            entry(0, 1, "bmad journal: session_started #1"),
            entry(1, 2, "bmad journal: checkpoint #2"),
        ];
        assert_eq!(judge("r", id(2), &log, &never), None);
        let raw = judge("r", id(7), &log, &never).unwrap();
        assert_eq!(raw.recorded, id(2));
        assert!(raw.by.contains("a file written under .git"), "{raw:?}");
        let mut by_git = log.clone();
        by_git.push(entry(2, 3, "notes: Notes added by 'git notes add'"));
        let moved = judge("r", id(3), &by_git, &never).unwrap();
        assert_eq!(moved.recorded, id(2));
        assert_eq!(moved.by, "by `notes: Notes added by 'git notes add'`");
        assert_eq!(moved.fix(), format!("git update-ref r {} {}", id(2), id(3)));
        assert_eq!(
            judge("r", id(3), &[], &never),
            None,
            "no record, nothing to hold it to"
        );
        assert_eq!(judge("r", id(4), &[entry(0, 4, "bmad sync")], &never), None);
    }

    #[test]
    fn a_write_git_bmad_logged_but_never_applied_is_its_own() {
        let log = vec![
            entry(0, 1, "bmad journal: session_started #1"),
            entry(1, 2, "bmad journal: checkpoint #2"),
        ];
        assert_eq!(judge("r", id(1), &log, &never), None);
        // An older value still is not: git-bmad never wrote it last.
        assert!(judge("r", id(0), &log, &never).is_some());
        // A value that builds on the record, with no entry of anyone's: a killed write of
        // git-bmad's own as far as the reflog can tell; moved back, it is not.
        let builds = |recorded: ObjectId, now: ObjectId| recorded == id(2) && now == id(9);
        assert_eq!(judge("r", id(9), &log, &builds), None);
        assert!(judge("r", id(0), &log, &builds).is_some());
        let mut by_git = log.clone();
        by_git.push(entry(2, 9, "notes: Notes added by 'git notes append'"));
        assert!(
            judge("r", id(9), &by_git, &builds).is_some(),
            "a git command that logged itself is foreign whatever it built on"
        );
    }
}
