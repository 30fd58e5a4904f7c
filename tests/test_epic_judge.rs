//! The judge out of the agents' reach: before a story's branch is pushed, git-bmad runs the
//! tests itself, with the test command and scripts of the story's base, on a clean checkout
//! of exactly the commit it pushes, with none of the user's credentials. Each agent below
//! misbehaves one way through `epic run`; none gets its story done, a push or a pull request
//! without a human's say, and each misbehaviour is named in the story's record. A change to
//! the judge's tools, tests removed and work outside the story's scope wait for a human at
//! the epic's judge gate, with the diff or the list.

use std::path::Path;

use crate::common::{read, write, TestEnv};
use crate::test_epic::{dev_behaviour, epic_project, status, story};

pub(crate) const STORY: &str = "3-1-api-client";

/// A `gh` that, like the real one, does nothing without a login: `GH_TOKEN` or a
/// `hosts.yml` in its config directory. Every call is logged with whether it could act.
const GH: &str = r#"#!/bin/sh
dir="${GH_CONFIG_DIR:-$HOME/.config/gh}"
if [ -z "$GH_TOKEN" ] && [ ! -f "$dir/hosts.yml" ]; then
  echo "gh $* (not logged in)" >> "$HOME/agent/gh.log"
  echo "To get started with GitHub CLI, please run:  gh auth login" >&2
  exit 4
fi
echo "gh $*" >> "$HOME/agent/gh.log"
case "$1 $2" in
  'pr list') exit 0 ;;
  'pr create') echo "https://github.com/example/proj/pull/$$" ;;
esac
"#;

/// The user's credentials, as a real session has them.
const USER_VARS: &[(&str, &str)] = &[
    ("GH_TOKEN", "gho_usertoken0123456789abcdefghijklmnopqr"),
    ("SSH_AUTH_SOCK", "/tmp/ssh-agent.sock"),
    ("ANTHROPIC_API_KEY", "sk-ant-user-key"),
];

/// The epic project, with a suite that counts: each `tests/*.sh` is a test (TAP `ok`
/// lines), and any source file that says FAIL fails the run.
pub(crate) fn counted_project(env: &TestEnv) -> std::path::PathBuf {
    let repo = epic_project(env);
    env.executable("gh", GH);
    write(
        &repo,
        "test.sh",
        "#!/bin/sh\n# Each tests/*.sh is one test; a source file that says FAIL fails the suite.\nn=0\nfor t in tests/*.sh; do\n  [ -f \"$t\" ] || continue\n  sh \"$t\" || { echo \"not ok $t\"; exit 1; }\n  n=$((n+1)); echo \"ok $n - $t\"\ndone\n! grep -rq FAIL src 2>/dev/null\n",
    );
    for t in ["api", "store", "sync"] {
        write(&repo, &format!("tests/{t}.sh"), "true\n");
    }
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "a suite that counts"]);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    repo
}

pub(crate) fn run_story(env: &TestEnv, repo: &Path) -> crate::common::Run {
    env.bmad_with(repo, &["epic", "run", "3", "--stories", STORY], USER_VARS)
}

/// Answer the epic's gate as the user, who is logged in to `gh`.
pub(crate) fn answer_epic(env: &TestEnv, repo: &Path, answer: &str) -> crate::common::Run {
    env.bmad_with(repo, &["answer", answer, "-s", "epic-3"], USER_VARS)
}

/// The story failed, for `why` (every `&&`-joined part of it), with nothing pushed or
/// offered.
fn failed_unpushed(env: &TestEnv, repo: &Path, why: &str) {
    let s = status(env, repo);
    let st = story(&s, STORY);
    assert_eq!(st["stage"], "failed", "{s:#}");
    let reason = st["state"]["reason"].as_str().unwrap_or_default();
    for part in why.split(" && ") {
        assert!(reason.contains(part), "expected {part:?} in: {reason}");
    }
    assert!(st["state"]["pr"].is_null(), "{st:#}");
    let gh = std::fs::read_to_string(env.root().join("home/agent/gh.log")).unwrap_or_default();
    assert!(!gh.contains("pr create"), "{gh}");
    assert!(!gh.contains("pr merge"), "{gh}");
    let remote = env.git(repo, &["ls-remote", "--heads", "origin"]);
    assert!(!remote.contains(&format!("bmad/{STORY}")), "{remote}");
}

