//! `git bmad checkpoint`: snapshots that never touch the user's index, HEAD or branch.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;

use crate::common::{read, wait_for_repacks, write, Run, TestEnv};

#[test]
fn checkpoint_leaves_index_head_and_branch_byte_for_byte_alone() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (id, wt) = env.start(&repo, "feature-x");
    write(&wt, "staged.txt", "staged\n");
    env.git(&wt, &["add", "staged.txt"]);
    write(&wt, "README.md", "modified, not staged\n");
    write(&wt, "untracked/new.txt", "untracked\n");
    let git_dir = env.git(&wt, &["rev-parse", "--absolute-git-dir"]);
    let index_path = Path::new(git_dir.trim()).join("index");
    let index_before = std::fs::read(&index_path).unwrap();
    let head_before = env.git(&wt, &["rev-parse", "HEAD"]);
    let branch_before = env.git(&repo, &["rev-parse", "bmad/feature-x"]);

    env.bmad(&wt.join("untracked"), &["checkpoint", "-m", "after plan"])
        .success();

    assert_eq!(
        std::fs::read(&index_path).unwrap(),
        index_before,
        "index bytes changed"
    );
    assert_eq!(env.git(&wt, &["rev-parse", "HEAD"]), head_before);
    assert_eq!(
        env.git(&repo, &["rev-parse", "bmad/feature-x"]),
        branch_before
    );
    // The snapshot is exactly what `git add -A` records.
    let chain = format!("refs/bmad/sessions/{id}/checkpoints");
    let tree = env.git(&repo, &["rev-parse", &format!("{chain}^{{tree}}")]);
    assert_eq!(tree.trim(), env.worktree_tree(&wt));
    assert_eq!(
        env.git(&repo, &["show", &format!("{chain}:untracked/new.txt")]),
        "untracked\n"
    );
    // Parents: previous checkpoint, the session HEAD, and (something is staged) the saved
    // index, whose tree is what `git write-tree` makes of the index. Trailers summarise the
    // session.
    let parents = env.git(&repo, &["rev-list", "--parents", "-n", "1", &chain]);
    let parents: Vec<&str> = parents.split_whitespace().skip(1).collect();
    assert_eq!(parents.len(), 3);
    assert_eq!(parents[1], head_before.trim());
    assert_eq!(
        env.git(&repo, &["rev-parse", &format!("{}^{{tree}}", parents[2])]),
        env.git(&wt, &["write-tree"])
    );
    let message = env.git(&repo, &["log", "-1", "--format=%B", &chain]);
    assert!(
        message.contains(&format!("Bmad-Index: {}", parents[2])),
        "{message}"
    );
    assert!(message.starts_with("after plan\n"), "{message}");
    for trailer in [
        format!("Bmad-Session: {id}"),
        "Bmad-Status: running".into(),
        "Bmad-Step: -".into(),
        "Bmad-Seq: ".into(),
    ] {
        assert!(message.contains(&trailer), "missing {trailer} in {message}");
    }
    // A reflog is kept for the hidden ref.
    let reflog = env.git(&repo, &["reflog", "show", &chain]);
    assert_eq!(reflog.lines().count(), 2, "{reflog}");
}

#[test]
fn checkpoint_reaches_agent_commits_and_records_deletions() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (id, wt) = env.start(&repo, "feature-x");
    write(&wt, "feature.rs", "fn main() {}\n");
    env.git(&wt, &["add", "feature.rs"]);
    env.git(&wt, &["commit", "-q", "-m", "agent commit"]);
    std::fs::remove_file(wt.join("README.md")).unwrap();
    env.bmad(&wt, &["checkpoint"]).success();
    let chain = format!("refs/bmad/sessions/{id}/checkpoints");
    let files = env.git(&repo, &["ls-tree", "-r", "--name-only", &chain]);
    assert!(
        files.contains("feature.rs") && !files.contains("README.md"),
        "{files}"
    );
    let log = env.git(&repo, &["log", "--format=%s", &chain]);
    assert!(
        log.contains("agent commit"),
        "git log of the chain reaches the agent's commits: {log}"
    );
}

