//! git-bmad beside BMAD's own released tools, run as BMAD runs them (pinned,
//! `scripts/install-bmad-releases.sh`): v6.12's sprint-planning script `sprint_plan.py`
//! regenerates the sprint status from the epics and keeps only the words it knows, so a
//! word git-bmad wrote that it did not know would come back as `backlog`, and the story
//! would be run again (BMAD-METHOD #2871).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

use crate::common::{read, write, TestEnv};

/// Where the pinned releases are: installed on first use, once per test binary.
fn releases() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let status = Command::new(root.join("scripts/install-bmad-releases.sh"))
            .status()
            .expect("run scripts/install-bmad-releases.sh");
        assert!(
            status.success(),
            "bmad-method@6.12.0 could not be installed from npm and PyPI; run scripts/install-bmad-releases.sh to see why"
        );
        root.join("target/bmad-releases")
    })
}

const EPICS: &str = "_bmad-output/planning-artifacts/epics.md";
const ARTIFACTS: &str = "_bmad-output/implementation-artifacts";
const SPRINT: &str = "_bmad-output/implementation-artifacts/sprint-status.yaml";

/// v6.12's `sprint_plan.py <command>` on the project in `repo`, as the sprint-planning skill
/// runs it; its one JSON object.
fn sprint_plan(repo: &Path, command: &str, date: &str) -> Value {
    let dir = releases();
    let script = dir.join("6.12.0/src/bmm-skills/plan/bmad-sprint-planning/scripts/sprint_plan.py");
    let mut cmd = Command::new(dir.join("python/bin/python"));
    cmd.current_dir(repo).arg(script).arg(command);
    if command == "generate" {
        cmd.args(["--epic-file", EPICS, "--stories-dir", ARTIFACTS]);
        cmd.args(["--project", "Shop", "--date", date]);
    }
    cmd.args(["--status-file", SPRINT]);
    let out = cmd.output().expect("run sprint_plan.py");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "sprint_plan.py {command} printed no JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        out.status.success() && json["ok"] == true,
        "sprint_plan.py {command}: {json}"
    );
    json
}

/// `stories list --json` as (key, status) pairs; a story file's own status, when it says
/// otherwise, follows the sprint's (`in-progress/blocked`).
fn statuses(env: &TestEnv, repo: &Path) -> Vec<(String, String)> {
    let list = env
        .bmad(repo, &["stories", "list", "--json"])
        .success()
        .json();
    list.as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let field = |name: &str| s[name].as_str().unwrap().to_owned();
            match s["file_status"].as_str() {
                Some(file) => (field("key"), format!("{}/{file}", field("status"))),
                None => (field("key"), field("status")),
            }
        })
        .collect()
}

/// The sprint file's `development_status` lines, `key: status`.
fn development_status(repo: &Path) -> Vec<String> {
    read(repo, SPRINT)
        .lines()
        .skip_while(|l| !l.starts_with("development_status:"))
        .skip(1)
        .filter(|l| l.starts_with("  ") && l.contains(':'))
        .map(|l| l.trim().to_owned())
        .collect()
}