/// The story waits at the epic's judge gate for `why` (every `&&`-joined part of it), with
/// each rule it broke journaled in its session, and nothing pushed or offered.
fn asked_unpushed(env: &TestEnv, repo: &Path, why: &str, rules: &[&str]) -> serde_json::Value {
    let s = status(env, repo);
    let st = story(&s, STORY);
    assert_eq!(st["stage"], "gated", "{s:#}");
    assert_eq!(s["gate"]["id"], format!("judge:{STORY}"), "{s:#}");
    let reason = st["state"]["reason"].as_str().unwrap_or_default();
    for part in why.split(" && ") {
        assert!(reason.contains(part), "expected {part:?} in: {reason}");
    }
    assert!(
        reason.contains("git bmad answer -s epic-3 continue"),
        "{reason}"
    );
    let wt = env.root().join(format!("proj.{STORY}"));
    let events = env.bmad(&wt, &["journal", "--json"]).success().json();
    for rule in rules {
        assert!(
            events
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["event"] == "policy_violation"
                    && e["detail"]["rule"] == *rule
                    && e["detail"]["hook"] == "judge"),
            "no {rule} violation in {events:#}"
        );
    }
    assert!(st["state"]["pr"].is_null(), "{st:#}");
    let remote = env.git(repo, &["ls-remote", "--heads", "origin"]);
    assert!(!remote.contains(&format!("bmad/{STORY}")), "{remote}");
    s["gate"].clone()
}

#[test]
fn an_agent_that_rewrites_the_judges_tools_waits_for_a_human_with_the_diff() {
    // (what the agent does, the file it names, a line of the diff, the human's answer, and
    // what the story then comes to)
    let cases = [
        (
            "mkdir -p src && echo FAIL > src/broken.rs\nprintf '#!/bin/sh\\nexit 0\\n' > test.sh",
            "test.sh",
            "+exit 0",
            "abort",
            "failed: a human answered abort at its judge gate",
        ),
        // Let stand, the story is still judged by the base's command: the suite ran.
        (
            "sed -i 's#./test.sh#true#' .bmad/config.yaml",
            ".bmad/config.yaml",
            "+  test_command: true",
            "continue",
            "done: `./test.sh` passed on && 3 tests passed && a human accepted",
        ),
        // A story that sets up CI, accepted, with honest work: done, and the evidence says
        // who let the change stand.
        (
            "mkdir -p .github/workflows && echo 'on: push' > .github/workflows/ci.yml",
            ".github/workflows/ci.yml",
            "+on: push",
            "continue",
            "done: a human accepted that it changed files git-bmad judges it with (.github/workflows/ci.yml)",
        ),
    ];
    for (cheat, file, diff, answer, end) in cases {
        let env = TestEnv::new();
        let repo = counted_project(&env);
        dev_behaviour(&env, cheat);
        run_story(&env, &repo).code(3);
        let gate = asked_unpushed(
            &env,
            &repo,
            &format!("changed files git-bmad judges it with ({file})"),
            &["judge-changed"],
        );
        let evidence = gate["evidence"].as_str().unwrap_or_default();
        assert!(
            evidence.contains(&format!("judge-changed: {file}")) && evidence.contains(diff),
            "{evidence}"
        );
        // Asked again, it still waits: the story does not run again.
        env.bmad(&repo, &["epic", "resume", "3"]).code(3);
        assert_eq!(read(&env.root(), "home/agent/dev.log").lines().count(), 1);

        let (stage, why) = end.split_once(": ").unwrap();
        let answered = answer_epic(&env, &repo, answer);
        if stage == "done" {
            answered.success();
            let s = status(&env, &repo);
            let st = story(&s, STORY);
            assert_eq!(st["stage"], "done", "{s:#}");
            let tests = st["state"]["tests"].as_str().unwrap_or_default();
            for part in why.split(" && ") {
                assert!(tests.contains(part), "expected {part:?} in: {tests}");
            }
            assert!(st["state"]["pr"].is_string(), "{st:#}");
        } else {
            answered.code(5);
            failed_unpushed(&env, &repo, &format!("{why} && {file}"));
        }
    }
}

