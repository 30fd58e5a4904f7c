//! The commented `.bmad/config.yaml` that `git bmad init` writes: every key with its default
//! and what it does (the reference page of the configuration file is made from it).

use super::DetectedTests;

/// The commented configuration `git bmad init` writes, with the project's test command when
/// its build files name one.
pub fn template_for(tests: Option<&DetectedTests>) -> String {
    const PLACEHOLDER: &str = "  # test_command: \"cargo test\"\n";
    let Some(tests) = tests else {
        return TEMPLATE.to_owned();
    };
    // A JSON string is a YAML double-quoted scalar.
    let quoted = serde_json::Value::from(tests.command.as_str()).to_string();
    let found = format!(
        "  # Found by `git bmad init` from {}; change it if the project tests another way.\n  test_command: {quoted}\n",
        tests.found.replace('\n', " ")
    );
    TEMPLATE.replacen(PLACEHOLDER, &found, 1)
}

/// The commented configuration `git bmad init` writes.
pub const TEMPLATE: &str = r#"# git-bmad project configuration. Commit this file: it is shared by everyone working here.
# Any value can be overridden for one clone with `git config bmad.<key> <value>`.
version: 1

sessions:
  # Session branches are named <branch_prefix><name>        (git config bmad.branchPrefix)
  branch_prefix: "bmad/"
  # Session worktrees go in <worktree_root>/<repo dir>.<name>, relative to this worktree
  # (git config bmad.worktreeRoot)
  worktree_root: ".."

policy:
  # main, master and each session's base branch are always protected: no push may rewrite,
  # move or delete them, and session worktrees may not move them locally. Add more here.
  protected_branches: []
  # Whom the push rules bind (git config bmad.policyScope). `sessions`: session worktrees and
  # agents; people pushing from the main worktree are not stopped. `everywhere`: everyone.
  # The secret scan binds everyone either way.
  scope: sessions

runners:
  # The agent CLI of playbook steps that name none: claude, codex, gemini, qwen, opencode,
  # pi, shell or generic.
  default: claude
  # Runner per playbook role, e.g. `dev: codex`.
  roles: {}
  # Containment: each agent step, and each command run for it, sees the repository
  # read-only but for its worktree and its own branch, a private home and /tmp, no
  # credential, no other process. Two layers stack: bubblewrap (mounts) and Landlock with a
  # seccomp filter (no user namespace needed: it holds where bubblewrap is refused, as on
  # Ubuntu 24.04). `auto`: contained by whatever layer this machine has (a step that is not
  # is journaled so); `required`: refuse to run without any; `bubblewrap` or `landlock`:
  # refuse to run without that layer; `off`.
  sandbox: auto
  # More places the walls show (`~/` is your home), when a CLI's install lies where they hide:
  # sandbox_paths: {read: ["~/.claude/local"], write: ["~/.cache/my-tool"]}
  # Each CLI is found on PATH; `program:` names another executable, and `args:` replaces the
  # permission arguments git-bmad passes by default:
  #   claude: --permission-mode acceptEdits   codex: --sandbox workspace-write
  #   gemini: --approval-mode auto_edit   qwen: --approval-mode auto-edit
  # claude:
  #   args: ["--permission-mode", "acceptEdits", "--max-turns", "40"]
  # Any other agent: its command line, with {prompt} where the prompt goes (else on stdin).
  # generic:
  #   command: ["my-agent", "--task", "{prompt}"]

checks:
  # The command behind a bare `tests_pass` playbook check, run with `sh -c` in the worktree.
  # test_command: "cargo test"
  # The network of contained test runs and shell steps: `full`, or `none`.
  network: full

orchestration:
  # The agent and model per BMAD role (sm, dev, qa, reviewer, architect, pm, analyst, ...).
  # A step's own `runner:` wins over its role's. API keys are never written here: name the
  # environment variable that holds the key, and the agent gets it under the name its CLI
  # reads (ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY).
  agents: {}
  #   dev: {runner: codex, model: gpt-5-codex, api_key_env: OPENAI_API_KEY_DEV}
  #   qa:  {runner: claude, model: claude-sonnet-4-5}
  # Steps of a parallel phase that run at once.
  max_concurrent_agents: 4
  # Stop a run once the agents have spent this much (US dollars): what Claude Code reports,
  # and Codex's and Gemini's tokens at their model's price (git-bmad's table, or `prices`).
  # budget_usd: 20
  # Or once they have used this many tokens, cache included (Claude, Codex, Gemini).
  # budget_tokens: 5000000
  # Or once Copilot CLI has spent this many of GitHub's premium requests (its own unit).
  # budget_premium_requests: 300
  # Prices of models git-bmad's table lacks or that you pay differently for, in US dollars
  # per million tokens.
  # prices:
  #   my-fine-tune: {input: 3, output: 12, cached_input: 0.3}
  # Gates whose confidence is below this (0-1) are shown in full.
  escalation_threshold: 0.5
  # How run, resume and answer show progress (git config bmad.progress): verbose (every
  # step), summary (a line every 5 operations or 30 s), silent (only the end), streaming (a
  # live line while a step runs longer than 30 s).
  progress: verbose
"#;

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::Config;

    #[test]
    fn a_detected_test_command_is_written_with_what_found_it() {
        let tests = DetectedTests {
            command: "npm test -- --run \"x\"".into(),
            found: "package.json with a test script".into(),
        };
        let text = template_for(Some(&tests));
        assert!(text.contains("# Found by `git bmad init` from package.json with a test script"));
        let config = Config::parse(&text, Path::new("c.yaml")).unwrap();
        assert_eq!(
            config.checks.test_command.as_deref(),
            Some("npm test -- --run \"x\"")
        );
        assert_eq!(template_for(None), TEMPLATE);
    }

    #[test]
    fn template_parses_to_defaults() {
        let config = Config::parse(TEMPLATE, Path::new("c.yaml")).unwrap();
        assert_eq!(config, Config::default());
    }
}
