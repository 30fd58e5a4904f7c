//! What an agent is told: the step's command with the run's arguments, the findings a fix
//! round follows, and the test commands it may run.

use super::Engine;
use crate::runner::Kind;
use crate::supervisor::playbook::{self, Check, Step, VerdictRule};

/// What a step whose verdict is required is asked, when its command does not ask already.
pub(crate) const VERDICT_REQUEST: &str =
    "End your reply with one line: VERDICT: PASS or VERDICT: FAIL.";

impl Engine<'_> {
    /// The test commands `step`'s checks run, and the project's: an agent may run them.
    pub(super) fn test_commands(&self, step: &Step) -> Vec<String> {
        let project = self.config.checks.test_command.clone();
        let mut commands: Vec<String> = step
            .postconditions
            .iter()
            .filter_map(|check| match check {
                Check::TestsPass(Some(command)) => Some(command.clone()),
                _ => None,
            })
            .collect();
        if let Some(project) = project.filter(|p| !commands.contains(p)) {
            commands.push(project);
        }
        commands
    }

    pub(super) fn prompt(&self, step: &Step, kind: Kind) -> String {
        let args = self.args.join(" ");
        let prompt = if step.command.contains("{args}") {
            step.command.replace("{args}", &args)
        } else if kind.is_agent() && !args.is_empty() {
            format!("{} {args}", step.command)
        } else {
            step.command.clone()
        };
        // A verdict git-bmad requires, it asks for, on the command's own line (a slash
        // command's arguments carry it to the skill).
        let asks_verdict = step.verdict == VerdictRule::Required
            && kind.is_agent()
            && !prompt.to_ascii_uppercase().contains("VERDICT:");
        let prompt = if asks_verdict {
            let (first, rest) = prompt.split_once('\n').unwrap_or((&prompt, ""));
            let rest = if rest.is_empty() {
                String::new()
            } else {
                format!("\n{rest}")
            };
            format!("{first} {VERDICT_REQUEST}{rest}")
        } else {
            prompt
        };
        // A fix round's agent is told what the review it follows found.
        match self.findings_for(step) {
            Some(findings) if prompt.contains("{findings}") => {
                prompt.replace("{findings}", &findings)
            }
            Some(findings) if kind.is_agent() => {
                format!("{prompt}\n\nOpen MUST-FIX findings to fix:\n{findings}")
            }
            _ => prompt.replace("{findings}", ""),
        }
    }

    /// The findings of the step `step` runs `when`, one per line.
    pub(super) fn findings_for(&self, step: &Step) -> Option<String> {
        let playbook::When::Findings(of) = step.when.as_ref()?;
        let findings = crate::supervisor::findings::found(&self.state, &self.playbook, of).findings;
        Some(
            findings
                .iter()
                .map(|f| format!("- {f}"))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    }
}
