//! Step-file workflows: `workflow.md` names its first step in prose, and each step file names
//! the next in its frontmatter (`nextStepFile`, `altStepFile`, `skipToStepFile`, mode
//! variants `nextStepFile_modeA`…), resolved relative to the step file with the frontmatter's
//! own variables. Step files without frontmatter (party mode) name the next
//! step in prose; those links are followed too.
//!
//! Resume state lives in the *output* document: `stepsCompleted` holds step numbers or step
//! names, and [`resume_point`] says which step comes next.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;

use super::frontmatter::{self, Document};
use super::resolve::Resolver;
use super::{Diagnostic, Env};
use crate::config::yaml::{self, Node};

/// The most step files followed from one workflow (a guard against generated chains).
const MAX_STEPS: usize = 500;

/// A link from one step file to another.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Link {
    /// The frontmatter field (`nextStepFile`, …) or `prose`.
    pub via: String,
    /// The target, as shown.
    pub target: String,
    /// Whether the file exists.
    pub exists: bool,
}

/// One step file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StepFile {
    /// The file, as shown.
    pub file: String,
    /// Its frontmatter `name`, else the file stem.
    pub name: String,
    /// Its `description`.
    pub description: Option<String>,
    /// `outputFile`, resolved.
    pub output_file: Option<String>,
    /// Where it leads.
    pub links: Vec<Link>,
    /// Nothing follows it.
    pub terminal: bool,
}

/// The chain of a step-file workflow.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Chain {
    /// The first step, as shown.
    pub first: Option<String>,
    /// Every step file reached, the main path (`nextStepFile`) first, then branches.
    pub steps: Vec<StepFile>,
    /// Links back to a step already on the path: (from, to).
    pub loops: Vec<(String, String)>,
}

