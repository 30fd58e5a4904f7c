//! BMAD stories end to end: our own fixtures in the real formats (fixtures/bmad/), copied into
//! real repositories; every write checked byte for byte with git diff.

use std::path::{Path, PathBuf};

use crate::common::{copy_dir, read, write, TestEnv};

/// A repository holding one of the fixture projects, committed.
fn project(env: &TestEnv, fixture: &str) -> PathBuf {
    let repo = env.repo(fixture);
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/bmad")
        .join(fixture);
    copy_dir(&src, &repo);
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "bmad project"]);
    repo
}

/// `git diff -U0` of the worktree: the changed lines, `-old` / `+new`, without headers.
fn changed_lines(env: &TestEnv, repo: &Path, file: &str) -> Vec<String> {
    env.git(repo, &["diff", "-U0", "--", file])
        .lines()
        .filter(|l| {
            (l.starts_with('-') || l.starts_with('+'))
                && !l.starts_with("---")
                && !l.starts_with("+++")
        })
        .map(str::to_owned)
        .collect()
}

const SPRINT: &str = "_bmad-output/implementation-artifacts/sprint-status.yaml";

#[test]
fn v6_list_next_and_a_signed_status_change_that_touches_only_its_lines() {
    let env = TestEnv::new();
    let repo = project(&env, "v6");
    let list = env
        .bmad(&repo, &["stories", "list", "--json"])
        .success()
        .json();
    let keys: Vec<(&str, &str)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["key"].as_str().unwrap(), s["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        keys,
        [
            ("1-1-user-authentication", "done"),
            ("1-2-account-management", "review"),
            ("1-3-plant-data-model", "ready-for-dev"),
            ("2-1-personality-system", "ready-for-dev"),
            ("2-2-chat-interface", "backlog"),
            ("2-3-llm-integration", "backlog"),
        ]
    );
    assert_eq!(list[1]["title"], "Account Management");
    assert_eq!(
        list[1]["file"],
        "_bmad-output/implementation-artifacts/1-2-account-management.md"
    );
    let next = env
        .bmad(&repo, &["stories", "next", "--json"])
        .success()
        .json();
    assert_eq!(next["next"]["key"], "1-2-account-management");
    assert!(next["next"]["reason"].as_str().unwrap().contains("review"));
    env.bmad(&repo, &["stories", "check"]).success();

    // 2-1 starts: its line, epic-2 (its first story moved on) and last_updated change; nothing else.
    let run = env
        .bmad(
            &repo,
            &[
                "stories",
                "set",
                "2-1-personality-system",
                "in-progress",
                "--by",
                "dev-agent",
            ],
        )
        .success();
    assert!(
        run.stdout.contains("epic-2 → in-progress"),
        "{}",
        run.stdout
    );
    let sprint = changed_lines(&env, &repo, SPRINT);
    assert_eq!(sprint.len(), 6, "{sprint:#?}");
    assert_eq!(sprint[0], "-last_updated: 11-01-2026 09:30");
    assert!(
        sprint[1].starts_with("+last_updated: ") && sprint[1].len() == sprint[0].len(),
        "{sprint:#?}"
    );
    assert_eq!(
        &sprint[2..],
        [
            "-  epic-2: backlog",
            "-  2-1-personality-system: ready-for-dev",
            "+  epic-2: in-progress",
            "+  2-1-personality-system: in-progress"
        ]
    );
    let story = changed_lines(
        &env,
        &repo,
        "_bmad-output/implementation-artifacts/2-1-personality-system.md",
    );
    assert_eq!(story[0], "-Status: ready-for-dev");
    assert_eq!(story[1], "+Status: in-progress");
    assert!(
        story[2].starts_with("+| 20")
            && story[2].ends_with("| Status: ready-for-dev → in-progress | dev-agent |"),
        "{story:#?}"
    );
    assert_eq!(story.len(), 3);

    // Quotes survive; backwards is refused (exit 4) unless forced; nothing is written on refusal.
    env.bmad(
        &repo,
        &["stories", "set", "2-2-chat-interface", "ready-for-dev"],
    )
    .success();
    assert!(read(&repo, SPRINT).contains("  '2-2-chat-interface': \"ready-for-dev\"\n"));
    let before = read(&repo, SPRINT);
    let refused = env
        .bmad(
            &repo,
            &["stories", "set", "1-1-user-authentication", "review"],
        )
        .code(4);
    assert!(
        refused.stderr.contains("done → review goes backwards"),
        "{}",
        refused.stderr
    );
    assert_eq!(read(&repo, SPRINT), before);
    env.bmad(
        &repo,
        &[
            "stories",
            "set",
            "1-1-user-authentication",
            "review",
            "--force",
        ],
    )
    .success();
    let unknown = env
        .bmad(&repo, &["stories", "set", "9-9-nope", "done"])
        .code(2);
    assert!(
        unknown.stderr.contains("no story or epic `9-9-nope`"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn drift_missing_files_and_bad_dependencies_are_reported() {
    let env = TestEnv::new();
    let repo = project(&env, "v6");
    // The story file says done while the sprint status says review (BMAD-METHOD #2341).
    let file = repo.join("_bmad-output/implementation-artifacts/1-2-account-management.md");
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("Status: review", "Status: done");
    std::fs::write(&file, text).unwrap();
    std::fs::remove_file(
        repo.join("_bmad-output/implementation-artifacts/2-1-personality-system.md"),
    )
    .unwrap();
    write(
        &repo,
        "_bmad-output/implementation-artifacts/3-1-stray.md",
        "# Story 3.1: Stray\n\nStatus: backlog\n",
    );
    let run = env.bmad(&repo, &["stories", "check"]).code(1);
    assert!(run.stdout.contains(&format!("error: {SPRINT}:31: drift: `1-2-account-management` is review here but done in _bmad-output/implementation-artifacts/1-2-account-management.md")), "{}", run.stdout);
    assert!(
        run.stdout.contains(&format!(
            "error: {SPRINT}:36: `2-1-personality-system` is ready-for-dev but has no story file"
        )),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("warning: _bmad-output/implementation-artifacts/3-1-stray.md: story `3-1-stray` is not in"), "{}", run.stdout);
    // `set` writes both files, and the drift is gone.
    env.bmad(
        &repo,
        &[
            "stories",
            "set",
            "1-2-account-management",
            "done",
            "--by",
            "qa",
        ],
    )
    .success();
    let after = env
        .bmad(&repo, &["stories", "check", "--json"])
        .code(1)
        .json();
    let messages: Vec<&str> = after["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["message"].as_str().unwrap())
        .collect();
    assert!(
        !messages.iter().any(|m| m.contains("drift")),
        "{messages:#?}"
    );
}

#[test]
fn alpha_layout_and_legacy_statuses() {
    let env = TestEnv::new();
    let repo = project(&env, "alpha");
    let list = env
        .bmad(&repo, &["stories", "list", "--json"])
        .success()
        .json();
    let get = |key: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|s| s["key"] == key)
            .unwrap()
            .clone()
    };
    assert_eq!(get("0-1-bootstrap")["status"], "done");
    assert_eq!(get("1-1-login")["status"], "ready-for-dev");
    assert_eq!(get("1-1-login")["file"], "docs/stories/1-1-login.md");
    assert_eq!(get("6-9-1-deep-numbering")["epic"], 6);
    assert_eq!(get("1-6-mcp-player-profile-权限门")["status"], "backlog");
    let next = env
        .bmad(&repo, &["stories", "next", "--json"])
        .success()
        .json();
    assert_eq!(next["next"]["key"], "1-1-login");
    env.bmad(&repo, &["stories", "check"]).success();
    // The alpha word is replaced by the v6 word on its line only; the comment stays.
    env.bmad(
        &repo,
        &["stories", "set", "1-1-login", "in-progress", "--by", "dev"],
    )
    .success();
    let changed = changed_lines(&env, &repo, "docs/sprint-status.yaml");
    assert_eq!(
        changed,
        [
            "-  epic-1: backlog",
            "-  1-1-login: drafted",
            "+  epic-1: in-progress",
            "+  1-1-login: in-progress"
        ]
    );
    assert!(
        read(&repo, "docs/sprint-status.yaml").contains("  epic-0: contexted  # Tech spec done\n")
    );
}

#[test]
fn v4_stories_json_dependencies_order_and_cycles() {
    let env = TestEnv::new();
    let repo = project(&env, "v4");
    // Malformed frontmatter in one story is reported with its line; the others still load.
    let check = env.bmad(&repo, &["stories", "check"]).code(1);
    assert!(
        check
            .stdout
            .contains("error: docs/stories/story-1.5.md:3: malformed frontmatter"),
        "{}",
        check.stdout
    );
    let order = env
        .bmad(&repo, &["stories", "order", "--json"])
        .success()
        .json();
    let keys: Vec<&str> = order["order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys,
        ["1.1.setup", "1.2.api", "1.4.auth", "1.3.ui", "story-1.5"]
    );
    let next = env
        .bmad(&repo, &["stories", "next", "--json"])
        .success()
        .json();
    assert_eq!(
        next["next"]["key"], "1.2.api",
        "Ready for Review comes first"
    );

    // stories.json: order kept, new stories appended, each signed.
    env.bmad(&repo, &["stories", "index", "--by", "sm"])
        .success();
    let json: serde_json::Value =
        serde_json::from_str(&read(&repo, "docs/stories/stories.json")).unwrap();
    let names: Vec<&str> = json
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "1.2.api.md",
            "1.1.setup.md",
            "1.3.ui.md",
            "1.4.auth.md",
            "story-1.5.md"
        ]
    );
    assert_eq!(json[2]["dependencies"][0], "1.4.auth.md");
    assert_eq!(json[2]["signatures"][0]["agent"], "sm");

    // A v4 status change keeps the v4 words.
    env.bmad(
        &repo,
        &["stories", "set", "1.4.auth", "ready-for-dev", "--by", "po"],
    )
    .success();
    assert!(read(&repo, "docs/stories/1.4.auth.md").contains("## Status\n\nApproved\n"));
    let json: serde_json::Value =
        serde_json::from_str(&read(&repo, "docs/stories/stories.json")).unwrap();
    assert_eq!(json[3]["status"], "ready-for-dev");
    assert_eq!(json[3]["signatures"].as_array().unwrap().len(), 2);

    // A cycle is an error that names it.
    let ui = repo.join("docs/stories/1.4.auth.md");
    let text = std::fs::read_to_string(&ui).unwrap();
    std::fs::write(&ui, format!("---\ndepends_on: [1.3.ui.md]\n---\n{text}")).unwrap();
    let run = env.bmad(&repo, &["stories", "order"]).code(2);
    assert!(
        run.stderr.contains("cycle: 1.3.ui → 1.4.auth → 1.3.ui")
            || run.stderr.contains("cycle: 1.4.auth → 1.3.ui → 1.4.auth"),
        "{}",
        run.stderr
    );
}

