//! The epic's human checkpoints: scope confirmation before the first
//! story, an integration checkpoint that is not green, a story whose dependency did not end
//! well, and completion; and, in every mode, what git-bmad's judge asks and what a v7 ticket
//! asks for itself (`hitl`, `plan_checkpoint`, a high `risk` before it starts; its
//! `done_checkpoint` after it). They are gates of the
//! epic's own session, journaled as `gate_opened` / `gate_answered` with the gate's id as the
//! event's step, so the morning report and `status` show them like any other gate and
//! `git bmad answer -s epic-<id>` answers them. One is open at a time; the run parks (exit 3)
//! and the answer continues it.
//!
//! Per-story completion is the story pipeline's own `accept` gate (`pipeline::story_playbook`).

use std::collections::BTreeMap;

use super::integration;
use super::judge::Concern;
use super::names::{self, COMPLETION};
use super::options::Gates;
use super::plan::{Action, Plan, Planned};
use super::state::EpicState;
use super::Error;
use crate::policy::secrets::redact;
use crate::session::run_state::{Answer, GateKind};
use crate::session::schema::Stage;
use crate::session::schema::{Body, GateAnswered, GateOpened};
use crate::session::{self, Decision, NewEvent, Repo, Session};

/// What a waiting story's dependencies decide when one did not end well: skip, pause, or
/// let a human override at a gate.
pub(super) enum Dependencies {
    /// Nothing against it; it may still wait for them to finish.
    Go,
    /// It is skipped, and why.
    Skip(String),
    /// With gates: a human decides first; the dependency that did not end well.
    Ask(String),
}

/// Decide for `story`; `failed_here` says which dependencies ended badly in this run.
pub(super) fn dependencies(
    plan: &Plan,
    story: &Planned,
    state: &EpicState,
    failed_here: impl Fn(&str) -> bool,
    mode: Gates,
) -> Dependencies {
    if let Some(dep) = story.depends_on.iter().find(|d| failed_here(d)) {
        let why = format!(
            "dependency {dep} is {}; resume after it is done",
            state.story(dep).stage
        );
        return match (mode, state.answers.get(&names::dependency(&story.key))) {
            (Gates::None, _) => Dependencies::Skip(why),
            (_, Some(Answer::Continue)) => Dependencies::Go,
            (_, Some(_)) => Dependencies::Skip(format!("{why} (a human chose to skip it)")),
            (_, None) => Dependencies::Ask(dep.clone()),
        };
    }
    if let Some(why) = person_said_no(plan, story, state) {
        return Dependencies::Skip(why);
    }
    for dep in &story.depends_on {
        if let Clearance::Hold(why) = clearance(plan, dep, state, mode) {
            return Dependencies::Skip(why);
        }
    }
    Dependencies::Go
}

/// Whether `story` may start now: its dependencies let it ([`dependencies_ready`]), a
/// person said go where its ticket asks for one, and no `done_checkpoint` pauses the run.
pub(super) fn ready(plan: &Plan, story: &Planned, state: &EpicState, mode: Gates) -> bool {
    (story.asks_first.is_none()
        || state.answers.get(&names::person_first(&story.key)) == Some(&Answer::Continue))
        && paused(plan, state).is_none()
        && dependencies_ready(plan, story, state, mode)
}

/// Whether `story`'s dependencies let it start now: each is done and cleared by its
/// integration checkpoint (or not run by this epic), or a human said `continue` to running
/// it though one did not end well.
fn dependencies_ready(plan: &Plan, story: &Planned, state: &EpicState, mode: Gates) -> bool {
    state.answers.get(&names::dependency(&story.key)) == Some(&Answer::Continue)
        || story.depends_on.iter().all(|d| {
            plan.story(d).is_none_or(|p| p.action != Action::Run)
                || (state.story(d).stage == Stage::Done
                    && clearance(plan, d, state, mode) == Clearance::Clear)
        })
}

