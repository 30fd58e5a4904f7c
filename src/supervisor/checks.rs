//! Artifact checks, evaluated by git-bmad on disk, never taken from the agent's word.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::playbook::Check;
use crate::bmad::speckit;
use crate::runner;

/// What a check needs to know about the worktree.
#[derive(Clone, Debug)]
pub struct CheckEnv<'a> {
    /// The session worktree.
    pub root: &'a Path,
    /// `SPECIFY_FEATURE_DIRECTORY` and `SPECIFY_FEATURE`.
    pub feature_env: &'a speckit::FeatureEnv,
    /// The session branch, short name.
    pub branch: Option<&'a str>,
    /// `checks.test_command`.
    pub test_command: Option<&'a str>,
    /// The timeout of a test run.
    pub timeout: Duration,
    /// The paths the step changed, when known (for `diff_nonempty`, `changed_beyond`).
    pub changed: Option<&'a [String]>,
    /// The run's arguments, for `{args}` in a check's paths (a story's own file).
    pub args: &'a [String],
    /// Set when the user interrupts: a running test command is stopped.
    pub interrupt: &'a std::sync::atomic::AtomicBool,
    /// The walls a test run gets, when the run is contained.
    pub sandbox: Option<&'a runner::Contained>,
    /// The variables the configuration passes to test runs by name (`runners.env`).
    pub passed_env: &'a [String],
}

/// A check as evaluated; the journal stores it as it is.
pub use crate::session::schema::CheckOutcome;

/// Evaluate one check.
pub fn evaluate(check: &Check, env: &CheckEnv<'_>) -> CheckOutcome {
    let outcome = |ok: bool, artifact: String, detail: String| CheckOutcome {
        check: check.to_string(),
        ok,
        artifact,
        detail,
    };
    match check {
        Check::SpecExists | Check::PlanExists | Check::TasksExist => {
            let file = match check {
                Check::SpecExists => "spec.md",
                Check::PlanExists => "plan.md",
                _ => "tasks.md",
            };
            match feature_file(env, file) {
                Ok(path) => {
                    let ok = env.root.join(&path).is_file();
                    let shown = path.display().to_string();
                    let detail = if ok {
                        format!("{shown} exists")
                    } else {
                        format!("{shown} is missing")
                    };
                    outcome(ok, shown, detail)
                }
                Err(why) => outcome(false, format!("<feature>/{file}"), why),
            }
        }
        Check::TasksAllChecked => match feature_file(env, "tasks.md") {
            Ok(path) => {
                let shown = path.display().to_string();
                match std::fs::read_to_string(env.root.join(&path)) {
                    Ok(text) => {
                        let (done, total) = speckit::task_progress(&text);
                        let ok = total > 0 && done == total;
                        outcome(ok, shown, format!("{done} of {total} tasks checked"))
                    }
                    Err(_) => outcome(false, shown.clone(), format!("{shown} is missing")),
                }
            }
            Err(why) => outcome(false, "<feature>/tasks.md".into(), why),
        },
        Check::ChecklistWritten => {
            let dir = match feature_file(env, "checklists") {
                Ok(dir) => dir,
                Err(why) => return outcome(false, "<feature>/checklists/*.md".into(), why),
            };
            let shown = format!("{}/*.md", dir.display());
            let Some(changed) = env.changed else {
                return outcome(
                    false,
                    shown,
                    "a checklist written by the step is only known right after it ran".into(),
                );
            };
            let written = changed.iter().find(|p| {
                let p = Path::new(p.as_str());
                p.parent() == Some(dir.as_path())
                    && p.extension().is_some_and(|e| e == "md")
                    && env.root.join(p).is_file()
            });
            match written {
                Some(file) => outcome(true, shown, format!("wrote {file}")),
                None => {
                    let detail =
                        format!("the step wrote no checklist: nothing new or changed in {shown}");
                    outcome(false, shown, detail)
                }
            }
        }
        Check::FileExists(path) => {
            let ok = inside(env.root, path).is_some_and(|p| p.exists());
            let detail = if ok {
                format!("{path} exists")
            } else {
                format!("{path} is missing")
            };
            outcome(ok, path.clone(), detail)
        }
        Check::DiffNonempty => match env.changed {
            Some(changed) => {
                let ok = !changed.is_empty();
                let detail = match changed {
                    [] => "the step changed no file".to_owned(),
                    [one] => format!("changed {one}"),
                    [first, rest @ ..] => format!("changed {first} and {} more", rest.len()),
                };
                outcome(ok, "the worktree".into(), detail)
            }
            None => outcome(
                false,
                "the worktree".into(),
                "a diff is only known right after a step ran".into(),
            ),
        },
        Check::ChangedBeyond(named) => match env.changed {
            Some(changed) => {
                let args = env.args.join(" ");
                let named: Vec<String> = named.iter().map(|n| n.replace("{args}", &args)).collect();
                let beyond: Vec<&String> = changed
                    .iter()
                    .filter(|p| !named.iter().any(|n| crate::paths::names(n, p)))
                    .collect();
                let detail = match beyond.as_slice() {
                    [] if changed.is_empty() => "the step changed no file".to_owned(),
                    [] => format!("the step changed only {}", changed.join(", ")),
                    [one] => format!("changed {one}"),
                    [first, rest @ ..] => format!("changed {first} and {} more", rest.len()),
                };
                outcome(!beyond.is_empty(), "the worktree".into(), detail)
            }
            None => outcome(
                false,
                "the worktree".into(),
                "a diff is only known right after a step ran".into(),
            ),
        },
        Check::TestsPass(command) => {
            let Some(command) = command.as_deref().or(env.test_command) else {
                return outcome(
                    false,
                    "tests".into(),
                    "no test command: write `tests_pass: <command>` in the playbook or set checks.test_command in .bmad/config.yaml".into(),
                );
            };
            tests_pass(command, env, outcome)
        }
    }
}

