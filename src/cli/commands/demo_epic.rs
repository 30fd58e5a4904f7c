//! `git bmad demo epic`: a BMAD v6 epic of three stories run unattended in a throwaway
//! repository with simulated agents: the plan, the scope gate, two stories at once, a review
//! round that finds and fixes a problem, the integration checkpoints, draft pull requests
//! (a simulated `gh`, a local bare remote), the completion gate and the epic report.

use std::path::Path;

use super::demo::{io, write, write_exec, Demo};
use crate::cli::error::{exit, CommandError};

/// The simulated BMAD agents, installed as `claude`: dev, reviewer and fixer in one script.
const SIMULATED_AGENTS: &str = r##"#!/bin/sh
# git-bmad demo: SIMULATED BMAD agents. Not an AI: canned work, so the demo shows the epic
# runner without an API key. It answers like `claude -p ... --output-format json` does.
key=$BMAD_ARGS
story="_bmad-output/implementation-artifacts/$key.md"
area=$(echo "$key" | cut -d- -f3)
say() {
  printf '{"type":"result","subtype":"success","is_error":false,"result":"[simulated agent] %s","session_id":"simulated-%s","total_cost_usd":0.03,"usage":{"input_tokens":1200,"output_tokens":300},"permission_denials":[]}\n' "$1" "$BMAD_STEP"
}
case "$BMAD_STEP" in
  dev)
    mkdir -p "src/$area"
    printf '#!/bin/sh\n# %s\necho %s\n' "$key" "$area" > "src/$area/$key.sh"
    sed 's/^Status: .*/Status: review/' "$story" > "$story.new" && mv "$story.new" "$story"
    say "implemented $key; tests pass" ;;
  review-1)
    case "$key" in
      1-1-*) say "**Outcome:** Changes Requested\n- [ ] [AI-Review][High] no timeout on requests [src/api/$key.sh:2]" ;;
      *) say "Outcome: Approve" ;;
    esac ;;
  review-*) say "Outcome: Approve" ;;
  fix-*)
    echo "# timeout: 10s" >> "src/$area/$key.sh"
    say "added the timeout" ;;
  *) say "nothing to do for $BMAD_STEP" ;;
esac
"##;

/// A simulated `gh`: no pull request is listed yet, and `pr create` prints a made-up URL.
const SIMULATED_GH: &str = "#!/bin/sh\n# git-bmad demo: a simulated `gh`; nothing leaves this machine.\ncase \"$1 $2\" in\n  'pr list') exit 0 ;;\n  'pr create') n=$(ls \"$HOME\"/.pr-* 2>/dev/null | wc -l); touch \"$HOME/.pr-$n\"; echo \"https://example.invalid/garden/pull/$((n + 1))\" ;;\nesac\n";

const STORIES: [(&str, &str, &str); 3] = [
    ("1-1-api-client", "an API client", "touches: [src/api]"),
    ("1-2-storage", "local storage", "touches: [src/storage]"),
    (
        "1-3-sync-engine",
        "a sync engine",
        "depends_on: [1-1-api-client, 1-2-storage]\ntouches: [src/sync]",
    ),
];

