//! Errors of the session layer. Each says what happened and the command to run next.

use std::path::PathBuf;

/// A result of the session layer.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong in a session operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The git layer failed.
    #[error(transparent)]
    Git(#[from] crate::git::Error),
    /// No one session is the one asked for.
    #[error(transparent)]
    Locate(LocateError),
    /// `restore` found neither a removed session nor one whose worktree is gone.
    #[error("no removed or pruned session matches {query:?}; `git bmad list --removed` shows the removed ones, `git bmad list` the others")]
    NothingToRestore {
        /// What the user typed.
        query: String,
    },
    /// Something else now occupies the directory a session's worktree is restored to.
    #[error("cannot restore session {session}: {} exists now; move it away, then run restore again", path.display())]
    RestorePathExists {
        /// The session.
        session: String,
        /// The directory.
        path: PathBuf,
    },
    /// A session name that cannot become a branch and directory name.
    #[error("invalid session name {name:?}: {reason}")]
    InvalidName {
        /// The name.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A live session already uses the name.
    #[error("a session named {name:?} already exists ({id}); pick another name, or end it first with `git bmad remove {id}`")]
    NameTaken {
        /// The name.
        name: String,
        /// The existing session.
        id: String,
    },
    /// A ref a removed session needs back now points elsewhere.
    #[error("cannot restore session {session}: {reference} now points to {now}, not to {kept} as when the session was removed; rename or delete it (for a branch: git branch -m), then run restore again")]
    RestoreConflict {
        /// The session.
        session: String,
        /// The ref.
        reference: String,
        /// What it points to now.
        now: String,
        /// What the keep holds.
        kept: String,
    },
    /// Another session uses what a removed session needs back.
    #[error("cannot restore session {session}: session {by} uses {what} now; remove that session first (it stays restorable too), then run restore again")]
    RestoreBlocked {
        /// The removed session.
        session: String,
        /// The session in the way.
        by: String,
        /// Its branch and worktree.
        what: String,
    },
    /// The branch for a new session exists already.
    #[error("branch {branch} already exists; pick another session name, or delete the branch if it is yours to lose")]
    BranchExists {
        /// The branch.
        branch: String,
    },
    /// The worktree directory for a new session exists already.
    #[error("{} already exists; pick another session name, or move that directory away", path.display())]
    PathExists {
        /// The directory.
        path: PathBuf,
    },
    /// A session coming back finds this clone's worktree of it from before it left, holding
    /// what the session does not have.
    #[error("{} is this clone's worktree of session {session} from before it left, and holds what the session coming back does not: changes made there since it was handed off, or it was never handed off (a plain push leaves it as it is); move that directory away, keeping what you need of it, then resume again", path.display())]
    LeftWorktree {
        /// The session.
        session: String,
        /// The directory.
        path: PathBuf,
    },
    /// `start` without `--base` needs committed tracked files.
    #[error("tracked files have uncommitted changes ({count} path{}: {}{}); a new session starts from a commit and would not have them: commit them (git commit -am …), stash them (git stash), or pass --base HEAD to start from the last commit without them", if *count == 1 { "" } else { "s" }, sample.join(", "), if *count > sample.len() { ", …" } else { "" })]
    DirtyTree {
        /// How many paths differ.
        count: usize,
        /// A few of them.
        sample: Vec<String>,
    },
    /// The base revision does not name a commit.
    #[error("{rev:?} does not name a commit; use a branch, tag or commit id")]
    UnknownRevision {
        /// What the user typed.
        rev: String,
    },
    /// The repository has no commit to start from.
    #[error("the repository has no commits yet; make a first commit, then start a session")]
    NoCommits,
    /// No checkpoint matches what the user typed.
    #[error("no checkpoint of session {session} matches {query:?}; `git bmad status` lists them")]
    UnknownCheckpoint {
        /// The session.
        session: String,
        /// What the user typed.
        query: String,
    },
    /// There is no rollback to undo.
    #[error("session {session} has no rollback to undo")]
    NothingToUndo {
        /// The session.
        session: String,
    },
    /// A rollback was interrupted and must be finished or undone first.
    #[error("a rollback of session {session} to {target} was interrupted; run `git bmad rollback --continue` to finish it, or `git bmad undo` to return to the state before it")]
    RollbackInterrupted {
        /// The session.
        session: String,
        /// The checkpoint it was restoring.
        target: String,
    },
    /// `rollback --continue` with no interrupted rollback.
    #[error("no rollback of session {session} was interrupted; there is nothing to continue")]
    NothingToContinue {
        /// The session.
        session: String,
    },
    /// The worktree changed while a rollback ran.
    #[error("the worktree changed while the rollback was running ({detail}); nothing was restored. Your current state is safe in checkpoint {safety}; run the rollback again when the agent is idle")]
    WorktreeChanged {
        /// The safety checkpoint taken before.
        safety: String,
        /// What git said.
        detail: String,
    },
    /// The session's worktree is gone.
    #[error("the worktree of session {session} ({}) is missing; run `git bmad prune` to record that, or restore the directory", path.display())]
    WorktreeMissing {
        /// The session.
        session: String,
        /// Where it was.
        path: PathBuf,
    },
    /// The session's worktree was damaged (see [`super::WorktreeDamage`]).
    #[error("session {session}: {what}; nothing runs there until it is repaired: {fix}")]
    WorktreeDamaged {
        /// The session.
        session: String,
        /// What happened.
        what: String,
        /// The commands that repair it.
        fix: String,
    },
    /// A ref the session's authority rests on was moved by something other than git-bmad
    /// (see [`super::ref_record`]).
    #[error("session {session}: {what}; nothing runs or is answered there until git-bmad's record is put back ({fix}) or the session is removed")]
    MovedOutside {
        /// The session.
        session: String,
        /// What moved.
        what: String,
        /// The commands that put git-bmad's record back.
        fix: String,
    },
    /// A ref here holds history the remote's copy does not: bringing the session here would
    /// drop it.
    #[error("{reference} is at {here} here, which {remote}'s {theirs} does not contain; run git bmad sync --remote {remote} (and push) first")]
    Diverged {
        /// The ref.
        reference: String,
        /// Its value here.
        here: String,
        /// The remote.
        remote: String,
        /// The remote's value.
        theirs: String,
    },
    /// The session is being worked on elsewhere.
    #[error("session {session} was active on another machine moments ago (as {remote} has it); resuming it here too would split its work. Wait until it stops (about {minutes} min), or pass --steal if that machine is gone")]
    LeaseHeld {
        /// The session.
        session: String,
        /// The remote.
        remote: String,
        /// Minutes until the lease runs out.
        minutes: i64,
    },
    /// What a remote holds for a session is not what this clone would have written.
    #[error("session {session} on {remote} is refused: {reason}")]
    RemoteRefused {
        /// The remote.
        remote: String,
        /// The session id.
        session: String,
        /// What was wrong, naming what came from the remote.
        reason: String,
    },
    /// No remote of that name is configured.
    #[error("no remote named {remote:?}; `git remote -v` lists them, `git remote add {remote} <url>` adds one")]
    NoSuchRemote {
        /// The name given.
        remote: String,
    },
    /// The remote refused a push (it moved in a way a fast-forward cannot take, or its own
    /// hooks said no). Nothing moved: the push is atomic.
    #[error("{remote} refused the push, nothing was changed there: {}; run `git bmad sync --remote {remote}` to bring its changes here first", describe_refused(refused))]
    PushRefused {
        /// The remote.
        remote: String,
        /// The refs it refused, and why.
        refused: Vec<crate::git::Refused>,
    },
    /// A branch about to leave holds commits whose trees git refuses (`..`, a `.git`
    /// entry): nothing was pushed.
    #[error("refusing to push {branch}: its commits hold tree entries git refuses ({}); move the branch back to a commit without them (`git bmad rollback`, or `git reset` in the session worktree)", findings.join("; "))]
    RefusedTrees {
        /// The branch.
        branch: String,
        /// Each entry, as `path: why`.
        findings: Vec<String>,
    },
    /// A submodule the rollback would move cannot be moved.
    #[error("nothing was rolled back: {}", reasons.join("; "))]
    SubmoduleHoldsWork {
        /// Why, one per submodule.
        reasons: Vec<String>,
    },
    /// A changed or staged file holds a secret, so the worktree cannot be saved before a
    /// rollback.
    #[error("{} hold(s) a secret: a rollback first saves the worktree and its index, and a secret never enters the repository. Remove it (or move it out of the worktree) and unstage it (git restore --staged), then run the command again", paths.join(", "))]
    SecretInWorktree {
        /// The files.
        paths: Vec<String>,
    },
    /// `remove` would lose work.
    #[error("refusing to remove session {session}: {}; pass --force to remove it anyway (it stays restorable with `git bmad restore` until `git bmad gc` deletes it)", reasons.join("; "))]
    WouldLoseWork {
        /// The session.
        session: String,
        /// Why.
        reasons: Vec<String>,
    },
    /// The command would delete the directory it runs in.
    #[error("cannot remove the session you are standing in; cd to the main worktree ({}) and run it again", main.display())]
    InsideSession {
        /// The main worktree.
        main: PathBuf,
    },
    /// The session has no checkpoint yet (interrupted start).
    #[error("session {session} has no checkpoint; its start was interrupted. Remove it with `git bmad remove {session} --force`")]
    NoCheckpoint {
        /// The session.
        session: String,
    },
    /// `.bmad/config.yaml` cannot be used.
    #[error(transparent)]
    Config(#[from] crate::config::Error),
    /// Input given on the command line is not acceptable.
    #[error("{0}")]
    InvalidInput(String),
    /// The session lives in another clone now (resumed on another machine): only that clone
    /// runs it or hands it on.
    #[error("session {name} lives in another clone of this repository now (resumed on another machine); {what}")]
    LivesElsewhere {
        /// The session's name.
        name: String,
        /// What that means for what was asked.
        what: &'static str,
    },
    /// A file-system operation failed.
    #[error("{op} {}", path.display())]
    Io {
        /// The operation.
        op: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// Why [`super::locate`] found no one session: causes its callers act on (a resume adopts
/// a session unknown here from a remote; a status outside every session shows them all).
#[derive(Debug, thiserror::Error)]
pub enum LocateError {
    /// No query, and the command did not run in a session's worktree.
    #[error("{} is not a git-bmad session worktree; run the command inside a session's worktree, or name the session (see `git bmad list`)", workdir.display())]
    NotInSession {
        /// Where the command ran.
        workdir: PathBuf,
    },
    /// No session matches what the user typed.
    #[error("no session matches {query:?}; `git bmad list` shows them all")]
    Unknown {
        /// What the user typed.
        query: String,
    },
    /// More than one session matches.
    #[error("{query:?} matches several sessions ({}); give more of the id", candidates.join(", "))]
    Ambiguous {
        /// What the user typed.
        query: String,
        /// The matching ids.
        candidates: Vec<String>,
    },
    /// The sessions could not be read.
    #[error(transparent)]
    Failed(Box<Error>),
}

impl From<Error> for LocateError {
    fn from(e: Error) -> Self {
        LocateError::Failed(Box::new(e))
    }
}

impl From<crate::git::Error> for LocateError {
    fn from(e: crate::git::Error) -> Self {
        Error::from(e).into()
    }
}

impl From<LocateError> for Error {
    fn from(e: LocateError) -> Self {
        match e {
            LocateError::Failed(e) => *e,
            cause => Error::Locate(cause),
        }
    }
}

impl Error {
    /// Wrap an I/O error with its operation and path.
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// Whether the error is the user's input rather than a failed operation (exit code 2).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Error::Locate(LocateError::Unknown { .. } | LocateError::Ambiguous { .. })
                | Error::NothingToRestore { .. }
                | Error::InvalidName { .. }
                | Error::UnknownRevision { .. }
                | Error::UnknownCheckpoint { .. }
                | Error::Config(crate::config::Error::Invalid { .. })
                | Error::InvalidInput(_)
        )
    }
}

/// The refused refs of a push, for messages.
pub fn describe_refused(refused: &[crate::git::Refused]) -> String {
    refused
        .iter()
        .map(|r| format!("{} {}", r.remote_ref, r.reason))
        .collect::<Vec<_>>()
        .join("; ")
}
