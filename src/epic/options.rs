//! What an epic run is asked to do: which stories, how (the plan's options), with which
//! human checkpoints, within which limits.

use std::sync::atomic::AtomicBool;

use serde::Serialize;

use super::pipeline::Era;
use crate::config::Config;
use crate::session::{self, schema::EpicBudget};

/// Human checkpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Gates {
    /// None beyond the pipeline's own (a review that does not converge, a failure) and the
    /// judge's (a story that changes its test set-up, removes tests or works outside its
    /// scope). A red integration checkpoint still holds the dependents back.
    None,
    /// Scope confirmation, integration checkpoints that are not green, completion.
    PerEpic,
    /// Those, and every story waits for a human before its pull request.
    PerStory,
}

impl Gates {
    /// `none`, `per-epic`, `per-story`.
    pub fn as_str(self) -> &'static str {
        match self {
            Gates::None => "none",
            Gates::PerEpic => "per-epic",
            Gates::PerStory => "per-story",
        }
    }

    /// The mode a word names.
    pub fn parse(word: &str) -> Option<Gates> {
        match word {
            "none" => Some(Gates::None),
            "per-epic" => Some(Gates::PerEpic),
            "per-story" => Some(Gates::PerStory),
            _ => None,
        }
    }
}

/// Where the stories run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum On {
    /// Here, one thread per story.
    #[default]
    Here,
    /// On GitHub Actions runners: one dispatched job per story (`.github/workflows/
    /// bmad-story.yml`), followed through the remote.
    Actions,
}

impl On {
    /// `here`, `actions`; `here` is recorded as nothing.
    pub fn as_str(self) -> &'static str {
        match self {
            On::Here => "here",
            On::Actions => "actions",
        }
    }

    /// Where a word says.
    pub fn parse(word: &str) -> Option<On> {
        match word {
            "" | "here" => Some(On::Here),
            "actions" => Some(On::Actions),
            _ => None,
        }
    }
}

/// What `plan` needs besides the project.
#[derive(Clone, Debug, Default)]
pub struct PlanOptions {
    /// Only these stories (keys or unique prefixes); others stay as they are.
    pub only: Vec<String>,
    /// Force an era instead of detecting it.
    pub era: Option<Era>,
    /// Review→fix rounds (default 3, at most 5).
    pub rounds: Option<u32>,
    /// Reviewers per round, in parallel (default 1, at most 4).
    pub reviewers: Option<u32>,
}

/// What `run` needs besides the epic.
pub struct EpicOptions<'a> {
    /// The project configuration.
    pub config: &'a Config,
    /// Which stories, which era, how many rounds.
    pub plan: PlanOptions,
    /// Stories run at once.
    pub parallel: usize,
    /// Where they run.
    pub on: On,
    /// Human checkpoints.
    pub gates: Gates,
    /// What the stories start from (default: HEAD of the main worktree).
    pub base: Option<String>,
    /// The remote pull requests go to.
    pub remote: String,
    /// Consecutive failed stories that stop the run (the circuit breaker).
    pub max_failures: u32,
    /// What the epic and each story may spend.
    pub budget: EpicBudget,
    /// A headless retrospective when every story is done.
    pub retro: bool,
    /// Called with every line of progress.
    pub progress: &'a (dyn Fn(&str) + Sync),
    /// Set when the user interrupts.
    pub interrupt: &'a AtomicBool,
    /// The policy every session of the run obeys (its hooks, what its checkpoints keep out).
    pub policy: &'a dyn session::Policy,
}

/// What a new run of an epic starts from: `base` (`--base`), else the branch checked out, as
/// a branch name so story PRs have a base to target; `None` on a detached HEAD.
pub(super) fn new_base(
    repo: &session::Repo,
    base: Option<&str>,
) -> Result<Option<String>, super::Error> {
    if let Some(base) = base {
        return Ok(Some(base.to_owned()));
    }
    Ok(session::repository::checked_out_branch(repo)?)
}
