//! Running an epic: stories scheduled by dependency and `touches`, each in its own session
//! (branch + worktree) running its era's pipeline through the supervisor, verified by
//! git-bmad itself, committed and offered as a draft pull request, never merged.
//!
//! The epic's own session (`epic-<id>`) holds the journal: one `story_stage` event per stage
//! of every story, written only by this thread, so the record is ordered however many
//! stories run at once. Workers run in threads, each with its own repository handle, and
//! send their stages here. Resume replays that journal: done stories are never run again, a
//! story in flight continues in its session where its own journal says.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use serde::Serialize;

use super::pipeline::{self, Shape};
use super::plan::{self, Action, Plan, PlanOptions, Planned};
use super::state::EpicState;
use super::story::{run_story, Job};
use super::Error;
use crate::bmad::project::Project;
use crate::config::Config;
use crate::session::schema::{Body, EpicFinished, EpicStarted, StoryStage};
use crate::session::{self, closeout, Decision, NewEvent, Repo, Session, StartOptions};
use crate::supervisor::{self, Source};

/// Human checkpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Gates {
    /// None beyond the pipeline's own (a review that does not converge, a failure).
    None,
    /// Every story waits for a human before it counts as done.
    PerStory,
}

impl Gates {
    /// `none`, `per-story`.
    pub fn as_str(self) -> &'static str {
        match self {
            Gates::None => "none",
            Gates::PerStory => "per-story",
        }
    }

    /// The mode a word names.
    pub fn parse(word: &str) -> Option<Gates> {
        match word {
            "none" => Some(Gates::None),
            "per-story" => Some(Gates::PerStory),
            _ => None,
        }
    }
}

/// What `run` needs besides the epic.
pub struct EpicOptions<'a> {
    /// The project configuration.
    pub config: &'a Config,
    /// Which stories, which era, how many rounds.
    pub plan: PlanOptions,
    /// Stories run at once.
    pub parallel: usize,
    /// Human checkpoints.
    pub gates: Gates,
    /// What the stories start from (default: HEAD of the main worktree).
    pub base: Option<String>,
    /// The remote pull requests go to.
    pub remote: String,
    /// Consecutive failed stories that stop the run (the circuit breaker).
    pub max_failures: u32,
    /// Called with every line of progress.
    pub progress: &'a (dyn Fn(&str) + Sync),
    /// Set when the user interrupts.
    pub interrupt: &'a AtomicBool,
}

/// How an epic run ended.
#[derive(Debug, Serialize)]
pub struct EpicRun {
    /// The plan it followed.
    pub plan: Plan,
    /// The epic session that holds its journal.
    pub session: String,
    /// The state after the run.
    pub state: EpicState,
    /// Stories waiting at a gate (exit 3).
    pub gated: Vec<String>,
    /// Stories that failed.
    pub failed: Vec<String>,
    /// Stories whose agent halted on a blocking condition: a human resolves it (exit 3).
    pub blocked: Vec<String>,
    /// The circuit breaker's reason, if it tripped.
    pub stopped: Option<String>,
    /// Interrupted: state saved, `epic resume` continues.
    pub interrupted: bool,
}

/// The epic session's name.
pub fn session_name(epic: &str) -> String {
    format!("epic-{}", story_session_name(epic))
}

/// The branch a story's session works on (`bmad/<key>` with the default prefix).
pub fn story_branch(config: &Config, key: &str) -> String {
    let branch = config.branch_for(&story_session_name(key));
    branch.trim_start_matches("refs/heads/").to_owned()
}

/// A story's session name: its key, with what a session name cannot hold (a stories-mode
/// key's `/`) made `-`.
pub(super) fn story_session_name(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Plan the epic from the main worktree's files.
pub fn plan_epic(repo: &Repo, epic: &str, options: &PlanOptions) -> Result<Plan, Error> {
    let main = repo.main_workdir().map_err(session::Error::from)?;
    let project = Project::load(&main, None)?;
    plan::plan(&project, epic, options)
}

/// The playbook a story runs: `.bmad/playbooks/<name>.yaml` in the main worktree if the team
/// wrote one, else the built-in text for its shape.
pub fn story_playbook(main: &Path, plan: &Plan, story: &Planned, gates: Gates) -> Source {
    let name = plan.era.playbook_name();
    let own = main
        .join(supervisor::PLAYBOOK_DIR)
        .join(format!("{name}.yaml"));
    if let Ok(text) = std::fs::read_to_string(&own) {
        return Source {
            name: name.to_owned(),
            origin: own.to_string_lossy().into_owned(),
            text,
        };
    }
    let mut text = pipeline::playbook(Shape {
        era: plan.era,
        has_file: story.file.is_some(),
        rounds: plan.rounds,
    });
    if gates == Gates::PerStory {
        text.push_str("  - id: accept\n    description: a human accepts the story before its pull request\n    runner: shell\n    command: \"true\"\n    autonomy: always_gate\n");
    }
    Source {
        name: name.to_owned(),
        origin: "built-in".into(),
        text,
    }
}

/// A message from a story's worker.
pub(super) enum Message {
    Stage(String, StoryStage),
    End(String, End),
}

/// How a worker's story ended in this run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum End {
    /// Done; the sprint status it should now have, if it lags.
    Done(Option<crate::bmad::status::Status>),
    Gated,
    Failed,
    Blocked,
    /// Not started: a dependency ended badly.
    Skipped,
    Interrupted,
}

