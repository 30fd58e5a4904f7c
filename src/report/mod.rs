//! The morning report: what happened in every session over a period, what is done (with the
//! evidence git-bmad gathered itself), what waits for a human and what went wrong.
//!
//! The report is built from the journals alone, as everything else is: [`fold`] reads one
//! session's events into a [`SessionReport`] (a pure function, tested beside it), [`gather`]
//! reads the repository, and [`text`] and [`html`] render. The JSON form is the [`Report`]
//! itself; its shape is versioned by [`Report::version`] and documented in `docs/guide/report.md`.

mod epic;
mod fold;
mod gather;
pub mod html;
pub mod text;

use serde::Serialize;

pub use epic::{EpicCard, EpicStory};
pub use fold::fold;
pub use gather::{gather, Options};

/// The report's JSON shape version: bumped when a field changes meaning or goes away.
pub const VERSION: u32 = 1;

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// [`VERSION`].
    pub version: u32,
    /// When it was made (RFC 3339, UTC).
    pub generated: String,
    /// The start of the period it covers.
    pub since: String,
    /// The repository's main worktree.
    pub repository: String,
    /// Counts and totals over every session in it.
    pub summary: Summary,
    /// One card per epic run: its stories, their pull requests, what waits for whom.
    pub epics: Vec<EpicCard>,
    /// One entry per session, the newest problems first, then running, then done.
    pub sessions: Vec<SessionReport>,
}

/// Counts and totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Sessions in the report.
    pub sessions: usize,
    /// Finished (the run completed, or the session was finished).
    pub done: usize,
    /// Waiting for a human at a gate.
    pub parked: usize,
    /// Stopped by a failure.
    pub failed: usize,
    /// Stopped by a budget, token, invocation or time limit.
    pub over_budget: usize,
    /// Interrupted, waiting for `git bmad resume`.
    pub interrupted: usize,
    /// Running, but nothing journaled for longer than the stall threshold (or a stall was
    /// detected and the run stopped there).
    pub stalled: usize,
    /// Still going.
    pub running: usize,
    /// Policy refusals, secrets included.
    pub policy_violations: usize,
    /// Secrets kept out of commits, pushes and checkpoints.
    pub secrets_caught: usize,
    /// Agent time, milliseconds.
    pub agent_time_ms: u64,
    /// Tokens in and out.
    pub tokens: u64,
    /// Cost as the agents reported it, or their tokens priced, USD.
    pub cost_usd: f64,
    /// GitHub's premium requests, as Copilot CLI counted them.
    pub premium_requests: f64,
    /// Tokens and cost per model.
    pub models: Vec<ModelLine>,
}

/// What one model used and cost over a period.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ModelLine {
    /// The model; empty when neither its CLI nor the call named it.
    pub model: String,
    /// Input tokens read fresh.
    pub tokens_in: u64,
    /// Input tokens read from the prompt cache.
    pub tokens_cached: u64,
    /// Output tokens.
    pub tokens_out: u64,
    /// What it cost as far as known, USD.
    pub cost_usd: f64,
    /// Some of its tokens had no price and no reported cost.
    pub unpriced: bool,
}

/// What `tokens`, `cost_usd` and `premium` requests spent, in words (`120 tokens, $0.18`; the
/// premium requests only where some were spent).
pub fn spend_text(tokens: u64, cost_usd: f64, premium: f64) -> String {
    let mut text = format!("{tokens} tokens, ${cost_usd:.2}");
    if premium > 0.0 {
        text.push_str(&format!(", {premium} premium requests"));
    }
    text
}

impl ModelLine {
    /// Its model's name, for a reader.
    pub fn name(&self) -> &str {
        if self.model.is_empty() {
            "unnamed model"
        } else {
            &self.model
        }
    }

    /// What it cost, saying so when some of its tokens had no price (`$0.18`).
    pub fn cost_text(&self) -> String {
        if self.unpriced {
            format!("${:.2} and unpriced tokens", self.cost_usd)
        } else {
            format!("${:.2}", self.cost_usd)
        }
    }