/// Symlinks, executable bits, empty files, nested untracked directories, spaces and non-ASCII
/// names survive checkpoint → change everything → rollback.
#[test]
fn every_kind_of_file_round_trips_through_checkpoint_and_rollback() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "kinds");
    write(&wt, "bin/run me.sh", "#!/bin/sh\necho hi\n");
    std::fs::set_permissions(
        wt.join("bin/run me.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    write(&wt, "empty", "");
    write(&wt, "a/b/c/d/nested.txt", "deep\n");
    write(&wt, "naïve résumé/日本語.txt", "unicode\n");
    symlink("README.md", wt.join("link-to-readme")).unwrap();
    symlink("a/b", wt.join("dir link")).unwrap();
    env.git(&wt, &["add", "bin"]);
    env.git(&wt, &["commit", "-q", "-m", "script"]);
    let expected = env.worktree_tree(&wt);
    let cp = env
        .bmad(&wt, &["checkpoint", "-m", "all kinds", "--json"])
        .success()
        .json();
    assert_eq!(
        cp["checkpoint"]["tree"].as_str().unwrap(),
        expected,
        "gix snapshot equals git add -A"
    );
    let number = env.bmad(&wt, &["status", "--json"]).success().json()["checkpoints"][0]["number"]
        .as_u64()
        .unwrap();

    // Wreck it: flip the exec bit, retarget and replace links, empty becomes full, delete the rest.
    std::fs::set_permissions(
        wt.join("bin/run me.sh"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    std::fs::remove_file(wt.join("link-to-readme")).unwrap();
    write(&wt, "link-to-readme", "now a file\n");
    std::fs::remove_file(wt.join("dir link")).unwrap();
    write(&wt, "empty", "not empty\n");
    std::fs::remove_dir_all(wt.join("a")).unwrap();
    std::fs::remove_dir_all(wt.join("naïve résumé")).unwrap();
    write(&wt, "added later.txt", "x\n");

    env.bmad(&wt, &["rollback", &number.to_string()]).success();

    let mode = std::fs::metadata(wt.join("bin/run me.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "exec bit restored");
    assert_eq!(
        std::fs::read_link(wt.join("link-to-readme")).unwrap(),
        Path::new("README.md")
    );
    assert_eq!(
        std::fs::read_link(wt.join("dir link")).unwrap(),
        Path::new("a/b")
    );
    assert_eq!(read(&wt, "empty"), "");
    assert_eq!(read(&wt, "a/b/c/d/nested.txt"), "deep\n");
    assert_eq!(read(&wt, "naïve résumé/日本語.txt"), "unicode\n");
    assert!(
        !wt.join("added later.txt").exists(),
        "files not in the checkpoint are removed"
    );
    // Exactly the checkpoint.
    assert_eq!(env.worktree_tree(&wt), expected);
}

/// Each checkpoint reads only what changed since the last one (the snapshot cache): what it
/// records must still be exactly what `git add -A` would, whatever changed and however fast.
#[test]
fn every_checkpoint_is_exact_though_only_changes_are_read() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(&repo, ".gitignore", "*.log\n");
    write(&repo, "src/a.txt", "a\n");
    write(&repo, "src/b.txt", "b\n");
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "base"]);
    let (id, wt) = env.start(&repo, "cache");
    let chain = format!("refs/bmad/sessions/{id}/checkpoints");
    let checkpoint_is_exact = |what: &str| {
        env.bmad(&wt, &["checkpoint", "-m", what]).success();
        let tree = env.git(&repo, &["rev-parse", &format!("{chain}^{{tree}}")]);
        assert_eq!(tree.trim(), env.worktree_tree(&wt), "after: {what}");
    };
    // Same size, same second, right after a checkpoint read the file: the racy case.
    write(&wt, "src/a.txt", "1\n");
    checkpoint_is_exact("rewrite");
    write(&wt, "src/a.txt", "2\n");
    checkpoint_is_exact("same-size rewrite at once");
    // An untracked file enters, then the ignore rules exclude it: it leaves.
    write(&wt, "notes.md", "draft\n");
    checkpoint_is_exact("untracked file");
    write(&wt, ".gitignore", "*.log\nnotes.md\n");
    checkpoint_is_exact("untracked file now ignored");
    // Ignored files never enter; new directories do, nested ones included.
    write(&wt, "debug.log", "noise\n");
    write(&wt, "new/deep/c.txt", "c\n");
    checkpoint_is_exact("new directories");
    // A file becomes a directory and a directory a file.
    std::fs::remove_file(wt.join("src/b.txt")).unwrap();
    write(&wt, "src/b.txt/inner.txt", "inner\n");
    checkpoint_is_exact("file to directory");
    std::fs::remove_dir_all(wt.join("new")).unwrap();
    write(&wt, "new", "a file now\n");
    checkpoint_is_exact("directory to file");
    // Mode and kind changes with unchanged content.
    std::fs::set_permissions(wt.join("src/a.txt"), std::fs::Permissions::from_mode(0o755)).unwrap();
    checkpoint_is_exact("executable bit");
    std::fs::remove_file(wt.join("src/a.txt")).unwrap();
    symlink("b.txt/inner.txt", wt.join("src/a.txt")).unwrap();
    checkpoint_is_exact("file to symlink");
    // A forged cache (any content, for any tree) is never trusted for another tree.
    let git_dir = env.git(&wt, &["rev-parse", "--absolute-git-dir"]);
    let name = Path::new(git_dir.trim()).file_name().unwrap();
    let cache_dir = repo.join(".git/bmad/snapshot/worktrees").join(name);
    std::fs::write(cache_dir.join("bmad-snapshot-index"), "garbage").unwrap();
    write(&wt, "src/c.txt", "c\n");
    checkpoint_is_exact("unreadable cache");
    // Most checkpoints write only what changed since the full cache; a torn or forged
    // delta is never trusted, and once many paths changed the full cache is written again.
    let delta = cache_dir.join("bmad-snapshot-index.delta");
    write(&wt, "src/d.txt", "d\n");
    checkpoint_is_exact("a delta");
    assert!(delta.exists(), "a small change writes a delta");
    let mut torn = std::fs::read(&delta).unwrap();
    torn.truncate(torn.len() - 3);
    std::fs::write(&delta, torn).unwrap();
    write(&wt, "src/d.txt", "dd\n");
    checkpoint_is_exact("a torn delta");
    for i in 0..100 {
        write(&wt, &format!("many/f{i}.txt"), "x\n");
    }
    checkpoint_is_exact("many new files");
    assert!(!delta.exists(), "many changes write the full cache");
    write(&wt, "many/f7.txt", "y\n");
    std::fs::remove_file(wt.join("many/f8.txt")).unwrap();
    checkpoint_is_exact("a change and a deletion in a delta");
    write(&wt, "many/f8.txt", "back\n");
    checkpoint_is_exact("a deleted path back");
    // A rollback rewrites files: the next checkpoint still sees them as they are.
    env.bmad(&wt, &["rollback", "2"]).success();
    checkpoint_is_exact("after a rollback");
    write(&wt, "src/a.txt", "3\n");
    checkpoint_is_exact("after a rollback, changed");
}

#[test]
fn checkpoint_numbers_match_rollback_even_on_a_chain_older_than_the_number_trailer() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (id, wt) = env.start(&repo, "numbers");
    write(&wt, "a.txt", "a\n");
    env.bmad(&wt, &["checkpoint", "-m", "two"]).success();
    // The tip as an older git-bmad wrote it: the same commit without `Bmad-Number`.
    let chain = format!("refs/bmad/sessions/{id}/checkpoints");
    let message = env.git(&repo, &["log", "-1", "--format=%B", &chain]);
    let message: String = message
        .lines()
        .filter(|l| !l.starts_with("Bmad-Number:"))
        .map(|l| format!("{l}\n"))
        .collect();
    let tree = env.git(&repo, &["rev-parse", &format!("{chain}^{{tree}}")]);
    let parents = env.git(&repo, &["log", "-1", "--format=%P", &chain]);
    let mut args = vec!["commit-tree", tree.trim(), "-m", message.trim_end()];
    for parent in parents.split_whitespace() {
        args.extend(["-p", parent]);
    }
    let old = env.git(&repo, &args);
    env.git(&repo, &["update-ref", &chain, old.trim()]);

    write(&wt, "b.txt", "b\n");
    let third = env.bmad(&wt, &["checkpoint", "-m", "three"]).success();
    assert!(third.stdout.contains("Checkpoint 3 "), "{}", third.stdout);
    write(&wt, "c.txt", "c\n");
    let fourth = env
        .bmad(&wt, &["checkpoint", "-m", "four", "--json"])
        .success()
        .json();
    assert_eq!(fourth["number"], 4);
    // The number is the one rollback takes.
    env.bmad(&wt, &["rollback", "3"]).success();
    assert!(wt.join("b.txt").exists() && !wt.join("c.txt").exists());
}

/// A secret the agent staged, then overwrote in the worktree, is only in the index: the
/// checkpoint's saved index keeps it out like any changed file, so once the index lets go
/// of it nothing of git-bmad's keeps it alive.
#[test]
fn a_staged_secret_is_kept_out_of_the_saved_index_and_dies_with_gc() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "staged");
    let key = format!("AKIA{}", "Q7ZK2M4XW6RT5PLN");
    write(&wt, "config/settings.py", &format!("AWS = \"{key}\"\n"));
    write(&wt, "work.txt", "staged work\n");
    env.git(&wt, &["add", "config/settings.py", "work.txt"]);
    write(&wt, "config/settings.py", "AWS = read_from_env()\n");
    let taken = env
        .bmad(&wt, &["checkpoint", "-m", "with staged", "--json"])
        .code(4);
    let json = taken.json();
    assert_eq!(
        json["kept_out"],
        serde_json::json!(["config/settings.py"]),
        "{json:#}"
    );
    assert_eq!(json["secrets"][0]["rule"], "aws-access-key-id", "{json:#}");
    // The rest of what was staged is in the saved index.
    let status = env.bmad(&wt, &["status", "--json"]).success().json();
    let index = status["checkpoints"][0]["checkpoint"]["index"]
        .as_str()
        .unwrap()
        .to_owned();
    let saved = env.git(&repo, &["ls-tree", "-r", "--name-only", &index]);
    assert!(saved.contains("work.txt"), "{saved}");
    // A rollback first saves the index: it stops, saying what to unstage.
    let refused = env.bmad(&wt, &["rollback", "1"]).code(4);
    assert!(
        refused.stderr.contains("config/settings.py")
            && refused.stderr.contains("git restore --staged"),
        "{}",
        refused.stderr
    );
    // The index lets go of it; gc then finds nothing of git-bmad's that keeps it.
    env.git(&wt, &["restore", "--staged", "config/settings.py"]);
    env.git(&repo, &["reflog", "expire", "--expire=now", "--all"]);
    env.git(&repo, &["gc", "--prune=now", "--quiet"]);
    assert!(!env.all_objects(&repo).contains(&key[4..]));
}