/// A story this invocation has still to take up: not running, not ended here, not finished
/// in an earlier one.
fn waiting(
    key: &str,
    running: &HashSet<String>,
    ended_here: &HashMap<String, End>,
    state: &EpicState,
) -> bool {
    !running.contains(key) && !ended_here.contains_key(key) && !state.story(key).is_terminal()
}

/// Run (or resume) an epic.
pub fn run(repo: &Repo, epic: &str, options: &EpicOptions<'_>) -> Result<EpicRun, Error> {
    let main = repo.main_workdir().map_err(session::Error::from)?;
    let plan = plan_epic(repo, epic, &options.plan)?;
    let epic_session = epic_session(repo, epic, options.base.as_deref())?;
    let journal = session::read_journal(repo, &epic_session.id)?;
    let mut state = EpicState::replay(journal.events());
    let started = EpicStarted {
        epic: epic.to_owned(),
        era: plan.era.as_str().to_owned(),
        pipeline: plan.pipeline.clone(),
        base: epic_session.base.clone(),
        stories: plan.to_run().map(|s| s.key.clone()).collect(),
        parallel: options.parallel as u32,
        gates: options.gates.as_str().to_owned(),
        rounds: plan.rounds,
        remote: options.remote.clone(),
        max_failures: options.max_failures,
    };
    // A story that halted blocked runs again once a human has resolved it in its session
    // (its file there no longer says blocked): the journal then forgets the old stage.
    for key in unblocked(repo, &plan, &state)? {
        if let Some(story) = state.stories.get_mut(&key) {
            story.stage = UNBLOCKED.into();
        }
    }
    let all_settled = plan.to_run().all(|s| state.story(&s.key).is_terminal());
    // Run again after it finished: nothing to do, nothing written.
    if state.finished && all_settled {
        return Ok(finished_run(plan, epic_session, state, None, false));
    }
    if state.started.as_ref() != Some(&started) {
        record(
            repo,
            &epic_session,
            &mut state,
            None,
            Body::EpicStarted(started),
        )?;
    }
    let mut running: HashSet<String> = HashSet::new();
    let mut ended_here: HashMap<String, End> = HashMap::new();
    let mut consecutive_failures = 0u32;
    let mut stopped: Option<String> = None;
    let (tx, rx) = mpsc::channel::<Message>();
    std::thread::scope(|scope| -> Result<(), Error> {
        loop {
            // Stories whose dependency ended badly in this run are skipped, with the reason.
            for story in plan.to_run() {
                if !waiting(&story.key, &running, &ended_here, &state) {
                    continue;
                }
                let ended_badly = |d: &&String| {
                    ended_here
                        .get(*d)
                        .is_some_and(|e| !matches!(e, End::Done(_) | End::Interrupted))
                };
                if let Some(dep) = story.depends_on.iter().find(ended_badly) {
                    let why = format!(
                        "dependency {dep} is {}; resume after it is done",
                        state.story(dep).stage
                    );
                    (options.progress)(&format!("{}: skipped: {why}", story.key));
                    let stage = StoryStage {
                        stage: "skipped".into(),
                        reason: Some(why),
                        ..Default::default()
                    };
                    record_stage(repo, &epic_session, &mut state, &story.key, stage)?;
                    ended_here.insert(story.key.clone(), End::Skipped);
                }
            }
            let interrupted = options.interrupt.load(Ordering::SeqCst);
            if stopped.is_none() && !interrupted {
                for story in plan.to_run() {
                    if running.len() >= options.parallel.max(1) {
                        break;
                    }
                    if !waiting(&story.key, &running, &ended_here, &state) {
                        continue;
                    }
                    let deps_done = story.depends_on.iter().all(|d| {
                        plan.story(d).is_none_or(|p| p.action != Action::Run)
                            || state.story(d).stage == "done"
                    });
                    let overlapping = story.overlaps.iter().any(|o| running.contains(o));
                    if !deps_done || overlapping {
                        continue;
                    }
                    running.insert(story.key.clone());
                    let base = story_base(story, &state, &epic_session);
                    let job = Job {
                        main: main.clone(),
                        story: story.clone(),
                        source: story_playbook(&main, &plan, story, options.gates),
                        era: plan.era,
                        base,
                        merges: story
                            .merges
                            .iter()
                            .filter_map(|m| state.story(m).detail.branch.clone())
                            .collect(),
                        known: state.story(&story.key),
                        remote: options.remote.clone(),
                    };
                    let tx = tx.clone();
                    let config = options.config;
                    let progress = options.progress;
                    let interrupt = options.interrupt;
                    (options.progress)(&format!("{}: starting", story.key));
                    scope.spawn(move || {
                        let key = job.story.key.clone();
                        let end =
                            run_story(&job, config, progress, interrupt, &tx).unwrap_or_else(|e| {
                                let _ = tx.send(Message::Stage(
                                    key.clone(),
                                    StoryStage {
                                        stage: "failed".into(),
                                        reason: Some(e.to_string()),
                                        ..Default::default()
                                    },
                                ));
                                End::Failed
                            });
                        let _ = tx.send(Message::End(key, end));
                    });
                }
            }
            if running.is_empty() {
                return Ok(());
            }
            let Ok(message) = rx.recv() else {
                return Ok(());
            };
            match message {
                Message::Stage(key, stage) => {
                    (options.progress)(&stage_line(&key, &stage));
                    record_stage(repo, &epic_session, &mut state, &key, stage)?;
                }
                Message::End(key, end) => {
                    running.remove(&key);
                    match end.clone() {
                        End::Failed => consecutive_failures += 1,
                        End::Done(Some(to)) => {
                            consecutive_failures = 0;
                            sync_sprint_status(repo, &epic_session, &key, to)?;
                        }
                        End::Done(None) => consecutive_failures = 0,
                        _ => {}
                    }
                    if consecutive_failures >= options.max_failures.max(1) && stopped.is_none() {
                        stopped = Some(format!(
                            "circuit breaker: {consecutive_failures} stories failed in a row; nothing new is started"
                        ));
                        (options.progress)(stopped.as_deref().unwrap_or_default());
                    }
                    ended_here.insert(key, end);
                }
            }
        }
    })?;
    let interrupted = options.interrupt.load(Ordering::SeqCst)
        || ended_here.values().any(|e| *e == End::Interrupted);
    let gated: Vec<String> = keys_with(&ended_here, &[End::Gated]);
    let settled = plan.to_run().all(|s| {
        let st = state.story(&s.key);
        st.is_terminal() || matches!(st.stage.as_str(), "failed" | "skipped")
    });
    if !interrupted && gated.is_empty() && (settled || stopped.is_some()) {
        let mut counts = BTreeMap::new();
        for s in plan.to_run() {
            *counts.entry(state.story(&s.key).stage).or_insert(0) += 1;
        }
        record(
            repo,
            &epic_session,
            &mut state,
            None,
            Body::EpicFinished(EpicFinished {
                counts,
                stopped: stopped.clone(),
            }),
        )?;
    }
    write_progress(repo, &epic_session, &plan, &state)?;
    let mut out = finished_run(plan, epic_session, state, stopped, interrupted);
    out.gated = gated;
    out.failed = keys_with(&ended_here, &[End::Failed]);
    // Blocked in this run or before, and not yet resolved: still waiting for a human.
    out.blocked = out
        .plan
        .to_run()
        .filter(|s| out.state.story(&s.key).stage == "blocked")
        .map(|s| s.key.clone())
        .collect();
    Ok(out)
}

