//! The journal's schema: every event kind git-bmad writes, and the detail each one carries.
//!
//! This is the one place that says what an event means. Writers build a [`Body`] variant and
//! readers match on it, so a field cannot be written under one name and read under another.
//! On disk an event is still `{"event": "<kind>", "detail": {…}}` (`docs/architecture.md`
//! §4, "The journal"): detail fields that are unset are left out, and a missing field reads
//! as its default, so older journals read as they always did.
//!
//! Kinds this version does not know (a newer git-bmad's, a script's own from
//! `git bmad journal append`) are kept as [`Body::Other`], name and detail untouched, and
//! render as they are; reading them never fails a session.
//!
//! Why this file is long: the schema is meant to be read in one place. Splitting the detail
//! types over files would bring back what this file exists to end, a kind's fields written
//! in one file and looked up in another.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Declares [`Body`] with one variant per kind, and the table between kinds and names.
macro_rules! kinds {
    ($( $(#[$doc:meta])* $name:literal => $variant:ident($detail:ty), )*) => {
        /// What an event records: its kind and that kind's detail.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Body {
            $( $(#[$doc])* $variant($detail), )*
            /// A kind this version does not know, or whose detail it cannot read.
            Other(OtherEvent),
        }

        impl Body {
            /// Every kind name git-bmad itself writes.
            pub const KINDS: &'static [&'static str] = &[$($name),*];

            /// The kind's name, as stored in `event`.
            pub fn name(&self) -> &str {
                match self {
                    $( Body::$variant(_) => $name, )*
                    Body::Other(other) => &other.event,
                }
            }

            /// The detail as JSON; `Null` when there is nothing to say.
            pub fn detail(&self) -> Value {
                let value = match self {
                    $( Body::$variant(detail) => serde_json::to_value(detail), )*
                    Body::Other(other) => return other.detail.clone(),
                };
                match value {
                    Ok(Value::Object(map)) if map.is_empty() => Value::Null,
                    Ok(value) => value,
                    // Detail types are plain data: serializing them cannot fail.
                    Err(_) => Value::Null,
                }
            }

            /// Read a stored kind and detail. A known kind whose detail does not fit its
            /// type is kept as [`Body::Other`] with the reason, for `doctor` to report.
            pub fn from_parts(event: String, detail: Value) -> Body {
                // Read from a borrow, so the detail is copied only when it is kept as it is.
                let empty = Value::Object(Map::new());
                let fields = if detail.is_null() { &empty } else { &detail };
                let unreadable = match event.as_str() {
                    $( $name => match <$detail>::deserialize(fields) {
                        Ok(detail) => return Body::$variant(detail),
                        Err(e) => Some(e.to_string()),
                    }, )*
                    _ => None,
                };
                Body::Other(OtherEvent { event, detail, unreadable })
            }
        }
    };
}

kinds! {
    /// A session was created; carries its manifest.
    "session_started" => SessionStarted(SessionStarted),
    /// A checkpoint commit was written.
    "checkpoint" => Checkpoint(CheckpointTaken),
    /// The worktree was restored to a checkpoint (or a rollback was undone).
    "rollback" => Rollback(RolledBack),
    /// The session was finished.
    "session_finished" => SessionFinished(NoDetail),
    /// The session's worktree was found deleted and pruned.
    "worktree_pruned" => WorktreePruned(WorktreePruned),
    /// The session's worktree was found moved (`git worktree move`); the session follows it.
    "worktree_moved" => WorktreeMoved(WorktreeMoved),
    /// The session was removed; a snapshot keeps it restorable for a while.
    "session_removed" => SessionRemoved(SessionRemoved),
    /// A removed or pruned session was brought back (`git bmad restore`).
    "session_restored" => SessionRestored(SessionRestored),
    /// `sync` joined another machine's journal into this one: the events after this are
    /// copies of theirs (each with `origin`).
    "journal_merged" => JournalMerged(JournalMerged),
    /// This clone signed its journal as it stood (its hash chain before this event), so
    /// another clone can trust what it wrote up to here (see `session::trust`).
    "journal_signed" => JournalSigned(JournalSigned),
    /// A policy refused something (a hook, the guard).
    "policy_violation" => PolicyViolation(PolicyViolation),
    /// A BMAD story's status was set in the session (`git bmad stories set`).
    "story_status" => StoryStatus(StoryStatus),
    /// A playbook run began.
    "run_started" => RunStarted(RunStarted),
    /// A stopped run was taken up again.
    "run_resumed" => RunResumed(RunResumed),
    /// Every step is done or skipped.
    "run_completed" => RunCompleted(RunCompleted),
    /// Steps failed under their `stop` policy (exit 5).
    "run_failed" => RunFailed(RunFailed),
    /// A human answered `abort`.
    "run_aborted" => RunAborted(NoDetail),
    /// Ctrl-C or a signal; the running step was killed (exit 130).
    "run_interrupted" => RunInterrupted(NoDetail),
    /// The run's cap on invocations was reached (exit 6).
    "limit_invocations_reached" => LimitInvocations(InvocationLimit),
    /// The budget (`orchestration.budget_usd`) is spent.
    "limit_budget_reached" => LimitBudget(BudgetLimit),
    /// The token budget (`orchestration.budget_tokens`) is spent.
    "limit_tokens_reached" => LimitTokens(TokenLimit),
    /// The premium request budget (`orchestration.budget_premium_requests`) is spent.
    "limit_premium_requests_reached" => LimitPremiumRequests(PremiumRequestLimit),
    /// The run's time limit was reached (exit 7).
    "limit_run_time_reached" => LimitRunTime(RunTimeLimit),
    /// A step began an attempt.
    "step_started" => StepStarted(StepStarted),
    /// A step ended well (or a human accepted it, or a crashed attempt was found done).
    "step_completed" => StepCompleted(StepOutcome),
    /// A step ended badly; `next` says what follows.
    "step_failed" => StepFailed(StepOutcome),
    /// A step's outcome was handed to a human by a trigger.
    "escalated" => Escalated(StepOutcome),
    /// A step was skipped.
    "step_skipped" => StepSkipped(StepSkipped),
    /// A step will run again; the event's `trigger` says why (retry_once, human, resume,
    /// crash_recovery).
    "retry" => Retry(Retry),
    /// Two attempts of a step in a row produced the same output and the same changes.
    "stall_detected" => StallDetected(StallDetected),
    /// A human gate opened.
    "gate_opened" => GateOpened(GateOpened),
    /// A human answered a gate.
    "gate_answered" => GateAnswered(GateAnswered),
    /// An epic run began (or was resumed with other options): its plan and options.
    "epic_started" => EpicStarted(EpicStarted),
    /// A story of an epic run reached a stage.
    "story_stage" => StoryStage(StoryStage),
    /// An epic run ended: every story done, failed, blocked, skipped or waiting at a gate.
    "epic_finished" => EpicFinished(EpicFinished),
    /// The integration checkpoint after a story with dependents; the event's `step` is the
    /// story key.
    "integration_checked" => IntegrationChecked(IntegrationChecked),
    /// The epic's close-out ran: the SM's completion signal (v4), the retrospective.
    "epic_closed" => EpicClosed(EpicClosed),
}

impl Body {
    /// Whether only git-bmad may write this kind: the session's and the supervisor's own
    /// (`docs/architecture.md` §4, "The journal": reserved kinds).
    pub fn is_reserved(name: &str) -> bool {
        Body::KINDS.contains(&name) && !matches!(name, "policy_violation" | "story_status")
    }
}

/// An event of a kind this version does not read, kept as it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct OtherEvent {
    /// Its kind.
    pub event: String,
    /// Its detail, untouched.
    pub detail: Value,
    /// For a kind this version knows: why its detail could not be read.
    pub unreadable: Option<String>,
}

/// The detail of a kind that carries none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NoDetail;

impl<'de> Deserialize<'de> for NoDetail {
    /// Whatever was written is accepted: the kind is what counts.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer)?;
        Ok(NoDetail)
    }
}

