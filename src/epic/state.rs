//! An epic run's state, replayed from the epic session's journal: the options it runs with
//! and where each story stands. Nothing else is kept anywhere.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::session::schema::{Body, EpicStarted, StoryStage};
use crate::session::Event;

/// Where one story stands.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StoryState {
    /// The last stage it reached.
    pub stage: String,
    /// Everything its stages recorded, newest value of each field.
    #[serde(flatten)]
    pub detail: StoryStage,
    /// When it started and when it last moved (RFC 3339).
    pub started_at: Option<String>,
    /// When it reached its last stage.
    pub updated_at: Option<String>,
    /// How many times it was started (1 plus resumes after a failure or gate).
    pub attempts: u32,
}

impl StoryState {
    /// A story that needs nothing more from this run: done, or blocked for a human.
    pub fn is_terminal(&self) -> bool {
        matches!(self.stage.as_str(), "done" | "blocked")
    }
}

/// The epic run, replayed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EpicState {
    /// The newest `epic_started`.
    pub started: Option<EpicStarted>,
    /// Stories by key.
    pub stories: BTreeMap<String, StoryState>,
    /// The newest `epic_finished` came after the newest stage: nothing moved since.
    pub finished: bool,
    /// Events replayed.
    pub events: usize,
}

impl EpicState {
    /// Replay an epic session's journal.
    pub fn replay<'a>(events: impl IntoIterator<Item = &'a Event>) -> EpicState {
        let mut state = EpicState::default();
        for event in events {
            state.apply(event);
        }
        state
    }

    /// Fold one more event in.
    pub fn apply(&mut self, event: &Event) {
        self.events += 1;
        match &event.body {
            Body::EpicStarted(started) => {
                self.started = Some(started.clone());
                self.finished = false;
            }
            Body::EpicFinished(_) => self.finished = true,
            Body::StoryStage(stage) => {
                let Some(key) = &event.step else { return };
                let story = self.stories.entry(key.clone()).or_default();
                if stage.stage == "started" {
                    story.attempts += 1;
                    story.started_at.get_or_insert_with(|| event.ts.clone());
                }
                story.stage = stage.stage.clone();
                story.updated_at = Some(event.ts.clone());
                merge(&mut story.detail, stage);
                self.finished = false;
            }
            _ => {}
        }
    }

    /// A story's state (a default, stage `""`, for one never started).
    pub fn story(&self, key: &str) -> StoryState {
        self.stories.get(key).cloned().unwrap_or_default()
    }
}

/// Keep the newest value of every field a stage sets.
fn merge(into: &mut StoryStage, from: &StoryStage) {
    into.stage = from.stage.clone();
    macro_rules! newest {
        ($($field:ident),*) => { $( if from.$field.is_some() { into.$field = from.$field.clone(); } )* };
    }
    newest!(
        session,
        branch,
        base,
        baseline,
        pr,
        rounds,
        findings_fixed,
        invocations,
        cost_usd,
        run_time_ms
    );
    // A reason belongs to the stage that gave it.
    into.reason = from.reason.clone();
}