fn tests_pass(
    command: &str,
    env: &CheckEnv<'_>,
    outcome: impl Fn(bool, String, String) -> CheckOutcome,
) -> CheckOutcome {
    // The tests run code an agent wrote: none of the user's credentials.
    let spec = runner::Spec {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), command.to_owned()],
        cwd: env.root.to_path_buf(),
        env: crate::env::child::untrusted(env.passed_env),
        env_remove: Vec::new(),
        clear_env: true,
        stdin: None,
        timeout: env.timeout,
        sandbox: env.sandbox.cloned(),
    };
    match runner::run_process(&spec, env.interrupt) {
        Ok(out) if out.exit.success() => {
            outcome(true, command.to_owned(), format!("`{command}` passed"))
        }
        Ok(out) => {
            let tail = out.stdout.excerpt("output", 1200);
            let err = out.stderr.excerpt("stderr", 800);
            let mut detail = format!("`{command}` {}", out.exit);
            for part in [tail.trim(), err.trim()] {
                if !part.is_empty() {
                    detail.push('\n');
                    detail.push_str(part);
                }
            }
            // Test output can print anything, secrets included; it is bound for the journal.
            outcome(
                false,
                command.to_owned(),
                crate::policy::secrets::redact(&detail),
            )
        }
        Err(e) => outcome(
            false,
            command.to_owned(),
            format!("`{command}` could not run: {e}"),
        ),
    }
}

/// A feature file's path relative to the worktree, or why the feature is unknown.
fn feature_file(env: &CheckEnv<'_>, file: &str) -> Result<PathBuf, String> {
    let feature = speckit::feature(env.root, env.feature_env, env.branch).ok_or_else(|| {
        "no spec-kit feature found: set SPECIFY_FEATURE_DIRECTORY (or SPECIFY_FEATURE), write .specify/feature.json, or keep one feature under specs/".to_owned()
    })?;
    let path = feature.dir.join(file);
    inside(env.root, &path.to_string_lossy()).ok_or_else(|| {
        format!(
            "the feature directory {} is outside the repository",
            feature.dir.display()
        )
    })?;
    Ok(path)
}

