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

/// `stories list --json` as (key, status) pairs, in order.
fn keys_and_statuses(list: &serde_json::Value) -> Vec<(&str, &str)> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|s| (s["key"].as_str().unwrap(), s["status"].as_str().unwrap()))
        .collect()
}

/// `stories order --json`: the keys, in order.
fn order_keys(env: &TestEnv, repo: &Path) -> Vec<String> {
    let order = env
        .bmad(repo, &["stories", "order", "--json"])
        .success()
        .json();
    order["order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["key"].as_str().unwrap().to_owned())
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
    let keys = keys_and_statuses(&list);
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
    // No development_status key names it: not a story, and said so.
    assert!(run.stdout.contains("warning: _bmad-output/implementation-artifacts/3-1-stray.md: no development_status key names this file, so it is not a story"), "{}", run.stdout);
    let list = env
        .bmad(&repo, &["stories", "list", "--json"])
        .success()
        .json();
    assert!(!list.to_string().contains("3-1-stray"), "{list:#}");
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
    let keys = order_keys(&env, &repo);
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
    // `next` still answers for the rest of the project, naming the cycle for a human.
    let next = env
        .bmad(&repo, &["stories", "next", "--json"])
        .success()
        .json();
    assert!(next["blocked"].to_string().contains("in a cycle"), "{next}");
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
    // spec-kit's skills load as skills; BMAD's web-bundle SKILL.md is prose for a chat,
    // not a workflow file, and is neither loaded nor reported.
    assert!(run.stdout.contains("51 file(s) loaded"), "{}", run.stdout);
    assert!(
        run.stdout.contains("ok       ") && run.stdout.contains("speckit-plan/SKILL.md"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("retro-coach"), "{}", run.stdout);
    assert!(
        run.stdout.contains("1 error(s)"),
        "the planted malformed frontmatter: {}",
        run.stdout
    );
}

const FORMS: &str = "_bmad-output/implementation-artifacts";

#[test]
fn real_status_forms_number_reuse_sub_folders_and_bmads_own_next() {
    let env = TestEnv::new();
    let repo = project(&env, "forms");
    let list = env
        .bmad(&repo, &["stories", "list", "--json"])
        .success()
        .json();
    let keys = keys_and_statuses(&list);
    // Every form is read; BMAD's order (epic, story number), not the file's; the key
    // outside the grammar is listed, not dropped; the report beside the stories is no story,
    // and neither is a file no development_status key names (BMAD's stories are its keys).
    assert_eq!(
        keys,
        [
            ("6-1-bold-status", "review"),
            ("6-2-bold-outside", "review"),
            ("6-3-upper-done", "done"),
            ("6-4-pending-note", "done"),
            ("6-5-joined-line", "done"),
            ("6-6-frontmatter-status", "in-progress"),
            ("6-7-heading-status", "backlog"),
            ("7-1-in-subfolder", "in-progress"),
            ("34-1-architecture-review", "backlog"),
            ("34-2-depends-on-number", "backlog"),
            ("15-TD-1-cleanup", "ready-for-dev"),
        ]
    );
    let by_key = |k: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|s| s["key"] == k)
            .unwrap()
            .clone()
    };
    for (key, file_status) in [
        ("6-1-bold-status", "review"),
        ("6-3-upper-done", "done"),
        ("6-4-pending-note", "done"),
        ("6-5-joined-line", "done"),
        ("6-7-heading-status", "backlog"),
    ] {
        assert_eq!(by_key(key)["file_status"], file_status, "{key}");
    }
    assert_eq!(
        by_key("7-1-in-subfolder")["file"],
        format!("{FORMS}/epic7/stories/7-1-in-subfolder.md")
    );
    assert_eq!(by_key("6-7-heading-status")["title"], "Heading status");
    // The number matches but the slug does not: never tied.
    assert!(by_key("34-1-architecture-review")["file"].is_null());
    // `"34.1"` and `"6-5-joined-line (done)"` name stories.
    assert_eq!(
        by_key("34-2-depends-on-number")["depends_on"],
        serde_json::json!(["34-1-architecture-review", "6-5-joined-line"])
    );

    // In progress comes first, lowest epic first (7-1 is above 6-6 in the file).
    let next = env
        .bmad(&repo, &["stories", "next", "--json"])
        .success()
        .json();
    assert_eq!(next["next"]["key"], "6-6-frontmatter-status");
    let waiting = next["blocked"].to_string();
    assert!(
        waiting.contains("15-TD-1-cleanup is not a BMAD story key"),
        "{waiting}"
    );
    assert!(
        waiting.contains("34-2-depends-on-number waits for 34-1-architecture-review"),
        "{waiting}"
    );

    let check = env.bmad(&repo, &["stories", "check"]).success();
    assert!(
        check.stdout.contains(
            "story-34-1-back-button-fix.md: has story number 34.1 like `34-1-architecture-review`"
        ) && check.stdout.contains(
            "story-34-1-back-button-fix.md: no development_status key names this file, so it is not a story"
        ),
        "{}",
        check.stdout
    );

    // A bold status is changed in place; the Change Log row lands in the table, above the
    // review's subsection; a free-form last_updated becomes BMAD's own format.
    env.bmad(
        &repo,
        &[
            "stories",
            "set",
            "6-1-bold-status",
            "done",
            "--by",
            "amelia",
        ],
    )
    .success();
    let story = changed_lines(&env, &repo, &format!("{FORMS}/6-1-bold-status.md"));
    assert_eq!(story[..2], ["-**Status:** review", "+**Status:** done"]);
    assert!(
        story[2].ends_with("| Status: review → done | amelia |"),
        "{story:#?}"
    );
    assert_eq!(story.len(), 3);
    let text = read(&repo, &format!("{FORMS}/6-1-bold-status.md"));
    assert!(
        text.contains("| 2025-01-10 | Drafted | SM |\n| ")
            && text.find("amelia |") < text.find("### Review Findings"),
        "{text}"
    );
    let sprint = changed_lines(&env, &repo, &format!("{FORMS}/sprint-status.yaml"));
    assert_eq!(
        sprint[0],
        "-last_updated: 2025-01-15 - story 6.1 closed by PM"
    );
    let stamp = sprint[1].strip_prefix("+last_updated: ").unwrap();
    assert!(
        stamp.len() == 16
            && stamp.as_bytes()[2] == b'-'
            && stamp.as_bytes()[5] == b'-'
            && stamp.as_bytes()[10] == b' ',
        "MM-DD-YYYY HH:MM, as sprint_plan.py reads it: {stamp}"
    );

    // The story that only shares a number is never touched.
    env.bmad(
        &repo,
        &[
            "stories",
            "set",
            "34-1-architecture-review",
            "ready-for-dev",
        ],
    )
    .success();
    assert!(changed_lines(
        &env,
        &repo,
        &format!("{FORMS}/story-34-1-back-button-fix.md")
    )
    .is_empty());

    // Epics and retrospectives follow their own lifecycles.
    for (key, to) in [
        ("epic-6", "done"),
        ("epic-7", "in-progress"),
        ("epic-6-retrospective", "done"),
    ] {
        env.bmad(&repo, &["stories", "set", key, to]).success();
    }
    let refused = env
        .bmad(&repo, &["stories", "set", "epic-6", "backlog"])
        .code(4);
    assert!(
        refused.stderr.contains("backlog → in-progress → done"),
        "{}",
        refused.stderr
    );

    // Drift: the refusal says which file holds which status, and that --force sets both.
    write(
        &repo,
        &format!("{FORMS}/6-7-heading-status.md"),
        "# Story 6.7 — Heading status\n\n## Status: Approved\n",
    );
    let refused = env
        .bmad(
            &repo,
            &["stories", "set", "6-7-heading-status", "in-progress"],
        )
        .code(4);
    for want in [
        "sprint-status.yaml says backlog",
        "6-7-heading-status.md says ready-for-dev",
        "backlog → in-progress skips a stage",
        "ready-for-dev → in-progress is allowed",
        "--force",
    ] {
        assert!(refused.stderr.contains(want), "{want}: {}", refused.stderr);
    }
    env.bmad(
        &repo,
        &[
            "stories",
            "set",
            "6-7-heading-status",
            "in-progress",
            "--force",
        ],
    )
    .success();
    // A v4 heading keeps v4 words.
    assert!(
        read(&repo, &format!("{FORMS}/6-7-heading-status.md")).contains("## Status: InProgress\n")
    );

    // A CRLF file stays CRLF; a joined line keeps its other fields.
    let joined = format!("{FORMS}/6-5-joined-line.md");
    write(&repo, &joined, &read(&repo, &joined).replace('\n', "\r\n"));
    env.bmad(
        &repo,
        &["stories", "set", "6-5-joined-line", "review", "--force"],
    )
    .success();
    let text = read(&repo, &joined);
    assert!(
        text.contains("**Story ID:** 6.5 **Status:** review **Priority:** High\r\n"),
        "{text:?}"
    );
    assert_eq!(
        text.matches('\n').count(),
        text.matches("\r\n").count(),
        "{text:?}"
    );
}

