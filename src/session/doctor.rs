//! `git bmad doctor`: every invariant of the stored state, checked.
//!
//! Problems are states git-bmad would not leave behind by itself and that need a command to
//! repair; warnings are harmless leftovers (a lock of a killed process that the next writer
//! clears). A crash at any instant must leave only warnings.
//!
//! Why this file is long: it is the whole list of what can be wrong with stored state, one
//! check per invariant beside the repair it names; split, a reader could not see what is
//! checked and what is not.

use std::collections::BTreeSet;

use serde::Serialize;

use super::checkpoint::Checkpoint;
use super::error::Result;
use super::git_locks::git_running_in;
use super::id::SessionId;
use super::journal;
use super::removed::removed_ref;
use super::repair::Repair;
use super::state::{SessionState, Status};
use super::store::{self, session_id_of_ref};
use super::{checkpoints_ref, notes_ref};
use crate::config::CONFIG_PATH;
use crate::git::{lock_age, Repo, WorktreeInfo, ABANDONED_GIT_LOCK, STALE_LOCK_AGE};

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// An invariant is broken; `doctor` exits 1.
    Problem,
    /// Worth knowing; nothing to repair.
    Warning,
}

/// One thing `doctor` found.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    /// How bad it is.
    pub severity: Severity,
    /// The session concerned, if one.
    pub session: Option<String>,
    /// What is wrong.
    pub message: String,
    /// One command that repairs it, as a script can run it.
    pub fix: Option<String>,
    /// Other commands that repair it another way: a choice for a human.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<String>,
    /// What to know before running the fix (what to check first, what each choice does).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The repair `doctor --fix` applies, when it is a safe one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair: Option<Repair>,
}

struct Findings(Vec<Finding>);

impl Findings {
    fn add(
        &mut self,
        severity: Severity,
        session: Option<&SessionId>,
        message: String,
        fix: Option<String>,
    ) {
        self.0.push(Finding {
            severity,
            session: session.map(ToString::to_string),
            message,
            fix,
            alternatives: Vec::new(),
            note: None,
            repair: None,
        });
    }

    /// Give the last finding another way to repair it.
    fn or(&mut self, alternative: String) {
        if let Some(last) = self.0.last_mut() {
            last.alternatives.push(alternative);
        }
    }

    /// Say what to know before running the last finding's fix.
    fn note(&mut self, note: impl Into<String>) {
        if let Some(last) = self.0.last_mut() {
            last.note = Some(note.into());
        }
    }

    /// Make the last finding's fix one `doctor --fix` applies.
    fn repaired_by(&mut self, repair: Repair) {
        if let Some(last) = self.0.last_mut() {
            last.repair = Some(repair);
        }
    }
}