#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bmad-method@6.12.0 from npm and ruamel.yaml from PyPI: cargo test --features external-tests"
)]
#[test]
fn every_status_git_bmad_writes_survives_bmad_6_12_regenerating_the_sprint_status() {
    let env = TestEnv::new();
    let repo = env.repo("shop");
    write(
        &repo,
        EPICS,
        "# Shop - Epic Breakdown\n\n## Epic 1: Cart\n\n### Story 1.1: Add items\n\n### Story 1.2: Remove items\n\n\
         ### Story 1.3: Checkout\n\n### Story 1.4: Saved carts\n\n## Epic 2: Pricing\n\n### Story 2.1: Discount codes\n",
    );
    // BMAD writes the sprint status, in the form its own script prints.
    let first = sprint_plan(&repo, "generate", "11-27-2026 09:00");
    assert_eq!(first["stories"], 5, "{first}");
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "sprint planning"]);

    // git-bmad moves stories through every word of BMAD's story lifecycle.
    let set = |key: &str, to: &str| {
        env.bmad(&repo, &["stories", "set", key, to]).success();
    };
    set("1-1-add-items", "ready-for-dev");
    set("1-1-add-items", "in-progress");
    for to in ["ready-for-dev", "in-progress", "review"] {
        set("1-2-remove-items", to);
    }
    for to in ["ready-for-dev", "in-progress", "review", "done"] {
        set("2-1-discount-codes", to);
    }
    // A story parked on a blocking condition: bmad-build-auto writes `blocked` into the
    // story file; git-bmad lists it blocked, and the sprint keeps a word BMAD knows.
    set("1-3-checkout", "ready-for-dev");
    set("1-3-checkout", "in-progress");
    write(
        &repo,
        &format!("{ARTIFACTS}/1-3-checkout.md"),
        "# Story 1.3: Checkout\n\nStatus: blocked\n\nBlocking condition: the payment provider's sandbox key\n",
    );
    // Parking words BMAD's script does not know are refused, even forced: the file is
    // left as it was.
    let before = read(&repo, SPRINT);
    for word in ["blocked", "awaiting-operator"] {
        env.bmad(&repo, &["stories", "set", "1-4-saved-carts", word])
            .code(4);
        env.bmad(
            &repo,
            &["stories", "set", "--force", "1-4-saved-carts", word],
        )
        .code(4);
    }
    assert_eq!(
        read(&repo, SPRINT),
        before,
        "a refused word changed the sprint status"
    );

    let ours = statuses(&env, &repo);
    let want: Vec<(String, String)> = [
        ("1-1-add-items", "in-progress"),
        ("1-2-remove-items", "review"),
        ("1-3-checkout", "in-progress/blocked"),
        ("1-4-saved-carts", "backlog"),
        ("2-1-discount-codes", "done"),
    ]
    .iter()
    .map(|(k, s)| (k.to_string(), s.to_string()))
    .collect();
    assert_eq!(ours, want);
    let lines = development_status(&repo);

    // BMAD regenerates from the epics, as sprint-planning does on every run.
    let again = sprint_plan(&repo, "generate", "11-28-2026 09:00");
    assert_eq!(again["illegal"], serde_json::json!([]), "{again}");
    assert_eq!(again["changed"], 0, "{again}");
    assert_eq!(again["in_sync"], true, "{again}");
    assert_eq!(
        development_status(&repo),
        lines,
        "BMAD's regeneration moved a story"
    );
    assert_eq!(
        statuses(&env, &repo),
        want,
        "git-bmad reads BMAD's file otherwise"
    );
    let valid = sprint_plan(&repo, "validate", "");
    assert_eq!(valid["valid"], true, "{valid}");
    let status = sprint_plan(&repo, "status", "");
    assert_eq!(status["illegal"], serde_json::json!([]), "{status}");
    assert_eq!(status["unrecognized"], serde_json::json!([]), "{status}");
    assert_eq!(status["all_done"], false, "{status}");

    // And git-bmad edits the file BMAD rewrote in place: its story's line and BMAD's
    // `last_updated`, nothing else.
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "regenerated"]);
    set("1-1-add-items", "review");
    let diff = env.git(&repo, &["diff", "-U0", "--", SPRINT]);
    let changed: Vec<&str> = diff
        .lines()
        .filter(|l| {
            (l.starts_with('-') || l.starts_with('+'))
                && !l.starts_with("---")
                && !l.starts_with("+++")
        })
        .collect();
    assert_eq!(changed.len(), 4, "{diff}");
    assert!(changed.contains(&"-  1-1-add-items: in-progress"), "{diff}");
    assert!(changed.contains(&"+  1-1-add-items: review"), "{diff}");
    assert!(
        changed
            .iter()
            .all(|l| l.contains("1-1-add-items") || l.contains("last_updated:")),
        "{diff}"
    );
    let last = sprint_plan(&repo, "generate", "11-28-2026 10:00");
    assert_eq!(
        (last["changed"].clone(), last["illegal"].clone()),
        (0.into(), serde_json::json!([])),
        "{last}"
    );
}