#[test]
fn speckit_status_and_conformance_over_the_fixtures() {
    let env = TestEnv::new();
    let repo = env.repo("kit");
    write(
        &repo,
        ".specify/feature.json",
        "{\"feature_directory\": \"specs/002-billing\"}\n",
    );
    write(&repo, "specs/002-billing/spec.md", "# Spec\n");
    write(&repo, "specs/002-billing/plan.md", "# Plan\n");
    write(&repo, "specs/002-billing/tasks.md", "## Phase 1: Setup\n- [X] T001 a\n- [ ] T002 [P] b\n\n## Phase 2: Core\n- [x] T003 [US1] c\n  continued\n");
    let v = env
        .bmad(&repo, &["speckit", "status", "--json"])
        .success()
        .json();
    assert_eq!(v["feature"]["dir"], "specs/002-billing");
    assert_eq!(v["feature"]["source"], ".specify/feature.json");
    assert_eq!(v["tasks"], serde_json::json!([2, 3]));
    let text = env.bmad(&repo, &["speckit", "status"]).success();
    assert!(
        text.stdout.contains("missing   research.md"),
        "{}",
        text.stdout
    );
    env.bmad(&env.root(), &["speckit", "status"]).code(1);

    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/bmad");
    let run = env
        .bmad(&env.root(), &["conformance", fixtures.to_str().unwrap()])
        .code(1);
    assert!(run.stdout.contains("28 file(s) loaded"), "{}", run.stdout);
    assert!(
        run.stdout.contains("1 error(s)"),
        "the planted malformed frontmatter: {}",
        run.stdout
    );
}