#[test]
fn weakened_tests_wait_for_a_human_deleted_emptied_and_fewer_fail() {
    let cases = [
        ("rm tests/store.sh", "tests/store.sh"),
        (": > tests/sync.sh", "tests/sync.sh"),
        // Renamed out of the runner's sight.
        ("mv tests/api.sh tests/api.sh.off", "tests/api.sh"),
    ];
    for (cheat, file) in cases {
        let env = TestEnv::new();
        let repo = counted_project(&env);
        dev_behaviour(&env, cheat);
        run_story(&env, &repo).code(3);
        asked_unpushed(
            &env,
            &repo,
            &format!("deleted or emptied test files: {file}"),
            &["tests-removed"],
        );
        answer_epic(&env, &repo, "skip").code(5);
        failed_unpushed(
            &env,
            &repo,
            &format!("a human answered skip at its judge gate && {file}"),
        );
    }
    // Moved, whole, where the runner does not look: only the count says so, and that fails.
    let env = TestEnv::new();
    let repo = counted_project(&env);
    dev_behaviour(
        &env,
        "mkdir -p tests/disabled && mv tests/api.sh tests/disabled/api.sh",
    );
    run_story(&env, &repo).code(5);
    failed_unpushed(
        &env,
        &repo,
        "`./test.sh` passes 2 tests on && , 3 at the base && tests were removed or skipped",
    );
}

/// Work outside the story's declared `touches`, or inside another story's, waits for a
/// human with the list; let stand, it is judged on and done, the evidence saying so.
#[test]
fn work_outside_the_storys_scope_waits_for_a_human_with_the_list() {
    let env = TestEnv::new();
    let repo = counted_project(&env);
    // 3-1 declares `src/api`; its agent also writes into 3-2's `src/storage` and elsewhere.
    dev_behaviour(
        &env,
        "mkdir -p src/storage lib && echo '// x' > src/storage/cache.rs && echo '// y' > lib/util.rs",
    );
    run_story(&env, &repo).code(3);
    let gate = asked_unpushed(
        &env,
        &repo,
        "changed outside its scope: && lib/util.rs && src/storage/cache.rs (3-2-storage's)",
        &["out-of-scope"],
    );
    assert!(
        gate["question"]
            .as_str()
            .unwrap_or_default()
            .contains("continue lets that stand"),
        "{gate:#}"
    );
    answer_epic(&env, &repo, "continue").success();
    let s = status(&env, &repo);
    let st = story(&s, STORY);
    assert_eq!(st["stage"], "done", "{s:#}");
    let tests = st["state"]["tests"].as_str().unwrap_or_default();
    assert!(
        tests.contains("a human accepted that it changed outside its scope: "),
        "{tests}"
    );
}

#[test]
fn a_suite_that_goes_red_after_the_agents_said_done_is_caught_on_the_pushed_commit() {
    let env = TestEnv::new();
    let repo = counted_project(&env);
    // The dev's tests were green in its worktree only because of a file git ignores there:
    // the pushed commit is what is judged.
    write(&repo, ".gitignore", "*.log\nlocal/\n");
    env.git(&repo, &["commit", "-qam", "ignore local/"]);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    write(&repo, "tests/needs-local.sh", "test -f local/ready\n");
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-qm", "a test that needs a local file"]);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    dev_behaviour(&env, "mkdir -p local && touch local/ready");
    run_story(&env, &repo).code(5);
    failed_unpushed(&env, &repo, "`./test.sh` fails on");
    // The agent's worktree is green; the checkout of the commit is not.
    let wt = env.root().join(format!("proj.{STORY}"));
    env.sh(&wt, "./test.sh").success();
}

