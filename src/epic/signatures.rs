//! `stories.json` kept with a signature (agent and time) on every status change. The agents change a story's status on its own branch; after each
//! step the runner reads it there, and each change is signed into `stories.json` on the
//! epic's branch, in the order it happened, naming the agent that made it. The story
//! branches never need to write `stories.json`, so branches stacked on two stories merge
//! without a conflict in it (as with sprint-status.yaml).

use std::path::Path;

use super::Error;
use crate::bmad::project::Project;
use crate::bmad::stories_json::{self, Signature};
use crate::session::{closeout, Repo, Session};

/// A story's status as it moved in one step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// As the story file wrote it before.
    pub from: String,
    /// As it writes it now.
    pub to: String,
    /// Who changed it: the step's agent, and the step.
    pub agent: String,
    /// When (RFC 3339).
    pub at: String,
}

/// The status story `key`'s file writes in the worktree `root`, when the project keeps a
/// `stories.json` to sign it into; `None` otherwise (nothing to sign), or when the story or
/// its project cannot be read.
pub fn status_in(root: &Path, key: &str) -> Option<String> {
    let project = Project::load(root, None).ok()?;
    project.stories_json.as_ref()?;
    let view = project.stories.iter().find(|s| s.key == key)?;
    Some(view.raw_status.clone())
}

/// The BMAD agent a pipeline step stands for, by its id.
pub fn agent_of(step: &str) -> &'static str {
    let base = step.split('-').next().unwrap_or(step);
    match base {
        "draft" | "revise" | "create" => "sm",
        "approve" | "review" => "qa",
        _ => "dev",
    }
}

/// Sign `change` of story `key` into `stories.json` on the epic's branch and commit it.
/// `false` when the project has no `stories.json`, or no entry for the story's file.
pub fn sign(repo: &Repo, epic: &Session, key: &str, change: &Change) -> Result<bool, Error> {
    let worktree = epic.worktree_handle(repo)?;
    let root = worktree
        .as_ref()
        .map(|w| w.workdir().to_path_buf())
        .unwrap_or_else(|| epic.worktree.clone());
    let project = Project::load(&root, None)?;
    let Some((path, entries)) = &project.stories_json else {
        return Ok(false);
    };
    let Some(name) = project
        .stories
        .iter()
        .find(|s| s.key == key)
        .and_then(|s| s.file.as_deref())
        .and_then(|f| Path::new(f).file_name())
        .map(|n| n.to_string_lossy().into_owned())
    else {
        return Ok(false);
    };
    let mut entries = entries.clone();
    let Some(entry) = entries.iter_mut().find(|e| e.name == name) else {
        return Ok(false);
    };
    entry.signatures.push(Signature {
        agent: change.agent.clone(),
        timestamp: change.at.clone(),
        action: Some(format!("status {} → {}", change.from, change.to)),
    });
    entry.status = change.to.clone();
    stories_json::write(path, &entries)?;
    closeout::commit_work(
        repo,
        epic,
        &format!(
            "stories.json: {key} {} → {} (signed {})\n\nBmad-Story: {key}",
            change.from, change.to, change.agent
        ),
    )?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_step_stands_for_its_bmad_agent() {
        for (step, agent) in [
            ("draft", "sm"),
            ("revise-2", "sm"),
            ("approve-1", "qa"),
            ("review-3", "qa"),
            ("dev", "dev"),
            ("fix-1", "dev"),
            ("build", "dev"),
        ] {
            assert_eq!(agent_of(step), agent, "{step}");
        }
    }
}