fn keys_with(ended: &HashMap<String, End>, ends: &[End]) -> Vec<String> {
    let mut keys: Vec<String> = ended
        .iter()
        .filter(|(_, e)| ends.contains(e))
        .map(|(k, _)| k.clone())
        .collect();
    keys.sort();
    keys
}

fn finished_run(
    plan: Plan,
    session: Session,
    state: EpicState,
    stopped: Option<String>,
    interrupted: bool,
) -> EpicRun {
    EpicRun {
        plan,
        session: session.id.to_string(),
        state,
        gated: Vec::new(),
        failed: Vec::new(),
        blocked: Vec::new(),
        stopped,
        interrupted,
    }
}

/// The in-memory stage of a story the journal says blocked and a human has since unblocked:
/// it runs its pipeline anew.
pub(super) const UNBLOCKED: &str = "unblocked";

/// The stories the journal says blocked whose file in their own session no longer does.
fn unblocked(repo: &Repo, plan: &Plan, state: &EpicState) -> Result<Vec<String>, Error> {
    let mut keys = Vec::new();
    for s in plan.to_run() {
        if state.story(&s.key).stage != "blocked" {
            continue;
        }
        let Some(session) = closeout::find_by_name(repo, &story_session_name(&s.key))? else {
            continue;
        };
        let project = Project::load(&session.worktree, None)?;
        let still = project
            .stories
            .iter()
            .find(|v| v.key == s.key)
            .is_none_or(|v| v.is_blocked());
        if !still {
            keys.push(s.key.clone());
        }
    }
    Ok(keys)
}

