//! The GitHub Actions workflow `git bmad ci init github` writes: one job per story, run from
//! the repository's own files on a fresh runner. It is the user's file once written
//! (commented, to read and change); what it holds follows from the project's configuration:
//! the agent CLIs its runners name and the secrets they read.

use std::collections::BTreeSet;

use super::{EPIC_WORKFLOW, STORY_WORKFLOW};
use crate::config::Config;
use crate::runner::Kind;

/// The secret holding the runners' signing key (an SSH private key whose public half is in
/// `.bmad/allowed_signers` on main).
pub const SIGNING_SECRET: &str = "BMAD_SIGNING_KEY";

/// What the workflows are made of.
#[derive(Clone, Debug)]
pub struct Workflows {
    /// Where git-bmad is installed from when the runner has none: a git URL for
    /// `cargo install --git` (empty: the job says to set it).
    pub source: String,
    /// The git-bmad release: a tag `v<version>` of `source`.
    pub version: String,
    /// The runner label.
    pub runs_on: String,
    /// The job's time limit.
    pub timeout_minutes: u32,
    /// Runner names the project's configuration uses (`claude`, `codex`, a command).
    pub runners: BTreeSet<String>,
    /// Environment variables an assignment names for its API key (`api_key_env`).
    pub key_envs: BTreeSet<String>,
}

impl Workflows {
    /// The workflow for a project configured as `config`.
    pub fn for_config(config: &Config, source: &str) -> Workflows {
        let mut runners: BTreeSet<String> = BTreeSet::new();
        runners.insert(config.runners.default.clone());
        runners.extend(config.runners.roles.values().cloned());
        let mut key_envs = BTreeSet::new();
        for a in config.orchestration.agents.values() {
            runners.extend(a.runner.clone());
            key_envs.extend(a.api_key_env.clone());
        }
        Workflows {
            source: source.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            runs_on: "ubuntu-latest".into(),
            timeout_minutes: 360,
            runners,
            key_envs,
        }
    }

