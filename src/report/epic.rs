//! An epic run's card: where the run stands (a stopped run is stopped, not running), every
//! story of it with its stage, pull request or reason (skipped ones too), and what waits for
//! whom. Read from the epic session's journal through [`EpicState`], the one replay of it.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Outcome;
use crate::session::epic_state::EpicState;
use crate::session::schema::{Body, Stage};
use crate::session::Event;

/// One epic run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EpicCard {
    /// The epic (`3`).
    pub epic: String,
    /// The epic's session.
    pub session: String,
    /// Where the run stands.
    pub outcome: Outcome,
    /// Why it stopped or how it ended badly, when it did.
    pub stopped: Option<String>,
    /// What waits for a human, and how to answer, one line each.
    pub waiting: Vec<String>,
    /// Stories by stage (`done`, `failed`, `skipped`, `queued`, …).
    pub counts: BTreeMap<String, usize>,
    /// Every story of the run, in the run's order.
    pub stories: Vec<EpicStory>,
}

/// One story of an epic run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EpicStory {
    /// Its key.
    pub key: String,
    /// Its stage (`queued` when not started).
    pub stage: String,
    /// Its pull request, or the command that opens one.
    pub pr: Option<String>,
    /// Why it failed, was skipped, is blocked or waits.
    pub reason: Option<String>,
    /// What git-bmad's own test run found, for a done story.
    pub tests: Option<String>,
}

/// The card of the session named `session`, when its journal holds an epic run.
pub fn card(session: &str, events: &[Event]) -> Option<EpicCard> {
    if !events
        .iter()
        .any(|e| matches!(e.body, Body::EpicStarted(_)))
    {
        return None;
    }
    let state = EpicState::replay(events);
    let started = state.started.as_ref()?;
    let mut keys = started.stories.clone();
    keys.extend(
        state
            .stories
            .keys()
            .filter(|k| !started.stories.contains(k))
            .cloned(),
    );
    let mut stories = Vec::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut waiting = Vec::new();
    let mut ended_badly = 0;
    if let Some(gate) = &state.gate {
        let options: Vec<&str> = gate.options.iter().map(|a| a.as_str()).collect();
        waiting.push(format!(
            "the epic waits at its {} gate: {} (git bmad answer -s {} <{}>)",
            gate.id,
            gate.question,
            session,
            options.join("|")
        ));
    }
    for key in keys {
        let story = state.story(&key);
        let stage = match story.stage {
            Stage::NotStarted => "queued".to_owned(),
            stage => stage.as_str().to_owned(),
        };
        match story.stage {
            Stage::Gated => waiting.push(format!(
                "{key} waits at a gate of its own session (git bmad answer -s {})",
                story.detail.session.as_deref().unwrap_or(&key)
            )),
            Stage::Blocked => waiting.push(format!(
                "{key} is blocked: {}",
                story
                    .detail
                    .reason
                    .as_deref()
                    .unwrap_or("no condition written")
            )),
            _ => {}
        }
        if matches!(story.stage, Stage::Failed | Stage::Skipped) {
            ended_badly += 1;
        }
        *counts.entry(stage.clone()).or_default() += 1;
        let done = story.stage == Stage::Done;
        stories.push(EpicStory {
            key,
            stage,
            pr: story.detail.pr.clone().filter(|_| done),
            reason: story.detail.reason.clone().filter(|_| !done),
            tests: story.detail.tests.clone().filter(|_| done),
        });
    }
    let (outcome, stopped) = if !waiting.is_empty() {
        (Outcome::Parked, state.stopped.clone())
    } else if state.finished && state.stopped.is_some() {
        (Outcome::Failed, state.stopped.clone())
    } else if state.finished && ended_badly > 0 {
        let why = format!("finished with {ended_badly} stories failed or skipped");
        (Outcome::Failed, Some(why))
    } else if state.finished {
        (Outcome::Done, None)
    } else {
        (Outcome::Running, None)
    };
    Some(EpicCard {
        epic: started.epic.clone(),
        session: session.to_owned(),
        outcome,
        stopped,
        waiting,
        counts,
        stories,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(kind: &str, step: Option<&str>, detail: serde_json::Value) -> Event {
        let mut event = Event::for_test(1, kind, detail);
        event.step = step.map(str::to_owned);
        event
    }

    fn stage(key: &str, stage: &str, reason: Option<&str>, pr: Option<&str>) -> Event {
        event(
            "story_stage",
            Some(key),
            json!({"stage": stage, "reason": reason, "pr": pr}),
        )
    }

    fn started(stories: &[&str]) -> Event {
        event(
            "epic_started",
            None,
            json!({"epic": "3", "era": "v6", "pipeline": "p", "base": "main", "stories": stories}),
        )
    }

    #[test]
    fn a_stopped_epic_is_stopped_and_every_story_is_on_its_card() {
        let mut events = vec![
            started(&["3-1", "3-2", "3-3", "3-4"]),
            stage("3-1", "started", None, None),
            stage("3-1", "done", None, Some("https://x/pull/1")),
            stage("3-2", "failed", Some("`./test.sh` fails"), None),
            stage("3-3", "skipped", Some("dependency 3-2 is failed"), None),
        ];
        let running = card("epic-3", &events).unwrap();
        assert_eq!(running.outcome, Outcome::Running);
        events.push(event(
            "epic_finished",
            None,
            json!({"counts": {}, "stopped": "circuit breaker: 2 stories failed in a row"}),
        ));
        let stopped = card("epic-3", &events).unwrap();
        assert_eq!(stopped.outcome, Outcome::Failed);
        assert_eq!(
            stopped.stopped.as_deref(),
            Some("circuit breaker: 2 stories failed in a row")
        );
        let line = |key: &str| stopped.stories.iter().find(|s| s.key == key).unwrap();
        assert_eq!(line("3-1").pr.as_deref(), Some("https://x/pull/1"));
        assert_eq!(line("3-3").stage, "skipped");
        assert_eq!(
            line("3-3").reason.as_deref(),
            Some("dependency 3-2 is failed")
        );
        assert_eq!(line("3-4").stage, "queued");
        assert_eq!(stopped.counts.get("skipped"), Some(&1));

        // Finished without a stop, but not every story done: not a success either.
        events.pop();
        events.push(event("epic_finished", None, json!({"counts": {}})));
        let finished = card("epic-3", &events).unwrap();
        assert_eq!(finished.outcome, Outcome::Failed);
        assert_eq!(
            finished.stopped.as_deref(),
            Some("finished with 2 stories failed or skipped")
        );
    }

    #[test]
    fn what_waits_for_a_human_is_said_with_how_to_answer() {
        let events = vec![
            started(&["3-1", "3-2"]),
            stage("3-1", "gated", Some("review wants a human"), None),
            stage("3-2", "blocked", Some("needs an API key"), None),
        ];
        let card = card("epic-3", &events).unwrap();
        assert_eq!(card.outcome, Outcome::Parked);
        assert_eq!(
            card.waiting,
            vec![
                "3-1 waits at a gate of its own session (git bmad answer -s 3-1)".to_owned(),
                "3-2 is blocked: needs an API key".to_owned(),
            ]
        );
        assert_eq!(super::card("feat", &[stage("x", "done", None, None)]), None);
    }
}
