//! BMAD v7's ticket tree (fixtures/bmad/v7: an initiative of two epics, in BMAD's own file
//! forms): its tickets listed, ordered and recommended by `tickets.py`'s rules, and a status
//! set as `tickets.py mark` sets it, in the plan only, byte for byte.

use std::path::{Path, PathBuf};

use crate::common::{copy_dir, read, write, TestEnv};

const PRICING: &str = "_bmad-output/initiative-shop/epic-pricing-rules";
const CART: &str = "_bmad-output/initiative-shop/epic-cart";

fn project(env: &TestEnv) -> PathBuf {
    let repo = env.repo("v7");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/bmad/v7");
    copy_dir(&src, &repo);
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "bmad v7 project"]);
    repo
}

/// (key, status, raw status, depends_on) of `stories list --json`.
fn rows(env: &TestEnv, repo: &Path) -> Vec<(String, String, String, Vec<String>)> {
    let list = env
        .bmad(repo, &["stories", "list", "--json"])
        .success()
        .json();
    list.as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let text = |k: &str| s[k].as_str().unwrap().to_owned();
            let deps = s["depends_on"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_str().unwrap().to_owned());
            (
                text("key"),
                text("status"),
                text("raw_status"),
                deps.collect(),
            )
        })
        .collect()
}

/// `stories next --json`.
fn next_json(env: &TestEnv, repo: &Path) -> serde_json::Value {
    env.bmad(repo, &["stories", "next", "--json"])
        .success()
        .json()
}