#[test]
fn a_key_written_twice_is_reported_and_the_rest_keeps_working() {
    let env = TestEnv::new();
    let repo = project(&env, "forms");
    let sprint = format!("{FORMS}/sprint-status.yaml");
    write(
        &repo,
        &sprint,
        &read(&repo, &sprint).replace(
            "  6-3-upper-done: done\n",
            "  6-3-upper-done: done\n  6-3-upper-done: review\n",
        ),
    );
    let check = env.bmad(&repo, &["stories", "check"]).code(1);
    assert!(
        check.stdout.contains(
            "sprint-status.yaml:14: `6-3-upper-done` is written twice (first at line 13)"
        ),
        "{}",
        check.stdout
    );
    let list = env
        .bmad(&repo, &["stories", "list", "--json"])
        .success()
        .json();
    assert_eq!(list.as_array().unwrap().len(), 11);
    let refused = env
        .bmad(
            &repo,
            &["stories", "set", "6-3-upper-done", "review", "--force"],
        )
        .code(2);
    assert!(
        refused.stderr.contains("written more than once"),
        "{}",
        refused.stderr
    );
    env.bmad(&repo, &["stories", "set", "6-2-bold-outside", "done"])
        .success();
    assert!(
        read(&repo, &sprint).contains("  6-3-upper-done: done\n  6-3-upper-done: review\n  6-4")
    );
}

