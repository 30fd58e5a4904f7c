//! Repositories of the shapes real ones have, through a session's whole life: start,
//! checkpoint, rollback, undo, remove.

use crate::common::{read, write, Run, TestEnv};

/// A sparse checkout with a sparse index (`sparse-checkout --sparse-index`, as Scalar sets
/// it): the main worktree's index holds whole directories as single entries. Sessions start
/// from it, and their own worktree keeps the sparse checkout with a full index: every
/// command works, and what lies outside the cone is neither lost nor recorded as deleted.
#[test]
fn a_sparse_index_repository_gets_sessions_that_work_through_their_whole_life() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(&repo, "lib/deep/x.rs", "// outside the cone\n");
    write(&repo, "app/y.rs", "// inside\n");
    write(&repo, "top.md", "# top\n");
    env.bmad(&repo, &["init"]).success();
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-qm", "a project"]);
    env.git(
        &repo,
        &["sparse-checkout", "init", "--cone", "--sparse-index"],
    );
    env.git(&repo, &["sparse-checkout", "set", "app"]);
    // For every worktree, as Scalar sets it.
    env.git(&repo, &["config", "--local", "index.sparse", "true"]);
    assert_eq!(env.git(&repo, &["config", "index.sparse"]).trim(), "true");
    assert!(!repo.join("lib").exists());
    // A dirty check of the sparse main worktree reads its index through git.
    write(&repo, "app/y.rs", "// changed in main\n");
    let refused = env.bmad(&repo, &["start", "s"]);
    assert_ne!(refused.code, 0);
    assert!(refused.stderr.contains("app/y.rs"), "{}", refused.stderr);
    env.git(&repo, &["checkout", "--", "app/y.rs"]);

    let (_, wt) = env.start(&repo, "s");
    assert!(
        !wt.join("lib").exists(),
        "the session keeps the sparse checkout"
    );
    write(&wt, "app/y.rs", "// the agent's edit\n");
    write(&wt, "app/new.rs", "// new\n");
    // The agent stages: git writes the session's index as its configuration says.
    env.git(&wt, &["add", "app/new.rs"]);
    env.bmad(&wt, &["checkpoint", "-m", "work"]).success();
    let checkpoints = env.git(
        &wt,
        &[
            "for-each-ref",
            "--format=%(objectname)",
            "refs/bmad/sessions/*/checkpoints",
        ],
    );
    let tree = env.git(&wt, &["ls-tree", "-r", "--name-only", checkpoints.trim()]);
    for path in ["lib/deep/x.rs", "top.md", "app/y.rs", "app/new.rs"] {
        assert!(
            tree.lines().any(|l| l == path),
            "{path} not in the checkpoint: {tree}"
        );
    }
    env.bmad(&wt, &["rollback", "1"]).success();
    assert_eq!(read(&wt, "app/y.rs"), "// inside\n");
    assert!(!wt.join("app/new.rs").exists());
    let flags = env.git(&wt, &["ls-files", "-t", "lib/deep/x.rs"]);
    assert!(
        flags.starts_with("S "),
        "out of the cone after the rollback: {flags}"
    );
    env.bmad(&wt, &["undo"]).success();
    assert_eq!(read(&wt, "app/y.rs"), "// the agent's edit\n");
    assert_eq!(read(&wt, "app/new.rs"), "// new\n");
    let doctor = env.bmad(&repo, &["doctor"]);
    assert_eq!(doctor.code, 0, "{}{}", doctor.stdout, doctor.stderr);
    env.bmad(&wt, &["checkpoint", "-m", "again"]).success();
    env.git(&wt, &["add", "-A"]);
    env.git(&wt, &["commit", "-qm", "the work"]);
    env.git(&repo, &["merge", "-q", "bmad/s"]);
    env.bmad(&repo, &["remove", "s"]).success();
    assert!(!wt.exists());
    // The main worktree is as sparse as before.
    assert_eq!(env.git(&repo, &["config", "index.sparse"]).trim(), "true");
}

