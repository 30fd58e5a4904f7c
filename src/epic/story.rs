//! One story of an epic run, start to pull request, in its own session: the session started
//! (stacked and merged as planned) or found again, its pipeline supervised, the result
//! verified by git-bmad, the work committed and offered as a draft pull request.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;

use super::job::Job;
use super::judge::{Concern, Judgement};
use super::names::story_session_name;
use super::pipeline;
use super::verify;
use super::Error;
use crate::config::Config;
use crate::session::schema::{Answer, Body, Stage, StoryStage};
use crate::session::{self, closeout, Repo, StartOptions};
use crate::supervisor::{self, Outcome, Request, Source};
use crate::text::dollars;

/// The longest git-bmad's own test run of a story may take (a story step's default
/// timeout); what is left of the epic's time cuts it shorter.
const JUDGE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2 * 3600);

fn commit_id(hex: &str) -> Option<session::ObjectId> {
    session::ObjectId::from_hex(hex.as_bytes()).ok()
}

/// The runner's merge of BMAD's bookkeeping when stacked stories meet: a sprint status key
/// by key (each story moved its own); any other conflict is git's.
fn merge_bookkeeping(path: &str, base: &str, ours: &str, theirs: &str) -> Option<String> {
    let name = path.rsplit('/').next().unwrap_or(path);
    (name == "sprint-status.yaml")
        .then(|| crate::bmad::sprint_merge::merge(Path::new(path), base, ours, theirs))
        .flatten()
}

/// A message from a story's worker.
pub(super) enum Message {
    Stage(String, Box<StoryStage>),
    /// The story's status moved in a step (signed into stories.json).
    Status(String, super::signatures::Change),
    /// A step of the story's pipeline ended, on a runner ([`Job::pushes`]): the receiver
    /// pushes the session, then answers; the next step waits for that answer, so a runner
    /// lost later never loses a finished step.
    Step(mpsc::Sender<()>),
    End(String, End),
}

/// How a worker's story ended in this run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum End {
    /// Done; the sprint status it should now have, if it lags.
    Done(Option<crate::bmad::status::Status>),
    Gated,
    /// git-bmad's judge asks a human, at the epic's gate for the story.
    Asked(Concern),
    Failed,
    Blocked,
    /// Not started: a dependency ended badly.
    Skipped,
    Interrupted,
}