// ---------------------------------------------------------------------------------------
// The session layer's kinds.

/// `session_started`: the session's manifest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionStarted {
    /// The session's name.
    pub name: String,
    /// Its branch, `refs/heads/…`.
    pub branch: String,
    /// What it was started from, as the user named it.
    pub base: String,
    /// The commit that was.
    pub base_commit: String,
    /// The linked worktree.
    pub worktree: String,
    /// The playbook it was started for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub playbook: Option<String>,
    /// The playbook's arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// The runner it was started with, when one was chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
}

/// `checkpoint`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckpointTaken {
    /// The checkpoint commit.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub commit: String,
    /// Its tree.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tree: String,
    /// Its one-line label.
    pub label: String,
}

/// `rollback`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RolledBack {
    /// The checkpoint restored.
    pub target: String,
    /// The `seq` of that checkpoint's event: later events are marked rolled back.
    pub target_seq: u64,
    /// The checkpoint that keeps the state from before.
    pub safety: String,
    /// How many files changed.
    pub files: usize,
    /// The `seq` of the rollback this one reverses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undo_of: Option<u64>,
    /// Only files were restored; the index and the branch were left as they were.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub files_only: bool,
    /// What became of the session branch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<BranchOutcome>,
    /// Paths left alone because ignore rules (of the state left or of the target) cover them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub protected: Vec<String>,
    /// Repositories of their own inside the worktree (a nested clone), left alone: their
    /// files are not the session's, and no checkpoint records them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nested: Vec<String>,
}

