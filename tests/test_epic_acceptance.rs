//! Acceptance tests the dev never sees, and tests that prove nothing. Before a story's dev
//! begins, an agent of its own writes failing acceptance tests from the story's criteria;
//! git-bmad keeps them where no step of the story reaches (not the branch, not a ref, not
//! an object of the repository) and its judge runs them over the commit it pushes. A dev
//! that games the tests it can see gets no done; one whose new tests all pass without its
//! code waits for a human; honest work is done, each through `epic run`.

use std::path::{Path, PathBuf};

use crate::common::{read, write, TestEnv};
use crate::test_epic::{status, story};
use crate::test_epic_judge::{answer_epic, counted_project, run_story, STORY};
use crate::test_supervisor::agent_behaviour;

/// The acceptance agent, as the test architect would answer the story ("an API client that
/// doubles"): one test file, run by `./test.sh` like every `tests/*.sh`, that needs the
/// behaviour. The marker it writes is built as it runs, so no file the test shows an agent
/// holds it.
const ACCEPTANCE: &str = r##"key=$BMAD_ARGS
m=ACCEPTANCE
mkdir -p tests
{
  echo "# ${m}-MARKER-7c1: $key doubles any number"
  echo '. ./src/api/client.sh && [ "$(double 4)" = 8 ] && [ "$(double 21)" = 42 ]'
} > tests/accept_client.sh
sh ./test.sh >/dev/null 2>&1 && echo "green before the work" >> "$HOME/agent/acceptance.log"
result "wrote tests/accept_client.sh; it fails until the client exists"
"##;

/// The dev's work: `client` as the body of `src/api/client.sh`, `extra` after it (more
/// files, a search), then the story marked for review.
fn dev(env: &TestEnv, client: &str, extra: &str) {
    agent_behaviour(
        env,
        "dev",
        &format!(
            "key=$BMAD_ARGS\necho \"$key\" >> \"$HOME/agent/dev.log\"\nmkdir -p src/api\nprintf '%s\\n' '{client}' > src/api/client.sh\n{extra}\nsed -i 's/^Status: .*/Status: review/' \"_bmad-output/implementation-artifacts/$key.md\"\nresult \"implemented $key\"\n"
        ),
    );
}

const HONEST: &str = "double() { echo $(( $1 * 2 )); }";

/// The counted project, its agents contained, `~/agent` (their behaviours and logs) shown
/// to them.
fn contained_project(env: &TestEnv) -> PathBuf {
    let repo = counted_project(env);
    let config = read(&repo, ".bmad/config.yaml").replace(
        "runners:\n",
        "runners:\n  sandbox_paths: {write: [\"~/agent\"]}\n",
    );
    write(&repo, ".bmad/config.yaml", &config);
    env.git(&repo, &["commit", "-qam", "agents see their behaviours"]);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    agent_behaviour(env, "acceptance", ACCEPTANCE);
    repo
}