/// `root/path` if it stays inside `root`, symlinks followed as far as they exist.
fn inside(root: &Path, path: &str) -> Option<PathBuf> {
    super::playbook::check_inside_repo(path).ok()?;
    let joined = root.join(path);
    let real_root = std::fs::canonicalize(root).ok()?;
    // The deepest existing ancestor decides where a symlink leads.
    let mut probe = joined.as_path();
    loop {
        if let Ok(real) = std::fs::canonicalize(probe) {
            return real.starts_with(&real_root).then_some(joined);
        }
        probe = probe.parent()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("specs/001-x")).unwrap();
        std::fs::write(root.join("specs/001-x/spec.md"), "# spec").unwrap();
        std::fs::write(
            root.join("specs/001-x/tasks.md"),
            "- [x] T001\n- [ ] T002\n",
        )
        .unwrap();
        let changed = vec!["src/a.rs".to_owned()];
        let env = CheckEnv {
            root,
            feature_env: &speckit::FeatureEnv::default(),
            branch: None,
            test_command: None,
            timeout: Duration::from_secs(10),
            changed: Some(&changed),
            args: &[],
            interrupt: &std::sync::atomic::AtomicBool::new(false),
            sandbox: None,
            passed_env: &[],
        };
        assert!(evaluate(&Check::SpecExists, &env).ok);
        let plan = evaluate(&Check::PlanExists, &env);
        assert_eq!(
            (plan.ok, plan.detail.as_str()),
            (false, "specs/001-x/plan.md is missing")
        );
        let tasks = evaluate(&Check::TasksAllChecked, &env);
        assert_eq!(
            (tasks.ok, tasks.detail.as_str()),
            (false, "1 of 2 tasks checked")
        );
        assert!(evaluate(&Check::DiffNonempty, &env).ok);
        // Work beyond what does not count: a status line alone is not work.
        let status_only = vec![
            "docs/stories/1.1.md".to_owned(),
            "_bmad-output/sprint-status.yaml".to_owned(),
        ];
        let beyond = |changed: &[String]| {
            let env = CheckEnv {
                changed: Some(changed),
                ..env.clone()
            };
            let args = ["1.1".to_owned()];
            let env = CheckEnv { args: &args, ..env };
            let named = vec![
                "docs/stories/{args}.md".into(),
                "*/sprint-status.yaml".into(),
            ];
            evaluate(&Check::ChangedBeyond(named), &env)
        };
        let only = beyond(&status_only);
        assert!(!only.ok);
        assert!(only
            .detail
            .starts_with("the step changed only docs/stories/1.1.md"));
        assert!(beyond(&[status_only[0].clone(), "src/a.rs".into()]).ok);
        assert!(!beyond(&[]).ok);
        assert!(!evaluate(&Check::FileExists("../x".into()), &env).ok);
        std::os::unix::fs::symlink("/etc", root.join("escape")).unwrap();
        assert!(!evaluate(&Check::FileExists("escape/passwd".into()), &env).ok);
        assert!(evaluate(&Check::TestsPass(Some("true".into())), &env).ok);
        let failing = evaluate(
            &Check::TestsPass(Some("echo 'test x failed'; exit 101".into())),
            &env,
        );
        assert!(!failing.ok);
        assert!(
            failing.detail.contains("exited with code 101")
                && failing.detail.contains("test x failed"),
            "{}",
            failing.detail
        );
        let checklist = evaluate(&Check::ChecklistWritten, &env);
        assert!(!checklist.ok);
        assert!(
            checklist.detail.contains("specs/001-x/checklists/*.md"),
            "{}",
            checklist.detail
        );
        std::fs::create_dir_all(root.join("specs/001-x/checklists")).unwrap();
        std::fs::write(root.join("specs/001-x/checklists/ux.md"), "- [ ] a\n").unwrap();
        assert!(
            !evaluate(&Check::ChecklistWritten, &env).ok,
            "written before"
        );
        let with_checklist = vec!["specs/001-x/checklists/ux.md".to_owned()];
        let env_after = CheckEnv {
            changed: Some(&with_checklist),
            ..env.clone()
        };
        assert!(evaluate(&Check::ChecklistWritten, &env_after).ok);
        assert!(evaluate(&Check::TestsPass(None), &env)
            .detail
            .contains("no test command"));
    }
}
