//! Sessions that travel: `push` sends a session's branch (and, where the remote opted in,
//! its journal and checkpoints) in one atomic, never-forced push; `sync` fetches every
//! session's state from a remote and brings the local copies up to date, merging journals
//! appended on two machines.
//!
//! A push is atomic, never `+`-forced, and carries a lease per ref: the remote must still
//! hold what this clone last saw there.
//!
//! On the remote a session keeps the names it has here (`refs/heads/bmad/<name>`,
//! `refs/bmad/sessions/<id>/…`, `refs/notes/bmad/<id>`), none of which is a branch but the
//! session's own. Here, what was last seen there is kept under
//! `refs/bmad/remotes/<remote>/…`, which `list` never mistakes for a local session.
//!
//! **Journal merge.** Two machines that append to one journal fork its hash chain. `sync`
//! keeps ours as it is and appends, after a `journal_merged` event naming both chain heads,
//! every event of theirs that ours does not have, in their order, each re-sealed into our
//! chain with `origin` set to its id on their side (its chain link). An event's id is its
//! link, or its `origin` for a copy, so a second sync (or the other machine merging ours)
//! adds nothing twice. The notes commit of the merge has both notes commits as parents, so
//! the next push is a fast-forward and their chain stays verifiable from it.

use std::collections::BTreeSet;

use super::checkpoint::Checkpoint;
use super::error::{Error, Result};
use super::event::{NewEvent, Provenance};
use super::id::SessionId;
use super::journal::{self, JournalEntry};
use super::schema::{Body, JournalMerged};
use super::store::Session;
use super::{checkpoints_ref, notes_ref};
use crate::git::{CasOutcome, ObjectId, Repo};

/// Where the copies of `remote`'s sessions are kept here.
pub fn tracking_prefix(remote: &str) -> String {
    format!("refs/bmad/remotes/{remote}/")
}

/// The git config key that lets `push` send journals and checkpoints to `remote`.
pub fn opt_in_key(remote: &str) -> String {
    format!("bmad.{remote}.pushSessions")
}

/// Whether this clone lets `push` send sessions (journals and checkpoints) to `remote`.
pub fn sends_sessions_to(repo: &super::Repo, remote: &str) -> Result<bool> {
    Ok(repo
        .git
        .effective_config_bool(&opt_in_key(remote))?
        .unwrap_or(false))
}

/// What a push sent.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Pushed {
    /// The remote.
    pub remote: String,
    /// The refs the push moved (full names, the same on both sides).
    pub refs: Vec<String>,
    /// The refs the remote already had as they are here.
    pub up_to_date: Vec<String>,
    /// Whether the journal and checkpoints went too (the remote opted in).
    pub state: bool,
    /// Why the journal went unsigned (no `ssh-keygen` here, say): other clones then show
    /// its new events and act on none of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsigned: Option<String>,
}

