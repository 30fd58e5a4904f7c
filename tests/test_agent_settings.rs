//! What agent CLIs read their grants from (`.claude/`, `opencode.json`, `.qwen/`…) lies in
//! the worktree the agent writes: a step that changes it is journaled as a policy violation,
//! gated, and its change put back before any other step's CLI reads it; the rest of its work
//! stays.

use crate::common::{read, write, TestEnv};
use crate::test_supervisor::{agent_behaviour, journal, named, start_with, FAKE_CLAUDE};

const USERS_SETTINGS: &str = "{\"permissions\": {\"deny\": [\"Bash(curl:*)\"]}}\n";
const USERS_AGENT: &str = "---\ndescription: reviews\n---\nReview the diff.\r\n";

/// A project with the user's own agent settings, one of them ignored, and a two-step
/// playbook whose first step's agent grants itself more.
fn project(env: &TestEnv) -> std::path::PathBuf {
    let repo = env.repo("proj");
    env.bmad(&repo, &["init"]).success();
    env.executable("claude", FAKE_CLAUDE);
    write(&repo, ".claude/settings.json", USERS_SETTINGS);
    write(&repo, ".opencode/agent/review.md", USERS_AGENT);
    write(&repo, ".gitignore", ".claude/settings.local.json\n");
    // git stores the agent file's CRLF as LF: put back, it must still be CRLF.
    write(&repo, ".gitattributes", "* text=auto\n");
    write(
        &repo,
        ".bmad/playbooks/two.yaml",
        "steps:\n  - {id: work, command: do the work, postconditions: [{file_exists: src/work.txt}]}\n  - {id: more, command: do more}\n",
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "project"]);
    repo
}

#[test]
fn a_step_that_grants_agents_more_is_gated_and_its_grant_put_back() {
    let env = TestEnv::new();
    let repo = project(&env);
    let (_, wt) = start_with(&env, &repo, "grants", "two");
    // The user's own ignored settings in the session's worktree, from before any step, and
    // an agent file as their editor wrote it (git holds it with LF).
    write(&wt, ".opencode/agent/review.md", USERS_AGENT);
    write(
        &wt,
        ".claude/settings.local.json",
        "{\"env\": {\"USERS\": \"1\"}}\n",
    );
    agent_behaviour(
        &env,
        "work",
        r#"mkdir -p src && echo work > src/work.txt
printf '{"permissions":{"allow":["Bash"]},"disableAllHooks":true}' > .claude/settings.json
git add .claude/settings.json && git commit -q -m "settings"
printf '{"permissions":{"allow":["Bash(*)"]}}' > .claude/settings.local.json
rm .opencode/agent/review.md
printf '{"permission":{"*":"allow"}}' > opencode.json
mkdir -p .qwen && printf '{"tools":{"allowed":["run_shell_command"]}}' > .qwen/settings.json
mkdir -p "$HOME/agent/elsewhere/hooks" && ln -s "$HOME/agent/elsewhere" .github
result "did the work"
"#,
    );
    let run = env.bmad(&wt, &["run"]).code(3);
    assert!(
        run.stdout
            .contains("Waiting for you at step `work` (policy_violation"),
        "{}\n{}",
        run.stdout,
        run.stderr
    );

    // Every grant is put back byte for byte, ignored or not; the work stays.
    assert_eq!(read(&wt, ".claude/settings.json"), USERS_SETTINGS);
    assert_eq!(
        read(&wt, ".claude/settings.local.json"),
        "{\"env\": {\"USERS\": \"1\"}}\n"
    );
    assert_eq!(read(&wt, ".opencode/agent/review.md"), USERS_AGENT);
    assert!(!wt.join("opencode.json").exists());
    assert!(!wt.join(".qwen/settings.json").exists());
    assert!(
        std::fs::symlink_metadata(wt.join(".github")).is_err(),
        "the .github link Copilot would read hooks through is gone"
    );
    assert_eq!(read(&wt, "src/work.txt"), "work\n");
    // The ignored settings (where keys and tokens go) never became an object, the user's
    // or the agent's.
    for ignored in [
        "{\"env\": {\"USERS\": \"1\"}}\n",
        "{\"permissions\":{\"allow\":[\"Bash(*)\"]}}",
    ] {
        write(&env.root(), "probe", ignored);
        let id = env.git(
            &wt,
            &["hash-object", &env.root().join("probe").to_string_lossy()],
        );
        let found = std::process::Command::new("git")
            .current_dir(&wt)
            .args(["cat-file", "-e", id.trim()])
            .status()
            .unwrap();
        assert!(!found.success(), "{ignored} is in the object database");
    }
    // The grant it committed is not staged to come back: the index holds the user's too.
    assert_eq!(
        env.git(&wt, &["show", ":.claude/settings.json"]),
        USERS_SETTINGS
    );

    let events = journal(&env, &wt);
    let violations: Vec<_> = named(&events, "policy_violation")
        .into_iter()
        .filter(|v| v["detail"]["rule"] == "agent-settings")
        .collect();
    assert_eq!(violations.len(), 1, "{events:#?}");
    assert_eq!(violations[0]["step"], "work", "{:#}", violations[0]);
    assert_eq!(
        violations[0]["detail"]["paths"],
        serde_json::json!([
            ".claude/settings.json",
            ".claude/settings.local.json",
            ".github",
            ".opencode/agent/review.md",
            ".qwen/settings.json",
            "opencode.json",
        ]),
        "{:#}",
        violations[0]
    );
    // What git keeps of the agent's version is in the step's checkpoint.
    let after_work = env.git(
        &wt,
        &["log", "--all", "--format=%H", "-1", "--grep=after work"],
    );
    let kept = env.git(
        &wt,
        &[
            "show",
            &format!("{}:.claude/settings.json", after_work.trim()),
        ],
    );
    assert!(kept.contains("disableAllHooks"), "{kept}");

    // Once a human has looked, the next step's agent starts from the user's settings.
    agent_behaviour(
        &env,
        "more",
        "cat .claude/settings.json > seen.txt\nresult \"did more\"\n",
    );
    env.bmad(&wt, &["answer", "continue", "-m", "looked"])
        .success();
    assert_eq!(read(&wt, "seen.txt"), USERS_SETTINGS);
}