#[test]
fn the_tests_run_with_none_of_the_users_credentials_and_cannot_merge() {
    let env = TestEnv::new();
    let repo = counted_project(&env);
    // The agent's new test reads its environment and tries to merge with the user's gh
    // (and tests the story's code, so it is evidence of it).
    dev_behaviour(
        &env,
        "mkdir -p src/api && echo '// client' > src/api/client.rs\ncat > tests/evil.sh <<'X'\nenv > \"$HOME/agent/test-env.txt\"\npwd > \"$HOME/agent/test-dir.txt\"\ngh pr merge --admin --squash 1 || true\ngit config --get credential.helper >> \"$HOME/agent/test-env.txt\" || true\ntest -f src/api/client.rs\nX\n",
    );
    // A credential helper in the user's git config, as `gh auth setup-git` writes.
    env.git(
        &repo,
        &[
            "config",
            "--global",
            "credential.helper",
            "!gh auth git-credential",
        ],
    );
    let run = run_story(&env, &repo);
    run.success();
    let seen = read(&env.root(), "home/agent/test-env.txt");
    for (key, value) in USER_VARS {
        assert!(!seen.contains(key), "{key} reached the tests: {seen}");
        assert!(!seen.contains(value), "{key}'s value reached the tests");
    }
    assert!(!seen.contains("gh auth git-credential"), "{seen}");
    // Not the agent's worktree: a checkout of its own.
    let dir = read(&env.root(), "home/agent/test-dir.txt");
    assert!(!dir.contains(&format!("proj.{STORY}")), "{dir}");
    // The test code did try (in the step's checks and in the judge's run), and got nothing.
    let gh = read(&env.root(), "home/agent/gh.log");
    let merges: Vec<&str> = gh.lines().filter(|l| l.contains("pr merge")).collect();
    assert!(!merges.is_empty(), "the test code never ran: {gh}");
    assert!(
        merges.iter().all(|l| l.ends_with("(not logged in)")),
        "{gh}"
    );
    // The story itself is done, with the evidence of the run.
    let s = status(&env, &repo);
    let tests = story(&s, STORY)["state"]["tests"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        tests.contains("4 tests passed (3 at the base, TAP)"),
        "{tests}"
    );
}

/// The same cheat in every era's pipeline: a v4 Dev and a v6.11 `bmad-build-auto` that
/// leave broken code and a test script that passes anyway.
#[test]
fn in_every_era_an_agent_that_rewrites_the_test_script_waits_for_a_human() {
    const CHEAT: &str =
        "mkdir -p src && echo FAIL > src/broken.rs\nprintf '#!/bin/sh\\nexit 0\\n' > test.sh\n";
    let judged = |env: &TestEnv, repo: &Path, epic: &str, key: &str| {
        let s = env
            .bmad(repo, &["epic", "status", epic, "--json"])
            .success()
            .json();
        let st = story(&s, key);
        assert_eq!(st["stage"], "gated", "{s:#}");
        assert_eq!(s["gate"]["id"], format!("judge:{key}"), "{s:#}");
        let reason = st["state"]["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("changed files git-bmad judges it with (test.sh)"),
            "{reason}"
        );
        assert!(st["state"]["pr"].is_null(), "{st:#}");
    };

    let env = TestEnv::new();
    let repo = crate::test_epic_v4::v4_project(&env);
    crate::test_epic_v4::behaviour(
        &env,
        "dev",
        &format!("{CHEAT}set_status 'Ready for Review'\nresult 'implemented'\n"),
    );
    env.bmad(&repo, &["epic", "run", "4", "--stories", "4.1"])
        .code(3);
    judged(&env, &repo, "4", "4.1.api-client");

    let env = TestEnv::new();
    let repo = env.repo("ledger");
    crate::common::copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/epic/v611"),
        &repo,
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "bmad v6.11 project"]);
    env.executable("claude", crate::test_supervisor::FAKE_CLAUDE);
    crate::test_supervisor::agent_behaviour(
        &env,
        "build",
        &format!("key=$BMAD_ARGS\nspec=\"_bmad-output/implementation-artifacts/spec-$key.md\"\nbase=$(git rev-parse HEAD)\n{CHEAT}sed -i \"s/^status: .*/status: 'done'/\" \"$spec\"\nsed -i \"s/^review_loop_iteration: .*/&\\nbaseline_revision: $base/\" \"$spec\"\nresult \"built $key\"\n"),
    );
    crate::test_supervisor::agent_behaviour(&env, "review-1", "result 'Outcome: Approve'\n");
    env.bmad(&repo, &["epic", "run", "5", "--stories", "5-1"])
        .code(3);
    judged(&env, &repo, "5", "5-1-parser");
}