/// Push a session to `remote`: its branch, and its journal, checkpoints and stored texts
/// when `bmad.<remote>.pushSessions` is true. One atomic push, never forced, through the
/// hooks (the push policy and secret scan see every commit, checkpoints included).
///
/// A journal that leaves is signed first (see [`super::trust`]), so another clone that
/// trusts this one's key takes its events as state. With `release`, the caller saw no run
/// live here: the lease is released, and another clone resumes the session at once.
pub fn push(repo: &super::Repo, session: &Session, remote: &str, release: bool) -> Result<Pushed> {
    let repo = &repo.git;
    if !repo.has_remote(remote)? {
        return Err(Error::NoSuchRemote {
            remote: remote.to_owned(),
        });
    }
    super::remote_checks::refuse_refused_trees(repo, session, remote)?;
    let state = repo
        .effective_config_bool(&opt_in_key(remote))?
        .unwrap_or(false);
    let mut refs = vec![session.branch.clone()];
    let mut unsigned = None;
    if state {
        let holds_lease =
            session.status == super::Status::Running && !session.elsewhere && !session.released;
        if release && holds_lease {
            super::checkpoint::extend_chain(
                repo,
                session,
                super::checkpoint::Recorded::Released,
                "handed off: no run is live in this clone",
                None,
                None,
            )?;
        }
        unsigned = match super::trust::sign_journal(repo, &session.id) {
            Ok(_) => None,
            // No way to sign here: the journal still goes, as information for the others.
            Err(Error::Git(e @ crate::git::Error::Signing { .. })) => Some(e.to_string()),
            Err(e) => return Err(e),
        };
        refs.push(checkpoints_ref(&session.id));
        refs.push(notes_ref(&session.id));
        let texts = super::session_ref(&session.id, "texts/");
        refs.extend(
            repo.refs_with_prefix(&texts)?
                .into_iter()
                .map(|(name, _)| name),
        );
    }
    let mut values = Vec::new();
    for name in &refs {
        if let Some(id) = repo.read_ref(name)? {
            values.push((name.clone(), id));
        }
    }
    if values.is_empty() {
        // `git push <remote>` with no refspec would push whatever the config says.
        return Err(Error::InvalidInput(format!(
            "session {} has nothing to push: its branch {} is gone",
            session.name, session.branch
        )));
    }
    // The values read here, not the refs' names: a run live in this clone moves its
    // checkpoints while the push runs, and what is recorded as pushed must be what went.
    let specs: Vec<String> = values.iter().map(|(n, id)| format!("{id}:{n}")).collect();
    // What this clone last saw on the remote for each ref: the push is refused when the
    // remote moved since (`sync` first), even where a fast-forward would have taken it.
    let mut leases = Vec::new();
    for (name, _) in &values {
        let seen = match tracking_name(remote, name) {
            Some(tracking) => repo.read_ref(&tracking)?,
            None => repo.read_ref(&format!(
                "refs/remotes/{remote}/{}",
                name.trim_start_matches("refs/heads/")
            ))?,
        };
        leases.push((name.clone(), seen));
    }
    // From the session's worktree when it is here, so the policy binds as for the agent.
    let worktree = if session.worktree_exists {
        session.open_worktree(repo)?
    } else {
        None
    };
    let outcome = worktree
        .as_ref()
        .unwrap_or(repo)
        .push_atomic(remote, &specs, &leases)?;
    if !outcome.refused.is_empty() {
        return Err(Error::PushRefused {
            remote: remote.to_owned(),
            refused: outcome.refused,
        });
    }
    // What the remote now has, for the next sync to compare with.
    for (name, id) in &values {
        if let Some(tracking) = tracking_name(remote, name) {
            let old = repo.read_ref(&tracking)?;
            let _ = repo.cas_ref(&tracking, old, *id, "bmad push")?;
        }
    }
    let (up_to_date, refs) = values
        .into_iter()
        .map(|(n, _)| n)
        .partition(|n| outcome.up_to_date.contains(n));
    Ok(Pushed {
        remote: remote.to_owned(),
        refs,
        up_to_date,
        state,
        unsigned,
    })
}

/// What `sync` did for one session.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Synced {
    /// The session id.
    pub session: String,
    /// Its name, when its journal says.
    pub name: Option<String>,
    /// What became of it.
    pub outcome: SyncOutcome,
    /// Events of theirs added to our journal by a merge.
    pub events_added: usize,
    /// Why the remote's copy was refused (`refused`: nothing of it was taken but events).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// What a sync did with one session (serialised in snake case: `fast_forwarded`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncOutcome {
    /// Only on the remote: `git bmad resume` brings it here.
    New,
    /// Nothing to do.
    UpToDate,
    /// Its checkpoints moved there only, and here now too.
    FastForwarded,
    /// It moved here only: `git bmad push` publishes it.
    Ahead,
    /// Their events were copied into our journal.
    Merged,
    /// Checkpoints were taken on both machines: nothing changed here.
    Diverged,
    /// The remote's checkpoint would re-point the session, or names it in a way this clone
    /// would not: its events are copied as information, nothing else moves.
    Refused,
}

/// Fetch every session's journal, checkpoints and branch from `remote`, then bring each
/// local session up to date: fast-forward what only moved there, merge journals appended on
/// both sides. Sessions that exist only there are listed, not created: `resume` makes one
/// here.
pub fn sync(repo: &super::Repo, remote: &str, branch_prefix: &str) -> Result<Vec<Synced>> {
    let repo = &repo.git;
    if !repo.has_remote(remote)? {
        return Err(Error::NoSuchRemote {
            remote: remote.to_owned(),
        });
    }
    let track = tracking_prefix(remote);
    let specs = vec![
        format!("+refs/bmad/sessions/*:{track}sessions/*"),
        format!("+refs/notes/bmad/*:{track}notes/*"),
        format!("+refs/heads/{branch_prefix}*:refs/remotes/{remote}/{branch_prefix}*"),
    ];
    // From the main worktree: the reference-transaction hook keeps sessions from writing
    // git-bmad's refs, and this is git-bmad writing them.
    let main_workdir = repo.main_workdir()?;
    let main = if repo.workdir() == main_workdir {
        None
    } else {
        Some(repo.open_worktree(&main_workdir)?)
    };
    let journals = format!("{track}notes/");
    let seen: Vec<(String, ObjectId)> = repo.refs_with_prefix(&journals)?;
    main.as_ref().unwrap_or(repo).fetch(remote, &specs)?;
    let rewound = super::remote_checks::keep_rewound_journals(repo, &seen)?;
    let mut out = Vec::new();
    for (id, theirs) in tracked_sessions(repo, remote)? {
        if let Some(why) = rewound.get(&format!("{journals}{id}")) {
            out.push(Synced {
                session: id.to_string(),
                name: Checkpoint::read(repo, theirs)?.map(|cp| cp.trailers.name),
                outcome: SyncOutcome::Refused,
                events_added: 0,
                refused: Some(why.clone()),
            });
            continue;
        }
        out.push(sync_session(repo, remote, &id, theirs, branch_prefix)?);
    }
    Ok(out)
}