/// One story, start to pull request, in its own session.
pub(super) fn run_story(
    job: &Job,
    config: &Config,
    progress: &(dyn Fn(&str) + Sync),
    interrupt: &AtomicBool,
    policy: &dyn session::Policy,
    purse: &supervisor::Purse,
    tx: &mpsc::Sender<Message>,
) -> Result<End, Error> {
    let repo = Repo::discover(&job.main)?;
    let key = &job.story.key;
    let send = |stage: StoryStage| {
        let _ = tx.send(Message::Stage(key.clone(), Box::new(stage)));
    };
    let (session, baseline) = story_session(&repo, job, policy, progress)?;
    send(StoryStage {
        stage: Stage::Started,
        session: Some(session.id.to_string()),
        branch: Some(session.short_branch().to_owned()),
        base: Some(job.base.clone()),
        baseline: Some(baseline.clone()),
        ..Default::default()
    });
    let hidden = super::acceptance::ensure(&repo, job, config, &baseline, purse, interrupt, &send)?;
    let mut observer = observer(key, &session.worktree, job.pushes, progress, tx);
    let limited = capped(config, &job.limits);
    let request = request(&repo, &session, job, &baseline)?;
    let report = supervisor::supervise(
        &repo,
        &session,
        request,
        supervisor::RunOptions {
            config: &limited,
            feature_env: Default::default(),
            observer: &mut observer,
            interrupt,
            time_limit: job.limits.time,
            purse: Some(purse),
        },
    )?;
    let (rounds, fixed) = review_rounds(&report.state, &job.source);
    // What the story spent: its pipeline's, and writing its acceptance tests.
    let before = hidden.as_ref().map(|h| h.spent).unwrap_or_default();
    let micro_usd = report.state.cost_micro_usd + before.micro_usd;
    let numbers = |stage: Stage, reason: Option<String>| StoryStage {
        stage,
        reason,
        rounds: Some(rounds),
        findings_fixed: Some(fixed),
        invocations: Some(report.state.invocations + before.invocations),
        cost_usd: (micro_usd > 0).then(|| micro_usd as f64 / 1e6),
        tokens: Some(report.state.tokens + before.tokens),
        premium_requests: Some((report.state.premium_milli + before.premium_milli) as f64 / 1e3)
            .filter(|p| *p > 0.0),
        run_time_ms: Some(report.state.run_time_ms + before.ms),
        ..Default::default()
    };
    let worktree = session
        .worktree_handle(&repo)?
        .map(|w| w.workdir().to_path_buf())
        .unwrap_or_else(|| session.worktree.clone());
    // A runner's worktree is gone once its job ends: the person answers where the session
    // comes back.
    let answer_in = (!job.pushes).then_some(session.worktree.as_path());
    if let Some((stage, end)) = pipeline_end(&report.outcome, answer_in) {
        // An agent that halted on a blocking condition (BMAD's way of asking a human) left
        // no work, so its step's checks gated: the story is blocked, with its condition.
        if end == End::Gated {
            if let verify::Verdict::Blocked(condition) =
                verify::story(&worktree, key, job.era, &baseline)?
            {
                send(numbers(Stage::Blocked, Some(condition)));
                return Ok(End::Blocked);
            }
        }
        if let Some((stage, why)) = stage {
            send(numbers(stage, Some(why)));
        }
        return Ok(end);
    }
    send(numbers(Stage::Built, None));
    let sprint = match verify::story(&worktree, key, job.era, &baseline)? {
        verify::Verdict::Good { set_status } => set_status,
        verify::Verdict::Blocked(condition) => {
            send(numbers(Stage::Blocked, Some(condition)));
            return Ok(End::Blocked);
        }
        verify::Verdict::Bad(why) => {
            send(numbers(Stage::Failed, Some(why)));
            return Ok(End::Failed);
        }
    };
    send(numbers(Stage::Verified, None));
    if job.era == pipeline::Era::V7 {
        super::status::mark_ticket_done(&repo, &session, &worktree, key)?;
    }
    let title = job.story.title.clone().unwrap_or_else(|| key.clone());
    closeout::commit_work(
        &repo,
        &session,
        &format!(
            "Story {key}: {title}\n\nBmad-Story: {key}\nBmad-Session: {}",
            session.id
        ),
    )?;
    let spent = std::time::Duration::from_millis(report.state.run_time_ms + before.ms);
    let judging = Judging {
        hidden: hidden.as_ref(),
        spent,
    };
    let judged = match verdict(&repo, &session, job, &baseline, &judging, config, interrupt)? {
        Ok(judged) => judged,
        Err((stage, why, end)) => {
            send(numbers(stage, Some(why)));
            return Ok(end);
        }
    };
    let pr = super::closeout::pull_request(
        &repo,
        &session,
        &job.base,
        &title,
        key,
        &job.remote,
        interrupt,
    )?;
    let mut done = numbers(Stage::Done, None);
    done.pr = Some(pr);
    done.tests = Some(judged.1);
    send(done);
    Ok(End::Done(sprint))
}