/// Follow the chain that starts at `path` (a `workflow.md` or a step file).
pub fn follow(
    path: &Path,
    doc: &Document<'_>,
    env: &Env,
    install: Option<PathBuf>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Chain {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut chain = Chain::default();
    let is_step = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("step"));
    let first = if is_step {
        Some(path.to_path_buf())
    } else {
        let mut resolver = Resolver::new(env, install.clone(), scalars(doc));
        let found = references(doc.body)
            .into_iter()
            .next()
            .map(|r| locate(&mut resolver, &r, dir));
        // A v6.11 SKILL.md routes by intent to reference files or runs a script; only a
        // workflow.md promises a chain of steps.
        let is_skill = path.file_name().is_some_and(|n| n == "SKILL.md");
        if found.is_none() && !is_skill {
            diagnostics.push(
                Diagnostic::warning(
                    &env.shown(path),
                    doc.body_line,
                    1,
                    "no step file is named in the body, and there is no <workflow> block".into(),
                )
                .hint("name the first step, e.g. Read fully and follow: `./steps/step-01-init.md`"),
            );
        }
        found
    };
    let Some(first) = first else {
        return chain;
    };
    chain.first = Some(env.shown(&first));
    let mut queue = vec![first];
    let mut seen: Vec<PathBuf> = Vec::new();
    while let Some(file) = queue.pop() {
        if seen.contains(&file) || seen.len() >= MAX_STEPS {
            continue;
        }
        seen.push(file.clone());
        let shown = env.shown(&file);
        let Ok(text) = std::fs::read_to_string(&file) else {
            diagnostics.push(Diagnostic::error(
                &shown,
                0,
                0,
                "step file does not exist".into(),
            ));
            continue;
        };
        let mut local = Vec::new();
        let step_doc = frontmatter::read(&text, &shown, &mut local);
        // The file loaded first was read by the caller, who has its findings.
        if file != path {
            diagnostics.append(&mut local);
        }
        let mut resolver = Resolver::new(env, install.clone(), scalars(&step_doc));
        let step_dir = file.parent().unwrap_or(Path::new("."));
        let mut links = Vec::new();
        let mut next_files = Vec::new();
        for (key, node) in &step_doc.fields {
            // `continueStepFile`/`continueFile`/`nextStep`: v6.3+ step files.
            let is_link = key.starts_with("nextStepFile")
                || matches!(
                    key.as_str(),
                    "altStepFile"
                        | "skipToStepFile"
                        | "continueStepFile"
                        | "continueFile"
                        | "nextStep"
                );
            let Some(value) = node.as_str().filter(|_| is_link) else {
                continue;
            };
            let target = locate(&mut resolver, value, step_dir);
            let exists = target.is_file();
            if !exists {
                diagnostics.push(
                    Diagnostic::error(
                        &shown,
                        node.line,
                        node.col,
                        format!("{key} {} does not exist", env.shown(&target)),
                    )
                    .hint("fix the path; it is resolved relative to this step file"),
                );
            }
            links.push(Link {
                via: key.clone(),
                target: env.shown(&target),
                exists,
            });
            next_files.push(target);
        }
        if links.is_empty() {
            // "Read fully and follow: `./step-02-….md`", with or without frontmatter (v6.3+
            // step files have frontmatter of runtime variables and link in prose).
            for r in references(step_doc.body) {
                let target = locate(&mut resolver, &r, step_dir);
                if target == file || next_files.contains(&target) {
                    continue;
                }
                links.push(Link {
                    via: "prose".into(),
                    target: env.shown(&target),
                    exists: target.is_file(),
                });
                next_files.push(target);
            }
        }
        // The main path first: push in reverse so `nextStepFile` pops next.
        for target in next_files.iter().rev() {
            if target.is_file() {
                queue.push(target.clone());
            }
        }
        let stem = file
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        chain.steps.push(StepFile {
            file: shown,
            name: step_doc.str("name").map_or(stem, str::to_owned),
            description: step_doc.str("description").map(str::to_owned),
            output_file: step_doc
                .str("outputFile")
                .map(|o| resolver.text(o).unwrap_or_else(|_| o.to_owned())),
            terminal: links.is_empty(),
            links,
        });
    }
    chain.loops = back_edges(&chain);
    // Step files next to the chain that nothing leads to (from a workflow's entry only: a
    // chain followed from a middle step naturally misses the steps before it).
    if let Some(steps_dir) = seen.first().and_then(|f| f.parent()).filter(|_| !is_step) {
        let first = chain.first.as_deref().unwrap_or("the workflow");
        diagnostics.extend(unreached_steps(steps_dir, &seen, first, env));
    }
    chain
}

/// A warning for each step file in `steps_dir` that no step of the chain from `first`
/// leads to (`seen`: the files the chain reached).
fn unreached_steps(steps_dir: &Path, seen: &[PathBuf], first: &str, env: &Env) -> Vec<Diagnostic> {
    let Ok(entries) = std::fs::read_dir(steps_dir) else {
        return Vec::new();
    };
    let mut orphans: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            name.starts_with("step-") && name.ends_with(".md") && !seen.contains(p)
        })
        .collect();
    orphans.sort();
    let why = format!("no step of the chain from {first} leads here");
    let warn = |o: &PathBuf| Diagnostic::warning(&env.shown(o), 0, 0, why.clone());
    orphans.iter().map(warn).collect()
}

/// Links that close a cycle (back edges of a depth-first walk from the first step); a link
/// to a step reached another way (two branches joining) is not one.
fn back_edges(chain: &Chain) -> Vec<(String, String)> {
    fn visit(chain: &Chain, at: usize, state: &mut [u8], out: &mut Vec<(String, String)>) {
        state[at] = 1;
        for link in &chain.steps[at].links {
            let Some(next) = chain.steps.iter().position(|s| s.file == link.target) else {
                continue;
            };
            match state[next] {
                0 => visit(chain, next, state, out),
                1 => out.push((chain.steps[at].file.clone(), link.target.clone())),
                _ => {}
            }
        }
        state[at] = 2;
    }
    let mut state = vec![0u8; chain.steps.len()];
    let mut out = Vec::new();
    if !chain.steps.is_empty() {
        visit(chain, 0, &mut state, &mut out);
    }
    out
}

