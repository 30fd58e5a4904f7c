//! What one story's worker needs, owned: built from the plan and the epic's journal, the
//! same here and on a runner that read them from the remote.

use std::path::{Path, PathBuf};

use super::names;
use super::options::EpicOptions;
use super::pipeline;
use super::plan::{Plan, Planned};
use super::playbooks;
use super::state::EpicState;
use crate::session::schema::Answer;
use crate::supervisor::Source;

/// Everything a worker needs, owned.
pub struct Job {
    pub(super) main: PathBuf,
    pub(super) story: Planned,
    pub(super) source: Source,
    pub(super) era: pipeline::Era,
    pub(super) base: String,
    pub(super) merges: Vec<String>,
    pub(super) known: super::state::StoryState,
    pub(super) remote: String,
    /// What the story's session may spend in all, of the epic's budget: dollars, time in
    /// steps.
    pub(super) limits: super::state::StoryLimits,
    /// The epic it belongs to.
    pub(super) epic: String,
    /// Every other story's key and `touches`: what it must leave to them.
    pub(super) others: Vec<(String, Vec<String>)>,
    /// A human's answer at the story's judge gate, when one was asked.
    pub(super) judge_answer: Option<Answer>,
    /// On a runner: each step's end waits until the session is pushed.
    pub(super) pushes: bool,
}

/// What a story's worker needs: here, or on a runner that read the same plan and journal.
pub(super) fn job(
    main: &Path,
    plan: &Plan,
    story: &Planned,
    state: &EpicState,
    epic_base: &str,
    options: &EpicOptions<'_>,
) -> Job {
    Job {
        main: main.to_path_buf(),
        story: story.clone(),
        source: playbooks::story_playbook(main, plan, story, options.gates),
        era: plan.era,
        base: story
            .stacked_on
            .as_ref()
            .and_then(|d| state.story(d).detail.branch.clone())
            .unwrap_or_else(|| epic_base.to_owned()),
        merges: story
            .merges
            .iter()
            .filter_map(|m| state.story(m).detail.branch.clone())
            .collect(),
        known: state.story(&story.key),
        remote: options.remote.clone(),
        limits: state.story_limits(&story.key, &options.budget),
        epic: plan.epic.clone(),
        others: plan
            .stories
            .iter()
            .filter(|s| s.key != story.key && !s.touches.is_empty())
            .map(|s| (s.key.clone(), s.touches.clone()))
            .collect(),
        judge_answer: state.answers.get(&names::judge(&story.key)).copied(),
        pushes: false,
    }
}