/// What a rollback did to the session branch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum BranchOutcome {
    /// Moved to the checkpoint's commit; `dropped` commits left the branch (kept in the
    /// safety checkpoint).
    Moved {
        /// The branch (full ref name).
        branch: String,
        /// Its tip before.
        from: String,
        /// Its tip after.
        to: String,
        /// Commits no longer on the branch.
        dropped: usize,
    },
    /// Left where it was: some commits it would drop are on a remote.
    LeftPushed {
        /// The branch (full ref name).
        branch: String,
        /// Commits it would drop that a remote-tracking ref has.
        pushed: usize,
    },
    /// Left where it was: the worktree's HEAD is not on the session branch.
    LeftDetached,
}

/// `worktree_pruned`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorktreePruned {
    /// Where the worktree was.
    pub worktree: String,
}

/// `worktree_moved`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorktreeMoved {
    /// Where the worktree was.
    pub from: String,
    /// Where it is now.
    pub to: String,
    /// The clone it lives in now, when it moved between clones (the lease).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clone: Option<String>,
}

/// `session_removed`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionRemoved {
    /// Whether `--force` was given (work that was neither merged nor pushed went too).
    pub forced: bool,
    /// Until when the snapshot is kept (RFC 3339); `git bmad gc` deletes it after.
    pub keep_until: String,
    /// Changed files the snapshot could not keep (a secret in them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
}

/// `session_restored`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionRestored {
    /// What it came back from: `removed` or `pruned`.
    pub from: String,
    /// Where its worktree is now.
    pub worktree: String,
    /// The status it has again.
    pub status: String,
}

/// `journal_merged`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JournalMerged {
    /// Our chain head before the merge.
    pub ours: String,
    /// Their chain head.
    pub theirs: String,
    /// Their notes commit (the merge's second parent).
    pub theirs_notes: String,
    /// How many of their events follow.
    pub events: usize,
    /// How many of those no allowed signer vouched for (information, never state).
    #[serde(skip_serializing_if = "is_no_count")]
    pub untrusted: usize,
}

fn is_no_count(n: &usize) -> bool {
    *n == 0
}

/// `journal_signed`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JournalSigned {
    /// The clone that signed.
    pub clone: String,
    /// Its public key (`<type> <base64>`), so a human can tell whom to trust.
    pub key: String,
    /// The chain value signed: every event up to the one it follows.
    pub chain: String,
    /// The armored SSH signature of the chain before this event.
    pub signature: String,
}