#[test]
fn v6_11_specs_and_stories_mode_spec_folders() {
    let env = TestEnv::new();
    let repo = project(&env, "v6-11");
    let list = env
        .bmad(&repo, &["stories", "list", "--json"])
        .success()
        .json();
    let rows: Vec<(&str, &str, &str)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["key"].as_str().unwrap(),
                s["status"].as_str().unwrap(),
                s["title"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    // Stories mode keeps stories.yaml's order, not the files'.
    assert_eq!(
        rows,
        [
            ("3-1-digest-model", "done", "Digest model"),
            ("3-2-digest-delivery", "review", "Digest delivery"),
            ("3-3-digest-settings", "in-progress", "Digest settings"),
            ("3-4-unsubscribe", "backlog", "-"),
            ("notifications/n2", "in-progress", "Push channel"),
            ("notifications/n1", "done", "Email channel"),
            ("notifications/n3", "backlog", "Quiet hours"),
        ]
    );
    assert_eq!(list[1]["file_status"], "review", "in-review is review");
    assert_eq!(list[2]["file_status"], "blocked");
    assert_eq!(list[2]["blocking_condition"], "intent gap");

    // The blocked spec is never recommended, whatever the sprint status says.
    let next = env
        .bmad(&repo, &["stories", "next", "--json"])
        .success()
        .json();
    assert_eq!(next["next"]["key"], "notifications/n2");
    assert!(next["blocked"]
        .to_string()
        .contains("3-3-digest-settings is blocked: intent gap"));
    let check = env.bmad(&repo, &["stories", "check"]).success();
    assert!(
        check
            .stdout
            .contains("`3-3-digest-settings` is blocked (bmad-build-auto halted: intent gap)"),
        "{}",
        check.stdout
    );
    assert!(!check.stdout.contains("create-story"), "{}", check.stdout);

    // A spec's frontmatter changes in the spec's own words, quotes and comment kept, and no
    // Change Log is added to it.
    env.bmad(&repo, &["stories", "set", "3-2-digest-delivery", "done"])
        .success();
    assert_eq!(
        changed_lines(
            &env,
            &repo,
            "_bmad-output/implementation-artifacts/spec-3-2-digest-delivery.md"
        ),
        [
            "-status: 'in-review' # draft | ready-for-dev | in-progress | in-review | done",
            "+status: 'done' # draft | ready-for-dev | in-progress | in-review | done"
        ]
    );
    env.bmad(&repo, &["stories", "set", "notifications/n2", "review"])
        .success();
    assert_eq!(
        changed_lines(
            &env,
            &repo,
            "_bmad-output/specs/notifications/stories/n2-push-channel.md"
        ),
        ["-status: 'in-progress'", "+status: 'in-review'"]
    );
    env.bmad(
        &repo,
        &["stories", "set", "3-3-digest-settings", "in-progress"],
    )
    .success();
    assert!(read(
        &repo,
        "_bmad-output/implementation-artifacts/spec-3-3-digest-settings.md"
    )
    .contains("status: 'in-progress'\n"));
    // A broken stories.yaml is one error at its line; everything else still loads.
    write(
        &repo,
        "_bmad-output/specs/notifications/stories.yaml",
        "- id: [broken\n",
    );
    let check = env.bmad(&repo, &["stories", "check"]).code(1);
    assert!(
        check
            .stdout
            .contains("error: _bmad-output/specs/notifications/stories.yaml:2: "),
        "{}",
        check.stdout
    );
    assert_eq!(
        check.stdout.matches("stories.yaml").count(),
        1,
        "{}",
        check.stdout
    );
    assert!(
        check.stdout.contains("4 stories; 1 error(s)"),
        "{}",
        check.stdout
    );
}

#[test]
fn when_every_story_is_done_next_names_the_open_retrospective() {
    let env = TestEnv::new();
    let repo = env.repo("retro");
    write(
        &repo,
        "_bmad-output/implementation-artifacts/sprint-status.yaml",
        "development_status:\n  epic-2: done\n  2-1-a: done\n  epic-2-retrospective: optional\n  epic-1: done\n  1-1-b: done\n  epic-1-retrospective: optional\n",
    );
    let next = env
        .bmad(&repo, &["stories", "next", "--json"])
        .success()
        .json();
    assert!(next["next"].is_null());
    assert_eq!(next["retrospective"], "epic-1-retrospective");
    env.bmad(&repo, &["stories", "set", "epic-1-retrospective", "done"])
        .success();
    let next = env
        .bmad(&repo, &["stories", "next", "--json"])
        .success()
        .json();
    assert_eq!(next["retrospective"], "epic-2-retrospective");
}

/// A sprint file as BMAD's sprint-planning prints it (`story_location: {project-root}/…`
/// unquoted, not strict YAML) stops no command, and a dependency written in a story's text
/// (`- **Dependencies**: Story 1.3 (…), 1.1/1.2`) orders the stories as frontmatter would.
#[test]
fn a_sprint_file_as_bmad_prints_it_and_dependencies_in_prose_are_read() {
    let env = TestEnv::new();
    let repo = project(&env, "v6");
    let sprint = read(&repo, SPRINT).replace(
        "story_location: \"{project-root}/_bmad-output/implementation-artifacts\"",
        "story_location: {project-root}/_bmad-output/implementation-artifacts",
    );
    write(&repo, SPRINT, &sprint);
    let story = "_bmad-output/implementation-artifacts/2-1-personality-system.md";
    let text = read(&repo, story).replace(
        "## Acceptance Criteria",
        "## Dev Notes\n\n- **Dependencies**: Story 1.3 (REQUIS — PlantEntity), 1.1/1.2\n- **Libraries**: axios 1.6\n\n## Acceptance Criteria",
    );
    write(&repo, story, &text);
    // An implementation summary beside a story, named like one: no key names it.
    write(
        &repo,
        "_bmad-output/implementation-artifacts/1-3-plant-data-model-COMPLETE.md",
        "# Story 1.3: Plant Data Model - COMPLETE\n\nStatus: ready-for-dev\n",
    );

    let list = env
        .bmad(&repo, &["stories", "list", "--json"])
        .success()
        .json();
    assert!(!list.to_string().contains("COMPLETE"), "{list:#}");
    let entry = list
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == "2-1-personality-system")
        .expect("2-1 is listed");
    assert_eq!(
        entry["depends_on"],
        serde_json::json!([
            "1-3-plant-data-model",
            "1-1-user-authentication",
            "1-2-account-management"
        ]),
        "{entry:#}"
    );
    let check = env.bmad(&repo, &["stories", "check"]);
    assert!(
        check.stdout.contains("sprint-status.yaml:26:") && check.stdout.contains("not strict YAML"),
        "{}",
        check.stdout
    );
    let keys = order_keys(&env, &repo);
    let at = |key: &str| keys.iter().position(|k| *k == key).unwrap();
    assert!(
        at("1-3-plant-data-model") < at("2-1-personality-system"),
        "{keys:?}"
    );
}