/// A staged file past what a checkpoint reads into memory (8 MiB) is vetted by its head, as
/// a file on disk is: a key in its first bytes keeps it out of the saved index, one past
/// them is not looked for.
#[test]
fn a_big_staged_file_is_vetted_by_its_head() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "staged");
    let key = format!("AKIA{}", "Q7ZK2M4XW6RT5PLN");
    let filler = "0123456789abcdef\n".repeat(600_000);
    write(&wt, "head.txt", &format!("AWS = \"{key}\"\n{filler}"));
    write(&wt, "tail.txt", &format!("{filler}AWS = \"{key}\"\n"));
    env.git(&wt, &["add", "head.txt", "tail.txt"]);
    write(&wt, "head.txt", "gone\n");
    write(&wt, "tail.txt", "gone\n");
    let taken = env
        .bmad(&wt, &["checkpoint", "-m", "with staged", "--json"])
        .code(4);
    let json = taken.json();
    assert_eq!(
        json["kept_out"],
        serde_json::json!(["head.txt"]),
        "{json:#}"
    );
}

/// What a commit already holds was judged when it was committed: a test fixture with a
/// fake key, moved, copied, staged or checked out again, never blocks a checkpoint, a
/// rollback or an undo. A new secret still does.
#[test]
fn committed_content_never_blocks_and_a_new_secret_still_does() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let fixture = format!("aws_access_key_id = AKIA{}\n", "Q7ZK2M4XW6RT5PLN");
    write(&repo, "tests/fixtures/creds.ini", &fixture);
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "a fixture with a fake key"]);
    let (_, wt) = env.start(&repo, "w");

    // git mv, a copy elsewhere (cp -a), and the copy staged.
    env.git(&wt, &["mv", "tests/fixtures/creds.ini", "tests/data.ini"]);
    std::fs::create_dir_all(wt.join("docs")).unwrap();
    std::fs::copy(wt.join("tests/data.ini"), wt.join("docs/example.ini")).unwrap();
    env.git(&wt, &["add", "docs/example.ini"]);
    let taken = env
        .bmad(&wt, &["checkpoint", "-m", "moved", "--json"])
        .success()
        .json();
    assert!(
        taken["kept_out"].as_array().is_none_or(|k| k.is_empty()),
        "{taken:#}"
    );
    let commit = taken["checkpoint"]["id"].as_str().unwrap().to_owned();
    let tree = env.git(&wt, &["ls-tree", "-r", "--name-only", &commit]);
    for path in ["tests/data.ini", "docs/example.ini"] {
        assert!(tree.lines().any(|l| l == path), "{path}: {tree}");
    }
    env.bmad(&wt, &["rollback", "1"]).success();
    assert!(wt.join("tests/fixtures/creds.ini").exists());
    env.bmad(&wt, &["undo"]).success();
    assert_eq!(read(&wt, "docs/example.ini"), fixture);

    // A key of the agent's own is new: kept out, as ever.
    let new = format!("aws_access_key_id = AKIA{}\n", "M4XW6RT5PLNQ7ZK2");
    write(&wt, "config/live.ini", &new);
    let taken = env
        .bmad(&wt, &["checkpoint", "-m", "live", "--json"])
        .code(4)
        .json();
    assert_eq!(taken["kept_out"], serde_json::json!(["config/live.ini"]));
    env.bmad(&wt, &["rollback", "1"]).code(4);
}

