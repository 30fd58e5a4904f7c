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