/// `policy_violation`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PolicyViolation {
    /// The hook (or `guard`) that refused.
    pub hook: String,
    /// The rule's id in the policy catalogue.
    pub rule: String,
    /// What was refused: a ref, a path, a command.
    #[serde(rename = "ref")]
    pub subject: String,
    /// Why, redacted.
    pub reason: String,
    /// The paths it concerns one by one, where the subject names several (the judge's).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
}

/// `story_status`: what `git bmad stories set` wrote.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StoryStatus {
    /// The story or epic key.
    pub key: String,
    /// The new status.
    pub to: String,
    /// Who set it.
    pub by: String,
    /// When (RFC 3339).
    pub at: String,
    /// The sprint-status change, as the BMAD layer describes it.
    #[serde(skip_serializing_if = "Value::is_null")]
    pub sprint: Value,
    /// The story file changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub story_file: Option<String>,
    /// `stories.json`, if it was updated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stories_json: Option<String>,
}

// ---------------------------------------------------------------------------------------
// The supervisor's kinds.

/// `run_started`: the playbook a run executes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunStarted {
    /// Its name.
    pub playbook: String,
    /// Where it was read from.
    pub origin: String,
    /// The blob holding the exact text the run started with.
    pub blob: String,
    /// The run's arguments.
    pub args: Vec<String>,
    /// Its limits, as the playbook states them.
    #[serde(skip_serializing_if = "Value::is_null")]
    pub limits: Value,
    /// Its step ids, in order.
    pub steps: Vec<String>,
}

/// `run_resumed`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunResumed {
    /// The kind of the event that had stopped it.
    pub after: String,
    /// The dollar budget the run goes on with, when the resume set one (over the
    /// configuration's, from here on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_usd: Option<f64>,
}

/// `run_completed`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunCompleted {
    /// Steps done.
    pub done: usize,
    /// Steps skipped.
    pub skipped: usize,
    /// Steps started, retries included.
    pub invocations: u32,
}

/// `run_failed`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunFailed {
    /// The steps that stopped it.
    pub steps: Vec<String>,
}

/// `limit_invocations_reached`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct InvocationLimit {
    /// The cap.
    pub limit: u32,
    /// Used so far.
    pub used: u32,
    /// Wanted by the next round.
    pub wanted: usize,
}

/// `limit_budget_reached`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BudgetLimit {
    /// The budget, in US dollars.
    pub budget_usd: f64,
    /// What the agents spent, as far as it can be counted.
    pub spent_usd: f64,
    /// Models the agents ran that have no price: what they spent cannot be counted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unpriced: Vec<String>,
}

/// What one model of one invocation used and cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelSpent {
    /// The model; empty when neither the CLI nor the call named it.
    pub model: String,
    /// Input tokens read fresh (cache writes included).
    pub tokens_in: u64,
    /// Input tokens read from the prompt cache.
    #[serde(skip_serializing_if = "is_zero")]
    pub tokens_cached: u64,
    /// Output tokens (reasoning included).
    pub tokens_out: u64,
    /// Its cost in US dollars; none when it had no price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// `limit_tokens_reached`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TokenLimit {
    /// The budget, in tokens.
    pub budget_tokens: u64,
    /// What the agents reported using (input, cache and output).
    pub spent_tokens: u64,
}

/// `limit_premium_requests_reached`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PremiumRequestLimit {
    /// The budget, in GitHub's premium requests.
    pub budget_premium_requests: f64,
    /// What the agents reported spending.
    pub spent_premium_requests: f64,
}

/// `limit_run_time_reached`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunTimeLimit {
    /// The limit.
    pub limit_secs: u64,
    /// Time spent in steps.
    pub used_ms: u64,
}