/// The story's session, found again or started (stacked and merged as planned), and the
/// commit it started at.
fn story_session(
    repo: &Repo,
    job: &Job,
    policy: &dyn session::Policy,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<(session::Session, String), Error> {
    let name = story_session_name(&job.story.key);
    let (session, baseline) = match closeout::find_by_name(repo, &name)? {
        Some(s) => (s, job.known.detail.baseline.clone()),
        None => {
            let start = StartOptions {
                name,
                base: Some(job.base.clone()),
                playbook: Some(job.source.name.clone()),
            };
            let s = super::start_session(repo, &start, policy, progress)?;
            for branch in &job.merges {
                closeout::merge_into(repo, &s, branch, &merge_bookkeeping)?;
            }
            (s, None)
        }
    };
    let baseline = match baseline {
        Some(b) => b,
        None => closeout::branch_head(repo, &session)?
            .map(|id| id.to_string())
            .unwrap_or_default(),
    };
    Ok((session, baseline))
}

/// What git-bmad's judge asked about the story's committed branch, as its journal says (a
/// runner judged it): the question the epic's judge gate asks.
pub(super) fn asked(
    repo: &Repo,
    session: &session::Session,
    job: &Job,
    baseline: &str,
) -> Result<Option<Concern>, Error> {
    match committed(repo, session, baseline, job.story.file.as_deref())? {
        Committed::Work { base, head, .. } => {
            super::judge::journaled::read(repo, session, base, head)
        }
        _ => Ok(None),
    }
}

/// Where a story stops short of its pull request: the stage to record, why, and its end.
type Stop = (Stage, String, End);

/// What the judge holds a story to beside its branch.
struct Judging<'a> {
    /// The acceptance tests written before its dev began.
    hidden: Option<&'a super::judge::hidden::Hidden>,
    /// The time in steps it took so far, of the time it may take ([`Job::limits`]).
    spent: std::time::Duration,
}

/// The judge's verdict on the story's committed branch, as the story takes it: the commit
/// to push and its evidence, or the stage, reason and end the story stops at. A branch with
/// no commit after its baseline, or only BMAD's bookkeeping, stops before any test runs;
/// then git-bmad's own tools judge exactly the commit it pushes. A question a human already
/// answered with anything but `continue` fails the story; one not yet asked is journaled
/// and asked at the epic's judge gate.
fn verdict(
    repo: &Repo,
    session: &session::Session,
    job: &Job,
    baseline: &str,
    judging: &Judging<'_>,
    config: &Config,
    interrupt: &AtomicBool,
) -> Result<Result<(session::ObjectId, String), Stop>, Error> {
    let (base, head, changes) = match committed(repo, session, baseline, job.story.file.as_deref())?
    {
        Committed::Work {
            base,
            head,
            changes,
        } => (base, head, changes),
        Committed::Nothing(why) | Committed::OnlyBookkeeping(why) => {
            return Ok(Err((Stage::Failed, why, End::Failed)))
        }
    };
    // What is left of the story's time when the judge starts, not when the story did.
    let timeout = job.limits.time.map_or(JUDGE_TIMEOUT, |limit| {
        limit.saturating_sub(judging.spent).min(JUDGE_TIMEOUT)
    });
    let work = super::judge::Work {
        base,
        head,
        changes: &changes,
        scope: super::judge::Scope {
            own: &job.story.touches,
            others: &job.others,
        },
        story_file: job.story.file.as_deref(),
        accepted: job.judge_answer == Some(Answer::Continue),
        refactor: job.story.refactor,
        hidden: judging.hidden,
    };
    let evidence = match super::judge::judge(repo, &work, config, timeout, interrupt)? {
        Judgement::Pass(evidence) => evidence,
        Judgement::Fail(why) => return Ok(Err((Stage::Failed, why, End::Failed))),
        Judgement::Ask(concern) => {
            if let Some(answer) = job.judge_answer {
                let why = format!(
                    "a human answered {} at its judge gate: it {}",
                    answer.as_str(),
                    concern.summary()
                );
                return Ok(Err((Stage::Failed, why, End::Failed)));
            }
            super::judge::journaled::report(repo, session, &concern, head)?;
            let why = format!(
                "git-bmad's judge asks a human: it {}; git bmad answer -s {} continue lets it stand and the run goes on (skip or abort fails the story)",
                concern.summary(),
                super::names::session_name(&job.epic),
            );
            return Ok(Err((Stage::Gated, why, End::Asked(concern))));
        }
    };
    // What is pushed is what was judged.
    let now = closeout::branch_head(repo, session)?;
    if now != Some(head) {
        let why = format!(
            "the story's branch moved after git-bmad judged {head} (now {now:?}): nothing is pushed; resume judges it again"
        );
        return Ok(Err((Stage::Failed, why, End::Failed)));
    }
    Ok(Ok((head, evidence)))
}