/// The epic's own record rewritten by a file write under `.git`: `epic resume` does not run
/// on it (nothing is marked failed, nothing repeated), and says how to put it back.
#[test]
fn an_epic_journal_rewritten_under_git_stops_resume_and_says_how_to_put_it_back() {
    let env = TestEnv::new();
    let repo = epic_project(&env);
    env.bmad(&repo, &["epic", "run", "3", "--stories", STORY])
        .success();
    let id = env
        .bmad(&repo, &["list", "--json"])
        .success()
        .json()
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "epic-3")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let notes = format!("refs/notes/bmad/{id}");
    let oldest = env.git(&repo, &["rev-list", "--reverse", &notes]);
    let oldest = oldest.lines().next().unwrap().to_owned();
    let file = repo.join(format!(".git/{notes}"));
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, format!("{oldest}\n")).unwrap();

    let resumed = env.bmad(&repo, &["epic", "resume", "3"]).code(4);
    assert!(
        resumed
            .stderr
            .contains(&format!("{notes} was moved outside git-bmad"))
            && resumed.stderr.contains("git update-ref"),
        "{}",
        resumed.stderr
    );
    let dev_runs = read(&env.root(), "home/agent/dev.log");
    assert_eq!(dev_runs.lines().count(), 1, "{dev_runs}");
}

/// The judge's tools are also what its script runs in turn: an agent that guts the helper
/// the test script sources, rather than the script, is caught the same way.
#[test]
fn an_agent_that_guts_what_the_test_script_sources_waits_for_a_human() {
    let env = TestEnv::new();
    let repo = counted_project(&env);
    write(
        &repo,
        "scripts/check.sh",
        "! grep -rq FAIL src 2>/dev/null\n",
    );
    write(&repo, "test.sh", "#!/bin/sh\n. scripts/check.sh\n");
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-qm", "the check in a helper"]);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    dev_behaviour(
        &env,
        "mkdir -p src && echo FAIL > src/broken.rs\necho true > scripts/check.sh",
    );
    run_story(&env, &repo).code(3);
    asked_unpushed(
        &env,
        &repo,
        "it changed files git-bmad judges it with (scripts/check.sh); changed outside its scope: src/broken.rs; git bmad",
        &["judge-changed"],
    );
}

/// A project whose suite needs a submodule: the judge's clean checkout has it, from the
/// repository's own copy (no network), at the commit the story's tree records.
#[test]
fn the_judges_checkout_has_the_projects_submodules() {
    let env = TestEnv::new();
    let repo = counted_project(&env);
    let lib = env.repo("lib");
    write(&lib, "check.sh", "echo 'ok - the library is there'\n");
    env.git(&lib, &["add", "-A"]);
    env.git(&lib, &["commit", "-qm", "a library"]);
    env.git(
        &repo,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            &lib.to_string_lossy(),
            "vendor/lib",
        ],
    );
    write(
        &repo,
        "test.sh",
        &format!("{}sh vendor/lib/check.sh\n", read(&repo, "test.sh")),
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-qm", "the suite needs the library"]);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    // The library's own repository is gone: only the project's copy of it is left.
    std::fs::remove_dir_all(&lib).unwrap();
    run_story(&env, &repo).success();
    let s = status(&env, &repo);
    let st = story(&s, STORY);
    assert_eq!(st["stage"], "done", "{s:#}");
    let tests = st["state"]["tests"].as_str().unwrap_or_default();
    assert!(tests.contains("3 tests passed (3 at the base"), "{tests}");
    // Its session, submodule and all, is removed like any other (git alone refuses), but
    // not while the submodule holds work of its own, which no checkpoint keeps.
    let wt = env.root().join(format!("proj.{STORY}"));
    write(&wt, "vendor/lib/check.sh", "echo 'ok - edited'\n");
    let refused = env.bmad(&repo, &["remove", STORY]);
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert!(
        refused
            .stderr
            .contains("its submodule vendor/lib holds commits, edits or untracked files"),
        "{}",
        refused.stderr
    );
    assert_eq!(read(&wt, "vendor/lib/check.sh"), "echo 'ok - edited'\n");
    env.git(&wt.join("vendor/lib"), &["checkout", "--", "check.sh"]);
    env.bmad(&repo, &["remove", STORY]).success();
    assert!(!env.root().join(format!("proj.{STORY}")).exists());
}