/// `step_started`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StepStarted {
    /// 1 for the first attempt.
    pub attempt: u32,
    /// The runner's name.
    pub runner: String,
    /// The model, when the config names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The prompt or command, redacted.
    pub command: String,
    /// The step's autonomy level.
    pub autonomy: String,
    /// The parallel phase it runs in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Why it runs uncontained, when it does (`runners.sandbox`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncontained: Option<String>,
    /// Which walls hold it, when it is contained (`bubblewrap and Landlock (ABI 7) …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub walls: Option<String>,
    /// What those walls lack on this machine, when a layer is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub walls_lack: Option<String>,
}

/// What follows a failed or escalated step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Next {
    /// It runs again.
    Retry,
    /// A human decides.
    Gate,
    /// The run stops.
    #[default]
    Stop,
    /// It is skipped and the run goes on (`on_error: skip`: one reviewer of several).
    Skip,
}

impl Next {
    /// The name in the journal.
    pub fn as_str(&self) -> &'static str {
        match self {
            Next::Retry => "retry",
            Next::Gate => "gate",
            Next::Stop => "stop",
            Next::Skip => "skip",
        }
    }
}

/// A check as evaluated: a postcondition or precondition and what was found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckOutcome {
    /// The check, as written.
    pub check: String,
    /// Whether it holds.
    pub ok: bool,
    /// The artifact it looked at, or what it ran.
    pub artifact: String,
    /// What was found.
    pub detail: String,
}

/// `step_completed`, `step_failed`, `escalated`: what an attempt came to.
///
/// The agent's part is the runner's result shape, redacted and capped before it is stored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StepOutcome {
    /// Which attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Postconditions, evaluated after the attempt.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckOutcome>,
    /// Files the attempt changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed_files: Option<usize>,
    /// Hash of the output and the changes: the same twice in a row is a stall.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// The runner that ran it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
    /// How the process ended (`{"how": "code", "value": 0}`, …).
    #[serde(skip_serializing_if = "Value::is_null")]
    pub exit: Value,
    /// The end of the agent's final answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_text: Option<String>,
    /// The agent's `VERDICT:` line, `pass` or `fail`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// The agent reported a breaking change.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub breaking_change: bool,
    /// The agent CLI's own session id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_session_id: Option<String>,
    /// Tokens in, as reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_in: Option<u64>,
    /// Tokens out, as reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_out: Option<u64>,
    /// Cost in US dollars: as the CLI reported it, else its tokens at their models' prices
    /// (see `cost_priced`); none when a model it ran has no price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Whether `cost_usd` is git-bmad's pricing of the tokens, not the CLI's own figure.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cost_priced: bool,
    /// GitHub's premium requests, as a CLI that counts in them reports them (Copilot CLI).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub premium_requests: Option<f64>,
    /// Tokens and cost per model, as the CLI reported them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub usage: Vec<ModelSpent>,
    /// Tool uses the agent CLI refused.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub permission_denials: Vec<String>,
    /// An error the agent CLI reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reported_error: Option<String>,
    /// Standard output, redacted and capped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout: Option<String>,
    /// Standard error, redacted and capped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    /// Standard output's full size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout_bytes: Option<u64>,
    /// Standard error's full size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr_bytes: Option<u64>,
    /// The menu the agent stopped at, as the decision engine read it.
    #[serde(skip_serializing_if = "Value::is_null")]
    pub menu: Value,
    /// Open MUST-FIX findings in the answer, when it reads as a review.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub must_fix: Option<u32>,
    /// Those findings, redacted and capped, for the next round and the gate.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
    /// Why the agent could not be run at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What follows a failure or escalation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<Next>,
    /// Why it failed or was escalated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What a human needs to judge it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// The step's error policy, when that chose `next`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// A crashed attempt was found done by its postconditions (in journals written before a
    /// crashed step always ran again).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub recovered: bool,
    /// Who accepted the step as done, when not the checks (`human`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepted_by: Option<String>,
    /// The failure a human accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

