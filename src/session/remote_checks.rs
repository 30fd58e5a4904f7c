//! What this clone refuses to take from a remote, whoever could push there (a checkpoint
//! whose trailers it would not have written: another session's id, a name that climbs out
//! of the worktree root, a branch outside the session prefix; a journal that went back since
//! this clone last saw it), and to send to one (trees git refuses).

use super::error::{Error, Result};
use super::id::SessionId;
use super::store::Session;
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

/// Refuse to push a branch whose new commits hold trees git refuses (`..`, a `.git` entry,
/// a symlinked `.gitmodules`, as `git fsck` checks): git's push does not look, and a remote
/// without `receive.fsckObjects` would take them. New: not on the remote as last seen, nor
/// on a reviewed branch here.
pub(super) fn refuse_refused_trees(repo: &Repo, session: &Session, remote: &str) -> Result<()> {
    let Some(tip) = repo.read_ref(&session.branch)? else {
        return Ok(());
    };
    let mut known: Vec<ObjectId> = repo
        .refs_with_prefix(&format!("refs/remotes/{remote}/"))?
        .into_iter()
        .map(|(_, id)| id)
        .collect();
    for branch in super::trust::reviewed_branches(repo)? {
        known.extend(repo.read_ref(&branch)?);
    }
    let refused = repo.refused_tree_entries(tip, known)?;
    if refused.is_empty() {
        return Ok(());
    }
    Err(Error::RefusedTrees {
        branch: session.branch.clone(),
        findings: refused,
    })
}
