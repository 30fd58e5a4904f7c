//! `git bmad scan`: secrets in staged changes, files and commits, as a user meets them.

use crate::common::{write, TestEnv};

/// Looks like a live Stripe key; made up for these tests.
const STRIPE: &str = "sk_live_4kR9tQ2mZ7xW1pL8vN3bH6cJ";

#[test]
fn staged_secrets_block_with_file_and_line() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    env.bmad(&repo, &["scan"]).success();
    write(
        &repo,
        "app/settings.py",
        &format!("DEBUG = False\nSTRIPE_KEY = \"{STRIPE}\"\n"),
    );
    env.git(&repo, &["add", "app/settings.py"]);
    let run = env.bmad(&repo, &["scan"]).code(4);
    assert!(
        run.stdout.contains("app/settings.py:2:15"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("stripe-key"), "{}", run.stdout);
    assert!(
        !run.stdout.contains(STRIPE),
        "the secret itself is never printed: {}",
        run.stdout
    );
    assert!(
        run.stderr.contains("rotate"),
        "says what to do: {}",
        run.stderr
    );
    let json = env
        .bmad(&repo, &["scan", "--staged", "--json"])
        .code(4)
        .json();
    assert_eq!(json["blocking"], 1);
    assert_eq!(json["findings"][0]["line"], 2);

    // Unstaged content is not what the next commit holds.
    env.git(&repo, &["reset", "-q"]);
    env.bmad(&repo, &["scan"]).success();

    write(&repo, ".env", "MODE=dev\n");
    env.git(&repo, &["add", "-f", ".env"]);
    let run = env.bmad(&repo, &["scan"]).code(4);
    assert!(run.stdout.contains("env-file"), "{}", run.stdout);
}

#[test]
fn files_and_directories_skip_ignored_files() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(&repo, "logs/run.log", &format!("{STRIPE}\n"));
    env.bmad(&repo, &["scan", "logs"]).success();
    write(&repo, "src/deep/keys.txt", &format!("key={STRIPE}\n"));
    let run = env.bmad(&repo.join("src"), &["scan", "deep"]).code(4);
    assert!(
        run.stdout.contains("src/deep/keys.txt:1:5"),
        "{}",
        run.stdout
    );
}

#[test]
fn commit_ranges_name_the_commit() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    write(
        &repo,
        "deploy.sh",
        &format!("curl -u {STRIPE}: https://api.stripe.com\n"),
    );
    env.git(&repo, &["add", "deploy.sh"]);
    env.git(&repo, &["commit", "-q", "-m", "deploy script"]);
    let head = env.git(&repo, &["rev-parse", "HEAD"]);
    let run = env.bmad(&repo, &["scan", "HEAD~1..HEAD"]).code(4);
    assert!(run.stdout.contains(&head.trim()[..10]), "{}", run.stdout);
    env.bmad(&repo, &["scan", "HEAD~1..HEAD~1"]).success();
    let run = env.bmad(&repo, &["scan", "no-such-thing"]).code(2);
    assert!(run.stderr.contains("neither a file"), "{}", run.stderr);
}

#[test]
fn allow_comments_are_for_humans_not_agents() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let fixture = format!("KEY = \"{STRIPE}\"  # bmad:allow test fixture\n");
    write(&repo, "fixture.py", &fixture);
    env.git(&repo, &["add", "fixture.py"]);
    env.bmad(&repo, &["scan"]).success();
    env.bmad(&repo, &["scan", "--strict"]).code(4);
    env.git(&repo, &["commit", "-q", "-m", "fixture"]);

    let (_, wt) = env.start(&repo, "agent");
    write(&wt, "more.py", &fixture);
    env.git(&wt, &["add", "more.py"]);
    let run = env.bmad(&wt, &["scan"]).code(4);
    assert!(run.stdout.contains("more.py:1:8"), "{}", run.stdout);
}

#[test]
fn a_path_outside_the_repository_is_named_plainly() {
    let env = TestEnv::new();
    let repo = env.repo("proj");
    let elsewhere = env.root().join("elsewhere");
    write(&elsewhere, "x.txt", "x\n");
    let run = env
        .bmad(&repo, &["scan", elsewhere.to_str().unwrap()])
        .code(1);
    assert!(
        run.stderr.contains("is outside this repository's worktree")
            && !run.stderr.contains("ls-files"),
        "{}",
        run.stderr
    );
}