/// `epic_started`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EpicStarted {
    /// The epic (`3`, `2.5`, a spec folder).
    pub epic: String,
    /// The BMAD era whose pipeline the stories get (`v6.11`, `v6`, `v4`).
    pub era: String,
    /// The playbook each story runs.
    pub pipeline: String,
    /// What the stories start from.
    pub base: String,
    /// The stories the run takes on, in dependency order.
    pub stories: Vec<String>,
    /// Stories run at once.
    pub parallel: u32,
    /// Human checkpoints: none, per-epic, per-story.
    pub gates: String,
    /// Review→fix rounds per story.
    pub rounds: u32,
    /// The remote pull requests go to (empty in runs from before it was recorded).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub remote: String,
    /// The circuit breaker: stories failing in a row before no more start (0: not recorded).
    #[serde(skip_serializing_if = "is_zero")]
    pub max_failures: u32,
    /// What the epic and each story may spend.
    #[serde(skip_serializing_if = "EpicBudget::is_unlimited")]
    pub budget: EpicBudget,
    /// A headless retrospective runs when every story is done.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub retro: bool,
    /// Reviewers per round (0: not recorded, one).
    #[serde(skip_serializing_if = "is_zero")]
    pub reviewers: u32,
    /// Where the stories run: `actions` on GitHub Actions runners (empty: here).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub on: String,
}

/// An epic run's budgets: past one, no new story starts (stories running finish).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct EpicBudget {
    /// US dollars over all stories, where the runner reports cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usd: Option<f64>,
    /// Agent invocations over all stories.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invocations: Option<u32>,
    /// Time in steps over all stories, in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_secs: Option<u64>,
    /// Tokens, in and out, over all stories, as the CLIs report them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// GitHub's premium requests over all stories, as Copilot CLI counts them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub premium_requests: Option<f64>,
    /// US dollars one story's run may spend (its `orchestration.budget_usd`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub story_usd: Option<f64>,
}

impl EpicBudget {
    /// No budget at all.
    pub fn is_unlimited(&self) -> bool {
        *self == EpicBudget::default()
    }
}

fn is_zero<N: Default + PartialEq>(n: &N) -> bool {
    *n == N::default()
}

/// Where a story of an epic run stands: the stage its newest `story_stage` names.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Never started (no `story_stage` yet).
    #[default]
    #[serde(rename = "")]
    NotStarted,
    /// Its session and branch exist; the pipeline runs.
    Started,
    /// The pipeline ended well.
    Built,
    /// git-bmad's own checks passed.
    Verified,
    /// Offered as a draft pull request.
    Done,
    /// Waiting at a gate of its own session.
    Gated,
    /// It failed.
    Failed,
    /// The agent halted on a condition a human must clear.
    Blocked,
    /// Not started: a dependency ended badly.
    Skipped,
    /// Blocked in the journal, cleared by a human since: it runs its pipeline anew (never
    /// journaled).
    Unblocked,
    /// A stage this version does not know (a newer one wrote it).
    #[serde(other)]
    Unknown,
}