fn next_key(env: &TestEnv, repo: &Path) -> String {
    next_json(env, repo)["next"]["key"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_v7_ticket_tree_is_listed_and_recommended_by_tickets_py_rules() {
    let env = TestEnv::new();
    let repo = project(&env);
    let row = |k: &str, s: &str, raw: &str, deps: &[&str]| {
        (
            k.to_owned(),
            s.to_owned(),
            raw.to_owned(),
            deps.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
        )
    };
    assert_eq!(
        rows(&env, &repo),
        [
            // Built: the build finished and nobody has called it done; it waits for a person.
            row("1.1", "built", "built", &[]),
            row("1.2", "in-progress", "in-progress", &["1.1"]),
            // No leaf file and no plan: planned.
            row("1.3", "backlog", "planned", &[]),
            row("1.4", "backlog", "planned", &["1.2"]),
            // `"1.2"` names entry 2 of the epic whose id is 1.
            row("2.1", "backlog", "planned", &["1.2"]),
            // An open question holds it until a person settles it.
            row("2.2", "blocked", "planned", &["2.1"]),
        ]
    );
    let list = env
        .bmad(&repo, &["stories", "list", "--json"])
        .success()
        .json();
    assert_eq!(
        list[0]["file"],
        format!("{PRICING}/story-price-rules-engine-plan.md")
    );
    assert_eq!(list[0]["title"], "Price rules engine");
    assert_eq!(list[2]["file"], serde_json::Value::Null);
    assert_eq!(list[4]["epic"], 2);
    // In progress first; its prerequisite is built (in review), which v7 counts as met.
    let next = next_json(&env, &repo);
    assert_eq!(next["next"]["key"], "1.2");
    assert!(
        next["next"]["reason"]
            .as_str()
            .unwrap()
            .contains("done or in review"),
        "{next}"
    );
    let waiting = next["blocked"].to_string();
    assert!(
        waiting.contains("1.4 waits for 1.2") && waiting.contains("2.1 waits for 1.2"),
        "{waiting}"
    );
    assert!(
        waiting.contains("2.2 is blocked: an open question: Which storage"),
        "{waiting}"
    );
    let order = env
        .bmad(&repo, &["stories", "order", "--json"])
        .success()
        .json();
    let keys: Vec<&str> = order["order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["1.1", "1.2", "1.3", "1.4", "2.1", "2.2"]);
    let check = env
        .bmad(&repo, &["stories", "check", "--json"])
        .success()
        .json();
    assert_eq!(check["errors"], 0, "{check}");

    // 1.2 goes to review: 2.1 and 1.4 may start, as `tickets.py next` says.
    env.bmad(&repo, &["stories", "set", "1.2", "review"])
        .success();
    let next = next_json(&env, &repo);
    let waiting = next["blocked"].to_string();
    assert!(!waiting.contains("waits for 1.2"), "{waiting}");
}

#[test]
fn a_v7_status_is_set_in_the_plan_alone_and_byte_for_byte() {
    let env = TestEnv::new();
    let repo = project(&env);
    let plan = format!("{PRICING}/story-apply-and-refuse-discount-codes-plan.md");
    let before = read(&repo, &plan);
    let run = env
        .bmad(&repo, &["stories", "set", "1.2", "review"])
        .success();
    assert!(
        run.stdout.contains("1.2: in-progress → in-review"),
        "{}",
        run.stdout
    );
    assert_eq!(
        read(&repo, &plan),
        before.replace("status: in-progress", "status: in-review")
    );
    assert_eq!(
        env.git(&repo, &["status", "--porcelain"]).trim(),
        format!("M {plan}")
    );

    // A ticket with no plan gets one holding only frontmatter, named after its entry's
    // title as `tickets.py` names it; the leaf file and tickets.toml are not touched.
    let change = env
        .bmad(&repo, &["stories", "set", "1.3", "ready-for-dev", "--json"])
        .success()
        .json();
    let created = format!("{PRICING}/spike-tax-providers-plan.md");
    assert_eq!(change["plan"]["file"], created);
    assert_eq!(change["plan"]["created"], true);
    assert_eq!(change["from"], "planned");
    assert_eq!(
        read(&repo, &created),
        "---\ntitle: \"Tax providers\"\nticket: 3\nstatus: ready-for-dev\n---\n"
    );
    env.bmad(&repo, &["stories", "set", "1.3", "in-progress"])
        .success();
    assert_eq!(
        read(&repo, &created),
        "---\ntitle: \"Tax providers\"\nticket: 3\nstatus: in-progress\n---\n"
    );
    assert_eq!(rows(&env, &repo)[2].2, "in-progress");

    // A plan written on Windows keeps its byte-order mark and CRLF line endings.
    let windows = "\u{feff}---\r\ntitle: \"Rounding on totals\"\r\nticket: 4\r\nstatus: draft\r\n---\r\n\r\n# Plan\r\n";
    write(
        &repo,
        &format!("{PRICING}/bug-rounding-on-totals-plan.md"),
        windows,
    );
    env.bmad(&repo, &["stories", "set", "1.4", "ready-for-dev"])
        .success();
    assert_eq!(
        read(&repo, &format!("{PRICING}/bug-rounding-on-totals-plan.md")),
        windows.replace("status: draft", "status: ready-for-dev")
    );

    // Words v7 does not know are refused, forced or not; a skipped step needs --force.
    let cart = format!("{CART}/story-cart-service-scaffold-plan.md");
    for word in ["awaiting-operator", "optional"] {
        env.bmad(&repo, &["stories", "set", "2.1", word]).code(4);
        env.bmad(&repo, &["stories", "set", "--force", "2.1", word])
            .code(4);
    }
    env.bmad(&repo, &["stories", "set", "2.1", "done"]).code(4);
    assert!(!repo.join(&cart).exists(), "a refused change wrote a plan");
    env.bmad(&repo, &["stories", "set", "--force", "2.1", "built"])
        .success();
    assert!(read(&repo, &cart).contains("status: built\n"));
    assert_eq!(next_key(&env, &repo), "1.3", "in progress before review");
}

#[test]
fn a_v7_tree_with_bad_parts_still_loads_and_says_what_is_wrong() {
    let env = TestEnv::new();
    let repo = project(&env);
    // A plan with a word v7 does not know: the ticket reads as blocked, as tickets.py reads it.
    write(
        &repo,
        &format!("{PRICING}/story-apply-and-refuse-discount-codes-plan.md"),
        "---\ntitle: \"Apply\"\nticket: 2\nstatus: awaiting-operator\n---\n",
    );
    // A second plan for one ticket: neither is trusted, and nothing is written to either.
    write(
        &repo,
        &format!("{PRICING}/story-price-rules-engine-plan-2.md"),
        "---\nticket: 1\nstatus: done\n---\n",
    );
    // An epic whose tickets.toml is no TOML, and an `after` that names nothing.
    write(&repo, &format!("{CART}/tickets.toml"), "[[entry]\nid = 1\n");
    let toml =
        read(&repo, &format!("{PRICING}/tickets.toml")).replace("after = [2]", "after = [9]");
    write(&repo, &format!("{PRICING}/tickets.toml"), &toml);

    let rows = rows(&env, &repo);
    let keys: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(keys, ["1.1", "1.2", "1.3", "1.4"]);
    assert_eq!(rows[1].1, "blocked");
    let check = env
        .bmad(&repo, &["stories", "check", "--json"])
        .code(1)
        .json();
    let text = check["problems"].to_string();
    for expected in [
        "status `awaiting-operator` is no v7 status",
        "a second plan for ticket `1`",
        "epic-cart/tickets.toml",
        "not TOML",
        "after `9` names no ticket or epic",
    ] {
        assert!(text.contains(expected), "{expected}: {text}");
    }
    env.bmad(&repo, &["stories", "set", "1.1", "done"]).code(4);
    assert!(read(
        &repo,
        &format!("{PRICING}/story-price-rules-engine-plan.md")
    )
    .contains("status: built"));
    let next = next_json(&env, &repo);
    assert!(
        next["blocked"]
            .to_string()
            .contains("1.4 depends on 9, which does not exist"),
        "{next}"
    );
}

#[test]
fn an_epic_gate_holds_its_tickets_until_a_person_closes_the_epic() {
    let env = TestEnv::new();
    let repo = project(&env);
    let epic_file = format!("{CART}/epic-cart.md");
    let gated = read(&repo, &epic_file).replace(
        "status: in-progress\n",
        "status: in-progress\nafter: [epic-pricing-rules]\n",
    );
    write(&repo, &epic_file, &gated);
    let rows = rows(&env, &repo);
    assert_eq!(rows[4].1, "blocked", "{rows:?}");
    let next = next_json(&env, &repo);
    assert!(
        next["blocked"]
            .to_string()
            .contains("2.1 is blocked: waits for epic-pricing-rules to be done"),
        "{next}"
    );
    // A ticket already started is not held back by the gate, as `tickets.py next` has it
    // in progress.
    let started = format!("{CART}/story-cart-service-scaffold-plan.md");
    write(
        &repo,
        &started,
        "---\nticket: 1\nstatus: in-progress\n---\n",
    );
    assert_eq!(self::rows(&env, &repo)[4].1, "in-progress");
    std::fs::remove_file(repo.join(&started)).unwrap();
    let pricing = format!("{PRICING}/epic-pricing-rules.md");
    write(
        &repo,
        &pricing,
        &read(&repo, &pricing).replace("status: in-progress", "status: done"),
    );
    let rows = self::rows(&env, &repo);
    assert_eq!(rows[4].1, "backlog", "{rows:?}");
}

#[test]
fn a_migrated_ticket_is_still_found_by_its_v6_key() {
    let env = TestEnv::new();
    let repo = project(&env);
    // `bmad migrate method` records the v6 key on the entry (`v6_key`): a journal or a
    // script from before the migration names the story by it.
    let change = env
        .bmad(
            &repo,
            &[
                "stories",
                "set",
                "1-2-apply-and-refuse-discount-codes",
                "review",
                "--json",
            ],
        )
        .success()
        .json();
    assert_eq!(change["key"], "1.2", "{change}");
    assert_eq!(change["to"], "in-review");
    let plan = read(
        &repo,
        &format!("{PRICING}/story-apply-and-refuse-discount-codes-plan.md"),
    );
    assert!(plan.contains("status: in-review\n"), "{plan}");
    env.bmad(&repo, &["stories", "set", "9-9-nothing", "review"])
        .code(2);
}

#[test]
fn conformance_reads_a_ticket_tree_and_names_what_is_wrong_where() {
    let env = TestEnv::new();
    let repo = project(&env);
    let run = env
        .bmad(&env.root(), &["conformance", repo.to_str().unwrap()])
        .success();
    assert!(
        run.stdout.contains("ok       ")
            && run
                .stdout
                .contains("initiative-shop/tickets.toml (ticket tree)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("0 error(s), 0 warning(s)"),
        "{}",
        run.stdout
    );
    write(
        &repo,
        &format!("{CART}/tickets.toml"),
        "[[entry]]\nid = 1\ntype = \"epic\"\n",
    );
    let run = env
        .bmad(&env.root(), &["conformance", repo.to_str().unwrap()])
        .code(1);
    assert!(
        run.stdout
            .contains("epic-cart/tickets.toml: entry 1: type `epic` is not story, spike or bug"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_v6_project_with_epic_folders_and_a_toml_config_is_still_read_as_v6() {
    let env = TestEnv::new();
    let repo = env.repo("v6-with-epic-folders");
    // A BMad config in TOML and stories kept in `epic-1/` folders, with an epic file: no
    // ticket tree, so no v7.
    write(
        &repo,
        "_bmad/config.toml",
        "[core]\noutput_folder = \"{project-root}/_bmad-output\"\n",
    );
    write(
        &repo,
        "_bmad-output/implementation-artifacts/sprint-status.yaml",
        "development_status:\n  epic-1: in-progress\n  1-1-login: ready-for-dev\n",
    );
    write(
        &repo,
        "_bmad-output/implementation-artifacts/epic-1/epic-1.md",
        "# Epic 1: Login\n",
    );
    write(
        &repo,
        "_bmad-output/implementation-artifacts/epic-1/1-1-login.md",
        "# Story 1.1: Login\n\nStatus: ready-for-dev\n",
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "v6"]);
    let list = env
        .bmad(&repo, &["stories", "list", "--json"])
        .success()
        .json();
    assert_eq!(list[0]["key"], "1-1-login", "{list}");
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
}

#[test]
fn a_plan_linked_to_a_file_outside_the_project_is_never_written_through() {
    let env = TestEnv::new();
    let repo = project(&env);
    // An agent swaps its plan for a link to a file outside the project that looks like a plan.
    let outside = env.root().join("outside.md");
    let bait = "---\nticket: 2\nstatus: in-progress\n---\nsomeone else's file\n";
    std::fs::write(&outside, bait).unwrap();
    let plan = repo
        .join(PRICING)
        .join("story-apply-and-refuse-discount-codes-plan.md");
    std::fs::remove_file(&plan).unwrap();
    std::os::unix::fs::symlink(&outside, &plan).unwrap();
    let run = env.bmad(&repo, &["stories", "set", "1.2", "review"]);
    assert_ne!(run.code, 0, "{}", run.stdout);
    assert!(run.stderr.contains("symbolic link"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), bait);
}
