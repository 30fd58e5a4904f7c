//! Whether a playbook's slash commands exist in the project, for the agent that will get them.
//!
//! An agent handed `/speckit.plna` does not fail: it improvises. So validation looks for the
//! command's file where each agent CLI looks for project commands and skills, and a missing
//! one is an error before anything runs.

use std::path::Path;

use super::playbook::{Diagnostic, Playbook, Severity};
use crate::config::Config;
use crate::runner;

/// Errors for steps whose runner is unknown or whose slash command has no file in the project.
pub fn missing_commands(playbook: &Playbook, root: &Path, config: &Config) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for step in playbook.steps() {
        let (line, col) = step.command_at;
        let kind = match runner::agent(config, step.runner.as_deref(), step.role.as_deref()) {
            Ok(agent) => agent.kind,
            Err(e) => {
                out.push(Diagnostic::at_field(
                    Severity::Error,
                    step.line,
                    1,
                    format!("{}.runner", step.id),
                    format!(
                        "{e} (from the step, its role's orchestration.agents or runners.roles entry, or runners.default in .bmad/config.yaml)"
                    ),
                ));
                continue;
            }
        };
        let Some(name) = slash_command(&step.command) else {
            continue;
        };
        if !kind.is_agent() {
            continue;
        }
        let candidates = kind.adapter().command_files(name);
        if !candidates.iter().any(|c| root.join(c).is_file()) {
            let shown: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
            out.push(Diagnostic::at_field(
                Severity::Error,
                line,
                col,
                format!("{}.command", step.id),
                format!(
                    "/{name} does not exist in this project for runner {}: looked for {}",
                    kind.as_str(),
                    shown.join(", ")
                ),
            ));
        }
    }
    out
}

/// `speckit.plan` from `/speckit.plan some args`.
fn slash_command(command: &str) -> Option<&str> {
    let rest = command.trim_start().strip_prefix('/')?;
    let name = rest.split_whitespace().next()?;
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_found_per_agent() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".claude/commands/bmad/bmm")).unwrap();
        std::fs::write(root.join(".claude/commands/speckit.plan.md"), "plan").unwrap();
        std::fs::write(root.join(".claude/commands/bmad/bmm/dev-story.md"), "dev").unwrap();
        std::fs::create_dir_all(root.join(".claude/skills/speckit-tasks")).unwrap();
        std::fs::write(root.join(".claude/skills/speckit-tasks/SKILL.md"), "tasks").unwrap();
        let text = "steps:\n  - {id: a, command: /speckit.plan now}\n  - {id: b, command: /bmad:bmm:dev-story}\n  - {id: c, command: /speckit.tasks}\n  - {id: d, command: /speckit.plna}\n  - {id: e, command: /speckit.plan, runner: codex}\n  - {id: f, command: /anything, runner: shell}\n  - {id: g, command: write a poem}\n";
        let (playbook, diags) = super::super::playbook::parse(text, "t");
        assert!(diags.is_empty(), "{diags:?}");
        let missing = missing_commands(&playbook.unwrap(), root, &Config::default());
        let fields: Vec<&str> = missing.iter().filter_map(|d| d.field.as_deref()).collect();
        assert_eq!(fields, ["d.command", "e.command"]);
        assert_eq!((missing[0].line, missing[0].col), (5, 22));
        assert!(missing[0]
            .message
            .contains(".claude/commands/speckit.plna.md"));
        assert!(missing[1]
            .message
            .contains(".codex/prompts/speckit.plan.md"));
    }
}