/// Write the epic's progress document on its branch and commit it, when it changed.
fn write_progress(
    repo: &Repo,
    epic: &Session,
    plan: &Plan,
    state: &EpicState,
) -> Result<(), Error> {
    let text = super::progress::render(plan, state);
    let path = epic.worktree.join(super::progress::path(&plan.epic));
    if std::fs::read_to_string(&path).is_ok_and(|now| now == text) {
        return Ok(());
    }
    // `write_atomically` makes `docs/progress/` when it is missing.
    crate::fs::write_atomically(&path, text.as_bytes(), None).map_err(|source| Error::Write {
        path: path.clone(),
        source,
    })?;
    closeout::commit_work(repo, epic, &format!("epic {}: progress", plan.epic))?;
    Ok(())
}

/// Move a finished story's sprint status on the epic's branch, signed and committed. The
/// story branches never touch sprint-status.yaml, so branches stacked on two stories merge
/// without a conflict on its adjacent lines.
fn sync_sprint_status(
    repo: &Repo,
    epic: &Session,
    key: &str,
    to: crate::bmad::status::Status,
) -> Result<(), Error> {
    let worktree = epic.open_worktree(repo)?;
    let handle = worktree.as_ref().unwrap_or(repo);
    let project = Project::load(handle.workdir(), None)?;
    super::set_story_status(
        &project,
        Some(handle),
        key,
        &to,
        "git-bmad epic runner",
        true,
    )?;
    closeout::commit_work(
        repo,
        epic,
        &format!("sprint-status: {key} is {to}\n\nBmad-Story: {key}"),
    )?;
    Ok(())
}

/// The epic's session: found by name, or started from `base`.
fn epic_session(repo: &Repo, epic: &str, base: Option<&str>) -> Result<Session, Error> {
    let name = session_name(epic);
    if let Some(s) = closeout::find_by_name(repo, &name)? {
        return Ok(s);
    }
    // A branch name, so story PRs have a base to target.
    let base = match base {
        Some(b) => b.to_owned(),
        None => repo
            .head_branch()
            .map_err(session::Error::from)?
            .map(|b| b.trim_start_matches("refs/heads/").to_owned())
            .unwrap_or_else(|| "HEAD".into()),
    };
    let started = session::start(
        repo,
        &StartOptions {
            name,
            base: Some(base),
            playbook: None,
        },
    )?;
    Ok(started.session)
}

/// What a story's branch starts from: the branch of the dependency it is stacked on, or the
/// epic's base.
fn story_base(story: &Planned, state: &EpicState, epic: &Session) -> String {
    story
        .stacked_on
        .as_ref()
        .and_then(|d| state.story(d).detail.branch.clone())
        .unwrap_or_else(|| epic.base.clone())
}

fn record(
    repo: &Repo,
    session: &Session,
    state: &mut EpicState,
    step: Option<String>,
    body: Body,
) -> Result<(), Error> {
    let event = session::record(
        repo,
        session,
        NewEvent::new(body)
            .step(step)
            .decision(Some(Decision::Auto)),
    )?;
    state.apply(&event);
    Ok(())
}

fn record_stage(
    repo: &Repo,
    session: &Session,
    state: &mut EpicState,
    key: &str,
    stage: StoryStage,
) -> Result<(), Error> {
    record(
        repo,
        session,
        state,
        Some(key.to_owned()),
        Body::StoryStage(stage),
    )
}

fn stage_line(key: &str, stage: &StoryStage) -> String {
    let mut line = format!("{key}: {}", stage.stage);
    if let Some(branch) = &stage.branch {
        if stage.stage == "started" {
            line.push_str(&format!(" on {branch}"));
        }
    }
    if let Some(pr) = &stage.pr {
        line.push_str(&format!(" ({pr})"));
    }
    if let Some(reason) = &stage.reason {
        line.push_str(&format!(": {reason}"));
    }
    line
}