/// What the story's pipeline is asked: to run (or go on). A story a human unblocked after
/// its pipeline had finished runs it anew; so does one that failed because its finished
/// pipeline committed nothing but a status line (a step killed after it marked the story,
/// taken for done on what it left).
fn request(
    repo: &Repo,
    session: &session::Session,
    job: &Job,
    baseline: &str,
) -> Result<Request, Error> {
    let (source, args) = (job.source.clone(), vec![job.story.key.clone()]);
    let nothing_built = job.known.stage == Stage::Failed
        && matches!(
            committed(repo, session, baseline, job.story.file.as_deref())?,
            Committed::OnlyBookkeeping(_)
        );
    Ok(if job.known.stage == Stage::Unblocked || nothing_built {
        Request::Restart { source, args }
    } else {
        Request::Start { source, args }
    })
}

/// What the story's branch holds after its baseline.
enum Committed {
    /// Commits that change more than BMAD's bookkeeping, and what they change.
    Work {
        base: session::ObjectId,
        head: session::ObjectId,
        changes: Vec<session::TreeChange>,
    },
    /// Commits that move only its bookkeeping (a status line), and why that is no work.
    OnlyBookkeeping(String),
    /// No commit, or its commits are gone, and why.
    Nothing(String),
}

/// What `session`'s branch holds after `baseline`.
fn committed(
    repo: &Repo,
    session: &session::Session,
    baseline: &str,
    story_file: Option<&str>,
) -> Result<Committed, Error> {
    let head = closeout::branch_head(repo, session)?;
    let (Some(base), Some(head)) = (commit_id(baseline), head) else {
        return Ok(Committed::Nothing(format!(
            "the story's commits are gone (baseline {baseline:?}, head {head:?}): nothing to judge"
        )));
    };
    if head == base {
        return Ok(Committed::Nothing(
            "the story's branch has no commit after its baseline: nothing was implemented".into(),
        ));
    }
    let changes = session::repository::diff_trees(repo, base, head)?;
    let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
    Ok(match verify::bookkeeping_only(&paths, story_file) {
        Some(why) => Committed::OnlyBookkeeping(why),
        None => Committed::Work {
            base,
            head,
            changes,
        },
    })
}

/// What follows a story's pipeline as it runs: each step's start goes to `progress`; with
/// a `stories.json`, every status change a step makes is sent on, signed with the step's
/// agent (without one there is nothing to sign, and nothing is read).
fn observer<'a>(
    key: &'a str,
    worktree: &'a Path,
    pushes: bool,
    progress: &'a (dyn Fn(&str) + Sync),
    tx: &'a mpsc::Sender<Message>,
) -> impl FnMut(&session::Event) + 'a {
    let mut status = super::signatures::status_in(worktree, key);
    move |event: &session::Event| match (&event.body, &event.step) {
        (Body::StepStarted(_), Some(step)) => progress(&format!("{key}: {step}")),
        (Body::StepCompleted(_) | Body::StepFailed(_), Some(_)) if status.is_none() => {
            step_ended(pushes, tx)
        }
        (Body::StepCompleted(_) | Body::StepFailed(_), Some(step)) if status.is_some() => {
            let now = super::signatures::status_in(worktree, key)
                .filter(|now| !now.is_empty() && Some(now) != status.as_ref());
            if let Some(now) = now {
                let change = super::signatures::Change {
                    from: status.replace(now.clone()).unwrap_or_default(),
                    to: now,
                    agent: format!("{} agent ({step})", super::signatures::agent_of(step)),
                    at: event.ts.clone(),
                };
                let _ = tx.send(Message::Status(key.to_owned(), change));
            }
            step_ended(pushes, tx);
        }
        _ => {}
    }
}

