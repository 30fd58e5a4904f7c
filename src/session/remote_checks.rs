//! What this clone refuses of a remote's copy of a session, whoever could push there: a
//! checkpoint whose trailers it would not have written (another session's id, a name that
//! climbs out of the worktree root, a branch outside the session prefix), and a journal that
//! went back since this clone last saw it.

use super::error::Result;
use super::id::SessionId;
use crate::git::{ObjectId, Repo};

/// Whether the remote's trailers describe a session this clone would have written: the
/// session `id` its ref names, a plain name, its branch `refs/heads/<prefix><name>`, a clone
/// id of the right form. The reason when they do not, naming what came from the remote.
pub(super) fn check_remote_trailers(
    t: &super::checkpoint::Trailers,
    id: &SessionId,
    branch_prefix: &str,
) -> std::result::Result<(), String> {
    if t.session != id.as_str() {
        return Err(format!(
            "the remote's checkpoint for session {id} says it is session {}",
            t.session
        ));
    }
    if let Err(e) = super::lifecycle::validate_name(&t.name) {
        return Err(format!("the remote's session name is refused: {e}"));
    }
    let branch = format!("refs/heads/{branch_prefix}{}", t.name);
    if t.branch != branch {
        return Err(format!(
            "the remote says session {} is on branch {}, not {branch}",
            t.name, t.branch
        ));
    }
    if let Some(clone) = &t.clone {
        if SessionId::parse(clone).is_none() {
            return Err(format!(
                "the remote names a clone {clone} that is no clone id"
            ));
        }
    }
    Ok(())
}

/// The remote's journals that went back since this clone last saw them (`seen`: the
/// tracking refs before the fetch), by tracking ref, each with why it is refused. git-bmad
/// never forces a journal push, so a journal that no longer holds what this clone saw there
/// was forced back (a force-push of an older signed notes commit, a deletion): the tracking
/// ref keeps what was seen, as this clone's memory of the newest journal, and nothing of
/// the older one is taken.
pub(super) fn keep_rewound_journals(
    repo: &Repo,
    seen: &[(String, ObjectId)],
) -> Result<std::collections::HashMap<String, String>> {
    let mut rewound = std::collections::HashMap::new();
    for (name, before) in seen {
        let now = repo.read_ref(name)?;
        let kept = match now {
            Some(now) if now == *before => true,
            Some(now) => repo.is_ancestor(*before, now)? != Some(false),
            None => false,
        };
        if kept {
            continue;
        }
        repo.cas_ref(
            name,
            now,
            *before,
            "bmad sync: the remote's journal went back",
        )?;
        let what = match now {
            Some(now) => format!("its notes are now {now}, which lacks {before}"),
            None => "it was deleted".to_owned(),
        };
        rewound.insert(
            name.clone(),
            format!(
                "the remote's journal went back: {what}, the newest this clone saw there; \
                 nothing of it was taken, and this clone keeps what it saw (someone who can \
                 push there forced it back: ask them to push the newer journal again)"
            ),
        );
    }
    Ok(rewound)
}
