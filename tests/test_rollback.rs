//! `git bmad rollback` and `undo`: nothing is ever lost.

use crate::common::{read, write, TestEnv};

#[test]
fn rollback_then_undo_restores_the_exact_tree() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "feature-x");
    write(&wt, "plan.md", "the plan\n");
    env.bmad(&wt, &["checkpoint", "-m", "plan"]).success();
    let plan = env.last_checkpoint(&wt);

    write(&wt, "plan.md", "the plan, rewritten badly\n");
    write(&wt, "src/lib.rs", "broken\n");
    std::fs::remove_file(wt.join("README.md")).unwrap();
    let before = env.worktree_tree(&wt);

    // Dry run: lists the files, changes nothing.
    let dry = env.bmad(&wt, &["rollback", "--dry-run", &plan]).success();
    for expected in ["plan.md", "src/lib.rs", "README.md"] {
        assert!(
            dry.stdout.contains(expected),
            "dry run lists {expected}: {}",
            dry.stdout
        );
    }
    assert_eq!(
        env.worktree_tree(&wt),
        before,
        "dry run changed the worktree"
    );

    env.bmad(&wt, &["rollback", &plan]).success();
    assert_eq!(read(&wt, "plan.md"), "the plan\n");
    assert_eq!(read(&wt, "README.md"), "# project\n");
    assert!(!wt.join("src/lib.rs").exists());

    let undo = env.bmad(&wt, &["undo", "--json"]).success().json();
    assert!(undo["event"]["detail"]["undo_of"].as_u64().is_some());
    // Exactly the state before the rollback.
    assert_eq!(env.worktree_tree(&wt), before);
    assert_eq!(read(&wt, "src/lib.rs"), "broken\n");

    // The journal marks what was rolled back; undo of the undo is a redo.
    let journal = env.bmad(&wt, &["journal", "--json"]).success().json();
    let events = journal.as_array().unwrap();
    let rollbacks: Vec<_> = events.iter().filter(|e| e["event"] == "rollback").collect();
    assert_eq!(rollbacks.len(), 2);
    assert_eq!(
        rollbacks[0]["rolled_back"], true,
        "the undone rollback is marked"
    );
    env.bmad(&wt, &["undo"]).success();
    assert_eq!(read(&wt, "plan.md"), "the plan\n");
    env.bmad(&repo, &["doctor"]).success();
}

#[test]
fn rollback_never_touches_ignored_files() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "feature-x");
    let first = env.last_checkpoint(&wt);
    write(&wt, "build.log", "precious log\n");
    write(&wt, "target/cache.bin", "cache\n");
    write(&wt, "new.txt", "new\n");
    let mtime = std::fs::metadata(wt.join("build.log"))
        .unwrap()
        .modified()
        .unwrap();

    env.bmad(&wt, &["rollback", &first]).success();

    assert!(!wt.join("new.txt").exists());
    assert_eq!(read(&wt, "build.log"), "precious log\n");
    assert_eq!(read(&wt, "target/cache.bin"), "cache\n");
    assert_eq!(
        std::fs::metadata(wt.join("build.log"))
            .unwrap()
            .modified()
            .unwrap(),
        mtime
    );
}

/// An agent stages a file and edits it again in the same second, to the same size: git's
/// stat data (whole seconds here) cannot tell the two apart, only the index's own time says
/// the entry must be read again. The rollback's safety checkpoint holds the edit, and undo
/// gives it back.
#[test]
fn an_edit_in_the_second_its_file_was_staged_survives_rollback_and_undo() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "feature-x");
    write(&wt, "plan.md", "the plan\n");
    env.bmad(&wt, &["checkpoint", "-m", "plan"]).success();
    let plan = env.last_checkpoint(&wt);

    // Staged, then edited, then the rollback a second later: tried until no second's
    // boundary falls between the staging and the edit.
    use std::os::unix::fs::MetadataExt;
    let mut tries = 0;
    let staged_second = loop {
        tries += 1;
        assert!(tries <= 10, "could not stage and edit within one second");
        sleep_to_the_next_second();
        write(&wt, "plan.md", "draft one\n");
        env.git(&wt, &["add", "plan.md"]);
        write(&wt, "plan.md", "draft two\n");
        let entry = env.git(&wt, &["ls-files", "--debug", "plan.md"]);
        let seconds = |field: &str| {
            let line = entry.lines().find(|l| l.trim_start().starts_with(field));
            line.and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().parse::<i64>().expect("seconds"))
        };
        let meta = std::fs::metadata(wt.join("plan.md")).unwrap();
        let index = env.git(
            &wt,
            &["rev-parse", "--path-format=absolute", "--git-path", "index"],
        );
        let index_written = std::fs::metadata(index.trim()).unwrap().mtime();
        let second = meta.mtime();
        if seconds("mtime") == Some(second)
            && seconds("ctime") == Some(meta.ctime())
            && index_written == second
        {
            break second;
        }
    };
    sleep_to_the_next_second();
    assert!(now_seconds() > staged_second);

    let rolled = env
        .bmad(&wt, &["rollback", &plan, "--json"])
        .success()
        .json();
    assert_eq!(read(&wt, "plan.md"), "the plan\n");
    let safety = rolled["safety"]["tree"].as_str().expect("the safety tree");
    assert_eq!(
        env.git(&repo, &["cat-file", "blob", &format!("{safety}:plan.md")]),
        "draft two\n",
        "the safety checkpoint holds the edit"
    );
    env.bmad(&wt, &["undo"]).success();
    assert_eq!(read(&wt, "plan.md"), "draft two\n");
}