impl Demo<'_> {
    /// The epic demo.
    pub(super) fn play_epic(&self) -> Result<u8, CommandError> {
        let repo = self.root.join("garden");
        let remote = self.root.join("garden-remote.git");
        std::fs::create_dir_all(&repo).map_err(|e| io("create", &repo, e))?;
        write_exec(&self.root.join("bin/claude"), SIMULATED_AGENTS)?;
        write_exec(&self.root.join("bin/gh"), SIMULATED_GH)?;
        self.say(&format!(
            "A throwaway BMAD v6 project in {} with epic 1: three stories, two independent and one that depends on both. The agents are SIMULATED (a shell script installed as `claude`), and so is `gh`.",
            repo.display()
        ));
        self.write_project(&repo)?;
        self.git(&repo, &["init", "-q", "-b", "main"])?;
        self.git(&repo, &["add", "-A"])?;
        self.git(&repo, &["commit", "-q", "-m", "a BMAD project with epic 1"])?;
        self.git(&self.root, &["init", "-q", "--bare", "garden-remote.git"])?;
        let url = remote.to_string_lossy().into_owned();
        self.git(&repo, &["remote", "add", "origin", &url])?;
        self.git(&repo, &["push", "-q", "origin", "main"])?;

        self.say("The plan: dependency order, waves of stories that run at once, stacked branches, integration checkpoints, each story's pipeline.");
        self.bmad(&repo, &["epic", "plan", "1"], exit::OK, "")?;

        self.say("Run it with human checkpoints per epic: first a human confirms the scope. The run parks; nothing waits on a terminal.");
        self.bmad(
            &repo,
            &["epic", "run", "1", "--parallel", "2", "--gates", "per-epic"],
            exit::GATED,
            "the scope gate",
        )?;

        self.say("The answer goes to the epic's session and continues the run: 1-1 and 1-2 at once, each in its own branch and worktree; 1-1's review finds a problem and a fix round fixes it; an integration checkpoint after each; then 1-3, stacked on both.");
        self.bmad(
            &repo,
            &["answer", "continue", "-s", "epic-1", "-m", "scope ok"],
            exit::GATED,
            "the completion gate",
        )?;

        let report = self.root.join("epic-1-report.html");
        self.say("Where every story stands (also committed on the epic's branch as docs/progress/epic-1-auto-run.md, and here as one HTML page).");
        self.bmad(
            &repo,
            &["epic", "status", "1", "--html", &report.to_string_lossy()],
            exit::OK,
            "",
        )?;

        self.bmad(
            &repo,
            &[
                "answer",
                "continue",
                "-s",
                "epic-1",
                "-m",
                "pull requests reviewed",
            ],
            exit::OK,
            "signed off",
        )?;
        self.say("Every story is a draft pull request on its own branch; nothing was merged and main did not move. With real agents: git bmad epic run <epic> in a BMAD project.");
        Ok(exit::OK)
    }

    /// The project's files: BMAD config, sprint status, story files, slash commands, tests.
    fn write_project(&self, repo: &Path) -> Result<(), CommandError> {
        let artifacts = repo.join("_bmad-output/implementation-artifacts");
        write(
            &repo.join("_bmad/bmm/config.yaml"),
            "project_name: Garden\nimplementation_artifacts: \"{project-root}/_bmad-output/implementation-artifacts\"\nplanning_artifacts: \"{project-root}/_bmad-output/planning-artifacts\"\noutput_folder: \"{project-root}/_bmad-output\"\n",
        )?;
        let mut sprint = String::from("generated: 2026-11-24T09:00:00+0000\nproject: Garden\ntracking_system: file-system\nstory_location: \"{project-root}/_bmad-output/implementation-artifacts\"\n\ndevelopment_status:\n  epic-1: in-progress\n");
        for (key, title, front) in STORIES {
            sprint.push_str(&format!("  {key}: ready-for-dev\n"));
            let number = key.splitn(3, '-').take(2).collect::<Vec<_>>().join(".");
            write(
                &artifacts.join(format!("{key}.md")),
                &format!("---\n{front}\n---\n# Story {number}: {title}\n\nStatus: ready-for-dev\n\n## Story\n\nAs a gardener, I want {title}.\n\n## Acceptance Criteria\n\n1. It works.\n\n## Tasks / Subtasks\n\n- [ ] Task 1 (AC: #1)\n\n## Dev Agent Record\n"),
            )?;
        }
        sprint.push_str("  epic-1-retrospective: optional\n");
        write(&artifacts.join("sprint-status.yaml"), &sprint)?;
        for command in ["bmad-create-story", "bmad-dev-story", "bmad-code-review"] {
            write(
                &repo.join(format!(".claude/commands/{command}.md")),
                &format!("---\ndescription: {command} (stub for the demo)\n---\nRun the BMAD {command} workflow for $ARGUMENTS.\n"),
            )?;
        }
        write(
            &repo.join(".bmad/config.yaml"),
            "checks:\n  test_command: sh test.sh\nrunners:\n  default: claude\n",
        )?;
        write(
            &repo.join("test.sh"),
            "#!/bin/sh\n# The project's test suite: every script runs.\nfor f in $(find src -name '*.sh' 2>/dev/null); do sh \"$f\" >/dev/null || exit 1; done\n",
        )?;
        Ok(())
    }
}
