//! The BMAD epic runner: an epic's stories planned (dependency order, parallel waves,
//! stacked branches, overlapping `touches`), each run in its own session through its era's
//! pipeline playbook, verified, committed and offered as a draft pull request; the run's
//! record is the epic session's journal, so `epic status` and `epic resume` replay it.

mod acceptance;
pub use acceptance::planned as acceptance_tests_planned;
pub mod actions;
mod close;
mod closeout;
pub mod gates;
pub mod integration;
mod job;
pub mod judge;
pub mod names;
pub mod options;
pub mod pipeline;
pub mod plan;
mod playbooks;
pub mod progress;
pub mod resume;
pub mod run;
mod scope;
pub mod signatures;
pub mod state;
mod status;
mod story;
mod verify;

pub use options::{EpicOptions, Gates, On, PlanOptions};
pub use plan::{plan, Plan};
pub use run::{run, EpicRun};
pub use state::EpicState;
pub use status::set_story_status;

/// Errors of the epic layer: the one below it, named, and the epic's own.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The BMAD files.
    #[error(transparent)]
    Bmad(#[from] crate::bmad::Error),
    /// The session and its journal.
    #[error(transparent)]
    Session(#[from] crate::session::Error),
    /// The supervisor.
    #[error(transparent)]
    Supervisor(#[from] crate::supervisor::Error),
    /// No story belongs to the epic.
    #[error("no story belongs to epic {epic}; epics with stories: {}", if known.is_empty() { "none".to_owned() } else { known.join(", ") })]
    NoSuchEpic {
        /// The epic asked for.
        epic: String,
        /// Those that exist.
        known: Vec<String>,
    },
    /// `--stories` named a story the epic does not have.
    #[error("epic {epic} has no story {story}; git bmad epic plan {epic} lists them")]
    NoSuchStory {
        /// The story.
        story: String,
        /// The epic.
        epic: String,
    },
    /// `--stories` named a prefix of several stories.
    #[error("{story} matches several stories ({}); name one", matches.join(", "))]
    AmbiguousStory {
        /// The prefix.
        story: String,
        /// What it matches.
        matches: Vec<String>,
    },
    /// `gh` failed to open a pull request.
    #[error("gh could not open the pull request: {0}")]
    Gh(String),
    /// A story job found no run of the epic on the remote that a trusted key signed.
    #[error("{remote} holds no run of epic {epic} signed by a key this repository trusts: the coordinator pushes it (git bmad epic run {epic} --on actions), and its key must be in .bmad/allowed_signers on main (git bmad trust show on that machine)")]
    NoVouchedRun {
        /// The epic.
        epic: String,
        /// The remote.
        remote: String,
    },
    /// Running on GitHub Actions cannot go on.
    #[error("{0}")]
    Actions(String),
    /// No epic run was started.
    #[error("epic {0} has no run to resume; start one with git bmad epic run {0}")]
    NoRun(String),
    /// `answer` on an epic with no gate open.
    #[error("epic {epic} waits at no gate; git bmad epic status {epic} shows where it stands")]
    NoGate {
        /// The epic.
        epic: String,
    },
    /// An answer the open gate does not take.
    #[error("the epic's {gate} gate takes {}, not {reply:?}", options.join(", "))]
    UnknownAnswer {
        /// What was answered.
        reply: String,
        /// The gate.
        gate: String,
        /// What it takes.
        options: Vec<&'static str>,
    },
    /// git-bmad's own test run could not run.
    #[error("the tests could not be run: {0}")]
    Judge(String),
    /// A file of the epic's worktree could not be written.
    #[error("could not write {}: {source}", path.display())]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// A new session of the epic's, guarded by `policy` like any session; what the policy
/// could not do goes to `progress`. (Callers look for the one of that name first: a resumed
/// run goes on in it.)
fn start_session(
    repo: &crate::session::Repo,
    start: &crate::session::StartOptions,
    policy: &dyn crate::session::Policy,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<crate::session::Session, Error> {
    let started = crate::session::start(repo, start, policy)?;
    for warning in &started.warnings {
        progress(&format!("{}: {warning}", start.name));
    }
    Ok(started.session)
}
