//! An epic's plan: which stories run, in what dependency order and in which parallel waves,
//! what each branch starts from (stacked on an unmerged dependency's branch), which stories
//! may not run at the same time (overlapping `touches`), where an integration checkpoint
//! falls, and the pipeline each story gets. Pure: files in, plan out.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::names;
use super::options::PlanOptions;
use super::pipeline::{self, Era, Shape};
use super::Error;
use crate::bmad::project::{Project, StoryView};
use crate::bmad::queue::{self, Item};
use crate::bmad::status::Status;
use crate::paths;
use crate::session::Repo;
use crate::text::dollars;

/// What the run does with a story.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "action", content = "reason")]
pub enum Action {
    /// Run its pipeline.
    Run,
    /// Already done: nothing to do.
    Done,
    /// Not run: why (blocked, a dependency outside the run that is not done…).
    Hold(String),
}

/// One story in the plan.
#[derive(Clone, Debug, Serialize)]
pub struct Planned {
    /// Its key.
    pub key: String,
    /// Its title.
    pub title: Option<String>,
    /// Its status now.
    pub status: Status,
    /// Its story file, relative to the project root.
    pub file: Option<String>,
    /// What the run does with it.
    #[serde(flatten)]
    pub action: Action,
    /// Its dependencies.
    pub depends_on: Vec<String>,
    /// Paths it expects to change.
    pub touches: Vec<String>,
    /// It says it changes no behaviour (a refactor).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub refactor: bool,
    /// 0-based wave: every dependency it waits for is in an earlier one.
    pub wave: Option<usize>,
    /// The story whose branch it is stacked on (a dependency the run itself implements).
    pub stacked_on: Option<String>,
    /// Further such dependencies, merged into its branch before it starts.
    pub merges: Vec<String>,
    /// Stories of the run whose `touches` overlap its own: never run at the same time.
    pub overlaps: Vec<String>,
    /// It has dependents in the run: an integration checkpoint follows it.
    pub integration_checkpoint: bool,
    /// v7: why a person says go before it starts (`hitl`, `plan_checkpoint`, a high
    /// `risk`): the epic's gate for it opens first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asks_first: Option<String>,
    /// v7: its `done_checkpoint`: once it is done, nothing new starts until a person says
    /// continue at the epic's gate after it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub pauses_after: bool,
    /// The stages its pipeline goes through.
    pub stages: Vec<String>,
}

/// An epic's plan.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    /// The epic.
    pub epic: String,
    /// The BMAD era, and so the pipeline.
    pub era: Era,
    /// What the era was told by (`--era v6`, `.claude/skills/bmad-build-auto is installed`).
    pub era_evidence: String,
    /// The playbook each story runs.
    pub pipeline: String,
    /// Review→fix rounds per story.
    pub rounds: u32,
    /// Reviewers per round, each with its own emphasis.
    pub reviewers: u32,
    /// The stories, in dependency order.
    pub stories: Vec<Planned>,
    /// The keys of each wave.
    pub waves: Vec<Vec<String>>,
}

impl Plan {
    /// A story of the plan.
    pub fn story(&self, key: &str) -> Option<&Planned> {
        self.stories.iter().find(|s| s.key == key)
    }

    /// The stories the run implements.
    pub fn to_run(&self) -> impl Iterator<Item = &Planned> {
        self.stories.iter().filter(|s| s.action == Action::Run)
    }
}

/// Plan the epic from the main worktree's files.
pub fn plan_epic(repo: &Repo, epic: &str, options: &PlanOptions) -> Result<Plan, Error> {
    let main = repo.main_workdir()?;
    let project = Project::load(&main, None)?;
    plan(&project, epic, options)
}

/// The era of a project: what it has installed, else what its files say.
pub fn detect_era(project: &Project) -> Era {
    era_and_evidence(project, None).0
}

