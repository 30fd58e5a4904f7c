//! Whether each step's "done" rests on evidence git-bmad checks itself.
//!
//! An agent that says it worked is not evidence: a step is done on evidence only when git-bmad
//! ran the command itself (the shell runner's exit status), checked an artifact on disk
//! (postconditions) or requires the agent's explicit verdict. A step with none of those is
//! done on the agent's word, which `playbook validate` warns about and `--strict` refuses.

use super::playbook::{Check, Diagnostic, Playbook, Severity, VerdictRule};
use crate::config::Config;
use crate::runner;

/// Warnings for agent steps nothing checks, and, given the project's config, errors for a
/// bare `tests_pass` with no `checks.test_command` to run.
pub fn evidence_problems(playbook: &Playbook, config: Option<&Config>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let default = Config::default();
    for step in playbook.steps() {
        let bare_tests = step
            .preconditions
            .iter()
            .chain(&step.postconditions)
            .any(|c| *c == Check::TestsPass(None));
        if bare_tests && config.is_some_and(|c| c.checks.test_command.is_none()) {
            out.push(Diagnostic::at_field(
                Severity::Error,
                step.line,
                1,
                format!("{}.postconditions", step.id),
                "tests_pass has no command to run: set checks.test_command in .bmad/config.yaml (`git bmad init` detects it in a new setup) or write `tests_pass: <command>`",
            ));
        }
        // An unknown runner is reported by the command check; here it counts as an agent.
        let is_agent = runner::agent(
            config.unwrap_or(&default),
            step.runner.as_deref(),
            step.role.as_deref(),
        )
        .map_or(true, |agent| agent.kind.is_agent());
        if is_agent && step.postconditions.is_empty() && step.verdict == VerdictRule::Optional {
            out.push(Diagnostic::at_field(
                Severity::Warning,
                step.line,
                1,
                step.id.clone(),
                "nothing checks this step: the agent's word alone would make it done; add postconditions (file_exists, tests_pass, diff_nonempty, ...) or `verdict: required`",
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str, config: &Config) -> Vec<(Severity, String)> {
        let (playbook, diags) = super::super::playbook::parse(text, "t");
        assert!(diags.is_empty(), "{diags:?}");
        evidence_problems(&playbook.unwrap(), Some(config))
            .into_iter()
            .map(|d| (d.severity, d.field.unwrap_or_default()))
            .collect()
    }

    #[test]
    fn agent_steps_need_evidence_and_bare_tests_need_a_command() {
        let text = "steps:\n  - {id: talk, command: write a poem}\n  - {id: judged, command: review it, verdict: required}\n  - {id: built, command: build it, postconditions: [diff_nonempty]}\n  - {id: sh, command: make, runner: shell}\n  - {id: tested, command: fix it, postconditions: [tests_pass]}\n";
        let mut config = Config::default();
        assert_eq!(
            problems(text, &config),
            [
                (Severity::Warning, "talk".to_owned()),
                (Severity::Error, "tested.postconditions".to_owned()),
            ]
        );
        config.checks.test_command = Some("cargo test".into());
        assert_eq!(
            problems(text, &config),
            [(Severity::Warning, "talk".to_owned())]
        );
    }
}