/// On a runner, a step's end waits until the session is pushed.
fn step_ended(pushes: bool, tx: &mpsc::Sender<Message>) {
    if pushes {
        let (ack, pushed) = mpsc::channel();
        if tx.send(Message::Step(ack)).is_ok() {
            let _ = pushed.recv();
        }
    }
}

/// What a story's pipeline run came to, when it is not to be verified: the stage to record
/// with its reason (none for an interruption, which `epic resume` continues), and the end.
/// `None`: it completed. `worktree`: the story's, where a gate is answered; none on a runner.
pub(super) fn pipeline_end(
    outcome: &Outcome,
    worktree: Option<&Path>,
) -> Option<(Option<(Stage, String)>, End)> {
    let failed = |why: String| Some((Some((Stage::Failed, why)), End::Failed));
    match outcome {
        Outcome::Completed => None,
        Outcome::Gated { gate } => Some((
            Some((
                Stage::Gated,
                format!(
                    "{} (at {}; answer in {} with git bmad answer, then git bmad epic resume)",
                    gate.question,
                    gate.step,
                    worktree.map_or(
                        "the story's worktree where its session came back from the runner".into(),
                        |wt| wt.display().to_string()
                    )
                ),
            )),
            End::Gated,
        )),
        Outcome::Interrupted => Some((None, End::Interrupted)),
        Outcome::Aborted => failed("aborted by a human at a gate".into()),
        Outcome::Failed { steps } => failed(format!("step {} failed", steps.join(", "))),
        Outcome::BudgetLimit { unpriced, .. } if !unpriced.is_empty() => failed(format!(
            "stopped: {} ran with no price, so the budget cannot count what it spent; price it under orchestration.prices in .bmad/config.yaml, then git bmad epic resume",
            unpriced.join(", ")
        )),
        Outcome::BudgetLimit {
            limit_micro_usd,
            spent_micro_usd,
            ..
        } => failed(format!(
            "stopped at the budget: {} spent of {}; with more (--budget-usd), git bmad epic resume runs it on",
            dollars(*spent_micro_usd as f64 / 1e6),
            dollars(*limit_micro_usd as f64 / 1e6)
        )),
        Outcome::InvocationLimit { limit } => failed(format!(
            "stopped at {limit} agent invocations; with more (--max-invocations), git bmad epic resume runs it on"
        )),
        Outcome::RunTimeLimit { limit_secs } => failed(format!(
            "stopped at {limit_secs}s in steps; with more (--max-time), git bmad epic resume runs it on"
        )),
        Outcome::PremiumRequestLimit {
            limit_milli,
            spent_milli,
        } => failed(format!(
            "stopped at the premium request budget: {} of {}; with more (--budget-premium-requests, or orchestration.budget_premium_requests for each story), git bmad epic resume runs it on",
            *spent_milli as f64 / 1e3,
            *limit_milli as f64 / 1e3
        )),
        Outcome::TokenLimit { limit, spent } => failed(format!(
            "stopped at the token budget: {spent} of {limit} tokens; with more (--budget-tokens, or orchestration.budget_tokens for each story), git bmad epic resume runs it on"
        )),
    }
}