/// The acceptance tests' files in git-bmad's store under `config` (its configuration
/// home), by name.
fn stored(config: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![config.join("git-bmad/acceptance")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.parent().and_then(Path::file_name) == Some("tests".as_ref()) {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                out.push((name, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    out
}

fn calls_of(env: &TestEnv, step: &str) -> usize {
    read(&env.root(), "home/agent/calls.log")
        .lines()
        .filter(|l| l.starts_with(&format!("{step} 1 ")))
        .count()
}

#[test]
fn acceptance_tests_no_agent_of_the_story_can_read_decide_whether_it_is_done() {
    // The dev searches every place its walls show for the acceptance tests: the test's
    // whole world on disk, /tmp, every object and ref of the repository. What is visible
    // to it (the story's own text) is found, as a control.
    let search = |root: &Path| {
        format!(
            "m=ACCEPTANCE\nm=\"$m-MARKER-7c1\"\nsaw=\"$HOME/agent/dev-saw.txt\"\necho \"files: $(grep -rsla \"$m\" {root} /tmp 2>/dev/null | tr '\\n' ' ')\" >> \"$saw\"\necho \"objects: $(git cat-file --batch-all-objects --batch 2>/dev/null | grep -ac \"$m\")\" >> \"$saw\"\necho \"history: $(git log --all -p 2>/dev/null | grep -ac \"$m\")\" >> \"$saw\"\necho \"control: $(grep -rsl 'As a gardener' . | head -n1)\" >> \"$saw\"\n",
            root = root.display()
        )
    };

    // Honest: the client doubles; its hidden tests pass on the pushed commit. git-bmad's
    // configuration home lies in a place the walls show the agents (`~/agent`). On a
    // machine that refuses bubblewrap too (Landlock alone holds the walls).
    for refused in [false, true] {
        honest_and_unseen(refused, &search);
    }

    gaming_the_visible_tests_is_not_done();
}

fn honest_and_unseen(refused: bool, search: &dyn Fn(&Path) -> String) {
    let env = TestEnv::contained();
    if refused {
        env.executable(
            "bwrap",
            "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n",
        );
    }
    let repo = contained_project(&env);
    let config = env.root().join("home/agent/xdg");
    let vars = [
        ("XDG_CONFIG_HOME", config.to_str().unwrap()),
        ("GH_TOKEN", "gho_usertoken0123456789abcdefghijklmnopqr"),
    ];
    dev(&env, HONEST, &search(&env.root()));
    let epic = |args: &[&str]| env.bmad_with(&repo, &[&["epic"], args].concat(), &vars);
    epic(&["run", "3", "--stories", STORY]).success();
    let s = epic(&["status", "3", "--json"]).success().json();
    let st = story(&s, STORY);
    assert_eq!(st["stage"], "done", "{s:#}");
    let tests = st["state"]["tests"].as_str().unwrap();
    assert!(
        tests.contains("its 1 acceptance test file(s), unseen by its agents, pass"),
        "{tests}"
    );
    let acceptance = st["state"]["acceptance"].as_str().unwrap();
    assert!(
        acceptance.starts_with("1 file(s) written by claude from its criteria")
            && acceptance.contains("they fail on the base"),
        "{acceptance}"
    );
    // They were kept, with the marker; the agent's own check saw them red before the work.
    let kept = stored(&config);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].0, "accept_client.sh");
    assert!(kept[0].1.contains("ACCEPTANCE-MARKER-7c1"), "{kept:?}");
    assert!(!env.root().join("home/agent/acceptance.log").exists());
    // The dev searched, saw its story, and found the tests nowhere.
    // The walls that held the dev: Landlock alone where bubblewrap is refused.
    let wt = env.root().join(format!("proj.{STORY}"));
    let journal = env.bmad(&wt, &["journal", "--json"]).success().stdout;
    let walls = if refused {
        "alone"
    } else {
        "bubblewrap and Landlock"
    };
    assert!(journal.contains(walls), "{refused}: {journal}");
    let saw = read(&env.root(), "home/agent/dev-saw.txt");
    assert!(saw.contains("control: ./_bmad-output"), "{saw}");
    for line in ["files: \n", "objects: 0\n", "history: 0\n"] {
        assert!(
            saw.contains(line),
            "the dev saw the acceptance tests: {saw}"
        );
    }
    // Nor does anything pushed hold them.
    let pushed = env.git(&repo, &["log", "--all", "-p"]);
    assert!(!pushed.contains("ACCEPTANCE-MARKER-7c1"));
    let text = epic(&["status", "3"]).success().stdout;
    assert!(
        text.contains("acceptance tests: 1 file(s) written"),
        "{text}"
    );
}

/// Gaming the visible tests: the client answers the one input its own test uses. The
/// suite it sees is green; the tests it never saw are not.
fn gaming_the_visible_tests_is_not_done() {
    let env = TestEnv::contained();
    let repo = contained_project(&env);
    dev(
        &env,
        "double() { echo 8; }",
        "printf '%s\\n' '. ./src/api/client.sh && [ \"$(double 4)\" = 8 ]' > tests/client.sh",
    );
    run_story(&env, &repo).code(5);
    let s = status(&env, &repo);
    let st = story(&s, STORY);
    assert_eq!(st["stage"], "failed", "{s:#}");
    let reason = st["state"]["reason"].as_str().unwrap();
    assert!(
        reason.contains(
            "the acceptance tests written from its criteria before its dev began fail on"
        ) && reason.contains("kept out of the agents' reach"),
        "{reason}"
    );
    // The reason names no test's content: the next dev would read it.
    assert!(!reason.contains("double 21"), "{reason}");
    assert!(st["state"]["pr"].is_null(), "{st:#}");
    let remote = env.git(&repo, &["ls-remote", "--heads", "origin"]);
    assert!(!remote.contains(&format!("bmad/{STORY}")), "{remote}");
    // A resume judges again with the same tests; they are not written anew.
    env.bmad(&repo, &["epic", "resume", "3"]).code(5);
    assert_eq!(calls_of(&env, "acceptance"), 1);
}

#[test]
fn new_tests_that_pass_without_the_storys_code_wait_for_a_human_unless_it_is_a_refactor() {
    // The client is right, but the only test the dev adds proves nothing: it passes on the
    // base, where no client exists.
    let vacuous = "printf 'true\\n' > tests/client_smoke.sh";
    let env = TestEnv::new();
    let repo = counted_project(&env);
    agent_behaviour(&env, "acceptance", ACCEPTANCE);
    dev(&env, HONEST, vacuous);
    run_story(&env, &repo).code(3);
    let s = status(&env, &repo);
    let st = story(&s, STORY);
    assert_eq!(st["stage"], "gated", "{s:#}");
    assert_eq!(s["gate"]["id"], format!("judge:{STORY}"), "{s:#}");
    let reason = st["state"]["reason"].as_str().unwrap();
    assert!(
        reason.contains(
            "added tests that all pass without its code, on the base: tests/client_smoke.sh"
        ),
        "{reason}"
    );
    let wt = env.root().join(format!("proj.{STORY}"));
    let events = env.bmad(&wt, &["journal", "--json"]).success().json();
    assert!(
        events.as_array().unwrap().iter().any(
            |e| e["event"] == "policy_violation" && e["detail"]["rule"] == "tests-pass-on-base"
        ),
        "{events:#}"
    );
    // A human lets it stand: the story is judged, and its hidden tests pass.
    answer_epic(&env, &repo, "continue").success();
    let s = status(&env, &repo);
    assert_eq!(story(&s, STORY)["stage"], "done", "{s:#}");

    // A story that says it is a refactor should bring tests that pass before and after.
    let env = TestEnv::new();
    let repo = counted_project(&env);
    let file = format!("_bmad-output/implementation-artifacts/{STORY}.md");
    let text = read(&repo, &file).replacen("---\n", "---\nrefactor: true\n", 1);
    write(&repo, &file, &text);
    env.git(&repo, &["commit", "-qam", "3-1 is a refactor"]);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    agent_behaviour(&env, "acceptance", ACCEPTANCE);
    dev(&env, HONEST, vacuous);
    run_story(&env, &repo).success();
    let s = status(&env, &repo);
    assert_eq!(story(&s, STORY)["stage"], "done", "{s:#}");

    // A new test that needs the story's code is evidence: no question.
    let env = TestEnv::new();
    let repo = counted_project(&env);
    agent_behaviour(&env, "acceptance", ACCEPTANCE);
    dev(
        &env,
        HONEST,
        "printf '%s\\n' '. ./src/api/client.sh && [ \"$(double 3)\" = 6 ]' > tests/client.sh",
    );
    run_story(&env, &repo).success();
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

#[test]
fn acceptance_tests_that_pass_before_the_work_are_not_kept_and_the_project_can_turn_them_off() {
    // The agent's test passes on the base: no evidence of the work, so none is kept, and
    // the story is judged as before.
    let env = TestEnv::new();
    let repo = counted_project(&env);
    agent_behaviour(
        &env,
        "acceptance",
        "mkdir -p tests && printf 'true\\n' > tests/accept_noop.sh\nresult 'wrote one'\n",
    );
    dev(&env, HONEST, "");
    run_story(&env, &repo).success();
    let s = status(&env, &repo);
    let st = story(&s, STORY);
    assert_eq!(st["stage"], "done", "{s:#}");
    let acceptance = st["state"]["acceptance"].as_str().unwrap();
    assert!(
        acceptance.contains("none: the 1 test file(s) claude wrote pass on the base"),
        "{acceptance}"
    );
    assert!(stored(&env.root().join("home/.config")).is_empty());
    let tests = st["state"]["tests"].as_str().unwrap();
    assert!(!tests.contains("acceptance"), "{tests}");

    // Turned off: no acceptance agent runs.
    let env = TestEnv::new();
    let repo = counted_project(&env);
    let config = read(&repo, ".bmad/config.yaml") + "epic:\n  acceptance_tests: off\n";
    write(&repo, ".bmad/config.yaml", &config);
    env.git(&repo, &["commit", "-qam", "no acceptance tests"]);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    agent_behaviour(&env, "acceptance", ACCEPTANCE);
    dev(&env, HONEST, "");
    run_story(&env, &repo).success();
    assert_eq!(calls_of(&env, "acceptance"), 0);
    let s = status(&env, &repo);
    assert!(story(&s, STORY)["state"]["acceptance"].is_null(), "{s:#}");
}

/// The counted suite (each `tests/*.sh` one test) in place of `repo`'s test script.
fn count_tests(env: &TestEnv, repo: &Path) {
    write(
        repo,
        "test.sh",
        "#!/bin/sh\nn=0\nfor t in tests/*.sh; do\n  [ -f \"$t\" ] || continue\n  sh \"$t\" || { echo \"not ok $t\"; exit 1; }\n  n=$((n+1)); echo \"ok $n - $t\"\ndone\n! grep -rq FAIL src 2>/dev/null\n",
    );
    write(repo, "tests/base.sh", "true\n");
    env.git(repo, &["add", "-A"]);
    env.git(repo, &["commit", "-qm", "a suite that counts"]);
}

/// Every era's pipeline, an honest agent and one whose work misses what the story asks
/// (its code written, in scope, but not what the criteria want) while every visible test
/// passes: the first is done, the second failed by the tests its agents never saw.
#[test]
fn in_every_era_work_the_hidden_acceptance_tests_reject_is_not_done() {
    // The criteria, as the test architect reads them: the story's key is implemented in
    // its code.
    const KEYED: &str = "mkdir -p tests\nprintf 'grep -rqs -- \"// %s\" src\\n' \"${BMAD_ARGS#ticket }\" > tests/accept.sh\nresult 'wrote tests/accept.sh'\n";
    let miss = |script: String| script.replace("\"// $key\"", "\"// todo\"");
    let judged = |env: &TestEnv, repo: &Path, epic: &str, key: &str, honest: bool| {
        let s = env
            .bmad(repo, &["epic", "status", epic, "--json"])
            .success()
            .json();
        let st = story(&s, key);
        let acceptance = st["state"]["acceptance"].as_str().unwrap_or_default();
        assert!(acceptance.starts_with("1 file(s) written"), "{s:#}");
        if honest {
            assert_eq!(st["stage"], "done", "{s:#}");
            let tests = st["state"]["tests"].as_str().unwrap();
            assert!(tests.contains("acceptance test file(s), unseen by its agents, pass"));
        } else {
            assert_eq!(st["stage"], "failed", "{s:#}");
            let reason = st["state"]["reason"].as_str().unwrap();
            assert!(
                reason.contains("acceptance tests written from its criteria"),
                "{reason}"
            );
        }
    };
    for honest in [true, false] {
        // v4: the Dev of a .bmad-core project.
        let env = TestEnv::new();
        let repo = crate::test_epic_v4::v4_project(&env);
        count_tests(&env, &repo);
        agent_behaviour(&env, "acceptance", KEYED);
        let dev = format!(
            "{}set_status 'Ready for Review'\nresult \"implemented $key\"\n",
            crate::test_epic::write_in_scope(
                "docs/stories/$key.md",
                "src/$(echo \"$key\" | cut -d. -f3 | cut -d- -f1)/$key.rs"
            )
        );
        let dev = if honest { dev } else { miss(dev) };
        crate::test_epic_v4::behaviour(&env, "dev", &dev);
        crate::test_epic_v4::behaviour(
            &env,
            "approve-1",
            "set_status Approved\nresult 'Outcome: Approve'\n",
        );
        let code = if honest { 0 } else { 5 };
        env.bmad(&repo, &["epic", "run", "4", "--stories", "4.1"])
            .code(code);
        judged(&env, &repo, "4", "4.1.api-client", honest);

        // v6.11: bmad-build-auto on a spec.
        let env = TestEnv::new();
        let repo = env.repo("ledger");
        crate::common::copy_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/epic/v611"),
            &repo,
        );
        count_tests(&env, &repo);
        env.executable("claude", crate::test_supervisor::FAKE_CLAUDE);
        agent_behaviour(&env, "acceptance", KEYED);
        let build = format!(
            "key=$BMAD_ARGS\nspec=\"_bmad-output/implementation-artifacts/spec-$key.md\"\nbase=$(git rev-parse HEAD)\n{}sed -i \"s/^status: .*/status: 'done'/\" \"$spec\"\nsed -i \"s/^review_loop_iteration: .*/&\\nbaseline_revision: $base/\" \"$spec\"\nresult \"built $key\"\n",
            crate::test_epic::write_in_scope(
                "$spec",
                "src/$(echo \"$key\" | cut -d- -f3)/$key.rs"
            )
        );
        let build = if honest { build } else { miss(build) };
        agent_behaviour(&env, "build", &build);
        agent_behaviour(&env, "review-1", "result 'Outcome: Approve'\n");
        env.bmad(&repo, &["epic", "run", "5", "--stories", "5-1"])
            .code(code);
        judged(&env, &repo, "5", "5-1-parser", honest);

        // v7: bmad-build-auto on a ticket.
        let env = TestEnv::new();
        let repo = crate::test_epic_v7::project(&env);
        crate::test_epic_v7::send_back_1_1(&env, &repo);
        count_tests(&env, &repo);
        env.executable("claude", crate::test_supervisor::FAKE_CLAUDE);
        agent_behaviour(&env, "acceptance", KEYED);
        let build = crate::test_epic_v7::build_auto("none");
        let build = if honest { build } else { miss(build) };
        agent_behaviour(&env, "build", &build);
        agent_behaviour(&env, "review-1", "result 'Outcome: Approve'\n");
        env.bmad(&repo, &["epic", "run", "1", "--stories", "1.1"])
            .code(code);
        judged(&env, &repo, "1", "1.1", honest);
    }
}

/// A test that hangs only where git-bmad judges (a checkout with a `.git` folder, not a
/// worktree's `.git` file): the judge's run ends with the epic's time, not after it.
#[test]
fn a_test_that_hangs_only_in_the_judges_checkout_ends_with_the_epics_time() {
    let env = TestEnv::new();
    let repo = counted_project(&env);
    agent_behaviour(&env, "acceptance", ACCEPTANCE);
    let ended = env.root().join("slow.log");
    dev(
        &env,
        HONEST,
        &format!(
            "printf '[ -f .git ] || {{ sleep 90; echo end >> {}; }}\\n' > tests/slow.sh",
            ended.display()
        ),
    );
    let run = env.bmad_with(
        &repo,
        &["epic", "run", "3", "--stories", STORY, "--max-time", "10s"],
        &[("GH_TOKEN", "gho_usertoken0123456789abcdefghijklmnopqr")],
    );
    let s = status(&env, &repo);
    let st = story(&s, STORY);
    assert_ne!(st["stage"], "done", "{s:#}\n{}", run.stderr);
    assert!(
        st["state"]["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("timed out"),
        "{s:#}"
    );
    // Cut, not waited out.
    assert!(!ended.exists());
}