/// Seconds since the Unix epoch.
fn now_seconds() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.expect("a clock after 1970").as_secs() as i64
}

/// Sleep into the next second, past the kernel's file-time tick (which lags the clock).
fn sleep_to_the_next_second() {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let into = now.expect("a clock after 1970").subsec_nanos();
    std::thread::sleep(std::time::Duration::from_nanos(
        u64::from(1_000_000_000 - into) + 20_000_000,
    ));
}

#[test]
fn rollback_by_step_and_bad_targets() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "steps");
    write(&wt, "one.txt", "1\n");
    env.bmad(&wt, &["checkpoint", "-m", "step one", "--step", "one"])
        .success();
    write(&wt, "two.txt", "2\n");
    env.bmad(&wt, &["checkpoint", "-m", "step two", "--step", "two"])
        .success();
    write(&wt, "three.txt", "3\n");

    env.bmad(&wt, &["rollback", "--step", "one"]).success();
    assert!(wt.join("one.txt").exists());
    assert!(!wt.join("two.txt").exists() && !wt.join("three.txt").exists());

    let run = env.bmad(&wt, &["rollback", "--step", "nine"]).code(2);
    assert!(run.stderr.contains("step nine"), "{}", run.stderr);
    env.bmad(&wt, &["rollback", "999"]).code(2);
    env.bmad(&wt, &["rollback", "zzzzzzz"]).code(2);
    env.bmad(&wt, &["rollback"]).code(2);
}

#[test]
fn undo_without_a_rollback_explains() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "x");
    let run = env.bmad(&wt, &["undo"]).code(1);
    assert!(run.stderr.contains("no rollback to undo"), "{}", run.stderr);
}

#[test]
fn rollback_works_from_the_main_worktree_with_session_flag() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (id, wt) = env.start(&repo, "remote-control");
    write(&wt, "a.txt", "a\n");
    env.bmad(
        &repo,
        &["checkpoint", "-s", "remote-control", "-m", "from main"],
    )
    .success();
    write(&wt, "a.txt", "changed\n");
    env.bmad(&repo, &["rollback", "-s", &id, "2"]).success();
    assert_eq!(read(&wt, "a.txt"), "a\n");
}

/// The restore step refuses, before writing anything, when a file changed after the state it
/// restores from was taken: that is how a rollback notices an agent still writing.
#[test]
fn restore_refuses_when_a_file_changed_after_the_snapshot() {
    use git_bmad::git::Repo;
    let env = TestEnv::new();
    let repo_dir = env.repo("proj");
    write(&repo_dir, "work.txt", "v1\n");
    let repo = Repo::discover(&repo_dir).unwrap();
    let index = env.root().join("private.index");
    std::fs::copy(repo_dir.join(".git/index"), &index).unwrap();
    let now = repo.write_tree_of_worktree(&index).unwrap();
    let target = repo.tree_of(repo.head_id().unwrap().unwrap()).unwrap();
    // Someone writes after the snapshot (size differs, so the stat data betrays it).
    write(&repo_dir, "work.txt", "v2, written by a busy agent\n");
    let err = repo.read_tree_update(&index, now, target).unwrap_err();
    assert!(err.to_string().contains("work.txt"), "{err}");
    assert_eq!(
        read(&repo_dir, "work.txt"),
        "v2, written by a busy agent\n",
        "nothing was overwritten"
    );
}

