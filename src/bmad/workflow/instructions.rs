//! A BMAD instruction file (`instructions.xml`, `instructions.md`, or the `<workflow>` block
//! in a `workflow.md` / `SKILL.md`) as ordered steps with their tags.
//!
//! Step numbers are labels, not integers: `0.5`, `2b`, `13a` and `FINAL` occur, and
//! sprint-planning's steps are written `1, 0.5, 2, …`. Steps are kept in document order,
//! which is the order BMAD's engine reads them in.

use std::collections::BTreeMap;

use serde::Serialize;

use super::markup::{self, Element};
use super::Diagnostic;

/// Tags BMAD uses.
pub const KNOWN_TAGS: &[&str] = &[
    "workflow",
    "step",
    "action",
    "check",
    "ask",
    "if",
    "goto",
    "anchor",
    "invoke-workflow",
    "invoke-task",
    "invoke-protocol",
    "template-output",
    "critical",
    "output",
    "for-each",
    "substep",
    "note",
    "example",
    "on-select",
    "guideline",
    "checkpoint",
    "param",
    "elicit-required",
    // The engine (core/tasks/workflow.xml).
    "task",
    "objective",
    "llm",
    "mandate",
    "flow",
    "phase",
    "rule",
    "protocol",
    "protocols",
    "execution-modes",
    "mode",
    "supported-tags",
    "tag",
    "i",
    "desc",
    "WORKFLOW-RULES",
];

/// One step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    /// `n`, as written (`1`, `0.5`, `2b`, `FINAL`).
    pub n: String,
    /// `goal`.
    pub goal: Option<String>,
    /// `title` (the engine's steps).
    pub title: Option<String>,
    /// `if`: the step runs only when this holds.
    pub condition: Option<String>,
    /// `optional` (`true`, or a condition such as `level == 2`).
    pub optional: Option<String>,
    /// `tag` (`sprint-status`).
    pub tag: Option<String>,
    /// `repeat` (`until-approved`, `5`).
    pub repeat: Option<String>,
    /// `elicit="true"`.
    pub elicit: bool,
    /// Where it starts.
    pub line: usize,
    /// Its column.
    pub col: usize,
    /// Its tags, nested as written.
    pub tags: Vec<Element>,
}

impl Step {
    /// What the step is for: its goal, else its title.
    pub fn purpose(&self) -> &str {
        self.goal.as_deref().or(self.title.as_deref()).unwrap_or("")
    }
}

/// A jump.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Goto {
    /// The step it is in.
    pub from: String,
    /// `step="…"`.
    pub step: Option<String>,
    /// `anchor="…"`.
    pub anchor: Option<String>,
    /// Its text (`Completion sequence`).
    pub text: String,
    /// Inside a `<check>`, an `if`, or an `<ask>` answer: taken only sometimes.
    pub conditional: bool,
    /// Where.
    pub line: usize,
    /// Column.
    pub col: usize,
}

/// A call of another workflow, task or protocol.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Invocation {
    /// `invoke-workflow`, `invoke-task` or `invoke-protocol`.
    pub kind: String,
    /// The path, task or protocol name (attribute or text).
    pub target: String,
    /// `halt="true"`.
    pub halt: bool,
    /// Where.
    pub line: usize,
    /// Column.
    pub col: usize,
}

/// A parsed instruction file.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Instructions {
    /// Steps in document order.
    pub steps: Vec<Step>,
    /// Elements outside any step (the `<critical>` rules at the top, …).
    pub preamble: Vec<Element>,
    /// Elements by tag name, everywhere.
    pub counts: BTreeMap<String, usize>,
    /// `tag@attribute` counts (`action@if`, `goto@anchor`, …).
    pub attribute_counts: BTreeMap<String, usize>,
    /// Anchors: (id, line).
    pub anchors: Vec<(String, usize)>,
    /// Every `goto`.
    pub gotos: Vec<Goto>,
    /// Every `invoke-*`.
    pub invocations: Vec<Invocation>,
    /// Names given to `<template-output>` (the template variables the steps fill).
    pub template_outputs: Vec<String>,
    /// `{{runtime}}` variables the instructions use.
    pub runtime_variables: Vec<String>,
    /// Warnings from reading.
    #[serde(skip)]
    pub diagnostics: Vec<Diagnostic>,
}