/// Check every invariant; an empty list means all is well.
///
/// `config_problems` checks what this layer cannot judge in a config that loads (the runner
/// layer's runner names), one message per problem.
pub fn doctor(
    repo: &Repo,
    config_problems: &dyn Fn(&crate::config::Config) -> Vec<String>,
) -> Result<Vec<Finding>> {
    let mut f = Findings(Vec::new());
    let main = repo.main_workdir()?;
    let config_exists = main.join(CONFIG_PATH).exists();
    let problems = match super::load_config(repo) {
        Ok(config) => config_problems(&config),
        Err(e) => vec![e.to_string()],
    };
    for problem in problems {
        f.add(Severity::Problem, None, problem, None);
        f.note(format!("edit {CONFIG_PATH}"));
    }
    if config_exists
        && !repo
            .local_config_values("notes.displayRef")?
            .iter()
            .any(|v| v == "refs/notes/bmad/*")
    {
        f.add(
            Severity::Warning,
            None,
            "git log does not show the journal (notes.displayRef is not set)".into(),
            Some("git bmad init".into()),
        );
        f.repaired_by(Repair::NotesConfig);
    }
    if let Some((message, how)) = super::trust::untrusting_warning(repo)? {
        f.add(Severity::Warning, None, message, None);
        f.note(how);
    }

    let mut ids = BTreeSet::new();
    for (name, _) in repo.refs_with_prefix("refs/bmad/sessions/")? {
        match session_id_of_ref(&name) {
            Some(id) => {
                ids.insert(id);
            }
            None if is_session_side_ref(&name) => {}
            None => {
                f.add(
                    Severity::Problem,
                    None,
                    format!("unexpected ref {name} (git-bmad only writes refs/bmad/sessions/<id>/checkpoints)"),
                    Some(format!("git update-ref -d {name}")),
                );
                f.note(format!("inspect it first: git log -1 {name}"));
            }
        }
    }
    let worktrees = repo.worktrees()?;
    for id in &ids {
        // A session both live and kept: its `remove` was interrupted half-way through
        // deleting it, so the checks of a live session do not apply.
        if repo.read_ref(&removed_ref(id))?.is_some() {
            f.add(
                Severity::Problem,
                Some(id),
                "its removal was interrupted: the session is kept (restorable), but some of its worktree, branch or refs are already gone".into(),
                Some(format!("git bmad remove --force {id}")),
            );
            f.or(format!("git bmad restore {id}"));
            f.note("remove finishes removing it (it stays restorable); restore brings it all back");
            continue;
        }
        check_session(repo, id, &worktrees, &mut f)?;
    }
    for (name, keep) in repo.refs_with_prefix("refs/bmad/removed/")? {
        let id = name
            .strip_prefix("refs/bmad/removed/")
            .and_then(SessionId::parse);
        if id.is_none() || !repo.is_commit(keep) {
            f.add(
                Severity::Problem,
                None,
                format!("unexpected ref {name} (git-bmad only writes refs/bmad/removed/<id> for removed sessions)"),
                Some(format!("git update-ref -d {name}")),
            );
            f.note(format!("inspect it first: git log -1 {name}"));
        }
    }
    for (name, _) in repo.refs_with_prefix("refs/notes/bmad/")? {
        let orphan = name
            .strip_prefix("refs/notes/bmad/")
            .and_then(SessionId::parse)
            .is_none_or(|id| !ids.contains(&id));
        if orphan {
            f.add(
                Severity::Warning,
                None,
                format!("journal {name} belongs to no session"),
                Some(format!("git update-ref -d {name}")),
            );
        }
    }

    let sessions = store::list(super::Repo::of(repo))?;
    // Whether a git or git-bmad process works here: without one, every lock is a leftover.
    let running = git_running_in(repo, &worktrees);
    for wt in &worktrees {
        let ours = sessions
            .iter()
            .find(|s| Some(&s.branch) == wt.branch.as_ref());
        // A live session's worktree is checked with the session, which names the repair
        // (for a directory still there, `prune` would unlink the work).
        let live = ours.is_some_and(|s| !matches!(s.status, Status::Completed | Status::Pruned));
        if let (true, false, Some(s)) = (wt.prunable && !wt.path.is_dir(), live, ours) {
            f.add(
                Severity::Problem,
                Some(&s.id),
                format!("git still lists the deleted worktree {}", wt.path.display()),
                Some("git bmad prune".into()),
            );
            f.repaired_by(Repair::ForgetWorktrees);
        }
        if let (Some(s), Some(_)) = (ours, crate::git::abandoned_shadow(&wt.path)) {
            f.add(
                Severity::Problem,
                Some(&s.id),
                format!(
                    "a contained step or command killed with git-bmad left {} naming its shadow of the repository: git there does not read the repository's own config, and a step's git writes its layer",
                    wt.path.display()
                ),
                Some("git bmad doctor --fix".into()),
            );
            f.repaired_by(Repair::PutBackShadow {
                worktree: wt.path.clone(),
            });
        }
    }
    check_half_added(repo, &worktrees, &sessions, running, &mut f)?;
    check_locks(repo, running, &mut f);
    check_git_locks(repo, &worktrees, running, &mut f);
    Ok(f.0)
}

