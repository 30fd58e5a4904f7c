//! `git bmad guard` as Claude Code calls it, and its wiring into `.claude/settings.json`.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use crate::common::{read, write, Run, TestEnv};

fn guard(env: &TestEnv, dir: &Path, input: &str) -> Run {
    guard_with(env, dir, input, &[])
}

/// The guard with `vars` in its environment, as an agent's hooks inherit them.
fn guard_with(env: &TestEnv, dir: &Path, input: &str, vars: &[(&str, &str)]) -> Run {
    let mut child = env
        .bmad_command(dir)
        .arg("guard")
        .envs(vars.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn guard");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn bash_call(dir: &Path, command: &str) -> String {
    serde_json::json!({
        "session_id": "abc",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": dir,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "run it"},
        "tool_use_id": "toolu_1"
    })
    .to_string()
}

#[test]
fn the_guard_blocks_with_exit_2_and_a_reason_and_lets_the_rest_through() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let run = guard(
        &env,
        &repo,
        &bash_call(
            &repo,
            "git add -A && git push --force-with-lease origin feat",
        ),
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("[force-push]") && run.stderr.contains("Instead:"),
        "{}",
        run.stderr
    );
    let run = guard(
        &env,
        &repo,
        &bash_call(&repo, "sh -c 'HUSKY=0 git commit -m wip'"),
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    let run = guard(
        &env,
        &repo,
        &bash_call(
            &repo,
            "git push origin HEAD:refs/heads/bmad/x && cargo test",
        ),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "");
    let other_tool = serde_json::json!({"hook_event_name": "PreToolUse", "tool_name": "Edit", "tool_input": {"file_path": "a"}}).to_string();
    assert_eq!(guard(&env, &repo, &other_tool).code, 0);
    let run = guard(&env, &repo, "{not json");
    assert_eq!(run.code, 2, "unreadable input fails closed");

    // Configured protected branches count too.
    write(
        &repo,
        ".bmad/config.yaml",
        "version: 1\npolicy:\n  protected_branches: [release]\n",
    );
    let run = guard(
        &env,
        &repo,
        &bash_call(&repo, "git push origin HEAD:release"),
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn blocked_calls_in_a_session_are_journaled() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "agent");
    let run = guard(&env, &wt, &bash_call(&wt, "gh pr merge 7 --squash"));
    assert_eq!(run.code, 2);
    let journal = env.bmad(&wt, &["journal", "--json"]).success().json();
    let last = journal.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["event"], "policy_violation");
    assert_eq!(last["detail"]["hook"], "guard");
    assert_eq!(last["detail"]["rule"], "merge");
}

#[test]
fn a_block_during_a_step_is_journaled_with_the_step_and_no_token() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (id, wt) = env.start(&repo, "agent");
    let token = format!("ghp_{}", "Zq4Lm9Vt3Kw8Xr2Pn7Bd5Hs1Jf6Gc0Ya8Eu4");
    let call = bash_call(
        &wt,
        &format!("git push --force https://x:{token}@github.com/o/r.git HEAD:feat"),
    );
    // What the supervisor puts in the agent's environment, which its hooks inherit.
    let vars = [("BMAD_SESSION", id.as_str()), ("BMAD_STEP", "implement")];
    assert_eq!(guard_with(&env, &wt, &call, &vars).code, 2);
    let journal = env.bmad(&wt, &["journal", "--json"]).success().json();
    let last = journal.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["event"], "policy_violation");
    assert_eq!(last["step"], "implement");
    assert_eq!(last["detail"]["rule"], "force-push");
    assert!(!last.to_string().contains(&token), "{last}");
}

#[test]
fn claude_settings_are_merged_and_restored() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let original = "{\n  \"model\": \"opus\",\n  \"permissions\": {\n    \"deny\": [\"Read(./.env)\"]\n  },\n  \"hooks\": {\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify\"}]}]\n  }\n}\n";
    write(&repo, ".claude/settings.json", original);
    env.bmad(&repo, &["hooks", "install", "--agent", "claude"])
        .success();
    env.bmad(&repo, &["hooks", "install", "--agent", "claude"])
        .success();
    let merged: serde_json::Value =
        serde_json::from_str(&read(&repo, ".claude/settings.json")).unwrap();
    assert_eq!(merged["model"], "opus");
    assert_eq!(merged["permissions"]["deny"][0], "Read(./.env)");
    assert_eq!(merged["hooks"]["Stop"][0]["hooks"][0]["command"], "notify");
    let pre = merged["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(pre.len(), 1, "installing twice adds one entry");
    assert_eq!(pre[0]["matcher"], "Bash");
    assert_eq!(pre[0]["hooks"][0]["command"], "git bmad guard");
    let text = read(&repo, ".claude/settings.json");
    assert!(
        text.find("\"model\"") < text.find("\"permissions\""),
        "key order kept: {text}"
    );

    env.bmad(&repo, &["hooks", "uninstall", "--agent", "claude"])
        .success();
    let restored: serde_json::Value =
        serde_json::from_str(&read(&repo, ".claude/settings.json")).unwrap();
    let expected: serde_json::Value = serde_json::from_str(original).unwrap();
    assert_eq!(restored, expected, "only our entry was removed");

    // Where there were no settings, none are left behind.
    let fresh = env.repo("fresh");
    env.bmad(&fresh, &["hooks", "install", "--agent", "claude"])
        .success();
    assert!(fresh.join(".claude/settings.json").exists());
    env.bmad(&fresh, &["hooks", "uninstall", "--agent", "claude"])
        .success();
    assert!(!fresh.join(".claude").exists());
}

/// Input nested past reason (as a fuzzer or a hostile prompt writes it) is refused as too
/// deep to judge: a block with its reason, never a crash of the guard.
#[test]
fn a_command_nested_past_reason_is_blocked_not_a_crash() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    for (open, close) in [("(", ")"), ("$(", ")"), ("{ ", "; }")] {
        let command = format!(
            "{}git push --force{}",
            open.repeat(50_000),
            close.repeat(50_000)
        );
        let run = guard(&env, &repo, &bash_call(&repo, &command));
        assert_eq!(run.code, 2, "{open}: {}", run.stderr);
        assert!(run.stderr.contains("too deeply to judge"), "{}", run.stderr);
    }
}