/// v7: the ticket done in this run whose `done_checkpoint` pauses it: no person has said
/// continue after it yet.
fn paused<'p>(plan: &'p Plan, state: &EpicState) -> Option<&'p Planned> {
    plan.to_run().find(|s| {
        s.pauses_after
            && state.story(&s.key).stage == Stage::Done
            && state.answers.get(&names::done_checkpoint(&s.key)) != Some(&Answer::Continue)
    })
}

/// v7: why a person's answer keeps `story` from starting, if one does: `skip` or `abort`
/// at its own gate, or at a `done_checkpoint`'s.
fn person_said_no(plan: &Plan, story: &Planned, state: &EpicState) -> Option<String> {
    let no = |id: &str| state.answers.get(id).filter(|a| **a != Answer::Continue);
    if let Some(answer) = no(&names::person_first(&story.key)) {
        return Some(format!(
            "a person answered {} at its gate: it is theirs to do",
            answer.as_str()
        ));
    }
    let after = plan
        .to_run()
        .find(|s| s.pauses_after && no(&names::done_checkpoint(&s.key)).is_some())?;
    Some(format!(
        "a person stopped the run after {} (its done_checkpoint)",
        after.key
    ))
}

/// v7: the next gate a ticket itself asks for, in every mode (the project asks, not the
/// run): work paused after a `done_checkpoint`, then a ticket that waits for a person and
/// could start now.
fn ticket_gate(plan: &Plan, state: &EpicState, mode: Gates) -> Option<(String, String, String)> {
    if let Some(s) = paused(plan, state) {
        let id = names::done_checkpoint(&s.key);
        if state.answers.contains_key(&id) {
            return None;
        }
        let question = format!(
            "Work pauses after {} (its done_checkpoint). Review it; continue starts what follows, skip or abort starts nothing more in this run.",
            s.key
        );
        let pr = state.story(&s.key).detail.pr;
        let evidence = format!("{}: {}", s.key, pr.as_deref().unwrap_or("no pull request"));
        return Some((id, question, evidence));
    }
    let s = plan.to_run().find(|s| {
        s.asks_first.is_some()
            && state.story(&s.key).stage == Stage::NotStarted
            && !state.answers.contains_key(&names::person_first(&s.key))
            && dependencies_ready(plan, s, state, mode)
    })?;
    let why = s.asks_first.as_deref().unwrap_or_default();
    let question = format!(
        "{} waits for a person before it starts ({why}). continue starts it; skip or abort leaves it to a person, and what depends on it waits.",
        s.key
    );
    let evidence = s.file.clone().unwrap_or_default();
    Some((names::person_first(&s.key), question, evidence))
}

/// What waits for a human at the end of a run, besides the epic's integration checkpoints.
pub(super) struct Waiting<'a> {
    /// Stories whose dependency did not end well (story → dependency; with gates).
    pub(super) dependencies: &'a BTreeMap<String, String>,
    /// Stories git-bmad's judge asks about (in every mode, as a pipeline's own gates).
    pub(super) judge: &'a BTreeMap<String, Concern>,
    /// The epic is through: its completion is to be signed off (with gates).
    pub(super) complete: bool,
}

/// Open the next gate a human must answer, if any: what the judge asks about a story, an
/// integration checkpoint that is not green, a story whose dependency did not end well,
/// then, when the epic is through, its completion.
pub(super) fn open_next(
    repo: &Repo,
    epic: &Session,
    plan: &Plan,
    state: &mut EpicState,
    mode: Gates,
    waiting: &Waiting<'_>,
) -> Result<(), Error> {
    if let Some((key, concern)) = waiting.judge.iter().next() {
        let question = format!(
            "git-bmad's judge stopped {key} before its push: it {}. continue lets that stand and judges {key} on (its tests still run on the pushed commit); skip or abort fails {key}.",
            concern.summary()
        );
        return open(
            repo,
            epic,
            state,
            &names::judge(key),
            &question,
            &concern.evidence(),
        );
    }
    if let Some((id, question, evidence)) = ticket_gate(plan, state, mode) {
        return open(repo, epic, state, &id, &question, &evidence);
    }
    if mode == Gates::None {
        return Ok(());
    }
    if let Some((id, question, evidence)) = integration_gate(plan, state, mode) {
        return open(repo, epic, state, &id, &question, &evidence);
    }
    if let Some((key, dep)) = waiting.dependencies.iter().next() {
        let d = state.story(dep);
        let question = format!(
            "{key} depends on {dep}, which is {}. continue runs {key} anyway (it builds on what {dep}'s branch holds); skip or abort leaves it for a human.",
            d.stage
        );
        let evidence = d.detail.reason.unwrap_or_default();
        return open(
            repo,
            epic,
            state,
            &names::dependency(key),
            &question,
            &evidence,
        );
    }
    if waiting.complete && !state.answers.contains_key(COMPLETION) {
        let (question, evidence) = completion_question(plan, state);
        return open(repo, epic, state, COMPLETION, &question, &evidence);
    }
    Ok(())
}