/// The era of a project (the one `given`, else its own) and what it was told by, for the
/// plan to name.
fn era_and_evidence(project: &Project, given: Option<Era>) -> (Era, String) {
    if let Some(era) = given {
        return (era, format!("--era {}", era.as_str()));
    }
    let root = &project.layout.root;
    let installed = |paths: &[&'static str]| paths.iter().copied().find(|p| root.join(p).exists());
    // A ticket tree is v7's, whatever else lies beside it.
    if let Some(tree) = &project.tickets {
        let at = tree.folder.strip_prefix(root).unwrap_or(&tree.folder);
        return (Era::V7, format!("a ticket tree at {}", at.display()));
    }
    // What is installed decides: a run can only call the skills the project has. A v6.8
    // project with quick-dev's spec files has no bmad-build-auto to run.
    if let Some(skill) = installed(&[
        ".claude/skills/bmad-build-auto",
        ".agents/skills/bmad-build-auto",
        "_bmad/bmm/workflows/4-implementation/bmad-build-auto",
    ]) {
        (Era::V611, format!("{skill} is installed"))
    } else if let Some(skill) = installed(&[
        ".claude/skills/bmad-dev-story",
        ".agents/skills/bmad-dev-story",
        ".claude/commands/bmad-dev-story.md",
        ".claude/commands/bmad/bmm/workflows/dev-story.md",
        "_bmad/bmm/workflows/4-implementation/dev-story",
    ]) {
        (Era::V6, format!("{skill} is installed"))
    } else if project.sprint.is_none() && root.join(".bmad-core").is_dir() {
        (Era::V4, "a .bmad-core folder and no sprint status".into())
    } else if !project.spec_folders.is_empty() || project.files.iter().any(|f| f.spec_lifecycle) {
        // Nothing installed to go by: the files say which era wrote them.
        (
            Era::V611,
            "no BMAD skill installed; its files include bmad-build's specs".into(),
        )
    } else {
        (
            Era::V6,
            "no BMAD skill installed and no file of another era".into(),
        )
    }
}

/// Whether `story` belongs to `epic` (`3`, `2.5`, or a stories-mode spec folder).
fn in_epic(story: &StoryView, epic: &str) -> bool {
    story.epic.is_some_and(|e| e.to_string() == epic)
        || story.key.starts_with(&format!("{epic}-"))
        || story.key.starts_with(&format!("{epic}/"))
}

/// Two stories' `touches` overlap when an entry of one names an entry of the other (the
/// same path, a directory above it, or a pattern matching it).
fn touches_overlap(a: &[String], b: &[String]) -> bool {
    a.iter()
        .any(|x| b.iter().any(|y| paths::names(x, y) || paths::names(y, x)))
}

/// Plan `epic` of `project`.
pub fn plan(project: &Project, epic: &str, options: &PlanOptions) -> Result<Plan, Error> {
    let (era, era_evidence) = era_and_evidence(project, options.era);
    let rounds = options
        .rounds
        .unwrap_or(pipeline::DEFAULT_ROUNDS)
        .clamp(1, pipeline::MAX_ROUNDS);
    let reviewers = options
        .reviewers
        .unwrap_or(1)
        .clamp(1, pipeline::MAX_REVIEWERS);
    let members: Vec<&StoryView> = project
        .stories
        .iter()
        .filter(|s| in_epic(s, epic))
        .collect();
    if members.is_empty() {
        return Err(Error::NoSuchEpic {
            epic: epic.to_owned(),
            known: known_epics(project),
        });
    }
    let selected = select(&members, &options.only, epic)?;
    let items: Vec<Item> = members
        .iter()
        .map(|s| Item {
            key: s.key.clone(),
            status: s.status.clone(),
            // Dependencies outside the epic are checked below, not ordered; nor are done
            // ones, so a cycle among finished stories holds nothing. One in review still
            // orders: its branch is what a dependent stacks on.
            depends_on: s
                .depends_on
                .iter()
                .filter(|d| {
                    members
                        .iter()
                        .any(|m| &m.key == *d && m.status != Status::Done)
                })
                .cloned()
                .collect(),
            met: s.meets_dependents(),
        })
        .collect();
    let (order, _) = queue::order(&items)?;
    let status_of: HashMap<&str, &StoryView> = project
        .stories
        .iter()
        .map(|s| (s.key.as_str(), s))
        .collect();
    let mut stories: Vec<Planned> = Vec::with_capacity(order.len());
    let mut wave_of: HashMap<String, usize> = HashMap::new();
    for i in order {
        let s = members[i];
        let runs_here = |k: &str| {
            stories
                .iter()
                .any(|p: &Planned| p.key == k && p.action == Action::Run)
        };
        let action = if s.status == Status::Done {
            Action::Done
        } else if !options.only.is_empty() && !selected.contains(s.key.as_str()) {
            Action::Hold("not among --stories".into())
        } else if s.is_blocked() {
            Action::Hold(format!(
                "blocked{}",
                s.blocking_condition
                    .as_deref()
                    .map(|c| format!(": {c}"))
                    .unwrap_or_default()
            ))
        } else if let Some(why) = s.status.why_no_run() {
            Action::Hold(why)
        } else if !s.ambiguous.is_empty() {
            Action::Hold(format!("more than one file: {}", s.ambiguous.join(", ")))
        } else if let Some(dep) = s.depends_on.iter().find(|d| {
            !status_of
                .get(d.as_str())
                .is_some_and(|v| v.meets_dependents())
                && !runs_here(d)
        }) {
            let why = match status_of.get(dep.as_str()) {
                None => "which does not exist".to_owned(),
                Some(v) => format!("which is {} and not part of this run", v.status),
            };
            Action::Hold(format!("depends on {dep}, {why}"))
        } else {
            Action::Run
        };
        let pending: Vec<String> = s
            .depends_on
            .iter()
            .filter(|d| runs_here(d))
            .cloned()
            .collect();
        let runs = action == Action::Run;
        let wave = runs.then(|| {
            pending
                .iter()
                .filter_map(|d| wave_of.get(d))
                .map(|w| w + 1)
                .max()
                .unwrap_or(0)
        });
        if let Some(w) = wave {
            wave_of.insert(s.key.clone(), w);
        }
        let shape = Shape {
            era,
            has_file: s.file.is_some(),
            approved: s.file.is_some() && s.status.rank().is_some_and(|r| r >= 1),
            rounds,
            reviewers,
        };
        stories.push(Planned {
            key: s.key.clone(),
            title: s.title.clone(),
            status: s.status.clone(),
            file: s.file.clone(),
            stages: if runs {
                pipeline::stages(shape)
            } else {
                Vec::new()
            },
            action,
            depends_on: s.depends_on.clone(),
            touches: s.touches.clone(),
            refactor: s.refactor,
            wave,
            stacked_on: pending.first().cloned(),
            merges: pending.iter().skip(1).cloned().collect(),
            overlaps: Vec::new(),
            integration_checkpoint: false,
            asks_first: runs.then(|| person_first(project, &s.key)).flatten(),
            pauses_after: runs && pauses_after(project, &s.key),
        });
    }
    mark_overlaps(&mut stories);
    let waves = waves(&stories);
    Ok(Plan {
        epic: epic.to_owned(),
        era,
        era_evidence,
        pipeline: era.playbook_name().to_owned(),
        rounds,
        reviewers,
        stories,
        waves,
    })
}

/// v7: what a person settles before an unattended run starts a ticket (`hitl`,
/// `plan_checkpoint`, a high `risk`): the orchestrator does the waiting, BMAD says.
fn person_first(project: &Project, key: &str) -> Option<String> {
    let t = project.tickets.as_ref()?.ticket(key)?;
    let mut why = Vec::new();
    if t.hitl {
        why.push("hitl: a person takes part in it");
    }
    if t.plan_checkpoint {
        why.push("plan_checkpoint: a person reviews its plan before work starts");
    }
    if t.risk == "high" {
        why.push("risk high: a person decides when it starts");
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// v7: work pauses after a ticket with `done_checkpoint` until a person says continue.
fn pauses_after(project: &Project, key: &str) -> bool {
    project
        .tickets
        .as_ref()
        .and_then(|t| t.ticket(key))
        .is_some_and(|t| t.done_checkpoint)
}

/// The keys `only` names among `members` (a key, or a unique prefix up to its `-` or `.`).
fn select<'m>(
    members: &[&'m StoryView],
    only: &[String],
    epic: &str,
) -> Result<HashSet<&'m str>, Error> {
    let mut selected: HashSet<&str> = HashSet::new();
    for want in only {
        let hits: Vec<&str> = members
            .iter()
            .map(|s| s.key.as_str())
            .filter(|k| {
                *k == want
                    || k.starts_with(&format!("{want}-"))
                    || k.starts_with(&format!("{want}."))
            })
            .collect();
        match hits.as_slice() {
            [one] => {
                selected.insert(one);
            }
            [] => {
                return Err(Error::NoSuchStory {
                    story: want.clone(),
                    epic: epic.to_owned(),
                })
            }
            many => {
                return Err(Error::AmbiguousStory {
                    story: want.clone(),
                    matches: many.iter().map(|k| k.to_string()).collect(),
                })
            }
        }
    }
    Ok(selected)
}

/// Each story to run: the others to run whose `touches` overlap its own (never at the same
/// time), and whether a story to run depends on it (an integration checkpoint after it).
fn mark_overlaps(stories: &mut [Planned]) {
    let running: Vec<usize> = (0..stories.len())
        .filter(|i| stories[*i].action == Action::Run)
        .collect();
    for &i in &running {
        let overlaps: Vec<String> = running
            .iter()
            .filter(|&&j| j != i && touches_overlap(&stories[i].touches, &stories[j].touches))
            .map(|&j| stories[j].key.clone())
            .collect();
        let key = stories[i].key.clone();
        let has_dependents = running
            .iter()
            .any(|&j| stories[j].depends_on.contains(&key));
        stories[i].overlaps = overlaps;
        stories[i].integration_checkpoint = has_dependents;
    }
}

/// The keys of each wave, in wave order.
fn waves(stories: &[Planned]) -> Vec<Vec<String>> {
    let mut waves: Vec<Vec<String>> = Vec::new();
    for s in stories {
        if let Some(w) = s.wave {
            if waves.len() <= w {
                waves.resize(w + 1, Vec::new());
            }
            waves[w].push(s.key.clone());
        }
    }
    waves
}

/// The epics a project has stories in, for an error message.
fn known_epics(project: &Project) -> Vec<String> {
    let mut out: Vec<String> = project
        .stories
        .iter()
        .filter_map(|s| s.epic.map(|e| e.to_string()))
        .collect();
    out.dedup();
    out
}

/// What a run of `plan` would do besides each story's own pipeline, in order, for a dry
/// run: the epic's gates, its integration checkpoints, its budgets and its close-out.
pub fn epic_actions(
    plan: &Plan,
    gates: super::Gates,
    retro: bool,
    budget: &crate::session::schema::EpicBudget,
    test_command: Option<&str>,
) -> Vec<String> {
    let session = names::session_name(&plan.epic);
    let mut out = vec![format!(
        "keep the run's journal in session {session} and its progress document on that session's branch"
    )];
    if gates != super::Gates::None {
        out.push(format!(
            "park at the scope gate before the first story (git bmad answer continue -s {session})"
        ));
    }
    let tests = test_command.unwrap_or("no test suite: checks.test_command is not set");
    for s in plan.to_run().filter(|s| s.integration_checkpoint) {
        out.push(format!(
            "after {}: check its changed files against its dependents' touches, its public interfaces, and the tests ({tests}); {}",
            s.key,
            if gates == super::Gates::None {
                "red holds its dependents back"
            } else {
                "yellow or red parks at a gate"
            }
        ));
    }
    let mut limits = Vec::new();
    if let Some(usd) = budget.usd {
        limits.push(dollars(usd));
    }
    if let Some(n) = budget.tokens {
        limits.push(format!("{n} tokens"));
    }
    if let Some(n) = budget.premium_requests {
        limits.push(format!("{n} premium requests"));
    }
    if let Some(n) = budget.invocations {
        limits.push(format!("{n} invocations"));
    }
    if let Some(secs) = budget.time_secs {
        limits.push(format!("{secs}s in steps"));
    }
    if !limits.is_empty() {
        out.push(format!(
            "start no story once the epic has spent {}",
            limits.join(" or ")
        ));
    }
    if let Some(usd) = budget.story_usd {
        out.push(format!("stop any story's run past {}", dollars(usd)));
    }
    if pipeline::close_wanted(plan.era, retro) {
        let mut what = Vec::new();
        if plan.era == Era::V4 {
            what.push("ask the SM whether the epic needs more stories".to_owned());
        }
        if retro {
            what.push(format!(
                "run /bmad-retrospective -H {} and open its document as a draft PR",
                plan.epic
            ));
        }
        out.push(format!(
            "when every story is done, in session {}: {}",
            names::close_session_name(&plan.epic),
            what.join("; ")
        ));
    }
    if gates != super::Gates::None {
        out.push(format!(
            "park at the completion gate (git bmad answer continue -s {session})"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_is_by_path_or_directory() {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(touches_overlap(&v(&["src/api"]), &v(&["src/api/user.rs"])));
        assert!(touches_overlap(&v(&["./src/a.rs"]), &v(&["src/a.rs"])));
        assert!(!touches_overlap(&v(&["src/api"]), &v(&["src/apis.rs"])));
        assert!(!touches_overlap(&v(&[]), &v(&["src"])));
        // A pattern overlaps what it matches, whichever story wrote it.
        assert!(touches_overlap(&v(&["src/api/x.rs"]), &v(&["src/*/x.rs"])));
        assert!(!touches_overlap(&v(&["src/web/y.rs"]), &v(&["src/*/x.rs"])));
    }

    fn planned(
        key: &str,
        action: Action,
        depends_on: &[&str],
        touches: &[&str],
        wave: Option<usize>,
    ) -> Planned {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Planned {
            key: key.into(),
            title: None,
            status: Status::Backlog,
            file: None,
            action,
            depends_on: v(depends_on),
            touches: v(touches),
            refactor: false,
            wave,
            stacked_on: None,
            merges: Vec::new(),
            overlaps: Vec::new(),
            integration_checkpoint: false,
            asks_first: None,
            pauses_after: false,
            stages: Vec::new(),
        }
    }

    #[test]
    fn stories_to_run_learn_their_overlaps_and_checkpoints_and_waves_keep_plan_order() {
        let mut stories = vec![
            planned("1-a", Action::Run, &[], &["src/api"], Some(0)),
            planned("1-b", Action::Run, &["1-a"], &["src/api/b.rs"], Some(1)),
            planned("1-c", Action::Done, &[], &["src/api"], None),
            planned("1-d", Action::Run, &[], &["docs"], Some(0)),
        ];
        mark_overlaps(&mut stories);
        assert_eq!(
            stories[0].overlaps,
            ["1-b"],
            "a story already done overlaps nothing"
        );
        assert_eq!(stories[1].overlaps, ["1-a"]);
        assert!(stories[3].overlaps.is_empty());
        assert!(stories[0].integration_checkpoint, "1-b depends on it");
        assert!(!stories[1].integration_checkpoint && !stories[3].integration_checkpoint);
        assert_eq!(waves(&stories), [vec!["1-a", "1-d"], vec!["1-b"]]);
    }
}
