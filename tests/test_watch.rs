//! The change feed: a watcher per session worktree tells each checkpoint which paths changed,
//! so it reads only those. Every checkpoint it feeds must still be exactly what `git add -A`
//! records, and anything the watcher cannot vouch for must make the checkpoint scan it all.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::common::{write, TestEnv};

/// A session worktree and how to checkpoint it.
struct Session<'a> {
    env: &'a TestEnv,
    repo: PathBuf,
    wt: PathBuf,
    chain: String,
}

impl Session<'_> {
    fn new(env: &TestEnv) -> Session<'_> {
        Session::create(env, true)
    }

    fn create(env: &TestEnv, watch: bool) -> Session<'_> {
        let repo = env.repo("proj");
        if !watch {
            env.git(&repo, &["config", "bmad.watch", "false"]);
        }
        write(&repo, "src/a.txt", "a\n");
        write(&repo, "src/deep/b.txt", "b\n");
        write(&repo, "docs/c.md", "c\n");
        env.git(&repo, &["add", "-A"]);
        env.git(&repo, &["commit", "-q", "-m", "base"]);
        let (id, wt) = env.start(&repo, "fed");
        Session {
            env,
            repo,
            wt,
            chain: format!("refs/bmad/sessions/{id}/checkpoints"),
        }
    }

    /// Take a checkpoint, assert it is exactly what `git add -A` records, and say whether the
    /// change feed told it what to read (rather than a scan of the whole worktree).
    #[track_caller]
    fn checkpoint(&self, what: &str) -> bool {
        let log = self.checkpoint_log(what);
        !log.contains("scanning the whole worktree")
    }

    /// Take a checkpoint, assert it is exactly what `git add -A` records and that the feed
    /// answered, and say whether it read the worktree's index.
    #[track_caller]
    fn reads_the_index(&self, what: &str) -> bool {
        let log = self.checkpoint_log(what);
        assert!(
            !log.contains("scanning the whole worktree"),
            "not fed: {what}"
        );
        !log.contains("the index is as the last snapshot saw it, not read")
    }

    /// Take a checkpoint, assert it is exactly what `git add -A` records and that a change
    /// feed was asked; its debug log.
    #[track_caller]
    fn checkpoint_log(&self, what: &str) -> String {
        let run = self
            .env
            .bmad_command(&self.wt)
            .env("GIT_BMAD_LOG", "git_bmad=debug")
            .args(["checkpoint", "-m", what])
            .output()
            .expect("spawn git-bmad");
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "checkpoint {what}: {stderr}");
        let tree = self.env.git(
            &self.repo,
            &["rev-parse", &format!("{}^{{tree}}", self.chain)],
        );
        assert_eq!(tree.trim(), self.add_all(), "checkpoint after: {what}");
        assert!(stderr.contains("change feed"), "{stderr}");
        stderr.into_owned()
    }

    /// What `git add -A` on a copy of the worktree's index records: a file added by force
    /// stays, though ignored.
    fn add_all(&self) -> String {
        self.env.worktree_tree(&self.wt)
    }

    /// Checkpoint until the watcher the first checkpoint started answers.
    fn wait_for_the_feed(&self) {
        for i in 0..100 {
            write(&self.wt, "warm-up.txt", &format!("{i}\n"));
            if self.checkpoint("warm-up") {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("the watcher never answered");
    }
}

/// The watcher of `wt`, if one runs: the pid of `git-bmad watch <wt>`.
fn watcher_of(wt: &Path) -> Option<u32> {
    let wanted = std::fs::canonicalize(wt).ok()?;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        if args.len() >= 3
            && args[1] == b"watch"
            && Path::new(std::str::from_utf8(args[2]).unwrap_or("")) == wanted
        {
            return Some(pid);
        }
    }
    None
}

