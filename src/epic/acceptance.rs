//! Acceptance tests the dev never sees. Before a story's pipeline first runs, an agent of
//! its own (the `tea` role's, else the default runner), in its own walls and a clean
//! checkout of the story's base, writes failing acceptance tests from the story's
//! acceptance criteria (BMAD's test architect's ATDD workflow where the project has it).
//! git-bmad keeps the test files it wrote that fail on the base, out of every step's reach
//! ([`super::judge::hidden`]); its judge runs them over the commit it pushes, and the story
//! is done only when they pass.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

use super::job::Job;
use super::judge::{self, hidden, Overlay};
use super::Error;
use crate::config::Config;
use crate::runner::prices::Prices;
use crate::runner::{self, Invocation};
use crate::session::run_state::{micro_usd, milli_requests};
use crate::session::schema::{Stage, StoryStage};
use crate::session::{self, ObjectId, Repo};
use crate::supervisor::purse::Amounts;
use crate::supervisor::{contain, Purse};

/// The longest the acceptance agent may take; what is left of the epic's time cuts it
/// shorter.
const TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Whether a run under `config` writes acceptance tests before each story's dev: they are
/// on, and there is a test command to run them with.
pub fn planned(config: &Config) -> bool {
    config.epic.acceptance_tests.is_on() && config.checks.test_command.is_some()
}

/// The story's acceptance tests at its `baseline` commit, written now if they were not
/// yet, and said in its record (`say`); `None` when the project turned them off.
pub(super) fn ensure(
    repo: &Repo,
    job: &Job,
    config: &Config,
    baseline: &str,
    purse: &Purse,
    interrupt: &AtomicBool,
    say: &dyn Fn(StoryStage),
) -> Result<Option<hidden::Hidden>, Error> {
    let on = config.epic.acceptance_tests.is_on();
    let Some(base) = ObjectId::from_hex(baseline.as_bytes()).ok().filter(|_| on) else {
        return Ok(None);
    };
    let hidden = written(repo, job, config, base, purse, interrupt)?;
    say(StoryStage {
        stage: Stage::Started,
        acceptance: Some(hidden.said.clone()),
        ..Default::default()
    });
    Ok(Some(hidden))
}

/// The story's acceptance tests at `base`: those stored, else written now.
fn written(
    repo: &Repo,
    job: &Job,
    config: &Config,
    base: ObjectId,
    purse: &Purse,
    interrupt: &AtomicBool,
) -> Result<hidden::Hidden, Error> {
    let key = &job.story.key;
    if let Some(stored) = hidden::stored(repo, key, base)? {
        return Ok(stored);
    }
    // Why there are none, kept (so no resume pays for them again) or not (so one tries again).
    let none = |why: String, spent: Option<Amounts>| match spent {
        Some(spent) => hidden::store(repo, key, base, Vec::new(), format!("none: {why}"), spent),
        None => Ok(hidden::Hidden {
            files: Vec::new(),
            said: format!("none: {why}"),
            spent: Amounts::default(),
            place: Default::default(),
        }),
    };
    let command = match judge::config_at(repo, base)? {
        Ok(at_base) => {
            at_base
                .unwrap_or_else(|| config.clone())
                .checks
                .test_command
        }
        Err(why) => return none(why, None),
    };
    let Some(command) = command else {
        let why = "the base sets no checks.test_command to run them with";
        return none(why.into(), Some(Amounts::default()));
    };
    let agent = runner::agent(config, None, Some("tea")).map_err(crate::supervisor::Error::from)?;
    // A shell runner would run the prompt as a command.
    if !agent.kind.is_agent() {
        let why = format!("the {} runner is no agent to write them", agent.kind);
        return none(why, Some(Amounts::default()));
    }
    let program =
        runner::locate(config, agent.kind, &job.main).map_err(crate::supervisor::Error::from)?;
    let (_scratch, checkout) = judge::checkout(repo, base, &[])?;
    let walls = contain::agent(
        &contain::decide(config)?,
        &checkout,
        repo,
        agent.kind,
        &program,
    )?;
    // The story's time left: what it may take, less what its earlier runs took.
    let spent = Duration::from_millis(job.known.detail.run_time_ms.unwrap_or(0));
    let timeout = job
        .limits
        .time
        .map_or(TIMEOUT, |limit| limit.saturating_sub(spent).min(TIMEOUT))
        .max(Duration::from_secs(1));
    let story = job
        .story
        .file
        .as_deref()
        .and_then(|f| session::repository::file_at(repo, &base.to_string(), f).ok()?)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
    let mut env: Vec<(String, String)> = vec![
        ("BMAD_STEP".into(), "acceptance".into()),
        ("BMAD_ATTEMPT".into(), "1".into()),
        ("BMAD_ARGS".into(), key.clone()),
    ];
    // The role's key, under the name its CLI reads, as its steps get it.
    let key_variable = agent.kind.adapter().key_variable();
    if let (Some(var), Some(target)) = (&agent.api_key_env, key_variable) {
        if let Some(value) = crate::env::named(var) {
            env.push((target.to_owned(), value));
        }
    }
    // Drawn last: nothing between the draw and its settling can return early.
    let Ok(draw) = purse.draw(1) else {
        return none("the epic's budget is spent".into(), None);
    };
    let invocation = Invocation {
        kind: agent.kind,
        program,
        prompt: prompt(
            key,
            job.story.file.as_deref(),
            story.as_deref(),
            &command,
            &checkout,
        ),
        model: agent.model.clone(),
        cwd: checkout.clone(),
        env,
        timeout: draw.ms.map_or(timeout, |ms| {
            timeout.min(Duration::from_millis(ms.max(1000)))
        }),
        allowance: crate::runner::meter::Allowance {
            usd: draw.micro_usd.map(|m| m as f64 / 1e6),
            tokens: draw.tokens,
        },
        prices: config.orchestration.prices.clone(),
        allowed_commands: vec![command.clone()],
        guard: std::env::current_exe()
            .ok()
            .map(|exe| crate::policy::agent::guard_command_for(&exe)),
        sandbox: walls.as_ref().map(|w| w.contained.clone()),
    };
    let began = SystemTime::now();
    let result = runner::invoke(&config.runners, &invocation, interrupt);
    let spent = invocation_spent(&result, &Prices::new(&config.orchestration.prices));
    purse.settle(draw, spent);
    let result = result.map_err(crate::supervisor::Error::from)?;
    if let Some(why) = result.failure() {
        let interrupted = interrupt.load(std::sync::atomic::Ordering::SeqCst);
        let why = format!("the acceptance agent failed: {why}");
        return none(why, (!interrupted).then_some(spent));
    }
    let written = written_tests(repo, base, &checkout, began)?;
    if written.is_empty() {
        let why = format!("{} wrote no test file", agent.kind);
        return none(why, Some(spent));
    }
    let (green, _) = judge::tests_on(repo, base, &written, &command, config, timeout, interrupt)?;
    let n = written.len();
    if green {
        let why = format!(
            "the {n} test file(s) {} wrote pass on the base without the work, so they are no evidence of it",
            agent.kind
        );
        return none(why, Some(spent));
    }
    let said = format!(
        "{n} file(s) written by {} from its criteria before its dev began; they fail on the \
         base, as they should, and no step of the story can read them",
        agent.kind
    );
    hidden::store(repo, key, base, written, said, spent)
}