    /// The agent CLIs a story job installs, from their adapters: each runner's name, npm
    /// package and the variable of its API key.
    fn clis(&self) -> impl Iterator<Item = (&'static str, &'static str, &'static str)> + '_ {
        Kind::all()
            .filter(|kind| self.runners.contains(kind.as_str()))
            .filter_map(|kind| {
                let adapter = kind.adapter();
                Some((
                    kind.as_str(),
                    adapter.npm_package()?,
                    adapter.key_variable()?,
                ))
            })
    }

    /// The repository secrets the job reads, each with what it holds.
    pub fn secrets(&self) -> Vec<(String, String)> {
        let mut out = vec![(
            SIGNING_SECRET.to_owned(),
            "an SSH private key (ssh-keygen -t ed25519 -N ''): the runners sign their sessions' journals with it; its public half goes into .bmad/allowed_signers on main".to_owned(),
        )];
        for (runner, _, key) in self.clis() {
            out.push((key.to_owned(), format!("the {runner} CLI's API key")));
        }
        for env in &self.key_envs {
            out.push((
                env.clone(),
                "an API key an assignment names (api_key_env)".into(),
            ));
        }
        out
    }

    /// The story workflow's text.
    pub fn render(&self) -> String {
        let mut secrets_env = String::new();
        for (name, _) in self.secrets().iter().skip(1) {
            secrets_env.push_str(&format!("          {name}: ${{{{ secrets.{name} }}}}\n"));
        }
        if !secrets_env.is_empty() {
            secrets_env.insert_str(0, "        env:\n");
        }
        let mut install_clis = String::new();
        for (runner, package, _) in self.clis() {
            install_clis.push_str(&format!(
                "          command -v {runner} >/dev/null || npm install --global --no-fund --no-audit {package}\n"
            ));
        }
        if install_clis.is_empty() {
            install_clis.push_str("          echo \"the project's runners are commands of its own: nothing to install\"\n");
        }
        format!(
            r#"# One story of a git-bmad epic run, on a fresh runner.
#
# `git bmad epic run <epic> --on actions` dispatches this workflow once per ready story and
# follows it through the remote: the job takes the run from the epic's journal (signed by the
# coordinator's key), runs the story's pipeline in its own session, contained, and pushes the
# session (branch, journal, checkpoints) after every step, signed with BMAD_SIGNING_KEY. A
# runner lost mid-step costs that step: the next dispatch resumes from the last push. The
# story ends as a draft pull request, never merged.
#
{setup_note}
name: bmad story
run-name: bmad epic ${{{{ inputs.epic }}}} story ${{{{ inputs.story }}}} attempt ${{{{ inputs.attempt }}}}

{dispatch_epic}      story:
        description: The story's key
        required: true
        type: string
      attempt:
        description: Which dispatch of the story this is (past 1, a lost runner's session is taken over)
        required: true
        type: string
        default: "1"
      minutes:
        description: The job's time limit in minutes (the story's time left in the run's budget, and the setup)
        required: false
        type: string
        default: "{timeout}"

# Push the story's branch and session state; open its draft pull request.
permissions:
  contents: write
  pull-requests: write

# One job per story at a time.
concurrency:
  group: bmad-story-${{{{ inputs.epic }}}}-${{{{ inputs.story }}}}
  cancel-in-progress: false

jobs:
  story:
{job_head}      STORY: ${{{{ inputs.story }}}}
      ATTEMPT: ${{{{ inputs.attempt }}}}
{setup_steps}
      - name: Install the agent CLIs
        run: |
{install_clis}
      - name: Run the story
{secrets_env}        run: git bmad epic job "$EPIC" --story "$STORY" --attempt "$ATTEMPT"
"#,
            setup_note = self.setup_note(),
            job_head = self.job_head("${{ fromJSON(inputs.minutes) }}"),
            setup_steps = setup_steps(),
            dispatch_epic = DISPATCH_EPIC,
            timeout = self.timeout_minutes,
        )
    }

    /// The coordinator's workflow: `epic run --on actions` in a job of its own, for teams
    /// that would rather not keep a machine on.
    pub fn render_epic(&self) -> String {
        format!(
            r#"# The coordinator of a git-bmad epic run, in a job of its own (instead of your machine).
#
# Dispatch it (gh workflow run {EPIC_WORKFLOW} -f epic=3), or uncomment the schedule: each job
# takes the epic's run over from the last one through the remote, dispatches the ready
# stories to {STORY_WORKFLOW} and follows them, then hands the run back. When it stops at a
# gate, answer it from any machine: git bmad sync && git bmad resume epic-<epic> &&
# git bmad answer -s epic-<epic> continue (that machine coordinates from there on; or
# git bmad push epic-<epic> after answering, for the next job of this workflow).
#
{setup_note}
name: bmad epic
run-name: bmad epic ${{{{ inputs.epic }}}} coordinator

{dispatch_epic}      parallel:
        description: Stories run at once, each on its own runner
        required: true
        type: string
        default: "4"
  # schedule:
  #   - cron: "17 * * * *"

# Push the epic's session; dispatch and follow the story jobs.
permissions:
  contents: write
  pull-requests: write
  actions: write

# One coordinator per epic at a time.
concurrency:
  group: bmad-epic-${{{{ inputs.epic }}}}
  cancel-in-progress: false

jobs:
  coordinate:
{job_head}      PARALLEL: ${{{{ inputs.parallel }}}}
{setup_steps}
      - name: Coordinate
        run: |
          # Exit 3: the run waits at a gate for a person, which is no failure of this job.
          git bmad epic coordinate "$EPIC" --parallel "$PARALLEL" || {{
            code=$?
            if [ "$code" = 3 ]; then
              echo "::notice::epic $EPIC waits for a person: git bmad sync && git bmad resume epic-$EPIC, then git bmad epic status $EPIC"
              exit 0
            fi
            exit "$code"
          }}
"#,
            setup_note = self.setup_note(),
            job_head = self.job_head(&self.timeout_minutes.to_string()),
            setup_steps = setup_steps(),
            dispatch_epic = DISPATCH_EPIC,
        )
    }

    fn setup_note(&self) -> String {
        format!(
            "# Written by `git bmad ci init github`; it is yours to change. Set up once:\n\
             #   - secrets: {}\n\
             #   - the public half of BMAD_SIGNING_KEY in .bmad/allowed_signers on main (reviewed)\n\
             #   - git config bmad.origin.pushSessions true where the coordinator runs",
            self.secrets()
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }

    /// A job's first lines, through the environment every job has; `timeout`: its
    /// `timeout-minutes`.
    fn job_head(&self, timeout: &str) -> String {
        // JSON strings are YAML's double-quoted scalars: a value is never YAML itself.
        format!(
            "    runs-on: {runs_on}\n    timeout-minutes: {timeout}\n    env:\n      EPIC: ${{{{ inputs.epic }}}}\n      GIT_BMAD_VERSION: \"{version}\"\n      # A git URL of git-bmad's repository, for `cargo install --git` on a runner without it.\n      GIT_BMAD_SOURCE: {source}\n",
            runs_on = quoted(&self.runs_on),
            version = self.version,
            source = quoted(&self.source),
        )
    }
}

/// How every workflow is started: dispatched with the epic it is for (its further inputs
/// follow).
const DISPATCH_EPIC: &str = "on:
  workflow_dispatch:
    inputs:
      epic:
        description: The epic (its number, or a spec folder)
        required: true
        type: string
";

/// The steps every job starts with: the checkout, git-bmad (built once per version), the
/// agents' walls, the identity and signing key.
fn setup_steps() -> String {
    // The profile names bubblewrap where the runner has it (the heredoc expands `$bwrap`).
    let profile = crate::runner::sandbox::apparmor_profile(std::path::Path::new("$bwrap"));
    format!(
        r#"    steps:
      - uses: actions/checkout@v5
        with:
          fetch-depth: 0
          # No token in .git/config, where an agent step could read it: git-bmad's own
          # pushes get it from gh (gh auth setup-git below).
          persist-credentials: false

      # git-bmad is built once per version, not by every job.
      - name: Cache git-bmad
        uses: actions/cache@v4
        with:
          path: ~/.cargo/bin/git-bmad
          key: git-bmad-${{{{ runner.os }}}}-${{{{ env.GIT_BMAD_VERSION }}}}

      - name: Install git-bmad
        run: |
          if ! command -v git-bmad >/dev/null; then
            if [ -z "$GIT_BMAD_SOURCE" ]; then
              echo "::error::set GIT_BMAD_SOURCE in this workflow to git-bmad's git URL"
              exit 1
            fi
            cargo install --locked --git "$GIT_BMAD_SOURCE" --tag "v$GIT_BMAD_VERSION" git-bmad
          fi
          git bmad --version

      # Every agent step runs in walls (runners.sandbox: required): its worktree and branch,
      # no token, no key. Stock runners refuse bubblewrap a user namespace (AppArmor): it gets
      # a profile of its own, as Ubuntu 25.04 ships it. Where bubblewrap cannot be had,
      # Landlock holds the walls alone; where neither can, the job stops here.
      - name: Walls for the agents
        run: |
          if ! command -v bwrap >/dev/null; then
            # A runner image's package lists may be stale: refreshed only when needed.
            {{ sudo -n apt-get install -y -q bubblewrap || {{ sudo -n apt-get update -q && sudo -n apt-get install -y -q bubblewrap; }}; }} >/dev/null 2>&1 \
              || echo "::warning::bubblewrap could not be installed: Landlock holds the agents' walls alone"
          fi
          bwrap=$(command -v bwrap || true)
          restricted=$(cat /proc/sys/kernel/apparmor_restrict_unprivileged_userns 2>/dev/null || echo 0)
          if [ -n "$bwrap" ] && [ "$restricted" = 1 ] && [ ! -e /etc/apparmor.d/bwrap ]; then
            sudo -n tee /etc/apparmor.d/bwrap >/dev/null <<PROFILE && sudo -n apparmor_parser -r /etc/apparmor.d/bwrap || echo "::warning::AppArmor refuses bubblewrap a user namespace: Landlock holds the agents' walls alone"
{profile}          PROFILE
          fi
          git config bmad.sandbox required
          git bmad contain -- true

      # The job's token and the signing key are kept where every wall hides them (gh's own
      # store in this runner's home, a file the walls blank): no later step has either in its
      # environment, which an agent could read.
      - name: Identity, signing key and token
        env:
          BMAD_SIGNING_KEY: ${{{{ secrets.BMAD_SIGNING_KEY }}}}
          JOB_TOKEN: ${{{{ github.token }}}}
          # Optional. Pull requests the job's token opens start no workflow (GitHub's rule:
          # your CI would not run on them); a fine-grained token or a GitHub App's token with
          # contents and pull-requests write, stored as BMAD_PR_TOKEN, pushes and opens them.
          PR_TOKEN: ${{{{ secrets.BMAD_PR_TOKEN }}}}
        run: |
          if [ -z "$BMAD_SIGNING_KEY" ]; then
            echo "::error::the repository secret BMAD_SIGNING_KEY is not set: git bmad ci init github says how to make it (gh secret set BMAD_SIGNING_KEY < key)"
            exit 1
          fi
          key="$RUNNER_TEMP/bmad-signing-key"
          (umask 077 && printf '%s\n' "$BMAD_SIGNING_KEY" > "$key")
          git config user.name "git-bmad runner"
          git config user.email "git-bmad-runner@users.noreply.github.com"
          git config gpg.format ssh
          git config user.signingKey "$key"
          git config bmad.origin.pushSessions true
          printf '%s\n' "${{PR_TOKEN:-$JOB_TOKEN}}" | gh auth login --with-token
          gh auth setup-git
          git bmad hooks install
"#,
        profile = profile
            .lines()
            .map(|l| format!("          {l}\n"))
            .collect::<String>()
    )
}

fn quoted(value: &str) -> String {
    serde_json::Value::from(value).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configured_runners_bring_their_cli_and_key() {
        let mut config = Config::default();
        config.runners.default = "codex".into();
        let w = Workflows::for_config(&config, "");
        let text = w.render();
        assert!(text.contains("npm install --global --no-fund --no-audit @openai/codex@"));
        assert!(text.contains("OPENAI_API_KEY: ${{ secrets.OPENAI_API_KEY }}"));
        assert!(!text.contains("claude-code"));
        assert_eq!(w.secrets()[0].0, SIGNING_SECRET);
        // A value is a scalar, whatever it holds.
        let mut odd = w.clone();
        odd.source = "x\"\n  evil: true".into();
        let text = odd.render();
        assert!(
            text.contains(r#"GIT_BMAD_SOURCE: "x\"\n  evil: true""#),
            "{text}"
        );
        // The job's token is never kept where an agent step reads: not in .git/config (the
        // checkout persists none), only in the environment of git-bmad's own steps.
        assert!(text.contains("persist-credentials: false"));
        assert!(text.contains("gh auth setup-git"));
        // A token that lets CI run on the pull requests, when the user stores one.
        assert!(text.contains(r#""${PR_TOKEN:-$JOB_TOKEN}" | gh auth login --with-token"#));
        assert!(!text.contains("GH_TOKEN"));
        // Inputs reach the shell through the environment only, never spliced into a script.
        for line in text.lines().filter(|l| l.trim_start().starts_with("run:")) {
            assert!(!line.contains("${{"), "{line}");
        }
    }
}