/// Bring one session up to date with the remote's copy.
///
/// The journal is never fast-forwarded to theirs: their events this clone lacks are copied
/// in (trusted only where an allowed signer vouched for them), so no local event can be
/// dropped by what a remote holds. The checkpoints move forward only when the remote's
/// newest describes the same session (name, branch, base) and, when it says the session now
/// lives in another clone, a trusted lease says so too.
fn sync_session(
    repo: &Repo,
    remote: &str,
    id: &SessionId,
    theirs: ObjectId,
    branch_prefix: &str,
) -> Result<Synced> {
    let track = tracking_prefix(remote);
    let their_notes = repo.read_ref(&format!("{track}notes/{id}"))?;
    let their_head = Checkpoint::read(repo, theirs)?;
    let name = their_head.as_ref().map(|cp| cp.trailers.name.clone());
    let mut synced = Synced {
        session: id.to_string(),
        name,
        outcome: SyncOutcome::UpToDate,
        events_added: 0,
        refused: None,
    };
    let their_head = match their_head {
        Some(cp) => cp,
        None => {
            synced.outcome = SyncOutcome::Refused;
            synced.refused = Some(format!(
                "the remote's {} holds no checkpoint",
                checkpoints_ref(id)
            ));
            return Ok(synced);
        }
    };
    let Some(ours) = repo.read_ref(&checkpoints_ref(id))? else {
        synced.outcome = SyncOutcome::New;
        if let Err(reason) =
            super::remote_checks::check_remote_trailers(&their_head.trailers, id, branch_prefix)
        {
            synced.outcome = SyncOutcome::Refused;
            synced.refused = Some(reason);
        }
        return Ok(synced);
    };
    // Checkpoints: the chain only moves forward on one machine at a time.
    let checkpoints = judge(repo, ours, theirs)?;
    if checkpoints == Step::Diverged {
        synced.outcome = SyncOutcome::Diverged;
        return Ok(synced);
    }
    let notes = match their_notes {
        // Nothing there, or not a notes commit: no journal to take events from.
        Some(t) if !repo.is_commit(t) => Step::Same,
        None => Step::Same,
        Some(t) => {
            let added = merge_journals(repo, id, t, remote, None)?;
            synced.events_added = added;
            if added > 0 {
                Step::Merged
            } else {
                Step::Same
            }
        }
    };
    let checkpoints = match checkpoints {
        Step::Forwarded => match may_forward(repo, id, ours, &their_head)? {
            Ok(()) => {
                cas(repo, &checkpoints_ref(id), Some(ours), theirs)?;
                Step::Forwarded
            }
            Err(reason) => {
                synced.refused = Some(reason);
                Step::Refused
            }
        },
        other => other,
    };
    synced.outcome = match (checkpoints, notes) {
        (Step::Refused, _) => SyncOutcome::Refused,
        (_, Step::Merged) => SyncOutcome::Merged,
        (Step::Forwarded, _) => SyncOutcome::FastForwarded,
        (Step::Ahead, _) => SyncOutcome::Ahead,
        _ => SyncOutcome::UpToDate,
    };
    Ok(synced)
}