fn check_session(
    repo: &Repo,
    id: &SessionId,
    worktrees: &[WorktreeInfo],
    f: &mut Findings,
) -> Result<()> {
    let chain = check_chain(repo, id, f)?;
    let Some(newest) = chain.first() else {
        return Ok(());
    };

    // The journal: dense seq from 1, every note on a checkpoint of the chain.
    if repo.read_ref(&notes_ref(id))?.is_none() {
        f.add(
            Severity::Problem,
            Some(id),
            "the session has checkpoints but no journal: its start was interrupted".into(),
            Some(format!("git bmad remove {id} --force")),
        );
        // Killed before its worktree was whole, it holds nothing of anyone's: removed (it
        // stays restorable) by the fix, which the half-made worktree would otherwise outlive.
        let worktree = std::path::Path::new(&newest.trailers.worktree);
        if !worktree.exists() || repo.is_half_added_worktree(worktree)? {
            f.repaired_by(Repair::RemoveInterruptedStart {
                session: id.to_string(),
            });
        }
        return Ok(());
    }
    for moved in super::ref_record::foreign_moves(super::Repo::of(repo), id)? {
        f.add(
            Severity::Problem,
            Some(id),
            moved.describe(),
            Some(moved.fix()),
        );
    }
    let journal = journal::read(super::Repo::of(repo), id)?;
    check_journal(id, &journal, &chain, f);

    if let Some(intent) = super::rollback::interrupted(repo, id)? {
        f.add(
            Severity::Problem,
            Some(id),
            format!(
                "a rollback to checkpoint {} was interrupted: files may be half restored (the state before is safe in checkpoint {})",
                intent.target.id.to_hex_with_len(10),
                intent.safety.id.to_hex_with_len(10)
            ),
            Some(format!("git bmad rollback --continue -s {id}")),
        );
        f.or(format!("git bmad undo -s {id}"));
        f.note("--continue finishes the rollback; undo returns to the state before it");
        f.repaired_by(Repair::ContinueRollback {
            session: id.to_string(),
        });
    }

    check_live(repo, id, worktrees, &journal, newest, f)
}

/// The chain: every commit a checkpoint of this session, seq never going backwards; the
/// checkpoints it could read, newest first.
fn check_chain(repo: &Repo, id: &SessionId, f: &mut Findings) -> Result<Vec<Checkpoint>> {
    let chain_ref = checkpoints_ref(id);
    let Some(head) = repo.read_ref(&chain_ref)? else {
        return Ok(Vec::new());
    };
    let mut chain = Vec::new();
    let mut next = Some(head);
    while let Some(commit) = next {
        if !repo.has_object(commit) {
            f.add(
                Severity::Problem,
                Some(id),
                format!("checkpoint {commit} is missing from the object database"),
                Some("git fsck".into()),
            );
            break;
        }
        match Checkpoint::read(repo, commit)? {
            Some(cp) if cp.trailers.session == id.as_str() => {
                next = cp.previous();
                chain.push(cp);
            }
            _ => {
                if chain.is_empty() {
                    f.add(Severity::Problem, Some(id), format!("{chain_ref} points to {commit}, which is not a checkpoint of this session"), Some(format!("git reflog show {chain_ref}")));
                    f.note(format!("find the last good checkpoint there, then: git update-ref {chain_ref} <it>"));
                }
                break;
            }
        }
    }
    for pair in chain.windows(2) {
        if pair[0].trailers.seq < pair[1].trailers.seq {
            f.add(
                Severity::Problem,
                Some(id),
                format!(
                    "checkpoint {} records seq {} after {} recorded {}",
                    pair[0].id, pair[0].trailers.seq, pair[1].id, pair[1].trailers.seq
                ),
                None,
            );
        }
    }
    Ok(chain)
}