impl Stage {
    /// Its name in the journal and in output (`""` when not started).
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::NotStarted => "",
            Stage::Started => "started",
            Stage::Built => "built",
            Stage::Verified => "verified",
            Stage::Done => "done",
            Stage::Gated => "gated",
            Stage::Failed => "failed",
            Stage::Blocked => "blocked",
            Stage::Skipped => "skipped",
            Stage::Unblocked => "unblocked",
            Stage::Unknown => "unknown",
        }
    }

    /// Whether the story ended badly in a way its dependents must not build on.
    pub fn ended_badly(self) -> bool {
        matches!(
            self,
            Stage::Failed | Stage::Blocked | Stage::Gated | Stage::Skipped
        )
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `story_stage`: one story's progress; the event's `step` is the story key.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StoryStage {
    /// The stage it reached.
    pub stage: Stage,
    /// The story's session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Its branch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// What the branch started from (a branch name: stacked on a story's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// The commit the story started at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// Why (a failure, a skip, a block, a gate's question).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The pull request, or the command that opens one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pr: Option<String>,
    /// What git-bmad's own test run on the pushed commit found (the command, the commit,
    /// the count).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tests: Option<String>,
    /// The acceptance tests written from its criteria before its dev began: how many, or
    /// why there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acceptance: Option<String>,
    /// Review rounds run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rounds: Option<u32>,
    /// MUST-FIX findings fixed by those rounds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub findings_fixed: Option<u32>,
    /// Agent invocations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invocations: Option<u32>,
    /// Cost in US dollars, where the runner reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Tokens, in and out, where the runner reports them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// GitHub's premium requests, where the runner counts them (Copilot CLI).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub premium_requests: Option<f64>,
    /// Time in steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_time_ms: Option<u64>,
    /// Where it runs, when not here: the GitHub Actions run and its attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
}

/// `epic_finished`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct EpicFinished {
    /// Stories by how they ended: `done`, `failed`, `blocked`, `skipped`, `gated`.
    pub counts: std::collections::BTreeMap<String, u32>,
    /// Why the run stopped early (a circuit breaker), if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// `integration_checked`: what a finished story means for the stories that depend on it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct IntegrationChecked {
    /// `green` (go on), `yellow` (overlaps or interface changes, tests pass), `red` (tests
    /// fail).
    pub light: String,
    /// The commit of the story's branch that was checked.
    pub head: String,
    /// The stories that depend on it.
    pub dependents: Vec<String>,
    /// Files it changed that a dependent's `touches` name (`<dependent>: <file>`).
    pub overlaps: Vec<String>,
    /// Public items it changed or removed where a dependent works (`<file>: <item> changed`).
    pub interfaces: Vec<String>,
    /// Public items it added (for the record; adding is what dependents expect).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub added: Vec<String>,
    /// The test suite passed on its branch.
    pub tests_ok: bool,
    /// What the test run said.
    pub tests: String,
}

/// `epic_closed`: what the close-out session found when every story was done.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct EpicClosed {
    /// The close-out session.
    pub session: String,
    /// v4: the SM's completion signal: `true` the epic is complete, `false` it needs more
    /// stories; `None` when not asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub complete: Option<bool>,
    /// The SM's answer, when it was asked (the end of it, redacted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The retrospective's pull request (or the command that opens one), when one ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retrospective: Option<String>,
}

/// `step_skipped`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StepSkipped {
    /// Why.
    pub reason: String,
}

/// `retry`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Retry {
    /// Why, when the trigger alone does not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The checks that decided it (crash recovery).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckOutcome>,
}

/// `stall_detected`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StallDetected {
    /// The hash seen twice.
    pub hash: String,
    /// The attempt that repeated it.
    pub attempt: u32,
}

/// Why a gate is open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateKind {
    /// Before an `always_gate` step runs.
    Before,
    /// A precondition is not met.
    Precondition,
    /// After a step, escalated by a trigger or its error policy.
    #[default]
    After,
}

impl GateKind {
    /// The name in the journal.
    pub fn as_str(&self) -> &'static str {
        match self {
            GateKind::Before => "before",
            GateKind::Precondition => "precondition",
            GateKind::After => "after",
        }
    }
}

/// A human's answer to a gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Go on: run the gated step, or accept the escalated one as done.
    Continue,
    /// Run the step again (or check its preconditions again).
    Retry,
    /// Skip the step.
    Skip,
    /// End the run.
    Abort,
}

impl Answer {
    /// The answer's word.
    pub fn as_str(&self) -> &'static str {
        match self {
            Answer::Continue => "continue",
            Answer::Retry => "retry",
            Answer::Skip => "skip",
            Answer::Abort => "abort",
        }
    }
}

/// `gate_opened`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GateOpened {
    /// Why it is open.
    pub kind: GateKind,
    /// The question for the human, redacted.
    pub question: String,
    /// What happened, redacted.
    pub evidence: String,
    /// The answers it takes.
    pub options: Vec<Answer>,
    /// The decision engine's confidence, as it serialized it (`score`, `checkpoint_format`, …).
    #[serde(skip_serializing_if = "Value::is_null")]
    pub confidence: Value,
}

