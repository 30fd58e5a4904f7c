//! The committed man pages are the ones the clap definitions generate.

use crate::common::TestEnv;

#[test]
fn committed_man_pages_are_up_to_date() {
    let env = TestEnv::new();
    let out = env.root().join("man");
    env.bmad(&env.root(), &["generate-man", out.to_str().unwrap()])
        .success();
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    let mut names: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert!(names.iter().any(|n| n == "git-bmad.1"));
    assert!(names.iter().any(|n| n == "git-bmad-rollback.1"));
    for name in &names {
        let fresh = std::fs::read(out.join(name)).unwrap();
        let kept = std::fs::read(committed.join(name)).unwrap_or_default();
        assert!(
            fresh == kept,
            "man/{} is stale: run `cargo run -- generate-man man`",
            name.to_string_lossy()
        );
    }
    let committed_count = std::fs::read_dir(&committed).unwrap().count();
    assert_eq!(
        committed_count,
        names.len(),
        "man/ holds pages no command generates"
    );
}

#[test]
fn help_works_for_every_command() {
    let env = TestEnv::new();
    for cmd in [
        "init",
        "start",
        "status",
        "list",
        "checkpoint",
        "journal",
        "rollback",
        "undo",
        "finish",
        "remove",
        "prune",
        "doctor",
        "playbook",
        "run",
        "resume",
        "answer",
        "demo",
        "stories",
        "speckit",
        "analyze",
        "workflow",
        "template",
        "scan",
        "hooks",
        "guard",
    ] {
        let run = env.bmad(&env.root(), &[cmd, "--help"]).success();
        assert!(
            run.stdout.contains("Usage: git bmad"),
            "{cmd}: {}",
            run.stdout
        );
    }
}
