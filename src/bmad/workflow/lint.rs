//! What a workflow author should fix: jumps to nowhere, two steps with one number, a jump
//! whose words say one thing and whose target does another, steps nothing reaches,
//! template variables nothing sets, and calls of workflows that are not there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::config::Template;
use super::instructions::Instructions;
use super::resolve::Resolver;
use super::{template, Diagnostic, Env, Workflow};

/// Words too common to tell two goals apart.
const STOP_WORDS: &[&str] = &[
    "step", "next", "with", "from", "this", "that", "then", "sequence", "back", "goto", "the",
    "and", "for", "continue", "again", "return", "proceed",
];

/// Variables every BMAD run has without a `<template-output>` (engine and config).
const SYSTEM_VARIABLES: &[&str] = &[
    "date",
    "user_name",
    "project_name",
    "communication_language",
    "document_output_language",
    "user_skill_level",
    "output_folder",
    "planning_artifacts",
    "implementation_artifacts",
];

/// Add lint findings to `wf.diagnostics`.
pub fn lint(wf: &mut Workflow, env: &Env) {
    let file = wf
        .instructions_file
        .clone()
        .unwrap_or_else(|| wf.file.clone());
    let mut found = Vec::new();
    if let Some(i) = &wf.instructions {
        steps_and_jumps(i, &file, &mut found);
        let vars: BTreeMap<String, String> = wf
            .config
            .as_ref()
            .map(|c| {
                c.variables
                    .iter()
                    .map(|v| (v.name.clone(), v.value.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let mut resolver = Resolver::new(env, wf.install.clone(), vars);
        for call in i.invocations.iter().filter(|c| c.kind == "invoke-workflow") {
            if call.target.contains("{{") || call.target.trim().is_empty() {
                continue;
            }
            let path = resolver
                .text(&call.target)
                .unwrap_or_else(|_| call.target.clone());
            let p = Path::new(&path);
            let p = if p.is_absolute() {
                p.to_path_buf()
            } else {
                env.project_root.join(p)
            };
            if !p.is_file() {
                found.push(
                    Diagnostic::error(
                        &file,
                        call.line,
                        call.col,
                        format!(
                            "invoke-workflow {} does not resolve to a file ({})",
                            call.target,
                            env.shown(&p)
                        ),
                    )
                    .hint("fix the path, or install the module that provides it"),
                );
            }
        }
    }
    if let (Some(config), Some(i)) = (&wf.config, &wf.instructions) {
        if let Template::File(t) = &config.template {
            if let Ok(text) = std::fs::read_to_string(t) {
                let shown = env.shown(Path::new(t));
                let mut defined: BTreeSet<&str> = SYSTEM_VARIABLES.iter().copied().collect();
                defined.extend(config.variables.iter().map(|v| v.name.as_str()));
                defined.extend(i.template_outputs.iter().map(String::as_str));
                defined.extend(i.runtime_variables.iter().map(String::as_str));
                match template::variables(&text) {
                    Ok(used) => {
                        for (name, line) in used {
                            if !defined.contains(name.as_str()) {
                                found.push(
                                    Diagnostic::warning(&shown, line, 1, format!("template variable `{{{{{name}}}}}` is never set: no <template-output>, workflow variable or instruction mentions it"))
                                        .hint(format!("add <template-output>{name}</template-output> to the step that writes it")),
                                );
                            }
                        }
                    }
                    Err(e) => found.push(Diagnostic::error(&shown, e.line, 1, e.message)),
                }
            }
        }
    }
    wf.diagnostics.append(&mut found);
}

fn steps_and_jumps(i: &Instructions, file: &str, found: &mut Vec<Diagnostic>) {
    let mut first_at: BTreeMap<&str, usize> = BTreeMap::new();
    for s in i.steps.iter().filter(|s| !s.n.is_empty()) {
        match first_at.get(s.n.as_str()) {
            Some(line) => found.push(
                Diagnostic::error(
                    file,
                    s.line,
                    s.col,
                    format!("step {} is numbered twice (first on line {line})", s.n),
                )
                .hint("renumber one of them; goto step=… cannot tell them apart"),
            ),
            None => {
                first_at.insert(&s.n, s.line);
            }
        }
    }
    let anchors: BTreeSet<&str> = i.anchors.iter().map(|(a, _)| a.as_str()).collect();
    let mut targeted: BTreeSet<&str> = BTreeSet::new();
    for g in &i.gotos {
        if let Some(n) = &g.step {
            targeted.insert(n);
            match i.steps.iter().find(|s| s.n == *n) {
                None => found.push(
                    Diagnostic::error(
                        file,
                        g.line,
                        g.col,
                        format!("goto step=\"{n}\" goes to no step"),
                    )
                    .hint(format!(
                        "steps are: {}",
                        i.steps
                            .iter()
                            .map(|s| s.n.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                ),
                Some(target) if contradicts(&g.text, target.purpose()) => found.push(
                    Diagnostic::warning(
                        file,
                        g.line,
                        g.col,
                        format!(
                            "goto step=\"{n}\" says \"{}\", but step {n} is \"{}\"",
                            g.text,
                            target.purpose()
                        ),
                    )
                    .hint("point the goto at the step its text names, or fix the text"),
                ),
                Some(_) => {}
            }
        }
        if let Some(a) = &g.anchor {
            if !anchors.contains(a.as_str()) {
                found.push(
                    Diagnostic::error(
                        file,
                        g.line,
                        g.col,
                        format!("goto anchor=\"{a}\" goes to no <anchor id=\"{a}\">"),
                    )
                    .hint("add the anchor, or fix the name"),
                );
            }
        }
    }
    // A step right after one that always jumps away, which no goto names, is never run.
    for pair in i.steps.windows(2) {
        let (before, step) = (&pair[0], &pair[1]);
        let jumps_away = before
            .tags
            .last()
            .is_some_and(|t| t.name == "goto" && t.attr("if").is_none());
        if jumps_away && !targeted.contains(step.n.as_str()) {
            found.push(Diagnostic::warning(
                file,
                step.line,
                step.col,
                format!(
                    "step {} is unreachable: step {} always jumps away and no goto leads here",
                    step.n, before.n
                ),
            ));
        }
    }
}

/// A goto's text names something its target's goal does not mention at all.
fn contradicts(text: &str, goal: &str) -> bool {
    let words = |s: &str| -> Vec<String> {
        s.to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 4 && !STOP_WORDS.contains(w))
            .map(|w| w.chars().take(5).collect())
            .collect()
    };
    let said = words(text);
    let goal = words(goal);
    !said.is_empty() && !goal.is_empty() && !said.iter().any(|w| goal.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bmad::workflow::instructions;

    fn lint_text(text: &str) -> Vec<String> {
        let i = instructions::parse(text, 1, "i.xml");
        let mut found = Vec::new();
        steps_and_jumps(&i, "i.xml", &mut found);
        found.iter().map(|d| d.to_string()).collect()
    }

    #[test]
    fn jumps_numbers_and_reachability() {
        let found = lint_text(concat!(
            "<workflow>\n",
            "<step n=\"1\" goal=\"Find the story\">\n<goto step=\"3\">Completion sequence</goto>\n</step>\n",
            "<step n=\"2\" goal=\"Write tests\">\n<goto step=\"9\">Nowhere</goto>\n<goto anchor=\"gone\" />\n</step>\n",
            "<step n=\"3\" goal=\"Author comprehensive tests\">\n<goto step=\"1\">Find the story again</goto>\n</step>\n",
            "<step n=\"3\" goal=\"Story completion\" />\n",
            "</workflow>\n"
        ));
        assert_eq!(
            found,
            [
                "i.xml:12:1: error: step 3 is numbered twice (first on line 9) (fix: renumber one of them; goto step=… cannot tell them apart)",
                "i.xml:3:1: warning: goto step=\"3\" says \"Completion sequence\", but step 3 is \"Author comprehensive tests\" (fix: point the goto at the step its text names, or fix the text)",
                "i.xml:6:1: error: goto step=\"9\" goes to no step (fix: steps are: 1, 2, 3, 3)",
                "i.xml:7:1: error: goto anchor=\"gone\" goes to no <anchor id=\"gone\"> (fix: add the anchor, or fix the name)",
                "i.xml:5:1: warning: step 2 is unreachable: step 1 always jumps away and no goto leads here",
            ]
        );
        assert!(!contradicts(
            "Next task",
            "Implement task following red-green-refactor cycle"
        ));
        assert!(!contradicts(
            "Completion",
            "Story completion and mark for review"
        ));
    }
}