/// bmad-build (v6.11) writes its spec first and brings the sprint along at two steps only:
/// a spec in review beside a sprint in progress, and a done spec beside a sprint in review,
/// are it between steps, not drift. A sprint ahead of its spec, or a v6 story file ahead of
/// its sprint, still is.
#[test]
fn bmad_builds_own_in_between_states_are_no_drift() {
    let env = TestEnv::new();
    let repo = project(&env, "v6-11");
    let dir = "_bmad-output/implementation-artifacts";
    let sprint = format!("{dir}/sprint-status.yaml");
    let set_spec = |file: &str, from: &str, to: &str| {
        let path = format!("{dir}/{file}");
        write(&repo, &path, &read(&repo, &path).replacen(from, to, 1));
    };
    // 3-1: spec done, sprint review (presented, awaiting code review).
    // 3-3: spec in review, sprint in progress (reviewing, the sprint not yet synced).
    write(
        &repo,
        &sprint,
        &read(&repo, &sprint).replace("3-1-digest-model: done", "3-1-digest-model: review"),
    );
    set_spec(
        "spec-3-3-digest-settings.md",
        "status: 'blocked'",
        "status: 'in-review'",
    );
    let check = env.bmad(&repo, &["stories", "check"]);
    assert!(!check.stdout.contains("drift"), "{}", check.stdout);

    // The sprint ahead of its spec: drift.
    set_spec(
        "spec-3-1-digest-model.md",
        "status: 'done'",
        "status: 'in-progress'",
    );
    let check = env.bmad(&repo, &["stories", "check"]).code(1);
    assert!(
        check
            .stdout
            .contains("drift: `3-1-digest-model` is review here but in-progress"),
        "{}",
        check.stdout
    );
}