/// The kind of gate an id is: an integration checkpoint can be checked again (`retry`).
fn kind(id: &str) -> GateKind {
    if id.starts_with("integration:") {
        GateKind::After
    } else {
        GateKind::Before
    }
}

/// Open gate `id` in the epic's journal.
pub(super) fn open(
    repo: &Repo,
    epic: &Session,
    state: &mut EpicState,
    id: &str,
    question: &str,
    evidence: &str,
) -> Result<(), Error> {
    let kind = kind(id);
    let event = session::record(
        repo,
        epic,
        NewEvent::new(Body::GateOpened(GateOpened {
            kind,
            question: redact(question),
            evidence: redact(evidence),
            options: kind.options().to_vec(),
            confidence: serde_json::Value::Null,
        }))
        .step(Some(id.to_owned()))
        .decision(Some(Decision::Escalated))
        .trigger(Some("epic_checkpoint".into())),
    )?;
    state.apply(&event);
    Ok(())
}

/// Answer the open gate of the epic whose session is `epic` and whose journal replays to
/// `state`; returns the epic, for the run to continue.
pub fn answer(
    repo: &Repo,
    epic: &Session,
    state: &EpicState,
    reply: &str,
    message: Option<&str>,
) -> Result<String, Error> {
    let Some(started) = &state.started else {
        return Err(Error::NoRun(epic.name.clone()));
    };
    let Some(gate) = &state.gate else {
        return Err(Error::NoGate {
            epic: started.epic.clone(),
        });
    };
    let Some(answer) = Answer::parse(reply).filter(|a| gate.options.contains(a)) else {
        return Err(Error::UnknownAnswer {
            reply: reply.to_owned(),
            gate: gate.id.clone(),
            options: gate.options.iter().map(|a| a.as_str()).collect(),
        });
    };
    session::record(
        repo,
        epic,
        NewEvent::new(Body::GateAnswered(GateAnswered {
            answer: Some(answer),
            kind: Some(kind(&gate.id)),
            gate_seq: Some(gate.seq),
        }))
        .step(Some(gate.id.clone()))
        .decision(Some(Decision::Human))
        .trigger(Some("epic_checkpoint".into()))
        // What a human types can hold a token as well as anything else bound for the journal.
        .response(Some(crate::policy::secrets::redact(
            message.unwrap_or(answer.as_str()),
        ))),
    )?;
    Ok(started.epic.clone())
}

/// Whether a dependency lets its dependents start, as far as its integration checkpoint
/// goes.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Clearance {
    /// Start them.
    Clear,
    /// Not yet: the checkpoint is to run, or a human is to answer it.
    Wait,
    /// Never in this run, and why.
    Hold(String),
}