/// A checkpoint's new blobs and trees land as one pack (two files, not one file an object),
/// which git reads as its own, and small packs are rolled up before they pile up.
#[test]
fn a_checkpoint_of_many_files_is_one_pack_git_reads_and_packs_stay_few() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "packed");
    env.bmad(&wt, &["checkpoint", "-m", "before"]).success();
    let objects = repo.join(".git/objects");
    let loose = || {
        std::fs::read_dir(&objects)
            .unwrap()
            .flatten()
            .filter(|d| d.file_name().len() == 2)
            .map(|d| std::fs::read_dir(d.path()).unwrap().count())
            .sum::<usize>()
    };
    let packs = || {
        std::fs::read_dir(objects.join("pack"))
            .unwrap()
            .flatten()
            .filter(|f| f.path().extension().is_some_and(|x| x == "pack"))
            .count()
    };
    // A database without its `pack` folder yet, as git leaves some: made when needed.
    assert_eq!(packs(), 0);
    std::fs::remove_dir(objects.join("pack")).unwrap();
    let (loose_before, packs_before) = (loose(), 0);
    for i in 0..30 {
        write(
            &wt,
            &format!("src/part{}/f{i}.txt", i % 3),
            &format!("file {i}\n"),
        );
    }
    let cp = env
        .bmad(&wt, &["checkpoint", "-m", "thirty files", "--json"])
        .success()
        .json();
    assert_eq!(
        cp["checkpoint"]["tree"].as_str().unwrap(),
        env.worktree_tree(&wt)
    );
    assert_eq!(packs(), packs_before + 1, "one pack for the checkpoint");
    // 30 blobs, 5 trees, the commit and its journal note: all in it, none loose.
    assert_eq!(loose(), loose_before, "new loose objects");
    env.git(&repo, &["fsck", "--full", "--strict", "--no-dangling"]);

    for round in 0..20 {
        for i in 0..10 {
            write(
                &wt,
                &format!("more/r{round}/f{i}.txt"),
                &format!("{round} {i}\n"),
            );
        }
        env.bmad(&wt, &["checkpoint", "-m", &format!("round {round}")])
            .success();
    }
    // git rolls them up on its own, after the checkpoint that crossed the line returned.
    wait_for_repacks(&repo);
    assert!(
        packs() < 16,
        "{} packs after 21 packed checkpoints",
        packs()
    );
    env.git(&repo, &["fsck", "--full", "--strict", "--no-dangling"]);
    // What the packs hold survives git's own gc, and rollback restores from it.
    env.git(&repo, &["gc", "--quiet", "--prune=now"]);
    let number = cp["number"].as_u64().unwrap().to_string();
    env.bmad(&wt, &["rollback", &number]).success();
    assert_eq!(read(&wt, "src/part1/f4.txt"), "file 4\n");
    assert!(!wt.join("more").exists());
}