/// Whether the local session may move from checkpoint `ours` to the remote's `theirs`: the
/// same session, and where it lives changed only by a lease this clone trusts.
fn may_forward(
    repo: &Repo,
    id: &SessionId,
    ours: ObjectId,
    theirs: &Checkpoint,
) -> Result<std::result::Result<(), String>> {
    let Some(ours) = Checkpoint::read(repo, ours)? else {
        return Ok(Err("the local checkpoint ref holds no checkpoint".into()));
    };
    let (o, t) = (&ours.trailers, &theirs.trailers);
    for (what, mine, other) in [
        ("name", &o.name, &t.name),
        ("branch", &o.branch, &t.branch),
        ("base", &o.base, &t.base),
        ("session", &o.session, &t.session),
    ] {
        if mine != other {
            return Ok(Err(format!(
                "the remote's checkpoint re-points the session's {what} from {mine} to {other}"
            )));
        }
    }
    if o.clone == t.clone && o.worktree == t.worktree {
        return Ok(Ok(()));
    }
    // It says the session lives somewhere else now: only a trusted lease moves it.
    let lease = trusted_lease(&journal::read(super::Repo::of(repo), id)?);
    match (lease, &t.clone) {
        (Some(leased), Some(clone)) if &leased == clone => Ok(Ok(())),
        _ => Ok(Err(format!(
            "the remote's checkpoint says the session moved to clone {} at {}, and no trusted lease says so (git bmad doctor says how to trust another machine)",
            t.clone.as_deref().unwrap_or("-"),
            t.worktree
        ))),
    }
}

/// The clone the newest trusted lease names: the last `worktree_moved` between clones.
fn trusted_lease(journal: &journal::Journal) -> Option<String> {
    journal
        .events()
        .filter_map(|e| match &e.body {
            Body::WorktreeMoved(m) => m.clone.clone(),
            _ => None,
        })
        .last()
}

/// How a local ref stands against the remote's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Same,
    /// Moved forward to theirs.
    Forwarded,
    /// Ours has theirs already: a push publishes it.
    Ahead,
    Diverged,
    Merged,
    /// Theirs would re-point the session: left as it is.
    Refused,
}

/// How `theirs` stands against `ours`; `Forwarded` means theirs contains ours (nothing is
/// moved here).
fn judge(repo: &Repo, ours: ObjectId, theirs: ObjectId) -> Result<Step> {
    if ours == theirs {
        return Ok(Step::Same);
    }
    if repo.is_ancestor(ours, theirs)? == Some(true) {
        return Ok(Step::Forwarded);
    }
    if repo.is_ancestor(theirs, ours)? == Some(true) {
        return Ok(Step::Ahead);
    }
    Ok(Step::Diverged)
}

pub(super) fn cas(repo: &Repo, name: &str, old: Option<ObjectId>, new: ObjectId) -> Result<()> {
    match repo.cas_ref(name, old, new, "bmad sync")? {
        CasOutcome::Updated => Ok(()),
        CasOutcome::Conflict => Err(repo.contention(name, 1).into()),
    }
}

/// Join their journal (notes commit `theirs`) into ours; the events added. Ours is kept as
/// it is; each event of theirs that ours lacks (or holds only as an untrusted copy, and an
/// allowed signer now vouches for) is copied after a `journal_merged` event, with where it
/// came from and who vouched for it. `head`: the checkpoint to hang them on when the
/// session's checkpoint ref is not here yet (`resume` bringing it here).
pub(super) fn merge_journals(
    repo: &Repo,
    id: &SessionId,
    theirs: ObjectId,
    remote: &str,
    head: Option<ObjectId>,
) -> Result<usize> {
    let mine = journal::read(super::Repo::of(repo), id)?;
    let other = journal::read_at(repo, id, Some(theirs))?;
    let (mut trusted, mut untrusted) = (BTreeSet::new(), BTreeSet::new());
    for e in &mine.entries {
        let set = if e.event.is_trusted() {
            &mut trusted
        } else {
            &mut untrusted
        };
        set.insert(e.id.as_str());
    }
    let own = |e: &JournalEntry| {
        matches!(
            e.event.body,
            Body::JournalMerged(_) | Body::JournalSigned(_)
        )
    };
    let candidates: Vec<usize> = (0..other.entries.len())
        .filter(|&i| {
            let e = &other.entries[i];
            !own(e) && !trusted.contains(e.id.as_str())
        })
        .collect();
    let mut copies = Vec::new();
    if !candidates.is_empty() {
        let allowed = super::trust::allowed_signers(repo)?;
        let vouchers = super::trust::vouchers(&other, id, &allowed, repo)?;
        for i in candidates {
            let entry = &other.entries[i];
            // A copy there carries what that clone judged, which its signature vouches for;
            // an event nobody signed says only where it came from.
            let (signer, from) = match (&vouchers[i], &entry.event.origin) {
                (Some(_), Some(_)) => (entry.event.signer.clone(), entry.event.from.clone()),
                (Some(v), None) => (Some(v.principal.clone()), Some(v.clone.clone())),
                (None, _) => (None, Some(format!("{remote}, unsigned"))),
            };
            if untrusted.contains(entry.id.as_str()) && signer.is_none() {
                continue;
            }
            copies.push(NewEvent::copy_of(
                &entry.event,
                Provenance {
                    id: entry.id.clone(),
                    from,
                    signer,
                },
            ));
        }
    }
    let added = copies.len();
    if added > 0 {
        let merged = JournalMerged {
            ours: mine.chain.clone(),
            theirs: other.chain.clone(),
            theirs_notes: theirs.to_string(),
            events: added,
            untrusted: copies.iter().filter(|c| !c.is_vouched()).count(),
        };
        let mut events = vec![NewEvent::new(Body::JournalMerged(merged))];
        events.extend(copies);
        journal::append_all(repo, id, events, head)?;
    }
    // A notes commit with both sides as parents: the remote's is then an ancestor of ours,
    // and the next push a fast-forward. Only our tree is read.
    let tip = repo.notes_tip(&notes_ref(id))?;
    let Some(tip_commit) = tip.commit else {
        return Ok(added);
    };
    if tip_commit == theirs || repo.is_ancestor(theirs, tip_commit)? == Some(true) {
        return Ok(added);
    }
    let joined = repo.write_commit(tip.tree, &[tip_commit, theirs], &tip.message)?;
    cas(repo, &notes_ref(id), Some(tip_commit), joined)?;
    Ok(added)
}