/// The epic project with a Python suite run by unittest: two real tests.
fn unittest_project(env: &TestEnv) -> std::path::PathBuf {
    let repo = epic_project(env);
    env.executable("gh", GH);
    write(
        &repo,
        ".bmad/config.yaml",
        "checks:\n  test_command: python3 -m unittest discover -s tests -t .\nrunners:\n  default: claude\n",
    );
    write(&repo, "tests/__init__.py", "");
    write(
        &repo,
        "pyproject.toml",
        "[project]\nname = \"proj\"\nversion = \"0.1.0\"\n",
    );
    write(
        &repo,
        "tests/test_api.py",
        "import unittest\n\n\nclass Api(unittest.TestCase):\n    def test_get(self):\n        self.assertEqual(1 + 1, 2)\n\n    def test_put(self):\n        self.assertTrue(\"put\")\n",
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "a unittest suite"]);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    repo
}

/// Tests that stop running are no evidence: skipped or expected to fail, they are not
/// passed; a suite whose package init exits before any test runs counts none where the base
/// counted two. Neither story is done, and nothing is pushed.
#[test]
fn skipped_tests_and_a_suite_that_runs_nothing_are_not_evidence() {
    let cases = [
        (
            "sed -i 's/    def test_/    @unittest.skip(\"later\")\\n    def test_/' tests/test_api.py",
            "passes 0 tests on && 2 at the base && tests were removed or skipped",
        ),
        (
            // A stub whose tests are marked as failing, as the stub makes them.
            "sed -i 's/    def test_/    @unittest.expectedFailure\\n    def test_/; s/1 + 1, 2/1 + 1, 3/; s/assertTrue(\"put\")/assertTrue(\"\")/' tests/test_api.py",
            "passes 0 tests on && 2 at the base",
        ),
        (
            "sed -i '1i import os; os._exit(0)' tests/test_api.py",
            "reports no passed test, where 2 passed at the base && unittest && the tests did not run",
        ),
    ];
    for (cheat, why) in cases {
        let env = TestEnv::new();
        let repo = unittest_project(&env);
        dev_behaviour(&env, cheat);
        run_story(&env, &repo).code(5);
        failed_unpushed(&env, &repo, why);
    }
    // Test infrastructure is the judge's: a package init that turns failures into passes,
    // or a pytest section that selects nothing, waits for a human with the diff.
    for (cheat, file) in [
        (
            "printf 'import unittest\\nunittest.TestResult.addFailure = unittest.TestResult.addSuccess\\n' > tests/__init__.py",
            "tests/__init__.py",
        ),
        (
            "printf '[tool.pytest.ini_options]\\naddopts = \"-k nothing\"\\n' >> pyproject.toml",
            "pyproject.toml",
        ),
    ] {
        let env = TestEnv::new();
        let repo = unittest_project(&env);
        dev_behaviour(&env, cheat);
        run_story(&env, &repo).code(3);
        asked_unpushed(
            &env,
            &repo,
            &format!("changed files git-bmad judges it with ({file})"),
            &["judge-changed"],
        );
    }
    // The honest dev's story, on the same suite, is done.
    let env = TestEnv::new();
    let repo = unittest_project(&env);
    run_story(&env, &repo).success();
    let s = status(&env, &repo);
    assert_eq!(story(&s, STORY)["stage"], "done", "{s:#}");
}