/// A checkpoint is dated as git would date a commit made in the same environment: the zone
/// `TZ` names (with or without a leading `:`), a POSIX rule no zone file holds, the
/// machine's own zone when `TZ` is unset, and the dates `GIT_*_DATE` give.
#[test]
fn checkpoints_are_dated_in_the_time_zone_git_would_use() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (id, wt) = env.start(&repo, "zones");
    let chain = format!("refs/bmad/sessions/{id}/checkpoints");
    let given = [
        ("GIT_COMMITTER_DATE", "2005-04-07T22:13:13+0200"),
        ("GIT_AUTHOR_DATE", "2005-04-07T22:13:13 -0700"),
    ];
    let cases: [(&[(&str, &str)], bool); 5] = [
        (&[("TZ", "Asia/Kolkata")], false),
        (&[("TZ", ":America/St_Johns")], false),
        (&[("TZ", "<+0845>-8:45")], false),
        (&[], true),
        (&given, false),
    ];
    // `%ad|%cd` as raw dates: `<seconds> <offset>` each.
    let dates = |commit: &str| {
        env.git(
            &wt,
            &["log", "-1", "--date=raw", "--format=%ad|%cd", commit],
        )
        .trim()
        .to_owned()
    };
    for (i, (vars, unset_tz)) in cases.into_iter().enumerate() {
        write(&wt, "zone.txt", &format!("case {i}\n"));
        let mut checkpoint = env.bmad_command(&wt);
        let mut commit_tree = env.git_command(&wt);
        for cmd in [&mut checkpoint, &mut commit_tree] {
            cmd.envs(vars.iter().copied());
            if unset_tz {
                cmd.env_remove("TZ");
            }
        }
        let run = |cmd: &mut std::process::Command, args: &[&str]| {
            Run::from(cmd.args(args).output().unwrap()).success().stdout
        };
        run(&mut checkpoint, &["checkpoint", "-m", "zone"]);
        let gits = run(
            &mut commit_tree,
            &["commit-tree", "-m", "git's own", "HEAD^{tree}"],
        );
        let (ours, gits) = (dates(&chain), dates(gits.trim()));
        for (ours, gits) in ours.split('|').zip(gits.split('|')) {
            let (our_secs, our_zone) = ours.split_once(' ').unwrap();
            let (git_secs, git_zone) = gits.split_once(' ').unwrap();
            assert_eq!(
                our_zone, git_zone,
                "case {i} {vars:?}: ours {ours}, git's {gits}"
            );
            let apart = our_secs.parse::<i64>().unwrap() - git_secs.parse::<i64>().unwrap();
            assert!(
                apart.abs() <= 5,
                "case {i} {vars:?}: ours {ours}, git's {gits}"
            );
        }
        if vars == given.as_slice() {
            assert_eq!(dates(&chain), "1112937193 -0700|1112904793 +0200");
        }
    }
}