/// The tree of the session's newest checkpoint.
fn checkpoint_tree(env: &TestEnv, wt: &std::path::Path) -> String {
    let chain = env.git(
        wt,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/bmad/sessions/*/checkpoints",
        ],
    );
    let tree = env.git(wt, &["rev-parse", &format!("{}^{{tree}}", chain.trim())]);
    tree.trim().to_owned()
}

/// A directory swapped for a symlink to a directory (as checking out an old commit of
/// cargo does): the checkpoint records the link, as git does, never the files seen through
/// it; rolling back to before the swap brings the directory and its files back, and undo
/// brings the link back. Both ways, each checkpoint equals `git add -A`'s tree.
#[test]
fn a_directory_swapped_for_a_symlink_is_recorded_as_git_records_it() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(&repo, "lib/a.rs", "// a\n");
    write(&repo, "lib/deep/b.rs", "// b\n");
    // What the link will lead to holds the same names.
    write(&repo, "vendored/a.rs", "// vendored a\n");
    write(&repo, "vendored/deep/b.rs", "// vendored b\n");
    write(&repo, "vendored/c.rs", "// c\n");
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-qm", "a project"]);
    let (_, wt) = env.start(&repo, "s");
    let before = env.last_checkpoint(&wt);

    std::fs::remove_dir_all(wt.join("lib")).unwrap();
    std::os::unix::fs::symlink("vendored", wt.join("lib")).unwrap();
    env.bmad(&wt, &["checkpoint", "-m", "swapped"]).success();
    let tree = checkpoint_tree(&env, &wt);
    assert_eq!(
        tree,
        env.worktree_tree(&wt),
        "the checkpoint is not git's view"
    );
    let listed = env.git(&wt, &["ls-tree", "-r", &tree]);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("120000") && l.ends_with("\tlib")),
        "{listed}"
    );
    assert!(
        !listed.contains("lib/"),
        "files seen through the link: {listed}"
    );

    env.bmad(&wt, &["rollback", &before]).success();
    assert!(!wt
        .join("lib")
        .symlink_metadata()
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(read(&wt, "lib/a.rs"), "// a\n");
    assert_eq!(read(&wt, "lib/deep/b.rs"), "// b\n");
    assert_eq!(read(&wt, "vendored/c.rs"), "// c\n");
    env.bmad(&wt, &["undo"]).success();
    let link = wt.join("lib").symlink_metadata().unwrap();
    assert!(link.file_type().is_symlink());
    assert_eq!(read(&wt, "lib/c.rs"), "// c\n");

    // And back: the link swapped for a directory again.
    std::fs::remove_file(wt.join("lib")).unwrap();
    write(&wt, "lib/new.rs", "// new\n");
    env.bmad(&wt, &["checkpoint", "-m", "a directory again"])
        .success();
    assert_eq!(checkpoint_tree(&env, &wt), env.worktree_tree(&wt));
}

/// An intent-to-add entry (`git add -N`, as some agents and `git add -p` flows leave): the
/// checkpoint keeps it, and a rollback to that checkpoint brings it back, as undo takes it
/// away again.
#[test]
fn an_intent_to_add_entry_survives_checkpoint_rollback_and_undo() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(&repo, "a.rs", "// a\n");
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-qm", "a project"]);
    let (_, wt) = env.start(&repo, "s");
    write(&wt, "new.rs", "// new\n");
    env.git(&wt, &["add", "-N", "new.rs"]);
    let status = |env: &TestEnv| env.git(&wt, &["status", "--porcelain"]);
    assert_eq!(status(&env), " A new.rs\n");
    env.bmad(&wt, &["checkpoint", "-m", "intent"]).success();
    let marked = env.last_checkpoint(&wt);

    env.git(&wt, &["reset", "-q"]);
    write(&wt, "a.rs", "// changed\n");
    assert_eq!(status(&env), " M a.rs\n?? new.rs\n");
    env.bmad(&wt, &["rollback", &marked]).success();
    assert_eq!(status(&env), " A new.rs\n");
    assert_eq!(read(&wt, "new.rs"), "// new\n");
    env.bmad(&wt, &["undo"]).success();
    assert_eq!(status(&env), " M a.rs\n?? new.rs\n");
}

/// With `core.fileMode=false` (repositories on filesystems without an exec bit, or cloned
/// there) git ignores the disk's exec bit: a tracked file keeps the mode its index entry
/// has, a new one is recorded plain. Each checkpoint equals `git add -A` on a copy of the
/// index, whichever way the disk's bits went, with the change feed and without it.
#[test]
fn with_file_mode_off_a_checkpoint_records_the_modes_git_would() {
    use std::os::unix::fs::PermissionsExt;
    let chmod = |path: std::path::PathBuf, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    for feed in ["true", "false"] {
        let env = TestEnv::new();
        let repo = env.repo("proj");
        write(&repo, "run.sh", "echo run\n");
        write(&repo, "data.txt", "data\n");
        chmod(repo.join("run.sh"), 0o755);
        env.git(&repo, &["add", "-A"]);
        env.git(&repo, &["commit", "-qm", "a script and its data"]);
        env.git(&repo, &["config", "core.fileMode", "false"]);
        env.git(&repo, &["config", "bmad.watch", feed]);
        let (_, wt) = env.start(&repo, "s");
        let first = env.last_checkpoint(&wt);

        // The bits flip on disk, each file's content changes, and a new script comes.
        chmod(wt.join("run.sh"), 0o644);
        chmod(wt.join("data.txt"), 0o755);
        write(&wt, "run.sh", "echo run faster\n");
        write(&wt, "data.txt", "more data\n");
        write(&wt, "new.sh", "echo new\n");
        chmod(wt.join("new.sh"), 0o755);
        env.bmad(&wt, &["checkpoint", "-m", "bits flipped"])
            .success();
        let tree = checkpoint_tree(&env, &wt);
        assert_eq!(tree, env.worktree_tree(&wt), "feed {feed}");
        let listed = env.git(&wt, &["ls-tree", "-r", &tree]);
        assert!(
            listed.contains("100755 blob ") && listed.contains("\trun.sh"),
            "{listed}"
        );
        for plain in ["data.txt", "new.sh"] {
            let line = listed.lines().find(|l| l.ends_with(&format!("\t{plain}")));
            assert!(line.is_some_and(|l| l.starts_with("100644")), "{listed}");
        }

        // Only a bit flips: nothing git would see, nothing the checkpoint records.
        chmod(wt.join("run.sh"), 0o755);
        env.bmad(&wt, &["checkpoint", "-m", "a bit back"]).success();
        assert_eq!(checkpoint_tree(&env, &wt), tree, "feed {feed}");

        // And back to the start, and forward again, exactly.
        env.bmad(&wt, &["rollback", &first]).success();
        assert_eq!(read(&wt, "run.sh"), "echo run\n");
        assert!(!wt.join("new.sh").exists());
        env.bmad(&wt, &["undo"]).success();
        assert_eq!(read(&wt, "data.txt"), "more data\n");
        assert_eq!(env.worktree_tree(&wt), tree, "feed {feed}");
    }
}

/// File names that are not UTF-8 (Latin-1 names from old archives, test fixtures of
/// encoding libraries): git records their bytes, and so does every checkpoint; rollback
/// and undo bring them back and take them away exactly, with the change feed and without.
#[test]
fn names_that_are_not_utf8_are_checkpointed_and_restored_as_git_has_them() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let latin1 = |bytes: &[u8]| OsStr::from_bytes(bytes).to_owned();
    for feed in ["true", "false"] {
        let env = TestEnv::new();
        let repo = env.repo("proj");
        std::fs::write(repo.join(latin1(b"committed-\xe9.txt")), "committed\n").unwrap();
        env.git(&repo, &["add", "-A"]);
        env.git(&repo, &["commit", "-qm", "a Latin-1 name"]);
        env.git(&repo, &["config", "bmad.watch", feed]);
        let (_, wt) = env.start(&repo, "s");
        let first = env.last_checkpoint(&wt);

        let dir = wt.join(latin1(b"d\xfcr"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join(latin1(b"inner-\xff.txt")), "inner\n").unwrap();
        std::fs::write(wt.join(latin1(b"caf\xe9.txt")), "new\n").unwrap();
        std::fs::write(wt.join(latin1(b"committed-\xe9.txt")), "changed\n").unwrap();
        env.bmad(&wt, &["checkpoint", "-m", "names"]).success();
        let tree = checkpoint_tree(&env, &wt);
        assert_eq!(tree, env.worktree_tree(&wt), "feed {feed}");
        let named = env.last_checkpoint(&wt);

        std::fs::write(wt.join(latin1(b"caf\xe9.txt")), "newer\n").unwrap();
        env.bmad(&wt, &["checkpoint", "-m", "an edit"]).success();
        assert_eq!(
            checkpoint_tree(&env, &wt),
            env.worktree_tree(&wt),
            "feed {feed}"
        );

        env.bmad(&wt, &["rollback", &first]).success();
        assert!(!wt.join(latin1(b"caf\xe9.txt")).exists(), "feed {feed}");
        assert!(!dir.exists(), "feed {feed}");
        let committed = std::fs::read_to_string(wt.join(latin1(b"committed-\xe9.txt")));
        assert_eq!(committed.unwrap(), "committed\n");
        env.bmad(&wt, &["undo"]).success();
        let new = std::fs::read_to_string(wt.join(latin1(b"caf\xe9.txt")));
        assert_eq!(new.unwrap(), "newer\n", "feed {feed}");
        env.bmad(&wt, &["rollback", &named]).success();
        assert_eq!(env.worktree_tree(&wt), tree, "feed {feed}");
        let inner = std::fs::read_to_string(dir.join(latin1(b"inner-\xff.txt")));
        assert_eq!(inner.unwrap(), "inner\n");
    }
}

/// A secret in a file whose name is not UTF-8 is found like any other: the checkpoint keeps
/// it out, a rollback stops before anything is stored, and no object holds the key.
#[test]
fn a_secret_behind_a_name_that_is_not_utf8_is_kept_out_of_every_object() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "s");
    write(&wt, "plan.md", "the plan\n");
    env.bmad(&wt, &["checkpoint", "-m", "plan"]).success();
    let plan = env.last_checkpoint(&wt);
    let key = format!("AKIA{}", "Q7ZK2M4XW6RT5PLN");
    let leaky = wt.join(OsStr::from_bytes(b"r\xe9glages.py"));
    std::fs::write(&leaky, format!("AWS = \"{key}\"\n")).unwrap();
    write(&wt, "plan.md", "the plan, rewritten\n");

    let refused = env.bmad(&wt, &["checkpoint", "-m", "leaky"]).code(4);
    assert!(
        refused.stderr.contains("aws-access-key-id"),
        "{}",
        refused.stderr
    );
    assert!(!env.all_objects(&repo).contains(&key[4..]));
    env.bmad(&wt, &["rollback", &plan]).code(4);
    assert!(!env.all_objects(&repo).contains(&key[4..]));
    assert_eq!(read(&wt, "plan.md"), "the plan, rewritten\n");
    std::fs::remove_file(&leaky).unwrap();
    env.bmad(&wt, &["rollback", &plan]).success();
    assert_eq!(read(&wt, "plan.md"), "the plan\n");
}

/// A repository `name` with a library (`a.txt`) as its submodule at `vendor/lib`, committed.
pub(crate) fn with_a_submodule(env: &TestEnv, name: &str) -> std::path::PathBuf {
    let repo = env.repo(name);
    let lib = env.repo("lib");
    write(&lib, "a.txt", "a\n");
    env.git(&lib, &["add", "-A"]);
    env.git(&lib, &["commit", "-qm", "a library"]);
    let lib_path = lib.to_string_lossy().into_owned();
    let add = ["-c", "protocol.file.allow=always", "submodule", "add", "-q"];
    env.git(
        &repo,
        &[&add[..], &[lib_path.as_str(), "vendor/lib"]].concat(),
    );
    env.git(&repo, &["commit", "-qm", "the library as a submodule"]);
    repo
}

/// A submodule is recorded as the commit checked out in it, as `git add -A` records it: a
/// commit made inside it, or an older one checked out, is in the next checkpoint.
#[test]
fn a_submodule_is_checkpointed_at_the_commit_checked_out_in_it() {
    let env = TestEnv::new();
    let repo = with_a_submodule(&env, "proj");
    let (_, wt) = env.start(&repo, "s");
    let sub = wt.join("vendor/lib");
    assert_eq!(read(&sub, "a.txt"), "a\n");

    write(&sub, "b.txt", "b\n");
    env.git(&sub, &["add", "-A"]);
    env.git(&sub, &["commit", "-qm", "work inside the submodule"]);
    write(&wt, "notes.md", "the library moved\n");
    env.bmad(&wt, &["checkpoint", "-m", "submodule moved"])
        .success();
    let tree = checkpoint_tree(&env, &wt);
    assert_eq!(
        tree,
        env.worktree_tree(&wt),
        "the checkpoint is not git's view"
    );
    let head = env.git(&sub, &["rev-parse", "HEAD"]);
    let recorded = env.git(&wt, &["rev-parse", &format!("{tree}:vendor/lib")]);
    assert_eq!(recorded.trim(), head.trim());

    env.git(&sub, &["checkout", "-q", "HEAD~1"]);
    env.bmad(&wt, &["checkpoint", "-m", "submodule back"])
        .success();
    assert_eq!(checkpoint_tree(&env, &wt), env.worktree_tree(&wt));
}

/// What stands in place of git-bmad's own files for a worktree (the snapshot cache, its
/// delta, the session marker) never stops a checkpoint: a FIFO does not block it, a
/// device does not feed it, a directory does not fail it, and a symlink is not written
/// through. Each checkpoint is still git's own view of the worktree.
#[test]
fn odd_files_in_place_of_git_bmads_own_neither_stop_a_checkpoint_nor_are_written_through() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "odd");
    let git_dir = repo.join(".git/worktrees/proj.odd");
    // The snapshot cache lives in the common git dir, out of a contained step's reach.
    let cache_dir = repo.join(".git/bmad/snapshot/worktrees/proj.odd");
    let elsewhere = env.root().join("precious.txt");
    let files = [
        "bmad-snapshot-index",
        "bmad-snapshot-index.delta",
        "bmad-session",
    ];
    let shapes = ["fifo", "device", "directory", "symlink"];
    for (round, (file, shape)) in files
        .iter()
        .flat_map(|f| shapes.iter().map(move |s| (f, s)))
        .enumerate()
    {
        // A checkpoint first, so that the next one would use the cache and its delta.
        write(&wt, "a.txt", &format!("before {round}\n"));
        env.bmad(&wt, &["checkpoint", "-m", "before"]).success();
        let dir = if *file == "bmad-session" {
            &git_dir
        } else {
            &cache_dir
        };
        let path = dir.join(file);
        let kept = dir.join(format!("{file}.kept"));
        // The delta is there only between two full writes.
        let had = std::fs::rename(&path, &kept).is_ok();
        std::fs::write(&elsewhere, "precious\n").unwrap();
        match *shape {
            "fifo" => env.sh(dir, &format!("mkfifo {file}")).success(),
            "device" => env.sh(dir, &format!("ln -s /dev/zero {file}")).success(),
            "directory" => env.sh(dir, &format!("mkdir {file}")).success(),
            _ => env
                .sh(dir, &format!("ln -s '{}' {file}", elsewhere.display()))
                .success(),
        };
        write(&wt, "a.txt", &format!("{file} as a {shape}\n"));
        write(&wt, &format!("new-{round}.txt"), "new\n");
        let mut checkpoint = env.spawn_group(&wt, &["checkpoint", "-m", shape]);
        let waited = std::time::Instant::now();
        let status = loop {
            if let Some(status) = checkpoint.try_wait().unwrap() {
                break Some(status);
            }
            if waited.elapsed() > std::time::Duration::from_secs(20) {
                crate::common::kill_group(&mut checkpoint);
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let what = format!("{file} as a {shape}");
        assert!(status.is_some(), "{what}: the checkpoint hung");
        assert!(status.unwrap().success(), "{what}: the checkpoint failed");
        assert_eq!(
            checkpoint_tree(&env, &wt),
            env.worktree_tree(&wt).trim(),
            "{what}: not git's view"
        );
        assert_eq!(read(&env.root(), "precious.txt"), "precious\n", "{what}");
        env.sh(dir, &format!("rm -rf {file}")).success();
        if had {
            std::fs::rename(&kept, &path).unwrap();
        }
    }
}

/// A repository format git-bmad cannot read yet is named in one line with what to do, not as
/// "not inside a git repository" or a decoding error: refs kept in reftable (which `git refs
/// migrate` converts). Nothing is written to it.
#[test]
fn a_reftable_repository_is_named_with_what_to_do() {
    let env = TestEnv::new();
    let repo = env.root().join("reftable");
    env.git(
        &env.root(),
        &["init", "-q", "--ref-format=reftable", "reftable"],
    );
    write(&repo, "a.txt", "a\n");
    env.git(&repo, &["add", "a.txt"]);
    env.git(&repo, &["commit", "-q", "-m", "a"]);
    for args in [&["status"][..], &["start", "work"], &["doctor"]] {
        let run = env.bmad(&repo, args).code(1);
        let first = run.stderr.lines().next().unwrap_or_default();
        assert!(
            first.contains("which git-bmad cannot read yet")
                && first.contains("git refs migrate --ref-format=files"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("not inside a git repository"));
    }
    assert_eq!(env.git(&repo, &["worktree", "list"]).lines().count(), 1);
    assert_eq!(env.git(&repo, &["for-each-ref", "refs/bmad"]), "");
}

/// A repository whose objects have SHA-256 ids works as a SHA-1 one does: its checkpoints
/// are git's own view (64-digit ids), rollback and undo give back every byte (CRLF under
/// `text=auto` included), its journal chains and verifies, and git finds nothing wrong.
#[test]
fn a_sha256_repository_works_as_a_sha1_one() {
    let env = TestEnv::new();
    let repo = env.root().join("proj");
    env.git(
        &env.root(),
        &["init", "-q", "--object-format=sha256", "-b", "main", "proj"],
    );
    write(&repo, ".gitattributes", "* text=auto\n");
    write(&repo, "crlf.txt", "a\r\nb\r\n");
    write(&repo, "d/e/f.txt", "f\n");
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "a"]);
    let (_, wt) = env.start(&repo, "work");
    let at_start = read(&wt, "crlf.txt");

    write(&wt, "crlf.txt", "a\r\nB\r\n");
    write(&wt, "d/new.txt", "new\n");
    write(&wt, "d/e/f.txt", "f, edited\n");
    let edited = |wt: &std::path::Path| {
        ["crlf.txt", "d/new.txt", "d/e/f.txt"].map(|p| std::fs::read(wt.join(p)).unwrap())
    };
    let before = edited(&wt);
    let checkpoint = env
        .bmad(&wt, &["checkpoint", "--json", "-m", "edits"])
        .success()
        .json();
    let commit = checkpoint["checkpoint"]["id"].as_str().unwrap_or_default();
    assert_eq!(commit.len(), 64, "{checkpoint}");
    assert_eq!(checkpoint_tree(&env, &wt), env.worktree_tree(&wt).trim());

    env.bmad(&wt, &["rollback", "1"]).success();
    assert_eq!(read(&wt, "crlf.txt"), at_start);
    assert!(!wt.join("d/new.txt").exists());
    env.bmad(&wt, &["undo"]).success();
    assert_eq!(edited(&wt), before, "every byte back");

    env.bmad(&repo, &["doctor"]).success();
    let fsck = env
        .sh(&repo, "git fsck --full --no-dangling 2>&1")
        .success();
    assert!(!fsck.stdout.contains("error"), "{}", fsck.stdout);
}

/// With `core.symlinks=false` (a filesystem without links, a Windows clone) a tracked link
/// is a plain file holding its target: git keeps recording it as a link, and so does every
/// checkpoint, a retargeted one included; rollback and undo bring each back exactly.
#[test]
fn with_symlinks_off_a_tracked_link_stays_a_link() {
    for feed in ["true", "false"] {
        let env = TestEnv::new();
        let repo = env.repo("proj");
        write(&repo, "target.txt", "target\n");
        write(&repo, "other.txt", "other\n");
        std::os::unix::fs::symlink("target.txt", repo.join("link")).unwrap();
        env.git(&repo, &["add", "-A"]);
        env.git(&repo, &["commit", "-qm", "a file and a link to it"]);
        env.git(&repo, &["config", "core.symlinks", "false"]);
        env.git(&repo, &["config", "bmad.watch", feed]);
        let (_, wt) = env.start(&repo, "s");
        let first = env.last_checkpoint(&wt);
        assert!(std::fs::symlink_metadata(wt.join("link"))
            .unwrap()
            .is_file());

        // The link is retargeted as such a clone does it, and files change beside it.
        write(&wt, "link", "other.txt");
        write(&wt, "target.txt", "target, edited\n");
        write(&wt, "plain.txt", "a new plain file\n");
        env.bmad(&wt, &["checkpoint", "-m", "retargeted"]).success();
        let tree = checkpoint_tree(&env, &wt);
        assert_eq!(tree, env.worktree_tree(&wt), "feed {feed}");
        let listed = env.git(&wt, &["ls-tree", "-r", &tree]);
        let mode_of = |name: &str| {
            let line = listed.lines().find(|l| l.ends_with(&format!("\t{name}")));
            line.map(|l| l[..6].to_owned()).unwrap_or_default()
        };
        assert_eq!(mode_of("link"), "120000", "{listed}");
        assert_eq!(mode_of("plain.txt"), "100644", "{listed}");

        env.bmad(&wt, &["rollback", &first]).success();
        assert_eq!(read(&wt, "link"), "target.txt");
        assert!(!wt.join("plain.txt").exists());
        env.bmad(&wt, &["undo"]).success();
        assert_eq!(read(&wt, "link"), "other.txt");
        assert_eq!(env.worktree_tree(&wt), tree, "feed {feed}");
    }
}

/// Files past what a checkpoint reads into memory (8 MiB) are stored as git stores them:
/// streamed where git keeps their bytes, converted where an attribute says (a CRLF text file
/// under `text=auto`). Each checkpoint equals git's view, a file rewritten with the same
/// bytes changes nothing, and rollback and undo bring every byte back.
#[test]
fn files_too_big_for_memory_are_checkpointed_as_git_stores_them() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(&repo, ".gitattributes", "*.txt text=auto\n");
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-qm", "attributes"]);
    let (_, wt) = env.start(&repo, "s");
    let first = env.last_checkpoint(&wt);
    let data: Vec<u8> = (0..9_000_000u32).map(|i| (i % 251) as u8).collect();
    let log: String = (0..900_000).map(|i| format!("line {i}\r\n")).collect();
    std::fs::write(wt.join("data.bin"), &data).unwrap();
    std::fs::write(wt.join("log.txt"), &log).unwrap();
    env.bmad(&wt, &["checkpoint", "-m", "big files"]).success();
    let tree = checkpoint_tree(&env, &wt);
    assert_eq!(tree, env.worktree_tree(&wt));

    std::fs::write(wt.join("data.bin"), &data).unwrap();
    env.bmad(&wt, &["checkpoint", "-m", "the same bytes"])
        .success();
    assert_eq!(checkpoint_tree(&env, &wt), tree);

    env.bmad(&wt, &["rollback", &first]).success();
    assert!(!wt.join("data.bin").exists() && !wt.join("log.txt").exists());
    env.bmad(&wt, &["undo"]).success();
    assert!(std::fs::read(wt.join("data.bin")).unwrap() == data);
    assert!(std::fs::read_to_string(wt.join("log.txt")).unwrap() == log);
    assert_eq!(env.worktree_tree(&wt), tree);
    let fsck = env
        .git_command(&repo)
        .args(["fsck", "--no-progress"])
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "{}",
        String::from_utf8_lossy(&fsck.stderr)
    );
}

/// Files past what a checkpoint reads into memory, under every way git converts line
/// endings on the way in (`text=auto`, `text`, `-text`, `eol`, the old `crlf`, a blob in the
/// index that has CRLF already, `core.autocrlf`), with content that looks like text and
/// content that does not: each checkpoint equals git's view, and rollback then undo brings
/// every byte back.
#[test]
fn big_files_get_line_endings_converted_exactly_as_git_converts_them() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let lines = |line: &str| -> Vec<u8> { line.repeat(9_000_000 / line.len()).into_bytes() };
    // Committed before any attribute says text: its blob keeps its CRLF.
    std::fs::write(repo.join("auto-indexed.txt"), lines("indexed\r\n")).unwrap();
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-qm", "a file with CRLF in its blob"]);
    write(
        &repo,
        ".gitattributes",
        "auto-* text=auto\ntext-* text\nbin-* -text\neol-* eol=crlf\ncrlf-* crlf\n",
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-qm", "attributes"]);
    let (_, wt) = env.start(&repo, "s");
    let first = env.last_checkpoint(&wt);
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("auto-text.txt", lines("a line\r\n")),
        ("auto-binary.txt", lines("a\0line\r\n")),
        ("auto-lone-cr.txt", lines("a line\r\nand\rmore\r\n")),
        ("auto-lf.txt", lines("a line\n")),
        ("auto-indexed.txt", lines("indexed\r\nmore\r\n")),
        ("text-binary.txt", lines("a\0line\r\n")),
        ("text-lone-cr.txt", lines("a line\r\nand\rmore\r\n")),
        ("bin-crlf.txt", lines("a line\r\n")),
        ("eol-crlf.txt", lines("a line\r\n")),
        ("crlf-legacy.txt", lines("a line\r\n")),
        ("plain.dat", lines("a line\r\n")),
    ];
    for (name, bytes) in &files {
        std::fs::write(wt.join(name), bytes).unwrap();
    }
    env.bmad(&wt, &["checkpoint", "-m", "big files"]).success();
    assert_eq!(checkpoint_tree(&env, &wt), env.worktree_tree(&wt));
    // Converted where git converts: the blob has LF where the file has CRLF.
    let blob = |name: &str| {
        env.git(
            &wt,
            &[
                "cat-file",
                "-s",
                &format!("{}:{name}", checkpoint_tree(&env, &wt)),
            ],
        )
    };
    assert_eq!(
        blob("auto-text.txt").trim(),
        (9_000_000 / 8 * 7).to_string()
    );
    assert_eq!(blob("bin-crlf.txt").trim(), (9_000_000 / 8 * 8).to_string());

    // With core.autocrlf, a file no attribute names is converted too.
    env.git(&wt, &["config", "core.autocrlf", "true"]);
    std::fs::write(wt.join("autocrlf.dat"), lines("a line\r\n")).unwrap();
    env.bmad(&wt, &["checkpoint", "-m", "autocrlf"]).success();
    assert_eq!(checkpoint_tree(&env, &wt), env.worktree_tree(&wt));
    env.git(&wt, &["config", "--unset", "core.autocrlf"]);

    env.bmad(&wt, &["rollback", &first]).success();
    assert!(!wt.join("auto-text.txt").exists());
    env.bmad(&wt, &["undo"]).success();
    for (name, bytes) in &files {
        assert!(std::fs::read(wt.join(name)).unwrap() == *bytes, "{name}");
    }
    assert!(std::fs::read(wt.join("autocrlf.dat")).unwrap() == lines("a line\r\n"));
}

/// A rollback stages a big file its clean filter converts as git-bmad stores it (in bounded
/// memory), not through git's own `add -A`, which reads such a file whole and holds its
/// converted form besides: git never runs the filter on it (its trace says so), the safety
/// checkpoint is still git's view, and undo gives back the bytes that were on disk.
#[test]
fn a_rollback_leaves_git_no_big_file_to_read_whole() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    env.git(&repo, &["config", "filter.upper.clean", "tr a-z A-Z"]);
    write(&repo, ".gitattributes", "*.dat filter=upper\n");
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-qm", "a filter"]);
    let (_, wt) = env.start(&repo, "s");
    let first = env.last_checkpoint(&wt);
    let big = "a lower-case line\n".repeat(9_000_000 / 18).into_bytes();
    std::fs::write(wt.join("big.dat"), &big).unwrap();
    write(&wt, "small.dat", "small\n");
    env.bmad(&wt, &["checkpoint", "-m", "big"]).success();
    write(&wt, "notes.txt", "after\n");
    let before = env.worktree_tree(&wt);
    let trace = env.root().join("trace2.json");
    let traced = |args: &[&str]| {
        let _ = std::fs::remove_file(&trace);
        let run = Run::from(
            env.bmad_command(&wt)
                .env("GIT_TRACE2_EVENT", &trace)
                .args(args)
                .output()
                .unwrap(),
        );
        let run = run.success();
        let events = std::fs::read_to_string(&trace).unwrap_or_default();
        let filtered: Vec<&str> = events
            .lines()
            .filter(|l| l.contains("\"child_start\"") && l.contains("tr a-z A-Z"))
            .collect();
        (run, filtered.len(), events.lines().count())
    };
    let (_, filtered, events) = traced(&["rollback", &first]);
    assert!(events > 0, "no git traced");
    // The small file is git's to filter; the big one is not.
    assert_eq!(filtered, 1, "git ran the clean filter {filtered} times");
    assert_eq!(checkpoint_tree(&env, &wt), before);
    assert!(!wt.join("big.dat").exists());
    traced(&["undo"]);
    assert!(std::fs::read(wt.join("big.dat")).unwrap() == big);
    assert_eq!(read(&wt, "notes.txt"), "after\n");
}

/// A file git does not track is stored as git would store it now: when the attributes or
/// the settings that convert it change (a `.gitattributes` written or removed,
/// `core.autocrlf`, `.git/info/attributes`), the next checkpoint reads it again, though the
/// file itself did not change. Each checkpoint equals git's view, with the change feed on
/// and off.
#[test]
fn an_untracked_file_follows_the_attributes_and_settings_that_convert_it() {
    for feed in ["off", "on"] {
        let env = TestEnv::new();
        let repo = env.repo("proj");
        env.git(&repo, &["config", "bmad.watch", feed]);
        let (_, wt) = env.start(&repo, "s");
        write(&wt, "notes.txt", "one\r\ntwo\r\n");
        write(&wt, "data.csv", "a,b\r\n1,2\r\n");
        let common = env.git(
            &wt,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        );
        let info = std::path::Path::new(common.trim()).join("info/attributes");
        let steps: [(&str, &dyn Fn()); 5] = [
            ("as it is", &|| {}),
            ("a .gitattributes", &|| {
                write(&wt, ".gitattributes", "*.txt text=auto\n")
            }),
            ("core.autocrlf", &|| {
                env.git(&wt, &["config", "core.autocrlf", "true"]);
            }),
            ("info/attributes", &|| {
                std::fs::create_dir_all(info.parent().unwrap()).unwrap();
                std::fs::write(&info, "*.csv -text\n").unwrap();
            }),
            ("the .gitattributes gone", &|| {
                std::fs::remove_file(wt.join(".gitattributes")).unwrap()
            }),
        ];
        for (change, make) in steps {
            make();
            env.bmad(&wt, &["checkpoint", "-m", change]).success();
            assert_eq!(
                checkpoint_tree(&env, &wt),
                env.worktree_tree(&wt),
                "{change}, change feed {feed}"
            );
        }
    }
}

/// A rollback moves a submodule's checkout to the commit its target records, and undo moves
/// it back, as `git submodule update` would; one that holds work of its own refuses the
/// rollback, with the reason, before anything is written.
#[test]
fn a_rollback_moves_a_submodule_to_the_recorded_commit_or_refuses_with_the_reason() {
    let env = TestEnv::new();
    let repo = with_a_submodule(&env, "proj");
    let (_, wt) = env.start(&repo, "s");
    let first = env.last_checkpoint(&wt);
    let sub = wt.join("vendor/lib");
    let recorded = env.git(&sub, &["rev-parse", "HEAD"]);

    // The agent commits inside the submodule, and the session records it.
    write(&sub, "b.txt", "b\n");
    env.git(&sub, &["add", "-A"]);
    env.git(&sub, &["commit", "-qm", "work inside the submodule"]);
    let moved = env.git(&sub, &["rev-parse", "HEAD"]);
    env.bmad(&wt, &["checkpoint", "-m", "submodule moved"])
        .success();

    // Work of its own in the submodule: nothing is rolled back, and it says why.
    write(&sub, "draft.txt", "unsaved\n");
    let refused = env.bmad(&wt, &["rollback", &first]).code(1);
    assert!(
        refused
            .stderr
            .contains("submodule vendor/lib holds changes of its own"),
        "{}",
        refused.stderr
    );
    assert_eq!(env.git(&sub, &["rev-parse", "HEAD"]), moved);
    assert!(sub.join("draft.txt").exists());
    std::fs::remove_file(sub.join("draft.txt")).unwrap();

    env.bmad(&wt, &["rollback", &first]).success();
    assert_eq!(env.git(&sub, &["rev-parse", "HEAD"]), recorded);
    assert!(!sub.join("b.txt").exists());
    assert_eq!(
        env.worktree_tree(&wt),
        checkpoint_tree_at(&env, &wt, &first)
    );
    env.bmad(&wt, &["undo"]).success();
    assert_eq!(env.git(&sub, &["rev-parse", "HEAD"]), moved);
    assert_eq!(read(&sub, "b.txt"), "b\n");
}

/// The tree of checkpoint `number` of the worktree's session.
fn checkpoint_tree_at(env: &TestEnv, wt: &std::path::Path, number: &str) -> String {
    let status = env.bmad(wt, &["status", "--json"]).success().json();
    let checkpoint = status["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| number.parse::<u64>().is_ok_and(|n| c["number"] == n))
        .expect("the checkpoint");
    checkpoint["checkpoint"]["tree"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// `core.ignorecase` on a disk that keeps case (a repository copied from macOS or Windows):
/// a file and a directory renamed by case alone with `mv`, the file edited too. One `git add
/// -A` drops them (the new names hide behind the old entries until those are gone); git holds
/// them at its next `add -A`, and so does every checkpoint. Rollback brings back the old names
/// and bytes and leaves no new-case name on disk; undo brings the new ones back, byte for byte.
#[test]
fn with_ignorecase_a_case_only_rename_is_held_once_and_rolled_back_and_forth() {
    for feed in ["true", "false"] {
        let env = TestEnv::new();
        let repo = env.repo("proj");
        write(&repo, "README.md", "hello\n");
        write(&repo, "Docs/guide.txt", "guide\n");
        write(&repo, "other.txt", "other\n");
        env.git(&repo, &["add", "-A"]);
        env.git(&repo, &["commit", "-qm", "three files"]);
        env.git(&repo, &["config", "core.ignorecase", "true"]);
        env.git(&repo, &["config", "bmad.watch", feed]);
        let (_, wt) = env.start(&repo, "s");
        let first = env.last_checkpoint(&wt);
        let before = checkpoint_tree(&env, &wt);

        std::fs::rename(wt.join("README.md"), wt.join("readme.md")).unwrap();
        write(&wt, "readme.md", "hello, edited\n");
        std::fs::rename(wt.join("Docs"), wt.join("docs")).unwrap();
        env.bmad(&wt, &["checkpoint", "-m", "renamed by case"])
            .success();
        let tree = checkpoint_tree(&env, &wt);
        assert_eq!(tree, settled_worktree_tree(&env, &wt), "feed {feed}");
        let names = env.git(&wt, &["ls-tree", "-r", "--name-only", &tree]);
        assert_eq!(
            names, ".gitignore\ndocs/guide.txt\nother.txt\nreadme.md\n",
            "feed {feed}"
        );

        env.bmad(&wt, &["rollback", &first]).success();
        assert_eq!(
            files_on_disk(&wt),
            [".gitignore", "Docs/guide.txt", "README.md", "other.txt"]
        );
        assert_eq!(read(&wt, "README.md"), "hello\n");
        assert_eq!(settled_worktree_tree(&env, &wt), before, "feed {feed}");

        env.bmad(&wt, &["undo"]).success();
        assert_eq!(
            files_on_disk(&wt),
            [".gitignore", "docs/guide.txt", "other.txt", "readme.md"]
        );
        assert_eq!(read(&wt, "readme.md"), "hello, edited\n");
        assert_eq!(settled_worktree_tree(&env, &wt), tree, "feed {feed}");
    }
}

/// git's view once `add -A` settles: one pass is not enough under `core.ignorecase` (see the
/// test above); git's own view is `add -A` again.
fn settled_worktree_tree(env: &TestEnv, wt: &std::path::Path) -> String {
    let index = env.root().join("settled-index");
    let _ = std::fs::remove_file(&index);
    env.git(
        wt,
        &[
            "read-tree",
            "--index-output",
            index.to_str().unwrap(),
            "HEAD",
        ],
    );
    let mut tree = String::new();
    for _ in 0..3 {
        let mut add = env.git_command(wt);
        add.env("GIT_INDEX_FILE", &index).args(["add", "-A"]);
        assert!(add.status().expect("git add").success());
        let mut write = env.git_command(wt);
        write.env("GIT_INDEX_FILE", &index).arg("write-tree");
        tree = String::from_utf8_lossy(&write.output().expect("git write-tree").stdout)
            .trim()
            .to_owned();
    }
    tree
}

/// The files in a worktree, `.git` left out, sorted.
fn files_on_disk(wt: &std::path::Path) -> Vec<String> {
    fn walk(dir: &std::path::Path, root: &std::path::Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if path.is_dir() {
                walk(&path, root, out);
            } else {
                out.push(
                    path.strip_prefix(root)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    let mut out = Vec::new();
    walk(wt, wt, &mut out);
    out.sort();
    out
}

/// Files git converts from a `working-tree-encoding`, as Windows projects keep PowerShell
/// scripts and old projects keep Latin-1 or Shift-JIS text: every checkpoint stores what
/// `git add` stores (git's iconv names and maps encodings otherwise than the web's tables:
/// `UTF-16LE-BOM`, a big-endian `UTF-16`, C1 bytes in ISO-8859-1, UTF-32), a session starts
/// from them committed, a secret in UTF-16 text is found, a file git refuses (UTF-16 without
/// its byte-order mark) is refused with git's reason and what to do, and rollback then undo
/// give back every byte, with the change feed and without.
#[test]
fn files_git_converts_from_an_encoding_are_stored_as_git_stores_them() {
    fn utf16(bom: &[u8], text: &str, big_endian: bool) -> Vec<u8> {
        let mut out = bom.to_vec();
        for unit in text.encode_utf16() {
            out.extend(if big_endian {
                unit.to_be_bytes()
            } else {
                unit.to_le_bytes()
            });
        }
        out
    }
    fn utf32(text: &str) -> Vec<u8> {
        let mut out = vec![0xff, 0xfe, 0, 0];
        out.extend(text.chars().flat_map(|c| (c as u32).to_le_bytes()));
        out
    }
    let le = |text: &str| utf16(&[0xff, 0xfe], text, false);
    let be = |text: &str| utf16(&[0xfe, 0xff], text, true);
    for feed in ["true", "false"] {
        let env = TestEnv::new();
        let repo = env.repo("proj");
        env.git(&repo, &["config", "bmad.watch", feed]);
        write(
            &repo,
            ".gitattributes",
            "*.ps1 text eol=crlf working-tree-encoding=UTF-16LE-BOM\n\
             *.u16 working-tree-encoding=UTF-16\n\
             *.lat working-tree-encoding=ISO-8859-1\n\
             *.u32 working-tree-encoding=UTF-32\n",
        );
        let files: [(&str, Vec<u8>, Vec<u8>); 4] = [
            ("build.ps1", le("Write-Host a\r\n"), le("Write-Host b\r\n")),
            ("be.u16", be("big end\n"), be("big end, edited\n")),
            (
                "old.lat",
                b"caf\xe9\n".to_vec(),
                b"caf\xe9 \x80\x9f\n".to_vec(),
            ),
            ("wide.u32", utf32("wide\n"), utf32("wide, edited\n")),
        ];
        for (path, committed, _) in &files {
            std::fs::write(repo.join(path), committed).unwrap();
        }
        env.git(&repo, &["add", "-A"]);
        env.git(&repo, &["commit", "-qm", "encoded files"]);
        // Stored as git stores it: git's status has it unchanged, and so must start.
        let (_, wt) = env.start(&repo, "s");
        // As git's checkout wrote them (a `UTF-16` file comes out in the byte order iconv
        // chooses).
        let checked_out: Vec<Vec<u8>> = files
            .iter()
            .map(|(path, _, _)| std::fs::read(wt.join(path)).unwrap())
            .collect();
        for (path, _, edited) in &files {
            std::fs::write(wt.join(path), edited).unwrap();
        }
        std::fs::write(wt.join("new.ps1"), le("New-Item x\r\n")).unwrap();
        // Names git takes on its command line only.
        std::fs::write(wt.join("two\nlines.ps1"), le("Get-Item y\r\n")).unwrap();
        std::fs::write(wt.join("\"quoted.ps1"), le("Get-Item q\r\n")).unwrap();
        // What a checkpoint killed while git stored a file for it left behind.
        let git_dir = env.git(&wt, &["rev-parse", "--absolute-git-dir"]);
        let left = std::path::Path::new(git_dir.trim()).join("bmad-scratch-by-git-k1Ll3d");
        std::fs::create_dir_all(left.join("ab")).unwrap();
        env.bmad(&wt, &["checkpoint", "-m", "edits"]).success();
        assert!(!left.exists(), "the next checkpoint clears it");
        let edited = env.worktree_tree(&wt);
        assert_eq!(checkpoint_tree(&env, &wt), edited, "feed {feed}");

        // Vetted as text, as git stores it.
        std::fs::write(
            wt.join("keys.ps1"),
            le("$key = \"AKIAIOSFODNN7EXAMPLQ\"\r\n"),
        )
        .unwrap();
        let kept_out = env.bmad(&wt, &["checkpoint", "-m", "a key"]);
        assert_eq!(kept_out.code, 4, "{}", kept_out.stderr);
        assert!(kept_out.stderr.contains("keys.ps1"), "{}", kept_out.stderr);
        std::fs::remove_file(wt.join("keys.ps1")).unwrap();

        // git refuses UTF-16 without its mark, naming the encoding to use: so does a
        // checkpoint, and nothing is stored.
        std::fs::write(wt.join("nomark.u16"), "n\0o\0".as_bytes()).unwrap();
        let refused = env.bmad(&wt, &["checkpoint", "-m", "no mark"]);
        assert_eq!(refused.code, 1, "{}", refused.stderr);
        assert!(
            refused.stderr.contains("git refuses to store nomark.u16")
                && refused.stderr.contains("BOM is required")
                && refused.stderr.contains("UTF-16BE or UTF-16LE"),
            "{}",
            refused.stderr
        );
        assert_eq!(checkpoint_tree(&env, &wt), edited);
        let rollback = env.bmad(&wt, &["rollback", "1"]);
        assert!(
            rollback
                .stderr
                .contains("git refuses to store the worktree")
                && rollback.stderr.contains("BOM is required"),
            "{}",
            rollback.stderr
        );
        assert!(
            std::fs::read(wt.join("old.lat")).unwrap() == files[2].2,
            "nothing moved"
        );
        std::fs::remove_file(wt.join("nomark.u16")).unwrap();

        env.bmad(&wt, &["rollback", "1"]).success();
        for ((path, _, _), at_start) in files.iter().zip(&checked_out) {
            assert!(std::fs::read(wt.join(path)).unwrap() == *at_start, "{path}");
        }
        assert!(!wt.join("new.ps1").exists());
        assert!(!wt.join("two\nlines.ps1").exists());
        assert!(!wt.join("\"quoted.ps1").exists());
        env.bmad(&wt, &["undo"]).success();
        for (path, _, edited) in &files {
            assert!(std::fs::read(wt.join(path)).unwrap() == *edited, "{path}");
        }
        assert!(std::fs::read(wt.join("new.ps1")).unwrap() == le("New-Item x\r\n"));
        assert!(std::fs::read(wt.join("two\nlines.ps1")).unwrap() == le("Get-Item y\r\n"));
        assert!(std::fs::read(wt.join("\"quoted.ps1")).unwrap() == le("Get-Item q\r\n"));
        assert_eq!(env.worktree_tree(&wt), edited, "feed {feed}");
        env.bmad(&repo, &["doctor"]).success();
    }
}

/// Files marked assume-unchanged (`git update-index --assume-unchanged`, as tools do for a
/// local config file), then one edited and one deleted: git takes the index's content for
/// them, so its `add -A` and every checkpoint leave both changes out; unmarked, the edit is
/// recorded. A rollback and undo give back the bytes on disk, with the change feed and
/// without.
#[test]
fn an_assume_unchanged_file_is_recorded_as_git_records_it() {
    for feed in ["true", "false"] {
        let env = TestEnv::new();
        let repo = env.repo("proj");
        env.git(&repo, &["config", "bmad.watch", feed]);
        write(&repo, "local.cfg", "committed\n");
        write(&repo, "gone.cfg", "committed\n");
        env.git(&repo, &["add", "-A"]);
        env.git(&repo, &["commit", "-qm", "config files"]);
        let (_, wt) = env.start(&repo, "s");
        env.git(
            &wt,
            &[
                "update-index",
                "--assume-unchanged",
                "local.cfg",
                "gone.cfg",
            ],
        );
        write(&wt, "local.cfg", "my own settings\n");
        std::fs::remove_file(wt.join("gone.cfg")).unwrap();
        write(&wt, "other.txt", "recorded\n");
        env.bmad(&wt, &["checkpoint", "-m", "edits"]).success();
        let tree = checkpoint_tree(&env, &wt);
        assert_eq!(tree, env.worktree_tree(&wt), "feed {feed}");
        let recorded = |path: &str| env.git(&wt, &["cat-file", "-p", &format!("{tree}:{path}")]);
        assert_eq!(recorded("local.cfg"), "committed\n", "feed {feed}");
        assert_eq!(recorded("gone.cfg"), "committed\n", "feed {feed}");

        env.bmad(&wt, &["rollback", "1"]).success();
        env.bmad(&wt, &["undo"]).success();
        assert_eq!(read(&wt, "local.cfg"), "my own settings\n", "feed {feed}");
        assert!(!wt.join("gone.cfg").exists(), "feed {feed}");

        env.git(&wt, &["update-index", "--no-assume-unchanged", "local.cfg"]);
        env.bmad(&wt, &["checkpoint", "-m", "unmarked"]).success();
        let tree = checkpoint_tree(&env, &wt);
        assert_eq!(tree, env.worktree_tree(&wt), "feed {feed}");
        let recorded = env.git(&wt, &["cat-file", "-p", &format!("{tree}:local.cfg")]);
        assert_eq!(recorded, "my own settings\n", "feed {feed}");
    }
}