    /// Add `other`'s tokens and cost to `lines`, under its model.
    pub fn add_to(lines: &mut Vec<ModelLine>, other: &ModelLine) {
        let at = match lines.iter().position(|l| l.model == other.model) {
            Some(at) => at,
            None => {
                lines.push(ModelLine {
                    model: other.model.clone(),
                    ..ModelLine::default()
                });
                lines.len() - 1
            }
        };
        let line = &mut lines[at];
        line.tokens_in += other.tokens_in;
        line.tokens_cached += other.tokens_cached;
        line.tokens_out += other.tokens_out;
        line.cost_usd += other.cost_usd;
        line.unpriced |= other.unpriced;
    }
}

/// Where a session stands, in the order a morning reader cares about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Waiting for an answer.
    Parked,
    /// Stopped by a failure.
    Failed,
    /// Stopped by a limit.
    OverBudget,
    /// Its supervisor was interrupted; `git bmad resume` continues it.
    Interrupted,
    /// No progress.
    Stalled,
    /// Going.
    Running,
    /// Finished.
    Done,
}

impl Outcome {
    /// The word used in the text report and the page.
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Parked => "parked",
            Outcome::Failed => "failed",
            Outcome::OverBudget => "over budget",
            Outcome::Interrupted => "interrupted",
            Outcome::Stalled => "stalled",
            Outcome::Running => "running",
            Outcome::Done => "done",
        }
    }

    /// Whether a human has something to do about it.
    pub fn is_problem(&self) -> bool {
        !matches!(self, Outcome::Running | Outcome::Done)
    }
}

/// One session over the period.
#[derive(Clone, Debug, Serialize)]
pub struct SessionReport {
    /// The session id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its branch (short name).
    pub branch: String,
    /// Its worktree.
    pub worktree: String,
    /// Where it stands.
    pub outcome: Outcome,
    /// The session's own status (`running`, `gated`, `completed`, …).
    pub status: String,
    /// The newest event's time.
    pub last_activity: String,
    /// When it started, if the period covers its start.
    pub started: Option<String>,
    /// The playbook of its newest run.
    pub playbook: Option<String>,
    /// Steps finished and steps in the newest run.
    pub progress: Option<Progress>,
    /// The step of the newest event that named one.
    pub step: Option<String>,
    /// The open gate, with the command that answers it.
    pub gate: Option<GateReport>,
    /// What stopped it (a failed step, a limit, a stall), in a line.
    pub stopped_by: Option<String>,
    /// Evidence of the work: tests git-bmad ran, commits, diff, PR.
    pub evidence: Evidence,
    /// Failures, refusals, secrets, stalls and limits, newest first.
    pub problems: Vec<Problem>,
    /// Agent time in the period, milliseconds.
    pub agent_time_ms: u64,
    /// Tokens in and out in the period.
    pub tokens: u64,
    /// Cost in the period, USD.
    pub cost_usd: f64,
    /// GitHub's premium requests in the period, as Copilot CLI counted them.
    pub premium_requests: f64,
    /// Tokens and cost per model in the period.
    pub models: Vec<ModelLine>,
    /// Every event of the period, oldest first.
    pub timeline: Vec<TimelineEntry>,
}

/// A run's progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Progress {
    /// Steps completed or skipped.
    pub done: usize,
    /// Steps in the playbook.
    pub total: usize,
}

/// A gate waiting for a human.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GateReport {
    /// The step it holds.
    pub step: Option<String>,
    /// Why it opened (`always_gate`, `escalated`, …).
    pub kind: String,
    /// The question.
    pub question: String,
    /// What happened, as the gate showed it.
    pub evidence: String,
    /// The answers it takes.
    pub options: Vec<String>,
    /// Since when.
    pub opened: String,
    /// The command that answers it, run from anywhere in the repository.
    pub answer: String,
}

