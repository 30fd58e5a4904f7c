//! Which playbook each session of a planned epic runs: the team's own file of the era's name
//! in `.bmad/playbooks/`, else the built-in pipeline for the story's shape.

use std::path::Path;

use super::options::Gates;
use super::pipeline::{self, Shape};
use super::plan::{Plan, Planned};
use crate::supervisor::{self, Source};

/// The playbook a story runs: `.bmad/playbooks/<name>.yaml` in the main worktree if the team
/// wrote one, else the built-in text for its shape.
pub fn story_playbook(main: &Path, plan: &Plan, story: &Planned, gates: Gates) -> Source {
    let name = plan.era.playbook_name();
    let own = main
        .join(supervisor::PLAYBOOK_DIR)
        .join(format!("{name}.yaml"));
    if let Ok(text) = std::fs::read_to_string(&own) {
        return Source {
            name: name.to_owned(),
            origin: own.to_string_lossy().into_owned(),
            text,
        };
    }
    let mut text = pipeline::playbook(Shape {
        era: plan.era,
        has_file: story.file.is_some(),
        approved: story.file.is_some() && story.status.rank().is_some_and(|r| r >= 1),
        rounds: plan.rounds,
        reviewers: plan.reviewers,
    });
    if gates == Gates::PerStory {
        text.push_str("  - id: accept\n    description: a human accepts the story before its pull request\n    runner: shell\n    command: \"true\"\n    autonomy: always_gate\n");
    }
    Source {
        name: name.to_owned(),
        origin: "built-in".into(),
        text,
    }
}

/// Check every playbook the run will use (each story's pipeline, the close-out) against the
/// project before anything starts: a missing skill or slash command is named now, not after
/// hours of stories.
pub fn preflight(
    main: &Path,
    plan: &Plan,
    gates: Gates,
    retro: bool,
    config: &crate::config::Config,
) -> Result<(), supervisor::Error> {
    let mut checked = std::collections::HashSet::new();
    for story in plan.to_run() {
        let source = story_playbook(main, plan, story, gates);
        if checked.insert(source.text.clone()) {
            supervisor::validate(&source, main, config)?;
        }
    }
    if pipeline::close_wanted(plan.era, retro) {
        supervisor::validate(&pipeline::close_playbook(plan.era, retro), main, config)?;
    }
    Ok(())
}
