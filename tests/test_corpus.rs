//! Real public BMAD projects (corpus/bmad/<owner>+<repo>/, harvested unchanged by
//! scripts/harvest-corpus.sh, each with its source and commit), read as BMAD reads them.
//! Each project's expect.json was written from BMAD's own tools before git-bmad read it
//! (scripts/corpus-expect.py: v6.12's YAML library and sprint_plan.py): every story key of
//! BMAD's grammar with its status, the keys outside it, and sprint_plan.py's recommendation.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{copy_dir, TestEnv};

/// The harvested projects, by name.
fn projects() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/bmad");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("corpus/bmad")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("expect.json").is_file())
        .collect();
    out.sort();
    out
}

/// What one project gave: the checks made and the ones that failed, with why.
#[derive(Default)]
struct Tally {
    checks: usize,
    failures: Vec<String>,
}

impl Tally {
    fn check(&mut self, project: &str, ok: bool, what: impl FnOnce() -> String) {
        self.checks += 1;
        if !ok {
            self.failures.push(format!("{project}: {}", what()));
        }
    }
}

/// Whether git-bmad reads `story` with BMAD's `status`: one of the words BMAD's sprint tools
/// know is git-bmad's status; any other word is kept as written.
fn reads_as(story: &Value, status: &str) -> bool {
    const KNOWN: &[&str] = &[
        "backlog",
        "ready-for-dev",
        "in-progress",
        "review",
        "done",
        "optional",
    ];
    if KNOWN.contains(&status) {
        story["status"] == status
    } else {
        story["raw_status"] == status
    }
}

fn check_project(env: &TestEnv, dir: &Path, tally: &mut Tally) {
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let expect: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expect.json")).unwrap()).unwrap();
    let repo = env.root().join(&name);
    std::fs::create_dir_all(&repo).unwrap();
    copy_dir(dir, &repo);
    std::fs::remove_file(repo.join("expect.json")).unwrap();
    env.git(&repo, &["init", "-q", "-b", "main"]);
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "harvested"]);

    let run = |args: &[&str]| {
        let mut cmd = env.bmad_command(&repo);
        cmd.args(args);
        cmd.output().expect("git-bmad")
    };
    // A v4 project: the Scrum Master's story files, each with its Status as written.
    if let Some(v4) = expect["v4_stories"].as_array() {
        check_v4(&name, v4, &run(&["stories", "list", "--json"]), tally);
        return;
    }
    // No sprint status where BMAD's workflows look (one archived, or a module's own): git-bmad
    // says so and where it looked, as BMAD's sprint tools would find none.
    if expect["sprint_file"].is_null() {
        let list = run(&["stories", "list", "--json"]);
        let said = String::from_utf8_lossy(&list.stderr).contains("looked for");
        tally.check(&name, list.status.code() == Some(1) && said, || {
            format!(
                "no sprint status where BMAD looks, yet stories list exits {:?}",
                list.status.code()
            )
        });
        return;
    }
    // No command stops for one bad line: list and next answer, check reports.
    let list = run(&["stories", "list", "--json"]);
    tally.check(&name, list.status.code() == Some(0), || {
        format!(
            "stories list exits {:?}: {}",
            list.status.code(),
            String::from_utf8_lossy(&list.stderr)
        )
    });
    let check = run(&["stories", "check", "--json"]);
    tally.check(&name, matches!(check.status.code(), Some(0 | 1)), || {
        format!(
            "stories check exits {:?}: {}",
            check.status.code(),
            String::from_utf8_lossy(&check.stderr)
        )
    });
    let next = run(&["stories", "next", "--json"]);
    tally.check(&name, next.status.code() == Some(0), || {
        format!(
            "stories next exits {:?}: {}",
            next.status.code(),
            String::from_utf8_lossy(&next.stderr)
        )
    });
    let Ok(list) = serde_json::from_slice::<Value>(&list.stdout) else {
        return;
    };
    let stories = list.as_array().cloned().unwrap_or_default();
    let find = |key: &str| stories.iter().find(|s| s["key"] == key);

    // Every story of BMAD's grammar, with BMAD's status.
    for pair in expect["stories"].as_array().unwrap() {
        let (key, status) = (pair[0].as_str().unwrap(), pair[1].as_str().unwrap());
        let found = find(key);
        tally.check(&name, found.is_some_and(|s| reads_as(s, status)), || {
            let ours = found.map(|s| format!("{} (written {})", s["status"], s["raw_status"]));
            format!(
                "{key}: BMAD reads {status}, git-bmad {}",
                ours.unwrap_or_else(|| "no such story".into())
            )
        });
    }
    // Keys outside the grammar are listed as written and never recommended.
    let next: Value = serde_json::from_slice(&next.stdout).unwrap_or_default();
    let recommended = next["next"]["key"].as_str().unwrap_or_default().to_owned();
    for key in expect["other_keys"].as_array().unwrap() {
        let key = key.as_str().unwrap();
        tally.check(&name, key != recommended, || {
            format!("{key} is outside BMAD's grammar, yet recommended")
        });
    }
    // sprint_plan.py's recommendation, unless git-bmad says why not (a dependency, a
    // blocking condition, more than one file).
    if let Some(bmad) = expect["recommendation"].as_str() {
        let said_why = next["blocked"].as_array().is_some_and(|b| {
            b.iter()
                .any(|w| w.as_str().is_some_and(|w| w.starts_with(bmad)))
        });
        tally.check(&name, recommended == bmad || said_why, || {
            format!(
                "BMAD recommends {bmad}, git-bmad {recommended:?} without saying why not {bmad}"
            )
        });
    }
}