/// `config` with what is left of the epic's budget capping the story's own (no step starts
/// past it).
fn capped(config: &Config, limits: &super::state::StoryLimits) -> Config {
    let mut limited = config.clone();
    let budgets = &mut limited.orchestration;
    if let Some(usd) = limits.usd {
        budgets.budget_usd = Some(budgets.budget_usd.map_or(usd, |b| b.min(usd)));
    }
    if let Some(tokens) = limits.tokens {
        budgets.budget_tokens = Some(budgets.budget_tokens.map_or(tokens, |b| b.min(tokens)));
    }
    if let Some(premium) = limits.premium_requests {
        let own = budgets.budget_premium_requests;
        budgets.budget_premium_requests = Some(own.map_or(premium, |b| b.min(premium)));
    }
    limited
}

/// Review rounds run (a round of several reviewers counts once) and MUST-FIX findings
/// their fixes addressed.
fn review_rounds(state: &crate::session::run_state::RunState, source: &Source) -> (u32, u32) {
    use crate::session::run_state::StepStatus;
    let playbook = supervisor::parse_playbook(&source.text, &source.origin).0;
    let mut rounds = std::collections::BTreeSet::new();
    let mut fixed = 0;
    for (id, step) in &state.steps {
        if step.status != StepStatus::Done {
            continue;
        }
        if let Some(rest) = id.strip_prefix("review-") {
            rounds.insert(rest.split('-').next().unwrap_or(rest).to_owned());
        }
        if let (Some(n), Some(playbook)) = (id.strip_prefix("fix-"), &playbook) {
            let review = format!("review-{n}");
            fixed += supervisor::findings::found(state, playbook, &review).must_fix;
        }
    }
    (rounds.len() as u32, fixed)
}

/// The story failed, and why: the stage sent on, the end returned.
pub(super) fn fail(key: &str, why: String, tx: &mpsc::Sender<Message>) -> End {
    let stage = StoryStage {
        stage: Stage::Failed,
        reason: Some(why),
        ..Default::default()
    };
    let _ = tx.send(Message::Stage(key.to_owned(), Box::new(stage)));
    End::Failed
}

/// A stage as a line of progress.
pub(super) fn stage_line(key: &str, stage: &StoryStage) -> String {
    let mut line = format!("{key}: {}", stage.stage);
    if let Some(branch) = &stage.branch {
        if stage.stage == Stage::Started {
            line.push_str(&format!(" on {branch}"));
        }
    }
    if let Some(pr) = &stage.pr {
        line.push_str(&format!(" ({pr})"));
    }
    if let Some(acceptance) = &stage.acceptance {
        line.push_str(&format!(", acceptance tests: {acceptance}"));
    }
    if let Some(reason) = &stage.reason {
        line.push_str(&format!(": {reason}"));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_completed_pipeline_goes_on_to_be_verified() {
        let wt = Some(Path::new("/w"));
        assert!(pipeline_end(&Outcome::Completed, wt).is_none());
        assert_eq!(
            pipeline_end(&Outcome::Interrupted, wt),
            Some((None, End::Interrupted)),
            "an interruption records no stage: resume continues the story"
        );
        let failed = pipeline_end(
            &Outcome::Failed {
                steps: vec!["dev".into(), "review-1".into()],
            },
            wt,
        );
        assert_eq!(
            failed,
            Some((
                Some((Stage::Failed, "step dev, review-1 failed".into())),
                End::Failed
            ))
        );
        let (stage, end) = pipeline_end(&Outcome::InvocationLimit { limit: 3 }, wt).unwrap();
        assert_eq!(end, End::Failed);
        assert!(stage
            .unwrap()
            .1
            .starts_with("stopped at 3 agent invocations"));
        let budget = Outcome::BudgetLimit {
            limit_micro_usd: 3_000_000,
            spent_micro_usd: 3_010_000,
            unpriced: Vec::new(),
        };
        let (stage, _) = pipeline_end(&budget, wt).unwrap();
        assert!(stage
            .unwrap()
            .1
            .starts_with("stopped at the budget: $3.01 spent of $3.00"));
        let (stage, end) = pipeline_end(&Outcome::Aborted, wt).unwrap();
        assert_eq!((stage.unwrap().0, end), (Stage::Failed, End::Failed));
    }
}