/// What the agent is asked.
fn prompt(
    key: &str,
    file: Option<&str>,
    story: Option<&str>,
    command: &str,
    checkout: &Path,
) -> String {
    let atdd = has_atdd_workflow(checkout);
    let mut text = format!(
        "You are the test architect for story {key}. Write failing acceptance tests for it \
         before anyone implements it, one or more per acceptance criterion, that pass only \
         once the story's behaviour exists. Write test files only, where `{command}` finds \
         and runs them; do not implement the story, change existing code, or change how \
         the tests are run. Run `{command}` once at the end: your new tests must fail."
    );
    if atdd {
        text.push_str(" Follow BMAD's test architect ATDD workflow (bmad-testarch-atdd).");
    }
    match (file, story) {
        (Some(file), Some(story)) => text.push_str(&format!(
            "\n\nThe story ({file}):\n\n{}",
            crate::text::last_chars(story, 20_000)
        )),
        _ => text.push_str(
            "\n\nIts file is not written yet: read its acceptance criteria in the project's \
             epics and planning documents.",
        ),
    }
    text
}

/// Whether the checkout has BMAD's test architect installed (its ATDD skill or workflow).
fn has_atdd_workflow(checkout: &Path) -> bool {
    [
        ".claude/skills/bmad-testarch-atdd",
        ".claude/skills/bmad-tea-testarch-atdd",
        ".agents/skills/bmad-testarch-atdd",
        ".agents/skills/bmad-tea-testarch-atdd",
        "_bmad/tea/workflows/testarch/atdd",
    ]
    .iter()
    .any(|p| checkout.join(p).exists())
}

/// The test files the agent wrote in `checkout` since `began`: new, or changed from the
/// base. Anything else it wrote is not kept (implementing the story is its dev's work).
fn written_tests(
    repo: &Repo,
    base: ObjectId,
    checkout: &Path,
    began: SystemTime,
) -> Result<Vec<Overlay>, Error> {
    let found = Overlay::read_under(checkout, Some(began)).map_err(|source| Error::Write {
        path: checkout.to_owned(),
        source,
    })?;
    let mut kept = Vec::new();
    for file in found.into_iter().filter(|f| judge::is_test_file(&f.path)) {
        let before = session::repository::file_at(repo, &base.to_string(), &file.path)?;
        if before.as_deref() != Some(file.bytes.as_slice()) {
            kept.push(file);
        }
    }
    Ok(kept)
}

/// What one invocation of the acceptance agent spent, as the purse counts it: the CLI's own
/// dollars, else its tokens at their models' prices.
fn invocation_spent(result: &runner::Result<runner::AgentResult>, prices: &Prices<'_>) -> Amounts {
    let Ok(r) = result else {
        return Amounts {
            invocations: 1,
            ..Amounts::default()
        };
    };
    Amounts {
        micro_usd: prices.spend(r).usd.map_or(0, micro_usd),
        invocations: 1,
        ms: r.duration_ms,
        tokens: r.tokens_in().unwrap_or(0) + r.tokens_out().unwrap_or(0),
        premium_milli: r.premium_requests.map_or(0, milli_requests),
    }
}