/// A name git refuses in a tree (a `.GIT` folder an agent made, which a checkout on a
/// case-insensitive disk would take for the repository's own) is refused as `git add -A`
/// refuses it: the checkpoint fails naming the path and what to do, records nothing, and
/// goes once the folder is renamed.
#[test]
fn a_name_git_refuses_in_a_tree_fails_the_checkpoint_with_what_to_do() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (id, wt) = env.start(&repo, "work");
    let chain = format!("refs/bmad/sessions/{id}/checkpoints");
    let before = env.git(&repo, &["rev-parse", &chain]);
    write(&wt, ".GIT/hooks/post-checkout", "#!/bin/sh\ntouch pwned\n");
    let add = env
        .git_command(&wt)
        .env("GIT_INDEX_FILE", env.root().join("an-index"))
        .args(["add", "-A"])
        .output()
        .unwrap();
    assert!(!add.status.success(), "git refuses it too");
    let refused = env.bmad(&wt, &["checkpoint", "-m", "refused"]).code(1);
    assert!(
        refused
            .stderr
            .contains(".GIT/hooks/post-checkout cannot be recorded in a tree")
            && refused.stderr.contains("rename it"),
        "{}",
        refused.stderr
    );
    assert_eq!(env.git(&repo, &["rev-parse", &chain]), before);
    std::fs::rename(wt.join(".GIT"), wt.join("git-hooks")).unwrap();
    env.bmad(&wt, &["checkpoint", "-m", "renamed"]).success();
    let tree = env.git(&repo, &["ls-tree", "-r", "--name-only", &chain]);
    assert!(tree.contains("git-hooks/hooks/post-checkout"), "{tree}");
}