#[test]
fn a_secret_in_the_worktree_stops_rollback_and_undo_before_anything_is_stored() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "leaky");
    write(&wt, "plan.md", "the plan\n");
    env.bmad(&wt, &["checkpoint", "-m", "plan"]).success();
    let plan = env.last_checkpoint(&wt);
    let key = format!("AKIA{}", "Q7ZK2M4XW6RT5PLN");
    write(&wt, "plan.md", "the plan, rewritten\n");
    write(&wt, "config/settings.py", &format!("AWS = \"{key}\"\n"));

    let refused = env.bmad(&wt, &["rollback", &plan]).code(4);
    assert!(
        refused.stderr.contains("config/settings.py:1:8")
            && refused.stderr.contains("aws-access-key-id")
            && refused.stderr.contains("Remove it"),
        "{}",
        refused.stderr
    );
    assert!(!refused.stderr.contains(&key), "{}", refused.stderr);
    // Nothing moved (read from disk: hashing the tree would store the key), and the key
    // is in no object.
    assert_eq!(read(&wt, "plan.md"), "the plan, rewritten\n");
    assert!(read(&wt, "config/settings.py").contains(&key));
    assert!(!env.all_objects(&repo).contains(&key[4..]));

    // Without it, the rollback goes through; a key written afterwards stops `undo` too.
    std::fs::remove_file(wt.join("config/settings.py")).unwrap();
    env.bmad(&wt, &["rollback", &plan]).success();
    assert_eq!(read(&wt, "plan.md"), "the plan\n");
    write(&wt, "notes.txt", &format!("key {key}\n"));
    env.bmad(&wt, &["undo"]).code(4);
    assert!(!env.all_objects(&repo).contains(&key[4..]));
    std::fs::remove_file(wt.join("notes.txt")).unwrap();
    env.bmad(&wt, &["undo"]).success();
    assert_eq!(read(&wt, "plan.md"), "the plan, rewritten\n");
}

/// Every operation that stores a worktree's files takes the same policy: `finish`, whose last
/// checkpoint once stored whatever the worktree held, keeps a secret out like the others.
#[test]
fn finish_keeps_a_secret_out_of_its_last_checkpoint_and_says_so() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "done");
    let key = format!("AKIA{}", "Q7ZK2M4XW6RT5PLN");
    write(&wt, "feature.txt", "the work\n");
    write(&wt, "config/settings.py", &format!("AWS = \"{key}\"\n"));
    let finished = env.bmad(&wt, &["finish", "--json"]).code(4);
    let json = finished.json();
    assert_eq!(json["kept_out"], serde_json::json!(["config/settings.py"]));
    assert_eq!(json["secrets"][0]["rule"], "aws-access-key-id", "{json:#}");
    assert!(!finished.stdout.contains(&key), "{}", finished.stdout);
    assert!(!env.all_objects(&repo).contains(&key[4..]));
    // The rest of the work is in the last checkpoint.
    let status = env.bmad(&wt, &["status", "--json"]).success().json();
    let last = status["checkpoints"][0]["checkpoint"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(status["state"]["status"], "completed", "{status:#}");
    let stored = env.git(&repo, &["show", &format!("{last}:feature.txt")]);
    assert_eq!(stored, "the work\n");
}

#[test]
fn a_rollback_that_removes_a_whole_directory_says_so_in_one_line() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "big");
    for i in 0..300 {
        write(&wt, &format!("vendor/pkg{}/f{i}.js", i % 7), "x\n");
    }
    write(&wt, "src/one.rs", "one\n");
    let plan = env.bmad(&wt, &["rollback", "1", "--dry-run"]).success();
    assert!(
        plan.stdout.contains("would change 301 file(s)")
            && plan.stdout.contains("remove  300 files in vendor/")
            && plan.stdout.contains("remove  src/one.rs"),
        "{}",
        plan.stdout
    );
    assert!(plan.stdout.lines().count() < 10, "{}", plan.stdout);
    // --json still lists every file.
    let json = env
        .bmad(&wt, &["rollback", "1", "--dry-run", "--json"])
        .success()
        .json();
    assert_eq!(json["plan"]["changes"].as_array().unwrap().len(), 301);
}