/// The frontmatter's scalar fields, for `{workflow_path}`-style references.
fn scalars(doc: &Document<'_>) -> BTreeMap<String, String> {
    doc.fields
        .iter()
        .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned())))
        .collect()
}

/// Resolve a step reference: variables first, then relative to `dir`. Two v6.11 forms
/// name files of the skill itself: `[[bmad-snapshot:step-02-plan.md]]` (a snapshot of the
/// skill's own file) and `{skill-root}/…` ("this skill's installed directory", SKILL.md of
/// bmad-code-review); both resolve against the skill root, the nearest folder up from `dir`
/// that holds a `SKILL.md`.
fn locate(resolver: &mut Resolver<'_>, reference: &str, dir: &Path) -> PathBuf {
    let reference = reference.trim();
    let skill_root = || {
        dir.ancestors()
            .take(4)
            .find(|d| d.join("SKILL.md").is_file())
            .unwrap_or(dir)
            .to_path_buf()
    };
    if let Some(snapshot) = reference.strip_prefix("bmad-snapshot:") {
        return normalise(&skill_root().join(snapshot));
    }
    let reference = if reference.contains("{skill-root}") {
        reference.replace("{skill-root}", &skill_root().to_string_lossy())
    } else {
        reference.to_owned()
    };
    let text = resolver
        .text(&reference)
        .unwrap_or_else(|_| reference.clone());
    let p = PathBuf::from(&text);
    let p = if p.is_absolute() { p } else { dir.join(p) };
    normalise(&p)
}

/// `a/./b/../c` → `a/c`, without touching the file system.
fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Step-file paths named in markdown, in order.
fn references(body: &str) -> Vec<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"[^\s`'()\[\]]*step-[A-Za-z0-9_.-]*\.md").expect("step reference")
    });
    let mut out: Vec<String> = Vec::new();
    for m in re.find_iter(body) {
        let r = m.as_str().trim_matches('"').to_owned();
        if !out.contains(&r) {
            out.push(r);
        }
    }
    out
}

/// Where a resumed workflow stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ResumePoint {
    /// Steps the output document says are done, as chain step names.
    pub completed: Vec<String>,
    /// The step to run next; `None` when every step is done.
    pub next: Option<String>,
    /// Entries that name no step of the chain.
    pub unknown: Vec<String>,
}