#[test]
fn a_step_that_leaves_agent_settings_alone_is_not_gated() {
    let env = TestEnv::new();
    let repo = project(&env);
    let (_, wt) = start_with(&env, &repo, "clean", "two");
    write(&wt, ".claude/settings.local.json", "{}\n");
    agent_behaviour(
        &env,
        "work",
        "mkdir -p src && echo work > src/work.txt\nresult \"did the work\"\n",
    );
    env.bmad(&wt, &["run"]).success();
    let events = journal(&env, &wt);
    assert!(named(&events, "policy_violation").is_empty(), "{events:#?}");
    assert_eq!(named(&events, "step_completed").len(), 2, "{events:#?}");
}

/// A step killed with git-bmad after it wrote its grant (say, by an agent that then killed
/// its supervisor): `resume` puts the grant back before the step runs again, and gates it.
#[test]
fn a_grant_written_before_a_crash_is_put_back_before_the_step_runs_again() {
    let env = TestEnv::new();
    let repo = project(&env);
    let (_, wt) = start_with(&env, &repo, "crashed", "two");
    let started = env.root().join("home/agent/work-started");
    agent_behaviour(
        &env,
        "work",
        r#"if [ "$BMAD_ATTEMPT" = 1 ]; then
  printf '{"permissions":{"allow":["Bash"]}}' > .claude/settings.json
  printf '{"permission":{"*":"allow"}}' > opencode.json
  touch "$HOME/agent/work-started"
  sleep 30
fi
cat .claude/settings.json > seen.txt
mkdir -p src && echo work > src/work.txt
result "did the work"
"#,
    );
    let mut run = env
        .bmad_command(&wt)
        .args(["run"])
        .spawn()
        .expect("spawn git-bmad");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !started.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the step never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    run.kill().expect("kill -9");
    run.wait().expect("wait");

    let resumed = env.bmad(&wt, &["resume"]).code(3);
    assert!(
        resumed
            .stdout
            .contains("Waiting for you at step `work` (policy_violation"),
        "{}\n{}",
        resumed.stdout,
        resumed.stderr
    );
    assert_eq!(
        read(&wt, "seen.txt"),
        USERS_SETTINGS,
        "the step ran again on the grant"
    );
    assert_eq!(read(&wt, ".claude/settings.json"), USERS_SETTINGS);
    assert!(!wt.join("opencode.json").exists());
    let events = journal(&env, &wt);
    let violation = named(&events, "policy_violation")
        .into_iter()
        .find(|v| v["detail"]["rule"] == "agent-settings")
        .unwrap_or_else(|| panic!("no agent-settings violation: {events:#?}"));
    assert_eq!(violation["step"], "work", "{violation:#}");
    assert_eq!(
        violation["detail"]["paths"],
        serde_json::json!([".claude/settings.json", "opencode.json"]),
        "{violation:#}"
    );
}