#[test]
fn a_nested_clone_is_left_alone_and_the_report_says_so() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "nested");
    // A repository of its own inside the worktree, as an agent's `git clone` leaves it.
    let nested = wt.join("vendor/lib");
    std::fs::create_dir_all(&nested).unwrap();
    env.git(&nested, &["init", "-q"]);
    write(&nested, "x.txt", "x\n");
    env.git(&nested, &["add", "-A"]);
    env.git(&nested, &["commit", "-q", "-m", "x"]);
    write(&wt, "b.txt", "b\n");
    env.bmad(&wt, &["checkpoint", "-m", "one"]).success();
    write(&nested, "y.txt", "y\n");
    std::fs::remove_file(wt.join("b.txt")).unwrap();
    env.bmad(&wt, &["checkpoint", "-m", "two"]).success();

    let plan = env.bmad(&wt, &["rollback", "2", "--dry-run"]).success();
    assert!(
        plan.stdout.contains("would change 1 file(s)")
            && plan.stdout.contains("restore b.txt")
            && plan
                .stdout
                .contains("keep    vendor/lib/ (a repository of its own"),
        "{}",
        plan.stdout
    );
    let done = env.bmad(&wt, &["rollback", "2", "--json"]).success().json();
    assert_eq!(done["event"]["detail"]["nested"][0], "vendor/lib");
    let changed: Vec<&str> = done["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(changed, ["b.txt"]);
    // What the report says is what happened: the clone is untouched, and no checkpoint
    // (the safety one included) records it.
    assert_eq!(read(&nested, "y.txt"), "y\n");
    assert_eq!(env.git(&nested, &["status", "--porcelain"]), "?? y.txt\n");
    let safety = done["safety"]["id"].as_str().unwrap();
    let listed = env.git(&repo, &["ls-tree", "-r", "--name-only", safety]);
    assert!(!listed.contains("vendor"), "{listed}");
    env.bmad(&wt, &["undo"]).success();
    assert!(!wt.join("b.txt").exists());
    assert_eq!(read(&nested, "y.txt"), "y\n");
}

/// What was on disk comes back byte for byte through rollback and undo, whatever git's
/// attributes and filters make of it on the way in and out: CRLF under `text=auto` and
/// `core.autocrlf`, LF where `eol=crlf` writes CRLF, an expanded `$Id$`, a lossy clean
/// filter, a filter whose program this machine lacks. The checkpoint's tree is still git's
/// view of the files; the bytes it does not give back are kept beside it.
#[test]
fn rollback_then_undo_gives_back_every_byte_whatever_the_attributes_and_filters() {
    for files_only in [false, true] {
        let env = TestEnv::new();
        let repo = env.repo("proj");
        write(
            &repo,
            ".gitattributes",
            "*.txt text=auto\n*.crlf eol=crlf\n*.id ident\n*.low filter=upper\n*.tool filter=absent\n",
        );
        // With core.autocrlf, git converts whatever it takes for text; without it, only
        // what an attribute names.
        let autocrlf = if files_only { "input" } else { "false" };
        for (key, value) in [
            ("core.autocrlf", autocrlf),
            ("filter.upper.clean", "tr a-z A-Z"),
            ("filter.upper.smudge", "cat"),
            ("filter.absent.clean", "no-such-filter-program clean"),
            ("filter.absent.smudge", "no-such-filter-program smudge"),
        ] {
            env.git(&repo, &["config", key, value]);
        }
        // The user's files as their editors saved them, first as committed, then edited.
        let edits: [(&str, &[u8], &[u8]); 7] = [
            ("plain.rs", b"fn a() {}\r\n", b"fn b() {}\r\n"),
            ("notes.txt", b"one\r\n", b"one\r\ntwo\r\n"),
            ("auto.md", b"# a\r\n", b"# a\r\n# b\r\n"),
            ("windows.crlf", b"lf\n", b"lf still\n"),
            ("version.id", b"$Id$\n", b"$Id$ edited\n"),
            ("words.low", b"lower\n", b"lower case\n"),
            ("data.tool", b"raw\r\n", b"raw edit\r\n"),
        ];
        for (path, committed, _) in edits {
            std::fs::write(repo.join(path), committed).unwrap();
        }
        env.git(&repo, &["add", "-A"]);
        env.git(&repo, &["commit", "-q", "-m", "files with attributes"]);
        let (_, wt) = env.start(&repo, "feature-x");
        for (path, _, edited) in edits {
            std::fs::write(wt.join(path), edited).unwrap();
        }
        let before = env.worktree_tree(&wt);

        let mut rollback = vec!["rollback", "1", "--json"];
        if files_only {
            rollback.push("--files-only");
        }
        let rolled = env.bmad(&wt, &rollback).success().json();
        assert_eq!(read(&wt, "words.low"), "LOWER\n", "the checkpoint's files");
        // The safety checkpoint's tree is git's view of what was left; the bytes that view
        // does not give back are kept beside it, and only those.
        let safety = rolled["safety"]["tree"].as_str().unwrap_or_default();
        assert_eq!(
            safety,
            before.as_str(),
            "files_only {files_only}: the safety checkpoint differs from git's view: {}",
            env.git(&repo, &["diff-tree", "-r", "--raw", &before, safety])
        );
        let raw = rolled["safety"]["raw"].as_str().expect("raw bytes kept");
        let kept = env.git(&repo, &["ls-tree", "-r", "--name-only", raw]);
        // A filter whose program is missing stores and writes the bytes as they are: they come
        // back by themselves, unless core.autocrlf converts their line endings.
        let mut expected = vec!["notes.txt", "version.id", "windows.crlf", "words.low"];
        if autocrlf == "input" {
            expected.extend(["auto.md", "data.tool", "plain.rs"]);
        }
        expected.sort_unstable();
        assert_eq!(kept.lines().collect::<Vec<_>>(), expected);

        env.bmad(&wt, &["undo"]).success();
        for (path, _, edited) in edits {
            let on_disk = std::fs::read(wt.join(path)).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&on_disk),
                String::from_utf8_lossy(edited),
                "{path} (files only: {files_only})"
            );
        }
        assert_eq!(env.worktree_tree(&wt), before);
        env.bmad(&repo, &["doctor"]).success();
    }
}