/// Read `stepsCompleted` from an output document's frontmatter (`None` when it has none).
pub fn steps_completed(text: &str, file: &str) -> Option<Vec<String>> {
    let mut ignored = Vec::new();
    let doc = frontmatter::read(text, file, &mut ignored);
    let node = doc.get("stepsCompleted")?;
    Some(match &node.value {
        yaml::Value::Seq(items) => items
            .iter()
            .filter_map(Node::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    })
}

/// Which step comes next, given `stepsCompleted`.
///
/// BMAD's rule (every `step-01b-continue.md`: "resume from the last completed step"): the
/// entries are step *numbers* (`[1, 2, 3]`, the `NN` of `step-NN-…`) or step names, and the
/// next step is the first one numbered after the highest completed. Lettered steps
/// (`step-01b-continue`, `step-04a-…`) are conditional: the continuation handler and menu
/// branches. They count as done when named, but are the next step only when no plain step
/// carries the next number. Chains without numbered steps fall back to positions along the
/// chain (a number `n` is the `n`th step) and the first step not done.
pub fn resume_point(chain: &Chain, completed: &[String]) -> ResumePoint {
    let mut done = vec![false; chain.steps.len()];
    let mut names = Vec::new();
    let mut unknown = Vec::new();
    let numbered = chain.steps.iter().any(|s| number_of(&s.name).is_some());
    for entry in completed {
        let e = entry.trim().trim_end_matches(".md");
        let at = match e.parse::<usize>() {
            Ok(n) if n >= 1 && numbered => step_numbered(chain, n),
            Ok(n) if n >= 1 => chain.steps.get(n - 1).map(|_| n - 1),
            _ => chain
                .steps
                .iter()
                .position(|s| s.name == e || s.file.ends_with(&format!("{e}.md"))),
        };
        match at {
            Some(i) => {
                done[i] = true;
                names.push(chain.steps[i].name.clone());
            }
            None => unknown.push(entry.clone()),
        }
    }
    let highest = chain
        .steps
        .iter()
        .zip(&done)
        .filter(|(_, d)| **d)
        .filter_map(|(s, _)| number_of(&s.name))
        .max();
    let next = match highest {
        Some(last) if numbered => {
            // The next number that has a step, its plain step before its lettered ones.
            let mut after: Vec<(usize, bool, usize)> = chain
                .steps
                .iter()
                .enumerate()
                .filter(|(i, _)| !done[*i])
                .filter_map(|(i, s)| {
                    let n = number_of(&s.name)?;
                    (n > last).then_some((n, is_lettered(&s.name), i))
                })
                .collect();
            after.sort();
            after.first().map(|(_, _, i)| chain.steps[*i].name.clone())
        }
        _ => chain
            .steps
            .iter()
            .zip(&done)
            .find(|(s, d)| !(**d || numbered && is_lettered(&s.name)))
            .map(|(s, _)| s.name.clone()),
    };
    ResumePoint {
        completed: names,
        next,
        unknown,
    }
}

/// The chain's step numbered `n`: the plain `step-NN-…` if there is one, else the first
/// lettered `step-NNx-…`.
fn step_numbered(chain: &Chain, n: usize) -> Option<usize> {
    let with_number = |plain: bool| {
        chain
            .steps
            .iter()
            .position(|s| number_of(&s.name) == Some(n) && is_lettered(&s.name) != plain)
    };
    with_number(true).or_else(|| with_number(false))
}

/// `step-03-create-stories` → 3.
fn number_of(name: &str) -> Option<usize> {
    let digits: String = name
        .trim_start_matches("step-")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// `step-01b-continue`, `step-04a1-…`: a letter right after the step's number.
fn is_lettered(name: &str) -> bool {
    name.trim_start_matches("step-")
        .chars()
        .find(|c| !c.is_ascii_digit())
        .is_some_and(|c| c.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// A chain in the order BMAD's create-prd walks it: init, its continuation handler
    /// (reached first from init), then the numbered steps.
    fn prd_like(names: &[&str]) -> Chain {
        Chain {
            first: Some(names[0].to_owned()),
            steps: names
                .iter()
                .map(|n| StepFile {
                    file: format!("steps/{n}.md"),
                    name: (*n).to_owned(),
                    description: None,
                    output_file: None,
                    links: Vec::new(),
                    terminal: false,
                })
                .collect(),
            loops: Vec::new(),
        }
    }

    #[test]
    fn resume_follows_bmads_last_completed_plus_one() {
        let names: Vec<String> = (2..=11).map(|n| format!("step-{n:02}-x")).collect();
        let mut all = vec!["step-01-init", "step-01b-continue"];
        all.extend(names.iter().map(String::as_str));
        let chain = prd_like(&all);
        let numbers: Vec<String> = (1..=8).map(|n| n.to_string()).collect();
        let r = resume_point(&chain, &numbers);
        assert_eq!(r.next.as_deref(), Some("step-09-x"));
        assert!(r.unknown.is_empty());
        let by_name: Vec<String> = std::iter::once("step-01-init".to_owned())
            .chain(names[..9].iter().cloned())
            .collect();
        let r = resume_point(&chain, &by_name);
        assert_eq!(r.next.as_deref(), Some("step-11-x"));
        // A menu branch: after step 3 the next number is 4, and only lettered 04a/04b
        // carry it: the first of them in the chain.
        let branchy = prd_like(&["step-01-init", "step-03-menu", "step-04b-b", "step-04a-a"]);
        let r = resume_point(&branchy, &["1".into(), "3".into()]);
        assert_eq!(r.next.as_deref(), Some("step-04b-b"));
    }

    #[test]
    fn a_chain_with_a_branch_a_loop_and_a_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            "wf/workflow.md",
            "---\nname: demo\n---\nRead fully and follow: `./steps/step-01-init.md`\n",
        );
        write(root, "wf/steps/step-01-init.md", "---\nname: 'step-01-init'\nworkflow_path: '{project-root}/wf'\nnextStepFile: '{workflow_path}/steps/step-02-work.md'\naltStepFile: './step-01b-continue.md'\n---\n");
        write(
            root,
            "wf/steps/step-01b-continue.md",
            "---\nname: step-01b-continue\nnextStepFile: './step-02-work.md'\n---\n",
        );
        write(root, "wf/steps/step-02-work.md", "---\nname: step-02-work\nnextStepFile: './step-03-done.md'\nskipToStepFile: './step-09-gone.md'\n---\n");
        write(
            root,
            "wf/steps/step-03-done.md",
            "No frontmatter. Back to `./step-02-work.md` if needed.\n",
        );
        write(
            root,
            "wf/steps/step-05-orphan.md",
            "---\nname: orphan\n---\n",
        );
        let env = Env::new(root);
        let mut d = Vec::new();
        let text = std::fs::read_to_string(root.join("wf/workflow.md")).unwrap();
        let doc = frontmatter::read(&text, "wf/workflow.md", &mut d);
        let wf = root.join("wf/workflow.md");
        let chain = follow(&wf, &doc, &env, env.install_of(&wf), &mut d);
        let names: Vec<&str> = chain.steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "step-01-init",
                "step-02-work",
                "step-03-done",
                "step-01b-continue"
            ]
        );
        assert_eq!(chain.steps[1].links[1].via, "skipToStepFile");
        assert!(!chain.steps[1].links[1].exists);
        assert_eq!(
            chain.loops,
            [(
                "wf/steps/step-03-done.md".to_owned(),
                "wf/steps/step-02-work.md".to_owned()
            )],
            "a back edge is a loop; two branches joining is not"
        );
        let messages: Vec<String> = d.iter().map(|x| x.to_string()).collect();
        assert!(messages.iter().any(|m| m.starts_with("wf/steps/step-02-work.md:4:17: error: skipToStepFile wf/steps/step-09-gone.md does not exist")), "{messages:?}");
        assert!(
            messages
                .iter()
                .any(|m| m
                    .starts_with("wf/steps/step-05-orphan.md:0:0: warning: no step of the chain")),
            "{messages:?}"
        );

        // Resume: numbers or names.
        let r = resume_point(&chain, &["1".into(), "step-02-work".into()]);
        assert_eq!(r.next.as_deref(), Some("step-03-done"));
        // Numbers are step numbers, not places in the chain: 01b, reached from step 1, is
        // the continuation handler and never what comes after a completed step.
        let r = resume_point(&chain, &["1".into(), "2".into()]);
        assert_eq!(r.completed, ["step-01-init", "step-02-work"]);
        assert_eq!(r.next.as_deref(), Some("step-03-done"));
        let r = resume_point(&chain, &["1".into()]);
        assert_eq!(r.next.as_deref(), Some("step-02-work"));
        let r = resume_point(&chain, &[]);
        assert_eq!(r.next.as_deref(), Some("step-01-init"));
        let all: Vec<String> = ["step-01-init", "step-02-work", "step-03-done"]
            .map(String::from)
            .to_vec();
        assert_eq!(resume_point(&chain, &all).next, None);
        let r = resume_point(&chain, &["step-01-init.md".into(), "nope".into()]);
        // (named steps work the same way)
        assert_eq!(
            (r.next.as_deref(), r.unknown.clone()),
            (Some("step-02-work"), vec!["nope".to_owned()])
        );
        assert_eq!(
            steps_completed("---\nstepsCompleted: [1, 2]\n---\n", "o.md"),
            Some(vec!["1".to_owned(), "2".to_owned()])
        );
    }
}