/// A checkpoint saves the index exactly when it records something other than HEAD, however
/// git left its cache of trees: a change staged deep in a folder, one staged and taken back
/// (the folders on its way still marked changed), a folder removed, a mode, a new folder.
/// The saved index is what `git write-tree` makes of it.
#[test]
fn a_checkpoint_saves_the_index_exactly_when_it_differs_from_head() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let (_, wt) = env.start(&repo, "staged");
    for (path, text) in [
        ("a/b/c.txt", "c\n"),
        ("a/b/d.txt", "d\n"),
        ("a/run.sh", "echo run\n"),
        ("e/f.txt", "f\n"),
        ("top.txt", "top\n"),
    ] {
        write(&wt, path, text);
    }
    env.git(&wt, &["add", "-A"]);
    env.git(&wt, &["commit", "-qm", "folders"]);
    let steps: [(&str, &[&[&str]], bool); 6] = [
        ("nothing staged", &[], false),
        ("a change deep in a folder", &[&["add", "a/b/c.txt"]], true),
        (
            "staged, then taken back",
            &[&["reset", "-q", "--", "a/b/c.txt"]],
            false,
        ),
        (
            "a folder removed",
            &[&["rm", "-rq", "--cached", "a/b"]],
            true,
        ),
        (
            "a mode",
            &[
                &["reset", "-q", "--", "a/b"],
                &["update-index", "--chmod=+x", "a/run.sh"],
            ],
            true,
        ),
        (
            "a new folder",
            &[
                &["update-index", "--chmod=-x", "a/run.sh"],
                &["add", "n/m/new.txt"],
            ],
            true,
        ),
    ];
    for (round, (what, commands, differs)) in steps.into_iter().enumerate() {
        write(&wt, "a/b/c.txt", &format!("c, round {round}\n"));
        write(&wt, "n/m/new.txt", "new\n");
        for args in commands {
            env.git(&wt, args);
        }
        let cached = env
            .git_command(&wt)
            .args(["diff", "--cached", "--quiet"])
            .status()
            .expect("spawn git");
        assert_eq!(!cached.success(), differs, "{what}: git's view");
        env.bmad(&wt, &["checkpoint", "-m", what]).success();
        let status = env.bmad(&wt, &["status", "--json"]).success().json();
        let index = &status["checkpoints"][0]["checkpoint"]["index"];
        assert_eq!(!index.is_null(), differs, "{what}: {status:#}");
        if let Some(index) = index.as_str() {
            assert_eq!(
                env.git(&repo, &["rev-parse", &format!("{index}^{{tree}}")]),
                env.git(&wt, &["write-tree"]),
                "{what}"
            );
        }
    }
    // An entry naming an object the repository lacks is never saved as if it were there:
    // git's own write-tree says what is wrong.
    let ghost = "100644,1234567890123456789012345678901234567890,a/ghost.txt";
    env.git(&wt, &["update-index", "--add", "--cacheinfo", ghost]);
    write(&wt, "a/b/c.txt", "c, with a ghost\n");
    let refused = env.bmad(&wt, &["checkpoint", "-m", "ghost"]).code(1);
    assert!(
        refused.stderr.contains("invalid object"),
        "{}",
        refused.stderr
    );
}