/// The entries of `remote`'s copy of session `id`'s journal, as the last sync or push saw
/// it, each with whether an allowed signer vouched for it: how one clone reads another's
/// record without taking its session (a runner the coordinator's epic, the coordinator a
/// runner's story). An entry's id is the same in every clone's copy.
pub fn remote_entries(
    repo: &super::Repo,
    remote: &str,
    id: &SessionId,
) -> Result<Vec<(JournalEntry, bool)>> {
    let repo = &repo.git;
    let notes = format!("{}notes/{id}", tracking_prefix(remote));
    let Some(tip) = repo.read_ref(&notes)?.filter(|t| repo.is_commit(*t)) else {
        return Ok(Vec::new());
    };
    let journal = journal::read_at(repo, id, Some(tip))?;
    let allowed = super::trust::allowed_signers(repo)?;
    let vouchers = super::trust::vouchers(&journal, id, &allowed, repo)?;
    Ok(journal
        .entries
        .into_iter()
        .zip(vouchers)
        // A copy that the signer itself did not trust stays untrusted.
        .map(|(e, v)| {
            let vouched = v.is_some() && e.event.is_trusted();
            (e, vouched)
        })
        .collect())
}

/// Where the copy of the remote's `name` is kept here; `None` for a branch (git keeps its
/// own remote-tracking branch when a fetch refspec says so).
fn tracking_name(remote: &str, name: &str) -> Option<String> {
    let track = tracking_prefix(remote);
    if let Some(rest) = name.strip_prefix("refs/bmad/sessions/") {
        return Some(format!("{track}sessions/{rest}"));
    }
    name.strip_prefix("refs/notes/bmad/")
        .map(|rest| format!("{track}notes/{rest}"))
}

/// A session that exists on a remote, as `list --remote` shows it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RemoteSession {
    /// The session as its newest checkpoint there describes it (the worktree is the one
    /// on the machine that pushed it).
    #[serde(flatten)]
    pub session: Session,
    /// Whether the session exists here too.
    pub here: bool,
}

/// Each session `remote` had at the last sync or push, with its newest checkpoint there.
fn tracked_sessions(repo: &Repo, remote: &str) -> Result<Vec<(SessionId, ObjectId)>> {
    let track = format!("{}sessions/", tracking_prefix(remote));
    Ok(repo
        .refs_with_prefix(&track)?
        .into_iter()
        .filter_map(|(name, head)| {
            let id = name.strip_prefix(&track)?.strip_suffix("/checkpoints")?;
            Some((SessionId::parse(id)?, head))
        })
        .collect())
}

/// The sessions `remote` had at the last sync or push.
pub fn list_remote(repo: &super::Repo, remote: &str) -> Result<Vec<RemoteSession>> {
    let repo = &repo.git;
    let mut out = Vec::new();
    for (id, head) in tracked_sessions(repo, remote)? {
        let Some(cp) = Checkpoint::read(repo, head)? else {
            continue;
        };
        let here = repo.read_ref(&checkpoints_ref(&id))?.is_some();
        out.push(RemoteSession {
            session: Session::from_checkpoint(id, cp, None),
            here,
        });
    }
    Ok(out)
}
