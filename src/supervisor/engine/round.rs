//! What the supervisor checks around a round besides the agent's answer: a secret-free
//! checkpoint before and after, the policy violations journaled meanwhile (by hooks, the
//! guard, the checkpoint scan), and journal lines git-bmad did not write.

use std::collections::BTreeMap;

use super::Engine;
use crate::policy::secrets::CheckpointVet;
use crate::session::schema::{Body, PolicyViolation};
use crate::session::{self, Checkpoint, Decision, NewEvent, Status};
use crate::supervisor::error::Result;

impl Engine<'_> {
    /// A checkpoint of the round's steps (`tag`) whose every changed file was scanned before
    /// it could enter the object database: a secret is kept out of it and journaled,
    /// redacted, as a policy violation of the round's step. Returns it and its event's seq.
    pub(super) fn vetted_checkpoint(
        &mut self,
        label: &str,
        tag: &str,
        ids: &[&str],
    ) -> Result<(Checkpoint, u64)> {
        let mut secrets = CheckpointVet::default();
        let (checkpoint, ev, _) = session::checkpoint_vetted(
            self.repo,
            self.session,
            label,
            Some(Status::Running),
            Some(tag.to_owned()),
            Some(&mut |path, bytes| secrets.admit(path, bytes)),
        )?;
        self.fold(&ev);
        let step = match ids {
            [only] => Some(only.to_string()),
            _ => None,
        };
        for finding in &secrets.found {
            self.record(
                NewEvent::new(Body::PolicyViolation(PolicyViolation {
                    hook: "checkpoint".into(),
                    rule: finding.rule.to_owned(),
                    subject: finding.location(),
                    reason: format!(
                        "{} ({}) kept out of the checkpoint; remove it from the worktree",
                        finding.description, finding.excerpt
                    ),
                }))
                .step(step.clone())
                .decision(Some(Decision::Auto)),
            )?;
        }
        Ok((checkpoint, ev.seq))
    }

    /// Journal lines git-bmad did not write (see [`session::Journal::unsealed`]) that no
    /// violation names yet: each is journaled now as a policy violation of `step` (none: of
    /// every step of the round). Returns them, one line each.
    pub(super) fn report_forgeries(&mut self, step: Option<String>) -> Result<Vec<String>> {
        let journal = session::read_journal(self.repo, &self.session.id)?;
        let rule = crate::policy::rules::JOURNAL_FORGED.id;
        let reported: Vec<&str> = journal
            .events()
            .filter_map(|e| match &e.body {
                Body::PolicyViolation(v) if v.rule == rule => Some(v.subject.as_str()),
                _ => None,
            })
            .collect();
        let mut found = Vec::new();
        for forged in &journal.unsealed {
            let subject = format!("journal #{}", forged.seq);
            if reported.contains(&subject.as_str()) {
                continue;
            }
            let line = format!(
                "{subject}: a {} event{} on checkpoint {}",
                forged.kind,
                forged
                    .step
                    .as_deref()
                    .map(|s| format!(" for step {s}"))
                    .unwrap_or_default(),
                &forged.checkpoint[..forged.checkpoint.len().min(10)]
            );
            self.record(
                NewEvent::new(Body::PolicyViolation(PolicyViolation {
                    hook: "journal".into(),
                    rule: rule.into(),
                    subject,
                    reason: format!(
                        "{line} that git-bmad did not write (it breaks the journal's hash chain); ignored"
                    ),
                }))
                .step(step.clone())
                .decision(Some(Decision::Auto)),
            )?;
            found.push(line);
        }
        Ok(found)
    }

    /// Policy violations journaled since event `seq` (by the hooks, the guard, the
    /// checkpoint's secret scan), by step: each gates its step whatever the agent CLI
    /// reported (a call blocked in a subagent, a push the pre-push hook refused). One
    /// without a step belongs to every step of the round.
    pub(super) fn violations_since(
        &self,
        seq: u64,
        ids: &[&str],
    ) -> Result<BTreeMap<String, Vec<String>>> {
        let journal = session::read_journal(self.repo, &self.session.id)?;
        let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for event in journal.events().filter(|e| e.seq > seq) {
            let Body::PolicyViolation(v) = &event.body else {
                continue;
            };
            let steps = match &event.step {
                Some(step) => vec![step.clone()],
                None => ids.iter().map(|id| id.to_string()).collect(),
            };
            for step in steps {
                found.entry(step).or_default().push(format!(
                    "{} refused {} ({}): {}",
                    v.hook, v.subject, v.rule, v.reason
                ));
            }
        }
        Ok(found)
    }
}