pub(super) fn clearance(plan: &Plan, dep: &str, state: &EpicState, mode: Gates) -> Clearance {
    if !plan.story(dep).is_some_and(|p| p.integration_checkpoint) {
        return Clearance::Clear;
    }
    let Some(checked) = state.story(dep).integration else {
        return Clearance::Wait;
    };
    if checked.light == "green" {
        return Clearance::Clear;
    }
    match state.answers.get(&names::integration(dep)) {
        Some(Answer::Continue) => Clearance::Clear,
        Some(_) => Clearance::Hold(format!(
            "a human stopped at the integration checkpoint after {dep}"
        )),
        // Without human checkpoints, warnings go on and failures hold.
        None if mode == Gates::None && checked.light == "yellow" => Clearance::Clear,
        None if mode == Gates::None => Clearance::Hold(format!(
            "the integration checkpoint after {dep} is {}; fix {dep}'s branch, then git bmad epic resume {} checks it again",
            integration::summary(&checked),
            plan.epic
        )),
        None => Clearance::Wait,
    }
}

/// The first integration checkpoint a human must answer before waiting stories can start.
pub(super) fn integration_gate(
    plan: &Plan,
    state: &EpicState,
    mode: Gates,
) -> Option<(String, String, String)> {
    let dep = plan.to_run().find(|d| {
        clearance(plan, &d.key, state, mode) == Clearance::Wait
            && state.story(&d.key).integration.is_some()
            && plan
                .to_run()
                .any(|s| s.depends_on.contains(&d.key) && !state.story(&s.key).is_terminal())
    })?;
    let checked = state.story(&dep.key).integration?;
    let question = format!(
        "The integration checkpoint after {} is {}. continue starts {} anyway; retry checks again (after you fix {}'s branch); skip or abort leaves them for a human.",
        dep.key,
        checked.light.to_uppercase(),
        checked.dependents.join(", "),
        dep.key
    );
    Some((
        names::integration(&dep.key),
        question,
        integration::summary(&checked),
    ))
}

