//! One round of steps (one, or a parallel phase's), run between two checkpoints, and what
//! the supervisor checks around it besides the agents' answers: a secret-free checkpoint
//! before and after, the policy violations journaled meanwhile (by hooks, the
//! guard, the checkpoint scan), journal lines git-bmad did not write and refs of its record
//! something else moved.

use std::collections::BTreeMap;

use super::{watchdog, Engine};
use crate::policy::secrets::redact;
use crate::policy::{agent, SessionPolicy};
use crate::runner::{self, AgentResult, Invocation};
use crate::session::run_state::StepStatus;
use crate::session::schema::{Body, StepStarted};
use crate::session::{self, Checkpoint, Decision, Journal, NewEvent, Status};
use crate::supervisor::attempt::{stall_hash, Attempt};
use crate::supervisor::checks::evaluate;
use crate::supervisor::checks::CheckEnv;
use crate::supervisor::decide;
use crate::supervisor::error::Result;
use crate::supervisor::playbook::Step;
use crate::supervisor::purse::Draw;

impl Engine<'_> {
    /// Run steps at the same time (one, for a plain step), between two checkpoints.
    pub(super) fn run_round<'s>(
        &mut self,
        phase: &str,
        steps: &[&'s Step],
        draw: Option<&Draw>,
    ) -> Result<Vec<Attempt<'s>>> {
        let ids: Vec<&str> = steps.iter().map(|s| s.id.as_str()).collect();
        let tag = if steps.len() == 1 {
            steps[0].id.clone()
        } else {
            phase.to_owned()
        };
        session::ensure_worktree_intact(self.repo, self.session)?;
        let protected = self.protected_tips()?;
        let (before, round_start) =
            self.vetted_checkpoint(&format!("before {}", ids.join(", ")), &tag, &ids)?;
        let (share, budget_share) = self.shares(steps.len(), draw);
        // The steps' checks run within the same share: a test that sleeps an hour ends
        // where the run's time does, not at the step's own timeout.
        let round_began = std::time::Instant::now();
        // Agents whose CLI takes a hook get the guard, unless the project's settings run it;
        // an ACP turn asks it about each command.
        let guard = std::env::current_exe()
            .ok()
            .map(|exe| agent::guard_command_for(&exe));
        let settings = self.hold_agent_settings(&before, &ids)?;
        let fence = self.fence_round()?;
        let (walls, walls_lack) = self.walls_held();
        let mut invocations = Vec::new();
        for step in steps {
            let agent = runner::agent(self.config, step.runner.as_deref(), step.role.as_deref())?;
            let kind = agent.kind;
            let number = self.state.step(&step.id).attempts + 1;
            let prompt = self.prompt(step, kind);
            self.record(
                NewEvent::new(Body::StepStarted(StepStarted {
                    attempt: number,
                    runner: kind.as_str().to_owned(),
                    model: agent.model.clone(),
                    command: redact(&prompt),
                    autonomy: step.autonomy.as_str().to_owned(),
                    phase: (steps.len() > 1).then(|| phase.to_owned()),
                    uncontained: self.uncontained(),
                    walls: walls.clone(),
                    walls_lack: walls_lack.clone(),
                }))
                .step(Some(step.id.clone()))
                .decision(Some(Decision::Auto)),
            )?;
            let program =
                self.programs
                    .get(&kind)
                    .cloned()
                    .ok_or_else(|| runner::Error::NotInstalled {
                        runner: kind.as_str().to_owned(),
                        program: kind.as_str().to_owned(),
                    })?;
            let mut env = vec![
                ("BMAD_SESSION".into(), self.session.id.to_string()),
                ("BMAD_STEP".into(), step.id.clone()),
                ("BMAD_ATTEMPT".into(), number.to_string()),
                ("BMAD_PLAYBOOK".into(), self.playbook.name.clone()),
                ("BMAD_ARGS".into(), self.args.join(" ")),
            ];
            if let Some(findings) = self.findings_for(step) {
                env.push(("BMAD_FINDINGS".into(), findings));
            }
            // The role's key, under the name its CLI reads; only ever in the agent's
            // environment, never in an event.
            if let (Some(var), Some(target)) = (&agent.api_key_env, kind.adapter().key_variable()) {
                if let Some(key) = crate::env::named(var) {
                    env.push((target.to_owned(), key));
                }
            }
            let sandbox = self.step_walls(fence.as_ref(), &step.id, kind, &program)?;
            invocations.push((
                *step,
                number,
                Invocation {
                    kind,
                    program,
                    prompt,
                    model: agent.model.clone(),
                    cwd: self.root.clone(),
                    env,
                    timeout: step.timeout.min(share),
                    allowance: budget_share,
                    prices: self.config.orchestration.prices.clone(),
                    allowed_commands: self.test_commands(step),
                    guard: guard.clone(),
                    sandbox,
                },
            ));
        }
        let results = self.invoke_all(&invocations);
        if let Some(fence) = fence {
            self.settle_fence(fence, &ids)?;
        }
        self.report_moved_protected(&protected, &ids)?;
        let after = self.checkpoint_after(&before, &settings, &tag, &ids)?;
        let mut violations = self.round_violations(round_start, &ids)?;
        // A step running again after a crash is judged on all it changed since it began.
        let since = match self.crashed_from.take() {
            Some((crashed, from)) if ids.iter().any(|id| crashed.iter().any(|c| c == id)) => from,
            other => {
                self.crashed_from = other;
                before.clone()
            }
        };
        let changes = since.work_changed_to(self.repo, &after)?;
        let changed_paths: Vec<String> = changes.iter().map(|(p, _)| p.clone()).collect();
        let prices = runner::prices::Prices::new(&self.config.orchestration.prices);
        let mut attempts = Vec::new();
        let _shadow = self.checks_shadow()?;
        for ((step, number, _), result) in invocations.into_iter().zip(results) {
            let checks = step
                .postconditions
                .iter()
                .map(|c| {
                    let left = share.saturating_sub(round_began.elapsed());
                    evaluate(c, &self.check_env(step, Some(&changed_paths), left))
                })
                .collect();
            let error = result.as_ref().err().map(|e| e.to_string());
            let hash = stall_hash(result.as_ref().ok(), error.as_deref(), &changes);
            let spend = result.as_ref().map(|r| prices.spend(r)).unwrap_or_default();
            attempts.push(Attempt {
                step,
                number,
                result,
                checks,
                hash,
                changed: changes.len(),
                violations: violations.remove(step.id.as_str()).unwrap_or_default(),
                spend,
            });
        }
        Ok(attempts)
    }

    /// Run a round's invocations, at most `max_concurrent_agents` at once, in document
    /// order; one result each, in their order.
    fn invoke_all(
        &self,
        invocations: &[(&Step, u32, Invocation)],
    ) -> Vec<std::result::Result<AgentResult, runner::Error>> {
        let runners = &self.config.runners;
        let interrupt = self.interrupt;
        let width = self.config.orchestration.max_concurrent_agents.max(1) as usize;
        let mut results: Vec<std::result::Result<AgentResult, runner::Error>> = Vec::new();
        for batch in invocations.chunks(width) {
            std::thread::scope(|scope| {
                let root = &self.root;
                let handles: Vec<_> = batch
                    .iter()
                    .map(|(step, _, inv)| {
                        let limit = step.no_progress;
                        scope.spawn(move || watchdog::invoke(runners, inv, interrupt, limit, root))
                    })
                    .collect();
                results.extend(handles.into_iter().map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(runner::Error::Wait {
                            program: "agent".into(),
                            source: std::io::Error::other("the thread running it panicked"),
                        })
                    })
                }));
            });
        }
        results
    }

    /// What the checks of `step` look at; `changed`: the paths its round changed, if known;
    /// `left`: the time the run has left for them (a test run ends by then, or by the step's
    /// timeout if that comes first).
    pub(super) fn check_env<'e>(
        &'e self,
        step: &Step,
        changed: Option<&'e [String]>,
        left: std::time::Duration,
    ) -> CheckEnv<'e> {
        CheckEnv {
            root: &self.root,
            feature_env: &self.feature_env,
            branch: Some(self.session.short_branch()),
            test_command: self.config.checks.test_command.as_deref(),
            timeout: step
                .timeout
                .min(left)
                .max(std::time::Duration::from_secs(1)),
            changed,
            args: &self.args,
            interrupt: self.interrupt,
            sandbox: self.check_walls.as_ref().map(|s| &s.contained),
            passed_env: &self.config.runners.env,
        }
    }

    /// What the round a crash interrupted changed, for the postconditions of the steps it
    /// left running: from the checkpoint taken before that round to one taken now (which
    /// also keeps the interrupted work). `None` when no step was left running, or the
    /// round's checkpoint is gone: then `diff_nonempty` cannot hold and the step runs again.
    pub(super) fn changed_by_crashed_round(
        &mut self,
        pending: &[&Step],
    ) -> Result<Option<Vec<String>>> {
        let crashed: Vec<&str> = pending
            .iter()
            .filter(|s| self.state.step(&s.id).status == StepStatus::Running)
            .map(|s| s.id.as_str())
            .collect();
        let Some(first) = crashed.first() else {
            return Ok(None);
        };
        let before = session::chain(self.repo, self.session)?
            .into_iter()
            .find(|cp| {
                cp.label
                    .strip_prefix("before ")
                    .is_some_and(|ids| ids.split(", ").any(|id| crashed.contains(&id)))
            });
        let Some(before) = before else {
            return Ok(None);
        };
        let label = format!("after {} (interrupted)", crashed.join(", "));
        let (after, _) = self.vetted_checkpoint(&label, first, &crashed)?;
        let changed = before.work_changed_to(self.repo, &after)?;
        let ids = crashed.iter().map(|id| id.to_string()).collect();
        self.crashed_from = Some((ids, before));
        Ok(Some(changed.into_iter().map(|(path, _)| path).collect()))
    }

    /// A checkpoint of the round's steps (`tag`) whose every changed file was scanned before
    /// it could enter the object database: a secret is kept out of it and journaled,
    /// redacted, as a policy violation of the round's step. Returns it and its event's seq.
    pub(super) fn vetted_checkpoint(
        &mut self,
        label: &str,
        tag: &str,
        ids: &[&str],
    ) -> Result<(Checkpoint, u64)> {
        let policy = SessionPolicy::default();
        let taken = session::checkpoint(
            self.repo,
            self.session,
            label,
            Some(Status::Running),
            Some(tag.to_owned()),
            &policy,
        )?;
        let checkpoint = taken.checkpoint;
        self.fold(&taken.event);
        let step = round_step(ids);
        for finding in &policy.take_found() {
            self.record(
                NewEvent::violation(
                    "checkpoint",
                    finding.rule,
                    finding.location(),
                    format!(
                        "{} ({}) kept out of the checkpoint; remove it from the worktree",
                        finding.description, finding.excerpt
                    ),
                )
                .step(step.clone()),
            )?;
        }
        Ok((checkpoint, taken.event.seq))
    }

    /// The protected branches and where they point, taken before a round (see
    /// [`Self::report_moved_protected`]).
    pub(super) fn protected_tips(&self) -> Result<session::RefTips> {
        let names = crate::policy::protected_refs_with(self.repo, self.config)?;
        Ok(session::RefTips::take(self.repo, names)?)
    }

    /// Journal each protected branch that moved during a round as a policy violation of its
    /// steps. The reference-transaction hook refuses such a move; this catches one made with
    /// the hooks switched off (`git -c core.hooksPath=/dev/null update-ref refs/heads/main …`).
    /// Nothing is moved back: a human decides, from the journal.
    pub(super) fn report_moved_protected(
        &mut self,
        before: &session::RefTips,
        ids: &[&str],
    ) -> Result<()> {
        let short = |id: &Option<String>| match id {
            Some(id) => id[..id.len().min(10)].to_owned(),
            None => "nothing".to_owned(),
        };
        for moved in before.moved(self.repo)? {
            self.record(
                NewEvent::violation("supervisor", crate::policy::rules::MOVE_PROTECTED.id, moved.name.clone(), format!(
                        "{} moved from {} to {} while the step ran; if that was not you, put it back: {}",
                        moved.name,
                        short(&moved.was),
                        short(&moved.now),
                        moved.undo()
                    ))
                .step(round_step(ids)),
            )?;
        }
        Ok(())
    }

    /// The state a round left, checkpointed, with what it changed of the agents' settings
    /// put back. A worktree the round deleted or unlinked cannot be checkpointed or checked:
    /// its steps fail on that, with nothing changed to show (`before`).
    fn checkpoint_after(
        &mut self,
        before: &Checkpoint,
        settings: &session::HeldSettings,
        tag: &str,
        ids: &[&str],
    ) -> Result<Checkpoint> {
        if let Some(damage) = self.worktree_damage()? {
            self.report_damage(&damage, ids)?;
            return Ok(before.clone());
        }
        let after = self
            .vetted_checkpoint(&format!("after {}", ids.join(", ")), tag, ids)?
            .0;
        self.put_back_agent_settings(settings, &after, ids)?;
        Ok(after)
    }

    /// What agent CLIs read their grants from, held for the round. A step a crash
    /// interrupted may have changed it before the crash: that goes back before it runs again,
    /// journaled as its violation.
    fn hold_agent_settings(
        &mut self,
        before: &Checkpoint,
        ids: &[&str],
    ) -> Result<session::HeldSettings> {
        let held = session::hold_agent_settings(self.session, &runner::agent_settings())?;
        let crashed_before = self
            .crashed_from
            .as_ref()
            .filter(|(crashed, _)| ids.iter().any(|id| crashed.iter().any(|c| c == id)))
            .map(|(_, from)| from.clone());
        let Some(from) = crashed_before else {
            return Ok(held);
        };
        let changed: Vec<String> = from
            .work_changed_to(self.repo, before)?
            .into_iter()
            .map(|(path, _)| path)
            .filter(|path| runner::is_agent_settings(path))
            .collect();
        let held = held.as_before(self.repo, from.id, &changed)?;
        self.put_back_agent_settings(&held, before, ids)?;
        Ok(session::hold_agent_settings(
            self.session,
            &runner::agent_settings(),
        )?)
    }

    /// Put back what the round changed of the files agent CLIs read their grants from, the
    /// agent's version kept in `after`, and journal it as a policy violation of its steps
    /// (the round's violations then gate them).
    fn put_back_agent_settings(
        &mut self,
        held: &session::HeldSettings,
        after: &Checkpoint,
        ids: &[&str],
    ) -> Result<()> {
        let put_back = held.put_back(self.repo, self.session)?;
        if put_back.is_empty() {
            return Ok(());
        }
        let rule = &crate::policy::rules::AGENT_SETTINGS;
        let kept = after.id.to_hex_with_len(10);
        self.record(
            NewEvent::violation_of_paths(
                "supervisor",
                rule.id,
                put_back.clone(),
                format!(
                    "the step changed what agent CLIs read their permissions from: {}; put back as it was before the step. What git keeps of the step's version is in checkpoint {kept}: `git checkout {kept} -- <path>` takes one back, if you want it",
                    put_back.join(", ")
                ),
            )
            .step(round_step(ids)),
        )?;
        Ok(())
    }

    /// What a round did to the session's worktree, if it damaged it.
    pub(super) fn worktree_damage(&self) -> Result<Option<session::WorktreeDamage>> {
        Ok(session::worktree_damage(self.repo, self.session)?)
    }

    /// Journal a worktree the round damaged as a policy violation of its steps; the round's
    /// violations then gate them.
    pub(super) fn report_damage(
        &mut self,
        damage: &session::WorktreeDamage,
        ids: &[&str],
    ) -> Result<()> {
        let rule = &crate::policy::rules::WORKTREE_DAMAGED;
        self.record(
            NewEvent::violation(
                "supervisor",
                rule.id,
                damage.path.display().to_string(),
                format!("{}; repair: {}", damage.describe(), damage.fix()),
            )
            .step(round_step(ids)),
        )?;
        Ok(())
    }

    /// Journal lines git-bmad did not write (see [`session::Journal::unsealed`]) that no
    /// violation names yet: each is journaled now as a policy violation of `step` (none: of
    /// every step of the round). Returns them, described.
    pub(super) fn report_forgeries(
        &mut self,
        journal: &Journal,
        step: Option<String>,
    ) -> Result<Vec<String>> {
        let rule = crate::policy::rules::JOURNAL_FORGED.id;
        let reported: Vec<&str> = journal
            .violations(rule)
            .map(|v| v.subject.as_str())
            .collect();
        let mut found = Vec::new();
        for forged in &journal.unsealed {
            let subject = format!("journal #{}", forged.seq);
            if reported.contains(&subject.as_str()) {
                continue;
            }
            let described = forged.describe();
            self.record(
                NewEvent::violation("journal", rule, subject, format!(
                        "{described}: git-bmad did not write it (it breaks the journal's hash chain); ignored"
                    ))
                .step(step.clone()),
            )?;
            found.push(described);
        }
        Ok(found)
    }

    /// Lines written into the journal while no step ran (or before a crash), and refs of
    /// the record something else moved, park the run before anything else happens (those
    /// written during a step gate that step): each is journaled as a violation, and a gate
    /// opens before the next step.
    pub(super) fn park_on_a_record_not_ours(&mut self) -> Result<()> {
        let journal = session::read_journal(self.repo, &self.session.id)?;
        let forged = self.report_forgeries(&journal, None)?;
        let moved = self.report_moved_record(&journal)?;
        if (!forged.is_empty() || !moved.is_empty()) && self.state.gate.is_none() {
            let next = self
                .playbook
                .steps()
                .find(|s| !self.state.finished(&s.id))
                .cloned();
            if let Some(step) = next {
                let gate = if moved.is_empty() {
                    decide::forged_journal(&step, &forged, &self.state)
                } else {
                    decide::moved_record(&step, &moved, &forged, &self.state)
                };
                self.open_gate(&gate)?;
            }
        }
        Ok(())
    }

    /// The session's refs something other than git-bmad moved (see
    /// [`session::ref_record`]), as found when the run began, that no violation names yet at
    /// that value: each is journaled now as a policy violation. Returns them, described.
    pub(super) fn report_moved_record(&mut self, journal: &Journal) -> Result<Vec<String>> {
        let rule = crate::policy::rules::RECORD_MOVED.id;
        let reported: Vec<&str> = journal
            .violations(rule)
            .map(|v| v.subject.as_str())
            .collect();
        let mut found = Vec::new();
        for moved in std::mem::take(&mut self.moved) {
            let subject = format!("{} at {}", moved.name, moved.now);
            if reported.contains(&subject.as_str()) {
                continue;
            }
            self.record(NewEvent::violation(
                "supervisor",
                rule,
                subject,
                format!(
                    "{}; to put git-bmad's record back: {}",
                    moved.describe(),
                    moved.fix()
                ),
            ))?;
            found.push(format!(
                "{} (to put it back: {})",
                moved.describe(),
                moved.fix()
            ));
        }
        Ok(found)
    }

    /// Policy violations since event `seq` (the hooks' and the guard's, the checkpoint's
    /// secret scan's, journal lines git-bmad did not write), by step: each gates its step
    /// whatever the agent CLI reported (a call blocked in a subagent, a push the pre-push
    /// hook refused). One without a step belongs to every step of the round.
    pub(super) fn round_violations(
        &mut self,
        seq: u64,
        ids: &[&str],
    ) -> Result<BTreeMap<String, Vec<String>>> {
        // What the hooks kept for later (a ref update they refused) is journaled first.
        for event in session::flush_deferred(self.repo, self.session)? {
            self.fold(&event);
        }
        let journal = session::read_journal(self.repo, &self.session.id)?;
        let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut add = |step: &Option<String>, text: String| {
            let steps = match step {
                Some(step) => vec![step.clone()],
                None => ids.iter().map(|id| id.to_string()).collect(),
            };
            for step in steps {
                found.entry(step).or_default().push(text.clone());
            }
        };
        for event in journal.events().filter(|e| e.seq > seq) {
            if let Body::PolicyViolation(v) = &event.body {
                let text = format!(
                    "{} refused {} ({}): {}",
                    v.hook, v.subject, v.rule, v.reason
                );
                add(&event.step, text);
            }
        }
        let step = round_step(ids);
        for forged in self.report_forgeries(&journal, step.clone())? {
            add(
                &step,
                format!("the journal holds {forged}, which git-bmad did not write"),
            );
        }
        Ok(found)
    }
}

/// The step a round's events belong to: its only step, or none for a parallel phase.
pub(super) fn round_step(ids: &[&str]) -> Option<String> {
    match ids {
        [only] => Some((*only).to_owned()),
        _ => None,
    }
}