impl GateOpened {
    /// The confidence score, 0–100, when one was recorded.
    pub fn confidence_score(&self) -> Option<f64> {
        self.confidence["score"].as_f64()
    }

    /// How the gate is to be shown (`minimal`, `summary`, `full`), when recorded.
    pub fn checkpoint_format(&self) -> Option<&str> {
        self.confidence["checkpoint_format"].as_str()
    }
}

/// `gate_answered`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GateAnswered {
    /// The answer; `None` when a script journaled one without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<Answer>,
    /// The kind of the gate it answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<GateKind>,
    /// The `seq` of the `gate_opened` event it answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate_seq: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_reads_back_what_it_wrote() {
        let bodies = [
            Body::Checkpoint(CheckpointTaken {
                commit: "c".into(),
                tree: "t".into(),
                label: "after plan".into(),
            }),
            Body::RunAborted(NoDetail),
            Body::StepFailed(StepOutcome {
                attempt: Some(2),
                next: Some(Next::Gate),
                reason: Some("failed: tests".into()),
                exit: json!({"how": "code", "value": 1}),
                ..Default::default()
            }),
            Body::GateAnswered(GateAnswered {
                answer: Some(Answer::Continue),
                kind: Some(GateKind::Before),
                gate_seq: Some(7),
            }),
        ];
        for body in bodies {
            let back = Body::from_parts(body.name().to_owned(), body.detail());
            assert_eq!(back, body);
        }
    }

    #[test]
    fn unknown_kinds_and_unreadable_details_are_kept() {
        let note = Body::from_parts("note".into(), json!({"w": 1}));
        assert_eq!(note.name(), "note");
        assert_eq!(note.detail(), json!({"w": 1}));
        let Body::Other(other) = &note else {
            panic!("{note:?}")
        };
        assert_eq!(other.unreadable, None);

        let odd = Body::from_parts("step_started".into(), json!({"attempt": "two"}));
        let Body::Other(other) = &odd else {
            panic!("{odd:?}")
        };
        assert_eq!(odd.name(), "step_started");
        assert_eq!(other.detail, json!({"attempt": "two"}));
        assert!(other
            .unreadable
            .as_deref()
            .is_some_and(|e| e.contains("attempt") || e.contains("invalid type")));
    }

    #[test]
    fn missing_detail_reads_as_defaults_and_empty_detail_is_left_out() {
        assert_eq!(
            Body::from_parts("step_completed".into(), Value::Null),
            Body::StepCompleted(StepOutcome::default())
        );
        assert_eq!(
            Body::StepCompleted(StepOutcome::default()).detail(),
            Value::Null
        );
        assert_eq!(Body::SessionFinished(NoDetail).detail(), Value::Null);
        // An event written with a detail of its own before the kind had none still reads.
        assert_eq!(
            Body::from_parts("run_aborted".into(), json!({"x": 1})),
            Body::RunAborted(NoDetail)
        );
    }

    #[test]
    fn reserved_kinds_are_the_supervisors_and_the_sessions() {
        assert!(Body::is_reserved("step_completed"));
        assert!(Body::is_reserved("checkpoint"));
        assert!(!Body::is_reserved("policy_violation"));
        assert!(!Body::is_reserved("note"));
    }

    #[test]
    fn a_story_stage_reads_as_the_journal_writes_it_and_survives_a_newer_name() {
        for stage in [
            Stage::NotStarted,
            Stage::Started,
            Stage::Done,
            Stage::Blocked,
        ] {
            let json = serde_json::to_string(&stage).unwrap();
            assert_eq!(json, format!("\"{}\"", stage.as_str()));
            assert_eq!(serde_json::from_str::<Stage>(&json).unwrap(), stage);
        }
        let newer: StoryStage = serde_json::from_str(r#"{"stage": "merged-upstream"}"#).unwrap();
        assert_eq!(newer.stage, Stage::Unknown);
        let old: StoryStage = serde_json::from_str("{}").unwrap();
        assert_eq!(old.stage, Stage::NotStarted);
    }
}