/// What git-bmad saw of the work, not what the agent said.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Evidence {
    /// Test and check runs by git-bmad (postconditions), newest last.
    pub checks: Vec<CheckRun>,
    /// Commits on the branch since its base.
    pub commits: Option<usize>,
    /// Of those, how many are pushed.
    pub pushed: Option<usize>,
    /// Paths changed since the base.
    pub files_changed: Option<usize>,
    /// Lines added since the base.
    pub insertions: Option<u64>,
    /// Lines deleted since the base.
    pub deletions: Option<u64>,
    /// The pull request, when an epic run opened one.
    pub pr: Option<String>,
}

/// One check git-bmad ran after a step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckRun {
    /// The step.
    pub step: Option<String>,
    /// The check (`tests_pass`, `diff_nonempty`, …).
    pub check: String,
    /// Whether it held.
    pub ok: bool,
    /// What it saw.
    pub detail: String,
}

/// Something that went wrong.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Problem {
    /// When.
    pub at: String,
    /// `step_failed`, `policy_violation`, `secret`, `stall_detected`, `limit`, `run_failed`,
    /// `stalled`, `not_trusted` (copies from another clone no allowed signer vouched for),
    /// `uncontained` (a step that ran outside walls, and why), `walls` (a step whose walls
    /// lacked a layer here, and what that lack means).
    pub kind: String,
    /// The step, if one.
    pub step: Option<String>,
    /// What, in a line.
    pub what: String,
}

/// One event, as the timeline shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimelineEntry {
    /// Its `seq`.
    pub seq: u64,
    /// Its time.
    pub at: String,
    /// Its kind.
    pub event: String,
    /// Its step.
    pub step: Option<String>,
    /// Who decided.
    pub decision: Option<String>,
    /// What it says, in a line.
    pub summary: String,
}

/// Order sessions: problems first (newest first), then running, then done (newest first).
fn sort_sessions(sessions: &mut [SessionReport]) {
    let newest_problem = |s: &SessionReport| {
        s.problems
            .iter()
            .map(|p| p.at.clone())
            .chain(s.gate.as_ref().map(|g| g.opened.clone()))
            .max()
            .unwrap_or_else(|| s.last_activity.clone())
    };
    sessions.sort_by(|a, b| {
        let rank = |s: &SessionReport| u8::from(!s.outcome.is_problem());
        rank(a)
            .cmp(&rank(b))
            .then_with(|| {
                if a.outcome.is_problem() {
                    newest_problem(b).cmp(&newest_problem(a))
                } else {
                    a.outcome
                        .cmp(&b.outcome)
                        .then_with(|| b.last_activity.cmp(&a.last_activity))
                }
            })
            .then_with(|| a.id.cmp(&b.id))
    });
}

/// Add up the sessions.
fn summarise(sessions: &[SessionReport]) -> Summary {
    let mut summary = Summary {
        sessions: sessions.len(),
        ..Summary::default()
    };
    for s in sessions {
        match s.outcome {
            Outcome::Parked => summary.parked += 1,
            Outcome::Failed => summary.failed += 1,
            Outcome::OverBudget => summary.over_budget += 1,
            Outcome::Interrupted => summary.interrupted += 1,
            Outcome::Stalled => summary.stalled += 1,
            Outcome::Running => summary.running += 1,
            Outcome::Done => summary.done += 1,
        }
        for p in &s.problems {
            match p.kind.as_str() {
                "secret" => {
                    summary.secrets_caught += 1;
                    summary.policy_violations += 1;
                }
                "policy_violation" => summary.policy_violations += 1,
                _ => {}
            }
        }
        summary.agent_time_ms += s.agent_time_ms;
        summary.tokens += s.tokens;
        summary.cost_usd += s.cost_usd;
        summary.premium_requests += s.premium_requests;
        for line in &s.models {
            ModelLine::add_to(&mut summary.models, line);
        }
    }
    summary
}