/// The journal's lines: every one an event written by git-bmad, seq dense from 1, each on a
/// checkpoint of `chain`, the first (after copies from another clone) `session_started`.
fn check_journal(
    id: &SessionId,
    journal: &journal::Journal,
    chain: &[Checkpoint],
    f: &mut Findings,
) {
    for bad in &journal.malformed {
        f.add(
            Severity::Problem,
            Some(id),
            format!("journal line is not an event: {bad}; every command skips it"),
            // git-bmad writes only events: something else wrote this line.
            Some(format!("git reflog show {}", super::notes_ref(id))),
        );
        f.note("see who wrote it");
    }
    for forged in &journal.unsealed {
        f.add(
            Severity::Problem,
            Some(id),
            format!(
                "{} was not written by git-bmad: it does not continue the journal's hash chain, so status, resume and undo ignore it",
                forged.describe()
            ),
            Some(format!("git reflog show {}", super::notes_ref(id))),
        );
        f.note("see who wrote it");
    }
    if let Some((message, how)) = super::trust::untrusted_warning(journal) {
        f.add(Severity::Warning, Some(id), message, None);
        f.note(how);
    }
    let forged_seqs: BTreeSet<u64> = journal.unsealed.iter().map(|u| u.seq).collect();
    let on_chain: BTreeSet<_> = chain.iter().map(|c| c.id).collect();
    let mut expected = 1;
    for entry in &journal.entries {
        let e = &entry.event;
        // A forged line took its number: the next real event comes after it.
        while forged_seqs.contains(&expected) && e.seq != expected {
            expected += 1;
        }
        if e.seq != expected {
            f.add(
                Severity::Problem,
                Some(id),
                format!(
                    "journal seq {} where {expected} was expected (events lost or duplicated)",
                    e.seq
                ),
                None,
            );
            expected = e.seq;
        }
        expected += 1;
        if e.session != id.as_str() {
            f.add(
                Severity::Problem,
                Some(id),
                format!("journal event #{} names session {}", e.seq, e.session),
                None,
            );
        }
        if let super::schema::Body::Other(other) = &e.body {
            if let Some(why) = &other.unreadable {
                f.add(
                    Severity::Warning,
                    Some(id),
                    format!(
                        "journal event #{} ({}) has a detail this version cannot read, so replays skip it: {why}",
                        e.seq, other.event
                    ),
                    None,
                );
            }
        }
        if !on_chain.contains(&entry.checkpoint) {
            f.add(
                Severity::Problem,
                Some(id),
                format!(
                    "journal event #{} hangs on {}, which is not in the checkpoint chain",
                    e.seq, entry.checkpoint
                ),
                None,
            );
        }
    }
    if let (Some(recorded), last) = (journal.recorded_last_seq, journal.last_seq()) {
        if recorded != last {
            f.add(Severity::Problem, Some(id), format!("the journal's notes commit records seq {recorded}, but its last event is #{last}"), None);
        }
    }
    // A session brought from another clone begins with the merge that copied its journal.
    let first = journal
        .entries
        .iter()
        .find(|e| !matches!(e.event.body, super::schema::Body::JournalMerged(_)));
    match first {
        Some(first) if matches!(first.event.body, super::schema::Body::SessionStarted(_)) => {}
        _ => f.add(
            Severity::Problem,
            Some(id),
            "the journal does not begin with session_started".into(),
            None,
        ),
    }
}