/// git-bmad never writes into sprint-status.yaml a word BMAD's own sprint tools do not know:
/// v6.12's `sprint_plan.py` resets such a word (a parked story went back to backlog and was
/// run again, BMAD-METHOD #2871). Not even with --force; the file is left byte for byte.
#[test]
fn no_status_bmads_sprint_tools_do_not_know_is_written_into_the_sprint() {
    let env = TestEnv::new();
    let repo = project(&env, "v6");
    let before = read(&repo, SPRINT);
    for (key, word) in [
        ("1-3-plant-data-model", "blocked"),
        ("1-3-plant-data-model", "awaiting-operator"),
        ("epic-1", "review"),
        ("epic-1-retrospective", "in-progress"),
    ] {
        for force in [false, true] {
            let mut args = vec!["stories", "set", key, word];
            if force {
                args.push("--force");
            }
            let refused = env.bmad(&repo, &args);
            assert_ne!(
                refused.code, 0,
                "{key} {word} --force={force}: {}",
                refused.stdout
            );
            assert!(
                refused.stderr.contains("BMAD's sprint tools know"),
                "{}",
                refused.stderr
            );
            assert_eq!(read(&repo, SPRINT), before, "{key} {word}");
        }
    }
    // The words BMAD knows still go through.
    env.bmad(
        &repo,
        &["stories", "set", "1-3-plant-data-model", "in-progress"],
    )
    .success();
}

