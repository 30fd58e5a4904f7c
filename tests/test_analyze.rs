//! `git bmad analyze`: the decision engine from the command line, as a script would use it.

use std::io::Write;
use std::process::Stdio;

use serde_json::Value;

use crate::common::TestEnv;

fn menu(env: &TestEnv, output: &str) -> Value {
    let mut child = env
        .bmad_command(&env.root())
        .args(["analyze", "menu", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(output.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn menus_are_detected_answered_or_handed_to_a_human() {
    let env = TestEnv::new();
    let a = menu(&env, "Section 2 drafted.\n\n**Select an Option:** [A] Advanced Elicitation [P] Party Mode [C] Continue\n");
    assert_eq!(a["detected"], true);
    assert_eq!(
        a["score"],
        serde_json::json!({"structure": 30, "position": 20, "options": 20, "total": 70})
    );
    assert_eq!(a["recommended"]["key"], "C");
    assert_eq!(a["action"], "auto");
    assert!(a["confidence_score"].as_u64().unwrap() >= 80);
    assert!(a["selection_reason"]
        .as_str()
        .unwrap()
        .contains("configured default"));
    // The same menu quoted in a code fence is not a menu.
    let fenced = menu(
        &env,
        "The engine prints:\n```\n[A] Advanced Elicitation [P] Party Mode [C] Continue\n```\n",
    );
    assert_eq!(
        (fenced["detected"].as_bool(), fenced["guard"].as_str()),
        (Some(false), Some("code_block"))
    );
    // A question with no default to take: asked, without a recommendation.
    let ask = menu(&env, "Which database?\n1. Postgres\n2. SQLite\n");
    assert_eq!(
        (ask["detected"].as_bool(), ask["action"].as_str()),
        (Some(true), Some("ask"))
    );
    assert!(ask["recommended"].is_null());
}

#[test]
fn confidence_from_signals_with_the_seed_numbers() {
    let env = TestEnv::new();
    let c = env
        .bmad(
            &env.root(),
            &[
                "analyze",
                "confidence",
                "--signal",
                "verdict=0.9",
                "--signal",
                "memory=0.4",
                "--json",
            ],
        )
        .success()
        .json();
    assert_eq!(c["score"], 71.3);
    assert_eq!(
        (
            c["class"].as_str(),
            c["action"].as_str(),
            c["checkpoint_format"].as_str()
        ),
        (Some("high"), Some("ask-with-hint"), Some("summary"))
    );
    assert_eq!(c["conflict"], true);
    let none = env
        .bmad(&env.root(), &["analyze", "confidence", "--json"])
        .success()
        .json();
    assert_eq!(none["score"], 25.0);
    let bad = env
        .bmad(
            &env.root(),
            &["analyze", "confidence", "--signal", "vibes=1"],
        )
        .code(2);
    assert!(
        bad.stderr.contains("unknown signal \"vibes\""),
        "{}",
        bad.stderr
    );
}

#[test]
fn validation_review_xref_and_project_from_files() {
    let env = TestEnv::new();
    let dir = env.root().join("docs");
    crate::common::write(&dir, "gate.md", "---\nvalidation:\n  type: custom\n  success_pattern: \"Quality Gate: PASSED\"\n  failure_pattern: \"Quality Gate: FAILED\"\n---\nReport PASS or FAIL.\n");
    crate::common::write(&dir, "out.txt", "lint ok\nQuality Gate: FAILED\n");
    let v = env
        .bmad(
            &dir,
            &[
                "analyze",
                "validation",
                "gate.md",
                "--output",
                "out.txt",
                "--json",
            ],
        )
        .code(1)
        .json();
    assert_eq!(
        (
            v["detection"]["validation_type"].as_str(),
            v["passed"].as_bool()
        ),
        (Some("custom"), Some(false))
    );
    crate::common::write(&dir, "bad.md", "---\nvalidation:\n  type: custom\n---\n");
    let bad = env.bmad(&dir, &["analyze", "validation", "bad.md"]).code(2);
    assert!(bad.stdout.contains("invalid_pattern"), "{}", bad.stdout);

    crate::common::write(&dir, "review.md", "## Senior Developer Review (AI)\n\n**Outcome:** Blocked\n\n- [ ] [AI-Review][Critical] Secrets in logs [src/log.rs:7]\n");
    let r = env
        .bmad(&dir, &["analyze", "review", "review.md", "--json"])
        .code(1)
        .json();
    assert_eq!(r["outcome"], "blocked");
    assert_eq!(r["findings"][0]["location"], "src/log.rs:7");
    assert_eq!(r["must_fix_open"], 1);

    crate::common::write(&dir, "prd.md", "FR1 sign in\nFR2 sign out\nFR3 export\n");
    crate::common::write(&dir, "arch.md", "FR1, FR2. ADR-001 use Postgres.\n");
    crate::common::write(&dir, "stories/1-1-a.md", "Status: backlog\n");
    let x = env
        .bmad(
            &dir,
            &[
                "analyze",
                "xref",
                "--prd",
                "prd.md",
                "--architecture",
                "arch.md",
                "--stories",
                "stories",
                "--json",
            ],
        )
        .code(1)
        .json();
    assert_eq!(x["orphaned_requirements"], serde_json::json!(["FR3"]));
    assert_eq!(x["unaddressed_decisions"], serde_json::json!(["ADR-001"]));
    assert_eq!(x["issues"][0]["severity"], "HIGH");

    let p = env
        .bmad(
            &dir,
            &["analyze", "project", "--describe", "fix a typo", "--json"],
        )
        .success()
        .json();
    assert_eq!(p["project"]["project_type"], "greenfield");
    assert_eq!(p["tier"]["tier"], 0);
}

#[test]
fn preflight_names_what_is_missing_and_how_to_fix_it() {
    let env = TestEnv::new();
    let root = env.root().join("proj");
    crate::common::write(
        &root,
        "_bmad/bmm/config.yaml",
        "user_name: Ada\noutput_folder: ''\n",
    );
    crate::common::write(&root, "docs/prd.md", "# PRD\n");
    let args = [
        "analyze",
        "preflight",
        "--key",
        "output_folder",
        "--key",
        "user_name",
        "--input",
        "docs/*prd*.md",
        "--input",
        "docs/architecture.md",
        "--json",
    ];
    let p = env.bmad(&root, &args).code(1).json();
    assert_eq!(p["overall_status"], "FAILED");
    assert_eq!(
        p["missing"],
        serde_json::json!(["output_folder", "docs/architecture.md"])
    );
    assert_eq!(
        p["checks"][0]["remediation"],
        "set output_folder in _bmad/bmm/config.yaml"
    );
    assert_eq!(
        p["checks"][1]["validated_files"],
        serde_json::json!(["docs/prd.md"])
    );
    // Fixed: READY, 100%.
    crate::common::write(
        &root,
        "_bmad/bmm/config.yaml",
        "user_name: Ada\noutput_folder: docs\n",
    );
    crate::common::write(&root, "docs/architecture.md", "# Architecture\n");
    let p = env.bmad(&root, &args).success().json();
    assert_eq!(
        (
            p["overall_status"].as_str(),
            p["checks_passed_percent"].as_u64()
        ),
        (Some("READY"), Some(100))
    );
    let text = env
        .bmad(
            &root,
            &["analyze", "preflight", "--command", "no-such-tool-here"],
        )
        .code(1);
    assert!(
        text.stdout
            .contains("fix: install no-such-tool-here or put it on PATH"),
        "{}",
        text.stdout
    );
}

#[test]
fn tier_overrides_follow_their_priority_and_safety_is_refused() {
    let env = TestEnv::new();
    let r = env
        .bmad(
            &env.root(),
            &[
                "analyze",
                "tier",
                "--earlier",
                "use tier 2",
                "--earlier",
                "profile: aggressive",
                "write the tests [thorough]",
                "--json",
            ],
        )
        .success()
        .json();
    assert_eq!(r["settings"]["tier"], 2, "explicit tier beats the profile");
    assert_eq!(r["settings"]["batch_size"], 5);
    assert_eq!(
        r["operation"]["tier"], 3,
        "[thorough] raises this operation only"
    );
    assert_eq!(r["overrides"][1]["overruled_by"], "explicit_tier");
    let blocked = env
        .bmad(
            &env.root(),
            &["analyze", "tier", "skip final approval", "--json"],
        )
        .code(4)
        .json();
    assert_eq!(blocked["error"], "safety_override_blocked");
    assert_eq!(blocked["behaviour"], "final approval");
    let text = env
        .bmad(&env.root(), &["analyze", "tier", "disable stall detection"])
        .code(4);
    assert!(
        text.stderr.contains("stall detection cannot be bypassed"),
        "{}",
        text.stderr
    );
}

#[test]
fn bmb_results_route_and_tiers_change_what_confidence_triggers() {
    let env = TestEnv::new();
    let route = |args: &[&str]| {
        let mut all = vec!["analyze", "bmb", "--json"];
        all.extend_from_slice(args);
        env.bmad(&env.root(), &all).success().json()["route"].clone()
    };
    assert_eq!(
        route(&["--blocking", "4", "--compliance", "90"]),
        "party_mode"
    );
    assert_eq!(route(&["--major", "6", "--compliance", "90"]), "party_mode");
    assert_eq!(route(&["--compliance", "69"]), "advanced_elicitation");
    assert_eq!(
        route(&["--blocking", "3", "--major", "5", "--compliance", "70"]),
        "continue"
    );
    let c = env
        .bmad(
            &env.root(),
            &[
                "analyze",
                "confidence",
                "--signal",
                "verdict=0.5",
                "--tier",
                "3",
                "--json",
            ],
        )
        .success()
        .json();
    assert_eq!(c["score"], 50.0);
    assert_eq!(
        c["tier"],
        serde_json::json!({"tier": 3, "party_mode": true, "pre_final_review": true})
    );
}