/// The worktree and branch of a live session, and its newest checkpoint against its journal.
fn check_live(
    repo: &Repo,
    id: &SessionId,
    worktrees: &[WorktreeInfo],
    journal: &journal::Journal,
    newest: &Checkpoint,
    f: &mut Findings,
) -> Result<()> {
    let state = SessionState::replay(journal.events());
    check_playbooks(repo, id, journal, state.status, f);
    let worktree = std::path::Path::new(&newest.trailers.worktree);
    let live = !matches!(state.status, Status::Completed | Status::Pruned);
    // Resumed in another clone: its worktree is on that machine, not ours to check.
    let elsewhere =
        newest.trailers.clone.is_some() && newest.trailers.clone != super::id::clone_id(repo);
    if live && !elsewhere {
        if let Some(damage) = super::worktree::damage_among(
            worktrees,
            repo,
            id.as_str(),
            worktree,
            &newest.trailers.branch,
        )? {
            f.add(
                Severity::Problem,
                Some(id),
                damage.describe(),
                Some(damage.command()),
            );
            for alternative in damage.alternatives() {
                f.or(alternative);
            }
            if let Some(note) = damage.note() {
                f.note(note);
            }
            match damage.damage {
                super::worktree::Damage::Moved { .. } => f.repaired_by(Repair::FollowMove {
                    session: id.to_string(),
                }),
                super::worktree::Damage::GitFileMissing => f.repaired_by(Repair::RepairWorktrees),
                _ => {}
            }
        }
    }
    let feed_off = (live && !elsewhere && worktree.is_dir())
        .then(|| Repo::discover(worktree).ok()?.feed_off_reason())
        .flatten();
    if let Some(reason) = feed_off {
        f.add(
            Severity::Warning,
            Some(id),
            format!("its checkpoints scan the whole worktree (exact, but slower): the change feed could not start: {reason}"),
            None,
        );
        f.note("a checkpoint an hour after the failure starts the watcher again; `git config bmad.watch false` turns the feed off for good");
    }
    if state.status != Status::Pruned && repo.read_ref(&newest.trailers.branch)?.is_none() {
        f.add(
            Severity::Warning,
            Some(id),
            format!("branch {} no longer exists", newest.trailers.branch),
            None,
        );
    }
    if state.status != newest.trailers.status && journal.last_seq() <= newest.trailers.seq {
        f.add(
            Severity::Warning,
            Some(id),
            format!(
                "the newest checkpoint says {} but the journal says {}",
                newest.trailers.status, state.status
            ),
            Some("git bmad checkpoint".into()),
        );
    }
    Ok(())
}

/// Refs a session keeps besides its chain: an interrupted rollback's intent, stored texts.
/// Each run's playbook, kept for `answer` and `resume` (see [`super::store_text`]), must
/// still read back; it is a problem while its run can still go on (not completed, not
/// aborted, and no later run started).
fn check_playbooks(
    repo: &Repo,
    id: &SessionId,
    journal: &journal::Journal,
    status: Status,
    f: &mut Findings,
) {
    let events: Vec<_> = journal.events().collect();
    let session_over = matches!(status, Status::Completed | Status::Pruned);
    for (n, e) in events.iter().enumerate() {
        let super::schema::Body::RunStarted(run) = &e.body else {
            continue;
        };
        let Err(why) = super::read_stored_text(super::Repo::of(repo), &run.blob) else {
            continue;
        };
        let over = session_over
            || events[n + 1..].iter().any(|later| {
                matches!(
                    later.kind(),
                    "run_completed" | "run_aborted" | "run_started"
                )
            });
        let end = if status == Status::Gated {
            format!("or end the run: git bmad answer abort -s {id}")
        } else {
            format!("or end the session: git bmad finish {id}")
        };
        f.add(
            if over {
                Severity::Warning
            } else {
                Severity::Problem
            },
            Some(id),
            format!(
                "the playbook {:?} of the run started at journal event #{} cannot be read ({why}): `answer` and `resume` cannot go on with that run",
                run.playbook, e.seq
            ),
            (!over).then(|| {
                format!(
                    "fetch it from a clone that has it: git fetch <remote> {}; {end}",
                    super::session_ref(id, &format!("texts/{}", run.blob))
                )
            }),
        );
    }
}