/// A required filter whose program fails: git refuses to store the file, and so does
/// git-bmad, saying which file, why and what to do; a rollback then moves nothing, so the
/// edit stays on disk. Once the filter is no longer required, the raw bytes are stored.
#[test]
fn a_required_filter_that_fails_stops_the_checkpoint_and_the_rollback_with_the_fix() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(&repo, ".gitattributes", "*.dat filter=lfsish\n");
    write(&repo, "data.dat", "committed\n");
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "data"]);
    let (_, wt) = env.start(&repo, "feature-x");
    for (key, value) in [
        ("filter.lfsish.clean", "no-such-filter-program clean"),
        ("filter.lfsish.required", "true"),
    ] {
        env.git(&repo, &["config", key, value]);
    }
    write(&wt, "data.dat", "edited\n");
    // git's own view refuses the file too.
    let git_add = std::process::Command::new("git")
        .args(["add", "-A", "--dry-run"])
        .current_dir(&wt)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", env.root().join("home"))
        .output()
        .unwrap();
    assert!(!git_add.status.success(), "git stores it after all");

    let refused = env.bmad(&wt, &["checkpoint", "-m", "edited"]);
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert!(
        refused
            .stderr
            .contains("data.dat: its clean filter failed, and the filter is required")
            && refused
                .stderr
                .contains("install the filter's program, or unset that setting"),
        "{}",
        refused.stderr
    );
    let rollback = env.bmad(&wt, &["rollback", "1"]);
    assert_ne!(rollback.code, 0, "{}", rollback.stdout);
    assert_eq!(
        read(&wt, "data.dat"),
        "edited\n",
        "the edit is still on disk"
    );
    // A program that cannot even start (no shell between): git's own words, naming the file
    // and the filter.
    env.git(
        &repo,
        &["config", "filter.lfsish.clean", "no-such-filter-program"],
    );
    let refused = env.bmad(&wt, &["checkpoint", "-m", "edited"]);
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    assert!(
        refused.stderr.contains("git refuses to store data.dat")
            && refused.stderr.contains("clean filter 'lfsish' failed"),
        "{}",
        refused.stderr
    );
    let rollback = env.bmad(&wt, &["rollback", "1"]);
    assert!(
        rollback
            .stderr
            .contains("git refuses to store the worktree as it is on disk"),
        "{}",
        rollback.stderr
    );
    assert_eq!(read(&wt, "data.dat"), "edited\n");

    env.git(&repo, &["config", "--unset", "filter.lfsish.required"]);
    env.bmad(&wt, &["checkpoint", "-m", "edited"]).success();
    env.bmad(&wt, &["rollback", "1"]).success();
    assert_eq!(read(&wt, "data.dat"), "committed\n");
    env.bmad(&wt, &["undo"]).success();
    assert_eq!(read(&wt, "data.dat"), "edited\n");
}