/// The completion gate: what the epic came to, for a human to sign off.
pub(super) fn completion_question(plan: &Plan, state: &EpicState) -> (String, String) {
    let mut counts: BTreeMap<String, u32> = BTreeMap::new();
    let mut evidence = String::new();
    for s in plan.to_run() {
        let st = state.story(&s.key);
        *counts.entry(st.stage.as_str().to_owned()).or_insert(0) += 1;
        let pr = st.detail.pr.as_deref().unwrap_or("no pull request");
        evidence.push_str(&format!("{}: {} ({pr})\n", s.key, st.stage));
    }
    let counts: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let question = format!(
        "Epic {} is through: {}. Review the pull requests; continue signs the epic off, abort records that it was not.",
        plan.epic,
        counts.join(", ")
    );
    (question, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::epic::pipeline::Era;
    use crate::session::schema::IntegrationChecked;

    /// Two stories to run, `b` depending on `a`; `a` has its integration checkpoint.
    fn plan() -> Plan {
        let story = |key: &str, depends_on: &[&str], checkpoint: bool| Planned {
            key: key.into(),
            title: None,
            status: crate::bmad::status::Status::Backlog,
            file: None,
            action: Action::Run,
            depends_on: depends_on.iter().map(|d| d.to_string()).collect(),
            touches: Vec::new(),
            refactor: false,
            wave: None,
            stacked_on: None,
            merges: Vec::new(),
            overlaps: Vec::new(),
            integration_checkpoint: checkpoint,
            asks_first: None,
            pauses_after: false,
            stages: Vec::new(),
        };
        Plan {
            epic: "1".into(),
            era: Era::V6,
            era_evidence: "--era v6".into(),
            pipeline: "p".into(),
            rounds: 1,
            reviewers: 1,
            stories: vec![story("a", &[], true), story("b", &["a"], false)],
            waves: Vec::new(),
        }
    }

    fn with_stage(state: &mut EpicState, key: &str, stage: Stage) {
        state.stories.entry(key.into()).or_default().stage = stage;
    }

    #[test]
    fn a_dependency_that_ended_badly_asks_a_human_with_gates_and_skips_without() {
        let plan = plan();
        let b = plan.story("b").unwrap();
        let mut state = EpicState::default();
        with_stage(&mut state, "a", Stage::Failed);
        let failed = |d: &str| d == "a";
        let decide = |state: &EpicState, mode| dependencies(&plan, b, state, failed, mode);
        match decide(&state, Gates::None) {
            Dependencies::Skip(why) => assert!(why.contains("dependency a is failed"), "{why}"),
            _ => panic!("without gates, a failed dependency skips its dependent"),
        }
        assert!(matches!(decide(&state, Gates::PerEpic), Dependencies::Ask(d) if d == "a"));
        state
            .answers
            .insert(names::dependency("b"), Answer::Continue);
        assert!(matches!(decide(&state, Gates::PerEpic), Dependencies::Go));
        assert!(
            ready(&plan, b, &state, Gates::PerEpic),
            "a human said continue"
        );
        state.answers.insert(names::dependency("b"), Answer::Skip);
        match decide(&state, Gates::PerEpic) {
            Dependencies::Skip(why) => assert!(why.contains("a human chose to skip it")),
            _ => panic!("a human's skip skips"),
        }
    }

    #[test]
    fn a_dependent_waits_for_its_dependency_and_a_checkpoint_that_clears_it() {
        let plan = plan();
        let b = plan.story("b").unwrap();
        let mut state = EpicState::default();
        assert!(!ready(&plan, b, &state, Gates::PerEpic), "a is not done");
        with_stage(&mut state, "a", Stage::Done);
        assert!(
            !ready(&plan, b, &state, Gates::PerEpic),
            "a's integration checkpoint has not run"
        );
        let checked = |light: &str| IntegrationChecked {
            light: light.into(),
            dependents: vec!["b".into()],
            ..IntegrationChecked::default()
        };
        state.stories.get_mut("a").unwrap().integration = Some(checked("green"));
        assert!(ready(&plan, b, &state, Gates::PerEpic));
        state.stories.get_mut("a").unwrap().integration = Some(checked("red"));
        assert_eq!(
            clearance(&plan, "a", &state, Gates::PerEpic),
            Clearance::Wait
        );
        assert!(matches!(
            clearance(&plan, "a", &state, Gates::None),
            Clearance::Hold(why) if why.contains("fix a's branch")
        ));
        state.stories.get_mut("a").unwrap().integration = Some(checked("yellow"));
        assert_eq!(clearance(&plan, "a", &state, Gates::None), Clearance::Clear);
        state.stories.get_mut("a").unwrap().integration = Some(checked("red"));
        state
            .answers
            .insert(names::integration("a"), Answer::Continue);
        assert!(
            ready(&plan, b, &state, Gates::PerEpic),
            "a human let b go on"
        );
    }

    #[test]
    fn a_ticket_that_asks_for_a_person_waits_for_continue_and_a_done_checkpoint_pauses_the_run() {
        let mut plan = plan();
        plan.stories[0].asks_first = Some("hitl".into());
        plan.stories[0].integration_checkpoint = false;
        let mut state = EpicState::default();
        let gate = |plan: &Plan, state: &EpicState| ticket_gate(plan, state, Gates::None);
        assert!(!ready(&plan, &plan.stories[0], &state, Gates::None));
        assert_eq!(gate(&plan, &state).unwrap().0, names::person_first("a"));
        state
            .answers
            .insert(names::person_first("a"), Answer::Continue);
        assert!(ready(&plan, &plan.stories[0], &state, Gates::None));
        assert!(gate(&plan, &state).is_none());

        plan.stories[0].pauses_after = true;
        with_stage(&mut state, "a", Stage::Done);
        assert!(!ready(&plan, &plan.stories[1], &state, Gates::None));
        assert_eq!(gate(&plan, &state).unwrap().0, names::done_checkpoint("a"));
        state
            .answers
            .insert(names::done_checkpoint("a"), Answer::Skip);
        assert!(gate(&plan, &state).is_none(), "answered");
        match dependencies(&plan, &plan.stories[1], &state, |_| false, Gates::None) {
            Dependencies::Skip(why) => assert!(why.contains("stopped the run after a"), "{why}"),
            _ => panic!("a person's skip at a done_checkpoint starts nothing more"),
        }
        state
            .answers
            .insert(names::done_checkpoint("a"), Answer::Continue);
        assert!(ready(&plan, &plan.stories[1], &state, Gates::None));
    }
}