fn is_session_side_ref(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("refs/bmad/sessions/") else {
        return false;
    };
    let Some((id, side)) = rest.split_once('/') else {
        return false;
    };
    SessionId::parse(id).is_some()
        && (side == "rollback-intent"
            || side
                .strip_prefix("texts/")
                .is_some_and(|t| t.bytes().all(|b| b.is_ascii_hexdigit())))
}

/// Worktrees a killed `git worktree add` left half made with no session to own them (a
/// `start` killed before it recorded one): git lists each locked `initializing`, its HEAD
/// pointing at nothing, and `git fsck` reports it. Judged only while no git works here: a
/// live `start` makes one just so.
fn check_half_added(
    repo: &Repo,
    worktrees: &[WorktreeInfo],
    sessions: &[store::Session],
    running: Option<u32>,
    f: &mut Findings,
) -> Result<()> {
    if running.is_some() {
        return Ok(());
    }
    for wt in worktrees {
        let owned = sessions.iter().any(|s| {
            s.worktree == wt.path || std::fs::canonicalize(&s.worktree).is_ok_and(|p| p == wt.path)
        });
        if owned || wt.is_main || !repo.is_half_added_worktree(&wt.path)? {
            continue;
        }
        f.add(
            Severity::Problem,
            None,
            format!(
                "a killed `git worktree add` left {} half made (locked `initializing`, its HEAD points at nothing); no session owns it",
                wt.path.display()
            ),
            Some("git bmad doctor --fix".into()),
        );
        f.repaired_by(Repair::RemoveHalfAdded {
            worktree: wt.path.clone(),
        });
    }
    Ok(())
}

/// git's own lock files (`packed-refs.lock`, a branch's, each worktree's `index.lock`): one
/// a dead process left blocks every later git command until someone removes it.
fn check_git_locks(
    repo: &Repo,
    worktrees: &[WorktreeInfo],
    running: Option<u32>,
    f: &mut Findings,
) {
    let git_dirs: Vec<_> = worktrees
        .iter()
        .filter(|w| w.path.is_dir())
        .filter_map(|w| repo.open_worktree(&w.path).ok())
        .map(|wt| wt.git_dir().to_owned())
        .collect();
    for lock in repo.git_lock_files(&git_dirs) {
        let Some(age) = lock_age(&lock) else {
            continue;
        };
        // With no git (or git-bmad) process working in the repository, a lock of any age
        // has no owner: a killed command left it.
        if age >= ABANDONED_GIT_LOCK || running.is_none() {
            f.add(
                Severity::Problem,
                None,
                format!(
                    "lock file {} ({}s old) has no running git process: every command that needs it fails until it is removed",
                    lock.display(),
                    age.as_secs()
                ),
                Some(format!("rm '{}'", lock.display())),
            );
            f.note("only if no git command is running");
            if running.is_none() {
                f.repaired_by(Repair::RemoveLock { path: lock });
            }
        }
    }
}

/// Lock files under our refs: a killed writer's leftovers, cleared by the next writer once
/// stale, and at once by `doctor --fix` when no git or git-bmad process is running.
fn check_locks(repo: &Repo, running: Option<u32>, f: &mut Findings) {
    for dir in ["refs/bmad", "refs/notes/bmad"] {
        let mut stack = vec![repo.common_dir().join(dir)];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "lock") {
                    let age = entry
                        .metadata()
                        .ok()
                        .and_then(|m| m.modified().ok())
                        .and_then(|m| m.elapsed().ok())
                        .unwrap_or_default();
                    let stale = age >= STALE_LOCK_AGE || running.is_none();
                    f.add(
                        Severity::Warning,
                        None,
                        format!(
                            "lock file {} ({}s old){}",
                            path.display(),
                            age.as_secs(),
                            if stale {
                                ", left by a process that died; the next git-bmad write removes it"
                            } else {
                                ", a write is in progress"
                            }
                        ),
                        stale.then(|| format!("rm '{}'", path.display())),
                    );
                    if stale {
                        f.repaired_by(Repair::RemoveLock { path });
                    }
                }
            }
        }
    }
}
