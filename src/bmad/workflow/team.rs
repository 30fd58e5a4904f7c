//! A v4 team workflow (`.bmad-core/workflows/*.yaml`): the rules its orchestrator reads it by.

use super::Diagnostic;
use crate::config::yaml::Node;

/// A v4 team workflow's own rules (BMAD v4 `.bmad-core/workflows/*.yaml`, as its
/// orchestrator reads them): `id` and `name`, and a `sequence` of steps, each naming the
/// `agent` that acts or being a `workflow_end`, `step` or `action` entry (or a bare name such
/// as `repeat_development_cycle`).
pub(super) fn lint_team_workflow(team: &Node, file: &str) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    for key in ["id", "name"] {
        if team.get(key).and_then(Node::as_str).is_none() {
            diagnostics.push(
                Diagnostic::error(
                    file,
                    team.line,
                    1,
                    format!("the team workflow has no `{key}`"),
                )
                .hint(format!("add `{key}:` under `workflow:`")),
            );
        }
    }
    let Some(sequence) = team.get("sequence").and_then(Node::as_seq) else {
        diagnostics.push(
            Diagnostic::error(
                file,
                team.line,
                1,
                "the team workflow has no `sequence` list".into(),
            )
            .hint("add `sequence:` with one entry per agent step"),
        );
        return diagnostics;
    };
    for entry in sequence {
        let known = entry.as_str().is_some()
            || [
                "agent",
                "workflow_end",
                "step",
                "action",
                "repeats",
                "condition",
            ]
            .iter()
            .any(|k| entry.get(k).is_some());
        if !known {
            diagnostics.push(Diagnostic::warning(
                file,
                entry.line,
                1,
                "a sequence entry names no `agent`, `step` or `action`: the orchestrator skips it"
                    .into(),
            ));
        }
    }
    diagnostics
}