/// BMAD's rule ties a key to `{key}.md` whatever the key looks like: a tech-debt or hotfix
/// key (`15-TD-1-cleanup`) outside the `N-M-slug` grammar finds its file in a sub-folder.
#[test]
fn a_key_outside_the_grammar_finds_its_file_by_name() {
    let env = TestEnv::new();
    let repo = project(&env, "forms");
    write(
        &repo,
        &format!("{FORMS}/epic15/stories/15-TD-1-cleanup.md"),
        "# Tech debt: cleanup\n\nStatus: in-progress\n",
    );
    let list = env
        .bmad(&repo, &["stories", "list", "--json"])
        .success()
        .json();
    let td = list
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == "15-TD-1-cleanup")
        .expect("listed");
    assert_eq!(
        td["file"],
        format!("{FORMS}/epic15/stories/15-TD-1-cleanup.md"),
        "{td:#}"
    );
    assert_eq!(td["file_status"], "in-progress", "{td:#}");
}

#[test]
fn a_v4_project_lists_the_sms_stories_not_its_notes_or_its_archive() {
    let env = TestEnv::new();
    let repo = env.repo("v4-notes");
    write(
        &repo,
        ".bmad-core/core-config.yaml",
        "devStoryLocation: docs/stories\n",
    );
    let story = |n: &str, title: &str, status: &str| {
        format!("# Story {n}: {title}\n\n## Status\n\n{status}\n\n## Story\n\n**As a** user, **I want** {title}.\n\n## Acceptance Criteria\n\n1. It works.\n")
    };
    write(
        &repo,
        "docs/stories/7.4.story.md",
        &story("7.4", "Timesheets", "Done"),
    );
    write(
        &repo,
        "docs/stories/7.5.story.md",
        &story("7.5", "Leave Management Integration", "InProgress"),
    );
    // Notes kept beside the stories under a story's number, as real projects keep them.
    write(
        &repo,
        "docs/stories/7.5.AUTH_FIX.md",
        "# Story 7.5 - Authentication Fix for Leave Balances Endpoint\n\n**Status:** ✅ FIXED\n\n## Problem\n\nThe endpoint returned 401.\n",
    );
    write(
        &repo,
        "docs/stories/7.5.TASK_7_PROGRESS.md",
        "# Task 7: Frontend Implementation Progress\n\n## ✅ TASK 7 COMPLETE - All Components Delivered (9/9)\n",
    );
    // Old copies of stories, under the same numbers.
    write(
        &repo,
        "docs/stories/archive/7.4.story.md",
        &story("7.4", "An older seven-four", "Review"),
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "v4 stories"]);
    let list = env
        .bmad(&repo, &["stories", "list", "--json"])
        .success()
        .json();
    assert_eq!(
        keys_and_statuses(&list),
        [("7.4", "done"), ("7.5", "in-progress")]
    );
    let next = env
        .bmad(&repo, &["stories", "next", "--json"])
        .success()
        .json();
    assert_eq!(next["next"]["key"], "7.5");
}