/// A v4 project's stories: exactly the files BMAD's v4 rules name, each with the status its
/// `## Status` section writes (membership only, where a file has no such section).
fn check_v4(name: &str, expected: &[Value], list: &std::process::Output, tally: &mut Tally) {
    tally.check(name, list.status.code() == Some(0), || {
        format!("stories list exits {:?}", list.status.code())
    });
    let stories: Vec<Value> = serde_json::from_slice::<Value>(&list.stdout)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default();
    let listed: Vec<&str> = stories.iter().filter_map(|s| s["file"].as_str()).collect();
    for pair in expected {
        let (file, status) = (pair[0].as_str().unwrap(), pair[1].as_str().unwrap());
        let found = stories.iter().find(|s| s["file"] == file);
        tally.check(name, found.is_some(), || {
            format!("{file} is a story, not listed")
        });
        // Markdown emphasis (`**Done**`) is how it is shown, not what it says.
        let plain = |text: &str| text.replace('*', "").trim().to_owned();
        if let (Some(story), false) = (found, status.is_empty()) {
            let read = story["raw_status"].as_str().unwrap_or_default();
            tally.check(name, plain(read) == plain(status), || {
                format!(
                    "{file}: its Status says {status:?}, git-bmad read {}",
                    story["raw_status"]
                )
            });
        }
    }
    for file in listed {
        let expected_file = expected.iter().any(|p| p[0] == file);
        tally.check(name, expected_file, || {
            format!("{file} is listed, but is no story of BMAD's v4 rules")
        });
    }
}

#[test]
fn real_bmad_projects_are_read_as_bmad_reads_them() {
    let env = TestEnv::new();
    let projects = projects();
    assert!(projects.len() >= 8, "the corpus is gone: {projects:?}");
    let mut tally = Tally::default();
    for dir in &projects {
        check_project(&env, dir, &mut tally);
    }
    let passed = tally.checks - tally.failures.len();
    eprintln!(
        "corpus: {} projects, {passed} of {} checks hold",
        projects.len(),
        tally.checks
    );
    assert!(
        tally.failures.is_empty(),
        "{passed} of {} checks hold:\n{}",
        tally.checks,
        tally.failures.join("\n")
    );
}