/// Parse instruction text; `first_line` is the line `text` starts at in `file`.
pub fn parse(text: &str, first_line: usize, file: &str) -> Instructions {
    let (elements, notes) = markup::read(text, first_line);
    let mut out = Instructions {
        diagnostics: notes
            .into_iter()
            .map(|n| match n.error {
                true => Diagnostic::error(file, n.line, n.col, n.message),
                false => Diagnostic::warning(file, n.line, n.col, n.message),
            })
            .collect(),
        ..Default::default()
    };
    let mut all = Vec::new();
    for e in &elements {
        e.walk(&mut all);
    }
    let mut unknown: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    for e in &all {
        *out.counts.entry(e.name.clone()).or_default() += 1;
        for (k, _) in &e.attrs {
            *out.attribute_counts
                .entry(format!("{}@{k}", e.name))
                .or_default() += 1;
        }
        if !KNOWN_TAGS.contains(&e.name.as_str()) {
            let u = unknown.entry(&e.name).or_insert((e.line, e.col, 0));
            u.2 += 1;
        }
        match e.name.as_str() {
            "anchor" => {
                if let Some(id) = e.attr("id") {
                    out.anchors.push((id.to_owned(), e.line));
                }
            }
            "invoke-workflow" | "invoke-task" | "invoke-protocol" => {
                let target = e
                    .attr("path")
                    .or(e.attr("name"))
                    .or(e.attr("workflow"))
                    .map(str::to_owned)
                    .unwrap_or_else(|| e.text.clone());
                out.invocations.push(Invocation {
                    kind: e.name.clone(),
                    target,
                    halt: e.attr("halt") == Some("true"),
                    line: e.line,
                    col: e.col,
                });
            }
            "template-output" => {
                let name = e.text.lines().next().unwrap_or("").trim();
                if !name.is_empty() {
                    out.template_outputs.push(name.to_owned());
                }
            }
            _ => {}
        }
    }
    for (name, (line, col, n)) in unknown {
        out.diagnostics.push(Diagnostic::warning(
            file,
            line,
            col,
            format!("unknown tag <{name}> ({n} time(s)): kept as written"),
        ));
    }
    for e in &elements {
        collect_steps(e, &mut out, file);
    }
    out.runtime_variables = runtime_variables(text);
    out
}

/// Steps are `<step>` elements not inside another step or an engine protocol (whose steps
/// are the protocol's, not the workflow's). Everything else at workflow level is preamble.
fn collect_steps(e: &Element, out: &mut Instructions, file: &str) {
    match e.name.as_str() {
        "step" => {
            let n = e.attr("n").unwrap_or("").to_owned();
            if n.is_empty() {
                out.diagnostics.push(Diagnostic::warning(
                    file,
                    e.line,
                    e.col,
                    "<step> without n=\"…\": it has no number to go to".into(),
                ));
            }
            let get = |k: &str| e.attr(k).map(str::to_owned);
            for c in &e.children {
                gotos_in(c, &n, false, &mut out.gotos);
            }
            out.steps.push(Step {
                n,
                goal: get("goal"),
                title: get("title"),
                condition: get("if"),
                optional: get("optional"),
                tag: get("tag"),
                repeat: get("repeat"),
                elicit: e.attr("elicit") == Some("true"),
                line: e.line,
                col: e.col,
                tags: e.children.clone(),
            });
        }
        "protocol" | "protocols" => {}
        "workflow" | "task" | "flow" => {
            for c in &e.children {
                collect_steps(c, out, file);
            }
        }
        _ => out.preamble.push(e.clone()),
    }
}

fn gotos_in(e: &Element, step: &str, conditional: bool, out: &mut Vec<Goto>) {
    let conditional = conditional
        || e.attr("if").is_some()
        || matches!(e.name.as_str(), "check" | "if" | "ask" | "on-select");
    if e.name == "goto" {
        out.push(Goto {
            from: step.to_owned(),
            step: e.attr("step").map(str::to_owned),
            anchor: e.attr("anchor").map(str::to_owned),
            text: e.text.clone(),
            conditional,
            line: e.line,
            col: e.col,
        });
    }
    for c in &e.children {
        gotos_in(c, step, conditional, out);
    }
}

/// `{{name}}` placeholders, first use order, without Handlebars helpers (`#if`, `/each`,
/// `else`, `this`, `@index`).
pub fn runtime_variables(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        let name = after[..end].trim();
        let plain = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if plain && name != "this" && name != "else" && !out.iter().any(|o| o == name) {
            out.push(name.to_owned());
        }
        rest = &after[end + 2..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_in_document_order_with_their_labels() {
        let text = "<workflow>\n<critical>Rule</critical>\n<step n=\"1\" goal=\"One\">\n<action>a</action>\n</step>\n<step n=\"0.5\" goal=\"Half\" optional=\"true\">\n<invoke-protocol name=\"discover_inputs\" />\n</step>\n<step n=\"2b\" goal=\"Two b\" if=\"x\">\n<check if=\"y\">\n<goto step=\"1\">Again</goto>\n</check>\n</step>\n<step n=\"FINAL\" goal=\"End\" />\n<foo>kept</foo>\n</workflow>\n";
        let i = parse(text, 1, "i.xml");
        let ns: Vec<&str> = i.steps.iter().map(|s| s.n.as_str()).collect();
        assert_eq!(ns, ["1", "0.5", "2b", "FINAL"]);
        assert_eq!(i.steps[1].optional.as_deref(), Some("true"));
        assert_eq!(i.steps[2].condition.as_deref(), Some("x"));
        assert_eq!(i.invocations[0].target, "discover_inputs");
        assert!(i.gotos[0].conditional);
        assert_eq!(i.preamble.len(), 2, "critical and the unknown foo");
        assert_eq!(i.counts["foo"], 1);
        assert!(i.diagnostics[0].message.contains("unknown tag <foo>"));
    }

    #[test]
    fn runtime_variables_skip_helpers() {
        assert_eq!(
            runtime_variables(
                "{{story_key}} {{#if x}}{{this}}{{/if}} {{ user.name }} {{story_key}}"
            ),
            ["story_key", "user.name"]
        );
    }
}