/// Wait up to five seconds for `done`.
fn eventually(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..100 {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

#[test]
fn fed_checkpoints_are_exact_through_every_kind_of_change() {
    let env = TestEnv::new();
    let s = Session::new(&env);
    let wt = &s.wt;
    s.wait_for_the_feed();
    let fed = |what: &str| assert!(s.checkpoint(what), "not fed: {what}");

    write(wt, "src/a.txt", "changed\n");
    fed("a modified file");
    write(wt, "src/a.txt", "again\n");
    fed("the same file again at once");
    write(wt, "new/deeper/still/n.txt", "n\n");
    write(wt, "new/deeper/m.txt", "m\n");
    fed("new nested directories");
    std::fs::rename(wt.join("src/deep"), wt.join("moved-deep")).unwrap();
    fed("a directory renamed");
    std::fs::rename(wt.join("moved-deep/b.txt"), wt.join("docs/b.txt")).unwrap();
    fed("a file moved between directories");
    let outside = env.root().join("outside");
    std::fs::rename(wt.join("new"), &outside).unwrap();
    fed("a directory moved out of the worktree");
    write(&outside, "deeper/while-away.txt", "w\n");
    std::fs::rename(&outside, wt.join("back")).unwrap();
    write(wt, "back/deeper/after.txt", "after\n");
    fed("a directory moved in, then written in");
    std::fs::remove_dir_all(wt.join("back")).unwrap();
    fed("a directory deleted");
    std::fs::remove_file(wt.join("docs/c.md")).unwrap();
    write(wt, "docs/c.md/inner.txt", "inner\n");
    fed("a file became a directory");
    std::fs::remove_dir_all(wt.join("docs/c.md")).unwrap();
    write(wt, "docs/c.md", "a file again\n");
    fed("a directory became a file");
    std::fs::set_permissions(wt.join("docs/c.md"), std::fs::Permissions::from_mode(0o755)).unwrap();
    fed("the executable bit");
    symlink("c.md", wt.join("docs/link")).unwrap();
    fed("a symlink");
    write(wt, "debug.log", "ignored\n");
    write(wt, "target/debug/out", "ignored\n");
    fed("ignored files");
    env.git(wt, &["mv", "README.md", "docs/README.md"]);
    env.git(wt, &["rm", "-q", "--cached", "src/a.txt"]);
    fed("git mv and git rm --cached");
    env.git(wt, &["add", "-f", "debug.log"]);
    fed("an ignored file added by force");
    std::fs::create_dir(wt.join("empty-dir")).unwrap();
    fed("an empty directory");

    // Ignore rules that changed can bring in files nobody touched: those scan it all.
    write(wt, ".gitignore", "*.log\n");
    assert!(
        !s.checkpoint(".gitignore changed"),
        "a .gitignore change scans it all"
    );
    fed("after the scan, fed again");
    let git_dir = env.git(wt, &["rev-parse", "--git-common-dir"]);
    let exclude = Path::new(git_dir.trim()).join("info/exclude");
    let exclude = if exclude.is_absolute() {
        exclude
    } else {
        wt.join(exclude)
    };
    write(exclude.parent().unwrap(), "exclude", "target/\n");
    assert!(
        !s.checkpoint("info/exclude changed"),
        "info/exclude is outside the feed"
    );
    fed("fed again");
}

/// While the index is the one the last checkpoint read and `HEAD` has not moved, a fed
/// checkpoint reads neither the index nor the whole snapshot cache: what it would take from
/// the index is `HEAD`'s (line endings kept where the committed copy has CRs, an executable
/// bit git keeps under `core.fileMode=false`). Whatever changes the index, `HEAD`, or the
/// rules an index decides has the next checkpoint read it. Each is exactly `git add -A`.
#[test]
fn a_checkpoint_reads_the_index_only_when_it_may_have_changed() {
    let env = TestEnv::new();
    let s = Session::new(&env);
    let wt = &s.wt;
    std::fs::write(wt.join("crlf.txt"), "one\r\ntwo\r\n").unwrap();
    write(wt, "tool.sh", "#!/bin/sh\n");
    std::fs::set_permissions(wt.join("tool.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    env.git(wt, &["add", "-A"]);
    env.git(wt, &["commit", "-q", "-m", "CRLF and a tool"]);
    write(wt, ".gitattributes", "* text=auto\n");
    env.git(wt, &["add", "-A"]);
    env.git(wt, &["commit", "-q", "-m", "text=auto"]);
    env.git(wt, &["config", "core.fileMode", "false"]);
    s.wait_for_the_feed();
    s.checkpoint("settled");
    let quick = |what: &str| assert!(!s.reads_the_index(what), "read the index: {what}");
    let reads = |what: &str| assert!(s.reads_the_index(what), "did not read the index: {what}");

    write(wt, "src/a.txt", "changed\n");
    quick("a modified file");
    write(wt, "new/deeper/n.txt", "n\n");
    quick("a new directory");
    std::fs::write(wt.join("crlf.txt"), "one\r\ntwo\r\nthree\r\n").unwrap();
    quick("CRLF kept where the committed copy has it");
    write(wt, "tool.sh", "#!/bin/sh\necho\n");
    std::fs::set_permissions(wt.join("tool.sh"), std::fs::Permissions::from_mode(0o644)).unwrap();
    quick("an executable's bit kept under core.fileMode=false");
    for i in 0..100 {
        write(wt, &format!("many/f{i}.txt"), &format!("{i}\n"));
    }
    quick("more new files than a delta holds: the cache written whole");
    write(wt, "src/a.txt", "changed again\n");
    quick("from the cache written whole");
    std::fs::remove_dir_all(wt.join("many")).unwrap();
    reads("more paths gone than a delta holds: the whole cache is read");

    env.git(wt, &["add", "src/a.txt"]);
    reads("a path staged");
    write(wt, "docs/c.md", "c2\n");
    reads("while something is staged");
    env.git(wt, &["commit", "-q", "-m", "a"]);
    reads("HEAD moved");
    write(wt, "docs/c.md", "c3\n");
    quick("settled again");
    env.git(wt, &["add", "-N", "new/deeper/n.txt"]);
    reads("an intent to add");
    write(wt, "docs/c.md", "c4\n");
    reads("while an intent to add stands");
    env.git(wt, &["reset", "-q"]);
    reads("the index reset");
    write(wt, "src/ignored.log", "log\n");
    quick("an untracked file");
    write(wt, "src/.gitignore", "*.log\n");
    assert!(
        !s.checkpoint("a new .gitignore"),
        "the watcher has it scan it all"
    );
    std::fs::remove_file(wt.join(".gitattributes")).unwrap();
    reads("a tracked .gitattributes deleted: git reads the index's copy");
    write(wt, "docs/c.md", "c5\n");
    reads("while the index has a .gitattributes the disk has not");
    env.git(wt, &["checkout", "--", ".gitattributes"]);
    reads("the .gitattributes back");
    write(wt, "docs/c.md", "c6\n");
    quick("settled again with the rules on disk");
    let index = env.git(
        wt,
        &["rev-parse", "--path-format=absolute", "--git-path", "index"],
    );
    let before = std::fs::read(index.trim()).unwrap();
    env.git(wt, &["update-index", "--index-version", "4"]);
    assert_ne!(std::fs::read(index.trim()).unwrap(), before);
    reads("the index rewritten, nothing changed on disk");
}

/// An agent that stages a change and then writes the index back in place to look like the
/// one the last checkpoint read (its inode, size, modification time and checksum) still
/// moves its change time, which no process can set: the next checkpoint reads the index
/// and keeps the staged change.
#[test]
fn an_index_forged_to_look_unread_is_read() {
    use std::io::Write;
    use std::os::unix::fs::MetadataExt;
    let env = TestEnv::new();
    let s = Session::new(&env);
    let wt = &s.wt;
    s.wait_for_the_feed();
    s.checkpoint("settled");
    write(wt, "src/a.txt", "changed\n");
    assert!(
        !s.reads_the_index("settled"),
        "a settled checkpoint reads no index"
    );
    let index = env.git(
        wt,
        &["rev-parse", "--path-format=absolute", "--git-path", "index"],
    );
    let index = Path::new(index.trim());
    let read = std::fs::read(index).unwrap();
    let seen = std::fs::metadata(index).unwrap();
    let kept = env.root().join("kept-index");
    std::fs::hard_link(index, &kept).unwrap();
    write(wt, "src/a.txt", "CHANGED\n");
    env.git(wt, &["add", "src/a.txt"]);
    let staged = std::fs::read(index).unwrap();
    // The staged index, padded to the old length with an extension git ignores, ending
    // with the old checksum, written over the old file.
    let (body, pad) = (&staged[..staged.len() - 20], read.len() - staged.len());
    assert!(pad == 0 || pad >= 8, "{} then {}", read.len(), staged.len());
    let mut forged = body.to_vec();
    if pad > 0 {
        forged.extend_from_slice(b"ZZZZ");
        forged.extend_from_slice(&(pad as u32 - 8).to_be_bytes());
        forged.resize(forged.len() + pad - 8, 0);
    }
    forged.extend_from_slice(&read[read.len() - 20..]);
    let mut file = std::fs::OpenOptions::new().write(true).open(&kept).unwrap();
    file.write_all(&forged).unwrap();
    file.set_modified(seen.modified().unwrap()).unwrap();
    drop(file);
    std::fs::rename(&kept, index).unwrap();
    let now = std::fs::metadata(index).unwrap();
    assert_eq!(
        (now.ino(), now.len(), now.modified().unwrap()),
        (seen.ino(), seen.len(), seen.modified().unwrap()),
        "the forgery is as the last checkpoint saw the index"
    );
    assert!(env
        .git(wt, &["diff", "--cached", "--name-only"])
        .contains("src/a.txt"));
    write(wt, "docs/c.md", "c2\n");
    assert!(s.reads_the_index("an index forged to look unread"));
    let message = env.git(&s.repo, &["log", "-1", "--format=%B", &s.chain]);
    assert!(
        message.contains("Bmad-Index:"),
        "the staged change is kept: {message}"
    );
}

/// Random changes in random order, a checkpoint after each few: every one fed and exact.
#[test]
fn fed_checkpoints_are_exact_under_random_changes() {
    let env = TestEnv::new();
    let s = Session::new(&env);
    s.wait_for_the_feed();
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let dirs = ["", "src", "src/deep", "x", "x/y", "x/y/z", "target"];
    let names = ["f1.txt", "f2.txt", "g.log", "h"];
    for round in 0..60 {
        let mut done = Vec::new();
        for _ in 0..=next(3) {
            let dir = dirs[next(dirs.len() as u64) as usize];
            let name = names[next(names.len() as u64) as usize];
            let rel = if dir.is_empty() {
                name.to_owned()
            } else {
                format!("{dir}/{name}")
            };
            let path = s.wt.join(&rel);
            let op = next(7);
            let _ = match op {
                0 | 1 => std::fs::create_dir_all(path.parent().unwrap())
                    .and_then(|()| std::fs::write(&path, format!("{round}\n"))),
                2 => std::fs::remove_file(&path),
                // Never the worktree itself.
                3 if dir.is_empty() => Ok(()),
                3 => std::fs::remove_dir_all(s.wt.join(dir)),
                4 => {
                    let other = dirs[next(dirs.len() as u64) as usize];
                    let to = s.wt.join(format!("{other}/{name}.moved"));
                    std::fs::rename(&path, to)
                }
                5 => std::fs::metadata(&path).and_then(|m| {
                    let mode = m.permissions().mode() ^ 0o111;
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                }),
                _ => {
                    let to = s.wt.join(format!("renamed-{round}"));
                    if dir.is_empty() {
                        Ok(())
                    } else {
                        std::fs::rename(s.wt.join(dir), to)
                    }
                }
            };
            done.push(format!("{op} {rel}"));
        }
        assert!(
            s.checkpoint(&format!("round {round}: {done:?}")),
            "round {round} not fed"
        );
    }
}

#[test]
fn start_starts_the_watcher_a_killed_one_costs_one_full_scan_and_remove_ends_it() {
    let env = TestEnv::new();
    let s = Session::new(&env);
    assert!(
        eventually(|| watcher_of(&s.wt).is_some()),
        "start starts the watcher"
    );
    s.wait_for_the_feed();
    let pid = watcher_of(&s.wt).expect("a watcher runs");
    // SAFETY: a plain kill of a pid this test found.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    assert!(eventually(|| watcher_of(&s.wt) != Some(pid)));
    write(&s.wt, "src/a.txt", "while nobody watched\n");
    assert!(
        !s.checkpoint("no watcher"),
        "a new watcher's first answer is all"
    );
    s.wait_for_the_feed();

    env.bmad(&s.repo, &["remove", "fed", "--force"]).success();
    assert!(
        eventually(|| watcher_of(&s.wt).is_none()),
        "the watcher of a removed worktree exits"
    );
}

/// `start` waits for the watcher and reads the new worktree once, so the very first
/// checkpoint already reads only what changed (git's fresh index, written in the same instant
/// as the files, proves none of them unchanged) and is still exactly git's view.
#[test]
fn the_first_checkpoint_after_start_reads_only_what_changed() {
    let env = TestEnv::new();
    let s = Session::new(&env);
    write(&s.wt, "src/a.txt", "changed after start\n");
    write(&s.wt, "new.txt", "new\n");
    assert!(
        s.checkpoint("first"),
        "the first checkpoint after start scanned the whole worktree"
    );
}

/// A file a hook changes while `start` checks the worktree out was never shown to the
/// secret scanner: reading the worktree at start stores nothing of it, so a secret in it
/// never enters the object database, and the first checkpoint keeps it out as any other.
#[test]
fn a_secret_a_hook_writes_during_start_is_stored_by_nothing() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(&repo, "src/a.txt", "a\n");
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "base"]);
    let key = format!("AKIA{}", "Q7ZK2M4XW6RT5PLN");
    let hook = repo.join(".git/hooks/post-checkout");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    let script = format!("#!/bin/sh\necho 'aws_access_key_id = {key}' > src/a.txt\n");
    std::fs::write(&hook, script).unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (id, wt) = env.start(&repo, "hooked");
    assert!(
        crate::common::read(&wt, "src/a.txt").contains(&key),
        "the hook ran"
    );
    assert!(
        !env.all_objects(&repo).contains(&key),
        "start stored the secret"
    );
    env.bmad(&wt, &["checkpoint", "-m", "first"]).code(4);
    assert!(!env.all_objects(&repo).contains(&key));
    let s = Session {
        env: &env,
        repo,
        wt,
        chain: format!("refs/bmad/sessions/{id}/checkpoints"),
    };
    write(&s.wt, "src/a.txt", "no secret\n");
    s.checkpoint("fixed");
    let recorded = env.git(&s.repo, &["show", &format!("{}:src/a.txt", s.chain)]);
    assert_eq!(recorded, "no secret\n");
}

#[test]
fn bmad_watch_false_keeps_every_checkpoint_a_full_scan_and_starts_no_watcher() {
    let env = TestEnv::new();
    let s = Session::create(&env, false);
    for i in 0..5 {
        write(&s.wt, "src/a.txt", &format!("{i}\n"));
        assert!(!s.checkpoint("watch off"));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(watcher_of(&s.wt), None);
}

/// A file kept out for a secret is shown to the scanner again at every checkpoint, though
/// nothing changed it since and the feed does not name it.
#[test]
fn a_refused_file_is_refused_again_by_every_checkpoint_until_it_is_fixed() {
    let env = TestEnv::new();
    let s = Session::new(&env);
    s.wait_for_the_feed();
    let key = format!("AKIA{}", "Q7ZK2M4XW6RT5PLN");
    write(&s.wt, "config/new.py", &format!("KEY = \"{key}\"\n"));
    write(&s.wt, "src/a.txt", &format!("KEY = \"{key}\"\n"));
    for attempt in 0..3 {
        let run = env.bmad(&s.wt, &["checkpoint", "-m", "leaky"]).code(4);
        for path in ["config/new.py", "src/a.txt"] {
            assert!(
                run.stderr.contains(path),
                "attempt {attempt}: {}",
                run.stderr
            );
        }
    }
    assert!(!env.all_objects(&s.repo).contains(&key[4..]));
    std::fs::remove_file(s.wt.join("config/new.py")).unwrap();
    write(&s.wt, "src/a.txt", "fixed\n");
    s.checkpoint("fixed");
    write(&s.wt, "src/a.txt", "fed again\n");
    assert!(s.checkpoint("after the fix"), "fed once nothing is refused");
}

/// What a snapshot does with a feed, without a daemon: told which paths changed, it reads
/// those and trusts its cache for the rest, exactly as with a watcher's answer; with no
/// feed it reads everything.
#[test]
fn a_snapshot_reads_what_its_feed_names_and_trusts_the_rest() {
    use git_bmad::git::{FeedSetting, Repo};
    let env = TestEnv::new();
    let dir = env.repo("told");
    write(&dir, "src/a.txt", "a\n");
    write(&dir, "src/b.txt", "b\n");
    env.git(&dir, &["add", "-A"]);
    env.git(&dir, &["commit", "-q", "-m", "base"]);
    let open = |feed: FeedSetting| Repo::discover(&dir).unwrap().with_feed(feed);
    let first = open(FeedSetting::None)
        .snapshot_tree_vetted(None, None)
        .unwrap()
        .tree;
    // Both change, and the stat data can no longer vouch for either.
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(&dir, "src/a.txt", "a, changed\n");
    write(&dir, "src/b.txt", "b, changed\n");
    let told = FeedSetting::Test {
        changed: vec!["src/a.txt".into()],
    };
    let fed = open(told)
        .snapshot_tree_vetted(None, Some(first))
        .unwrap()
        .tree;
    let show = |tree: &git_bmad::git::ObjectId, path: &str| {
        env.git(&dir, &["show", &format!("{tree}:{path}")])
    };
    assert_eq!(show(&fed, "src/a.txt"), "a, changed\n");
    assert_eq!(
        show(&fed, "src/b.txt"),
        "b\n",
        "a path the feed did not name is taken from the cache unread"
    );
    let scanned = open(FeedSetting::None)
        .snapshot_tree_vetted(None, Some(fed))
        .unwrap()
        .tree;
    assert_eq!(show(&scanned, "src/b.txt"), "b, changed\n");
    assert_eq!(show(&scanned, "src/a.txt"), "a, changed\n");
}

/// A file with a second name in the worktree (a hard link) changes under both when written
/// through one; the watcher hears only the name written to, so the checkpoint scans it all.
#[test]
fn a_write_through_one_of_two_hard_linked_names_changes_both_in_the_checkpoint() {
    let env = TestEnv::new();
    let s = Session::new(&env);
    s.wait_for_the_feed();
    std::fs::hard_link(s.wt.join("src/a.txt"), s.wt.join("docs/a-again.txt")).unwrap();
    s.checkpoint("a second name");
    // In place, as an editor that keeps the inode writes.
    write(
        &s.wt,
        "docs/a-again.txt",
        "written through the second name\n",
    );
    assert!(
        !s.checkpoint("written through the second name"),
        "a file with other names scans it all"
    );
    write(&s.wt, "src/a.txt", "and through the first\n");
    assert!(!s.checkpoint("written through the first name"));
    std::fs::remove_file(s.wt.join("docs/a-again.txt")).unwrap();
    s.checkpoint("one name again");
    write(&s.wt, "src/a.txt", "fed again\n");
    assert!(
        s.checkpoint("one name, fed"),
        "fed once the file has one name"
    );

    // Hard links under an ignored folder (a package manager's store, as pnpm links it) are
    // none of a snapshot's business: still fed.
    let store = env.root().join("store.txt");
    write(&env.root(), "store.txt", "a package\n");
    write(&s.wt, "target/pkg/keep.txt", "x\n");
    s.checkpoint("an ignored folder");
    std::fs::hard_link(&store, s.wt.join("target/pkg/linked.txt")).unwrap();
    write(&s.wt, "target/pkg/linked.txt", "the package, updated\n");
    write(&s.wt, "src/a.txt", "beside an ignored hard link\n");
    assert!(
        s.checkpoint("an ignored hard link"),
        "an ignored link scans nothing"
    );
}

/// A file marked skip-worktree is what the index says, whatever is on disk; once the mark
/// goes, the disk counts again, though the watcher heard nothing at that moment.
#[test]
fn a_skip_worktree_mark_set_or_cleared_is_what_the_checkpoint_follows() {
    let env = TestEnv::new();
    let s = Session::new(&env);
    s.wait_for_the_feed();
    env.git(&s.wt, &["update-index", "--skip-worktree", "src/a.txt"]);
    write(&s.wt, "src/a.txt", "edited while marked\n");
    s.checkpoint("edited while marked");
    env.git(&s.wt, &["update-index", "--no-skip-worktree", "src/a.txt"]);
    s.checkpoint("the mark cleared");

    // The other way: read from disk, then marked, so the index's content counts.
    write(&s.wt, "docs/c.md", "read from disk\n");
    s.checkpoint("an edit");
    env.git(&s.wt, &["update-index", "--skip-worktree", "docs/c.md"]);
    s.checkpoint("the mark set");
}

/// A watcher that cannot start (here a directory deeper than a path inotify takes; a spent
/// watch limit alike) leaves every checkpoint a whole scan, still exact, and `doctor` says
/// why the session's checkpoints are slower.
#[test]
fn a_feed_that_cannot_start_is_named_by_doctor_with_its_reason() {
    use rustix::fs::{mkdirat, openat, Mode, OFlags};
    let env = TestEnv::new();
    let s = Session::new(&env);
    s.wait_for_the_feed();
    // Made relative to each parent: no single call sees the whole path.
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut fd = openat(rustix::fs::CWD, &s.wt, flags, Mode::empty()).unwrap();
    let name = "d".repeat(200);
    for _ in 0..25 {
        mkdirat(&fd, name.as_str(), Mode::from_raw_mode(0o755)).unwrap();
        fd = openat(&fd, name.as_str(), flags, Mode::empty()).unwrap();
    }
    write(&s.wt, "src/a.txt", "while the feed is down\n");
    assert!(!s.checkpoint("a directory too deep to watch"));
    assert!(
        eventually(|| {
            let doctor = env.bmad(&s.repo, &["doctor", "--json"]).json();
            doctor["findings"]
                .to_string()
                .contains("change feed could not start")
        }),
        "doctor never named the feed"
    );
    let doctor = env.bmad(&s.repo, &["doctor"]).success();
    assert!(
        doctor.stdout.contains("File name too long"),
        "{}",
        doctor.stdout
    );
    write(&s.wt, "src/a.txt", "still exact\n");
    assert!(!s.checkpoint("still without a feed"));
}
