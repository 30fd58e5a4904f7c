//! Nothing that grants or judges is in the agent's reach: the key other clones trust lives
//! outside the repository (an old clone's moves there by itself), a contained agent reads no
//! key and not the user's main worktree, trust comes only from the reviewed branches as
//! they are committed (never from what is checked out), junk signatures cannot crowd out a
//! trusted one, and what a step leaves in its layer (a fifo, trees git refuses) is hostile
//! input that is never adopted.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::common::{read, write, TestEnv};
use crate::test_supervisor::named;
use crate::test_sync::{events_of, trust_each_other, two_machines};
use crate::test_trust::{a_parks_and_pushes, attacker, forge_events};

/// This clone's key, as `trust show` names it.
fn trust_line(env: &TestEnv, repo: &Path) -> String {
    env.bmad(repo, &["trust", "show"])
        .success()
        .stdout
        .trim()
        .to_owned()
}

fn clone_id(env: &TestEnv, repo: &Path) -> String {
    env.git(repo, &["config", "bmad.cloneId"]).trim().to_owned()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_clones_key_lives_outside_the_repository_and_an_old_clones_key_moves_there() {
    let env = TestEnv::new();
    let repo = env.repo("project");
    let line = trust_line(&env, &repo);
    assert!(line.contains("ssh-ed25519 "), "{line}");
    // Nothing of the key in the repository; the key in the user's store, private.
    assert!(!repo.join(".git/bmad/signing").exists());
    let store = env.root().join("home/.config/git-bmad/keys");
    let key = store.join(clone_id(&env, &repo)).join("id_ed25519");
    assert!(key.is_file(), "no key at {}", key.display());
    assert_eq!(mode(&key), 0o600);
    assert_eq!(mode(key.parent().unwrap()), 0o700);
    assert_eq!(mode(&store), 0o700);

    // A clone made by an older git-bmad: its key in the repository, none in the store.
    let legacy = repo.join(".git/bmad/signing");
    std::fs::create_dir_all(&legacy).unwrap();
    for name in ["id_ed25519", "id_ed25519.pub"] {
        std::fs::rename(key.with_file_name(name), legacy.join(name)).unwrap();
    }
    // Any command moves it, and it signs as before.
    env.bmad(&repo, &["list"]).success();
    assert!(!legacy.exists(), "the old key stayed in the repository");
    assert!(key.is_file());
    assert_eq!(mode(&key), 0o600);
    assert_eq!(trust_line(&env, &repo), line);

    // Killed after the copy and before the removal: the next command finishes the move
    // and keeps the store's key.
    std::fs::create_dir_all(&legacy).unwrap();
    std::fs::write(legacy.join("id_ed25519"), "a torn copy").unwrap();
    env.bmad(&repo, &["status"]).success();
    assert!(!legacy.exists());
    assert_eq!(trust_line(&env, &repo), line);
}

/// A project whose main worktree holds an ignored `.env`, with a key its clone made before
/// in the repository (as an older git-bmad kept it) and the key store outside the home and
/// `/tmp`; a contained generic agent runs `script` in session `work`.
struct Project {
    env: TestEnv,
    repo: PathBuf,
    worktree: PathBuf,
    store: PathBuf,
    _store_root: tempfile::TempDir,
}

const DOTENV: &str = "STRIPE_KEY=sk_live_notarealkey7f3a\n";

impl Project {
    fn new(script: &str) -> Project {
        let env = TestEnv::contained();
        // Neither under the home nor under /tmp, which the walls hide anyway.
        let store_root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let store = std::fs::canonicalize(store_root.path()).unwrap();
        env.executable("my-agent", script);
        let repo = env.repo("project");
        write(&repo, ".gitignore", ".env\n*.log\n");
        write(&repo, ".env", DOTENV);
        write(
            &repo,
            ".bmad/config.yaml",
            "runners:\n  default: generic\n  generic:\n    command: [my-agent, \"{prompt}\"]\n",
        );
        write(
            &repo,
            ".bmad/playbooks/one.yaml",
            "name: one\nsteps:\n  - id: work\n    command: do the work\n",
        );
        env.git(&repo, &["add", "-A"]);
        env.git(&repo, &["commit", "-qm", "project"]);
        env.bmad(&repo, &["hooks", "install"]).success();
        let (_, worktree) = env.start(&repo, "work");
        Project {
            env,
            repo,
            worktree,
            store,
            _store_root: store_root,
        }
    }

    fn xdg(&self) -> String {
        self.store.to_str().unwrap().to_owned()
    }

    fn bmad(&self, dir: &Path, args: &[&str]) -> crate::common::Run {
        self.env
            .bmad_with(dir, args, &[("XDG_CONFIG_HOME", &self.xdg())])
    }

    fn journal(&self) -> Vec<Value> {
        let run = self.bmad(&self.worktree, &["journal", "--json"]).success();
        run.json().as_array().cloned().unwrap_or_default()
    }

    fn outside_walls(&self) -> Vec<String> {
        self.journal()
            .iter()
            .filter(|e| e["event"] == "policy_violation")
            .filter(|e| e["detail"]["rule"] == "outside-walls")
            .map(|e| {
                e["detail"]["reason"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    }
}

/// The agent: it reads every key and secret it can find and keeps what it read in
/// `loot.txt` in its worktree.
const THIEF: &str = r#"#!/bin/sh
common=$(cd "$(git rev-parse --git-common-dir)" && pwd)
main=$(dirname "$common")
{
  cat "$common"/bmad/signing/id_ed25519
  cat "$XDG_STORE"/git-bmad/keys/*/id_ed25519
  cat "$HOME"/.config/git-bmad/keys/*/id_ed25519
  cat "$(git config user.signingKey)"
  cat "$main/.env"
  ls -a "$main"
} > loot.txt 2>&1
echo '{"result":"done"}'
"#;

#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn a_contained_agent_reads_no_signing_key_and_not_the_main_worktree() {
    let script = THIEF.replace("$XDG_STORE", "XDG_STORE_PLACEHOLDER");
    let p = Project::new("#!/bin/sh\n");
    let script = script.replace("XDG_STORE_PLACEHOLDER", &p.xdg());
    p.env.executable("my-agent", &script);
    // The clone's key where an older git-bmad kept it: in the repository.
    let line = trust_line_in(&p, &p.repo);
    let id = clone_id(&p.env, &p.repo);
    let key = p.store.join("git-bmad/keys").join(&id).join("id_ed25519");
    let private = std::fs::read_to_string(&key).unwrap();
    let legacy = p.repo.join(".git/bmad/signing");
    std::fs::create_dir_all(&legacy).unwrap();
    std::fs::rename(&key, legacy.join("id_ed25519")).unwrap();
    // The user's own signing key, in a place the walls would otherwise show (a runner's work
    // folder, say): it signs commits, not the journals, but is no step's to read either.
    let user_key = p.store.join("user-key");
    let made = p.env.sh(
        &p.store,
        "ssh-keygen -q -t ed25519 -N '' -C user -f user-key",
    );
    assert_eq!(made.code, 0, "{}", made.stderr);
    p.env.git(
        &p.repo,
        &["config", "user.signingKey", user_key.to_str().unwrap()],
    );

    let run = p.bmad(&p.worktree, &["run", "one"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let loot = read(&p.worktree, "loot.txt");
    let secret_line = private.lines().nth(1).unwrap();
    assert!(
        !loot.contains(secret_line),
        "the signing key leaked:\n{loot}"
    );
    let user_secret = std::fs::read_to_string(&user_key).unwrap();
    assert!(
        !loot.contains(user_secret.lines().nth(1).unwrap()),
        "user.signingKey leaked:\n{loot}"
    );
    assert!(
        !loot.contains("sk_live_notarealkey7f3a"),
        ".env leaked:\n{loot}"
    );
    assert!(
        !loot.contains("README.md"),
        "the main worktree is shown:\n{loot}"
    );
    // The key moved out of the repository before the step, and still signs as this clone.
    assert!(!legacy.exists());
    assert_eq!(std::fs::read_to_string(&key).unwrap(), private);
    assert_eq!(trust_line_in(&p, &p.repo), line);
}

fn trust_line_in(p: &Project, repo: &Path) -> String {
    p.bmad(repo, &["trust", "show"])
        .success()
        .stdout
        .trim()
        .to_owned()
}

/// Left in its layer for git-bmad to read: a fifo where a pack goes (opening it would wait
/// for ever), and its branch moved to a commit whose tree holds `..` and a `.git/hooks`
/// that another tool's checkout would write.
const HOSTILE_TREES: &str = r#"#!/bin/sh
common=$(git rev-parse --git-common-dir)
echo honest > honest.txt
git add honest.txt && git commit -qm 'honest work'
mkdir -p "$common/objects/pack"
mkfifo "$common/objects/pack/pack-0000000000000000000000000000000000000000.pack"
blob=$(printf '#!/bin/sh\ntouch "$HOME/pwned"\n' | git hash-object -w --stdin)
hooks=$(printf '100755 blob %s\tpost-checkout\n' "$blob" | git mktree)
dotgit=$(printf '040000 tree %s\thooks\n' "$hooks" | git mktree)
tree=$(printf '040000 tree %s\t.git\n040000 tree %s\t..\n100644 blob %s\tREADME.md\n' "$dotgit" "$hooks" "$blob" | git mktree)
commit=$(git commit-tree "$tree" -p HEAD -m 'looks harmless')
git update-ref HEAD "$commit"
echo '{"result":"done"}'
"#;

#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn what_a_step_leaves_in_its_layer_is_refused_not_adopted_and_never_hangs_git_bmad() {
    let p = Project::new(HOSTILE_TREES);
    let branch = "refs/heads/bmad/work";
    let before = p.env.git(&p.repo, &["rev-parse", branch]);
    let mut cmd = p.env.bmad_command(&p.worktree);
    cmd.args(["run", "one"]).env("XDG_CONFIG_HOME", p.xdg());
    let run = crate::common::actions::run_bounded(cmd, std::time::Duration::from_secs(120));
    // It ends, at a gate: the step broke the rules.
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    // The branch stays where it was: the step's tip is refused whole.
    assert_eq!(p.env.git(&p.repo, &["rev-parse", branch]), before);
    let tree = p
        .env
        .git(&p.repo, &["ls-tree", "-r", "--name-only", branch]);
    assert!(!tree.contains(".git/"), "{tree}");
    let refused = p.outside_walls();
    assert!(
        refused
            .iter()
            .any(|m| m.contains("git refuses") && m.contains("\"..\"") && m.contains(".git")),
        "{refused:#?}"
    );
    assert!(
        refused.iter().any(|m| m.contains("not a sound pack")),
        "{refused:#?}"
    );
    // A resume afterwards is not stuck on anything the step left.
    let mut cmd = p.env.bmad_command(&p.worktree);
    cmd.args(["status", "--json"])
        .env("XDG_CONFIG_HOME", p.xdg());
    let status = crate::common::actions::run_bounded(cmd, std::time::Duration::from_secs(60));
    assert_eq!(status.code, 0, "{}", status.stderr);
    assert!(!p.env.root().join("home/pwned").exists());
}

#[test]
fn a_pull_request_checked_out_for_review_grants_no_trust() {
    let env = TestEnv::new();
    let (a, b, remote) = two_machines(&env);
    trust_each_other(&env, &a, &[&b]);
    // The pull request names its own branch protected and trusts the attacker's key.
    let evil = attacker(&env, &remote);
    env.git(&evil, &["checkout", "-q", "-b", "pr"]);
    write(
        &evil,
        ".bmad/config.yaml",
        "version: 1\npolicy:\n  protected_branches: [pr]\n",
    );
    let evil_line = "evil@example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINVQt2HdKH1A0FlMyjH4s8BVUMVzSAcrwpox9OUAtJCQ";
    let mut allowed = read(&evil, ".bmad/allowed_signers");
    allowed.push_str(evil_line);
    allowed.push('\n');
    write(&evil, ".bmad/allowed_signers", &allowed);
    env.git(&evil, &["add", "-A"]);
    env.git(&evil, &["commit", "-qm", "a small fix"]);
    env.git(&evil, &["push", "-q", "origin", "pr"]);
    // B checks it out in its main worktree, to review it.
    env.git(&b, &["fetch", "-q", "origin"]);
    env.git(&b, &["checkout", "-q", "pr"]);
    let listed = env.bmad(&b, &["trust", "list", "--json"]).success().json();
    assert_eq!(
        listed["sources"],
        json!(["main:.bmad/allowed_signers", "this clone"]),
        "{listed:#}"
    );
    assert!(
        !listed["text"].as_str().unwrap().contains("evil@"),
        "{listed:#}"
    );
    // Nor when the reviewer merges it into a local main that the remote never took.
    env.git(&b, &["checkout", "-q", "main"]);
    env.git(&b, &["merge", "-q", "--ff-only", "pr"]);
    let listed = env.bmad(&b, &["trust", "list", "--json"]).success().json();
    assert!(
        !listed["text"].as_str().unwrap().contains("evil@"),
        "{listed:#}"
    );
    // What review let through on the remote counts, once fetched.
    env.git(&a, &["pull", "-q", "--ff-only", "origin", "pr"]);
    env.git(&a, &["push", "-q", "origin", "main"]);
    env.git(&b, &["fetch", "-q", "origin"]);
    let listed = env.bmad(&b, &["trust", "list", "--json"]).success().json();
    assert!(
        listed["text"].as_str().unwrap().contains("evil@"),
        "{listed:#}"
    );
}

/// The attacker's own key, and its signature of session `id`'s chain value `chain` as a
/// journal signature.
fn attackers_signature(env: &TestEnv, id: &str, chain: &str) -> String {
    let dir = env.root().join("attacker-key");
    if !dir.join("id").exists() {
        std::fs::create_dir_all(&dir).unwrap();
        let made = env.sh(&dir, "ssh-keygen -q -t ed25519 -N '' -f id");
        assert_eq!(made.code, 0, "{}", made.stderr);
    }
    write(
        &dir,
        "payload",
        &format!("git-bmad journal 1\nsession {id}\nchain {chain}\n"),
    );
    let signed = env.sh(
        &dir,
        "ssh-keygen -q -Y sign -n git-bmad-journal -f id payload && cat payload.sig && rm payload.sig",
    );
    assert_eq!(signed.code, 0, "{}", signed.stderr);
    signed.stdout
}

#[test]
fn junk_signatures_that_name_a_trusted_key_cannot_crowd_out_its_own() {
    let env = TestEnv::new();
    let (a, b, remote) = two_machines(&env);
    trust_each_other(&env, &a, &[&b]);
    let (id, _) = a_parks_and_pushes(&env, &a);
    let signed = named(&events_of(&env, &a, &id), "journal_signed")
        .last()
        .map(|e| e["detail"].clone())
        .unwrap();
    let chain = signed["chain"].as_str().unwrap();
    // Seventeen signatures naming A's key, each made with the attacker's.
    let evil = attacker(&env, &remote);
    let junk: Vec<(&str, Option<&str>, &str, Value)> = (0..17)
        .map(|n| {
            let detail = json!({
                "clone": format!("junk-{n}"),
                "key": signed["key"],
                "chain": chain,
                "signature": attackers_signature(&env, &id, chain),
            });
            ("journal_signed", None, "human", detail)
        })
        .collect();
    forge_events(&env, &evil, &id, &junk);
    env.bmad(&b, &["sync"]).success();
    // A's run is still A's: B resumes it to the same gate.
    let resumed = env.bmad(&b, &["resume", "feat"]);
    assert_eq!(resumed.code, 3, "{}\n{}", resumed.stdout, resumed.stderr);
    let events = events_of(&env, &b, &id);
    assert_eq!(
        named(&events, "run_started")[0]["trusted"],
        true,
        "{events:#?}"
    );
}

#[test]
fn a_forged_release_does_not_hand_a_live_session_to_a_third_clone() {
    let env = TestEnv::new();
    let (a, b, remote) = two_machines(&env);
    trust_each_other(&env, &a, &[&b]);
    let (id, wt_a, mut run) = crate::test_sync::a_live_run(&env, &a);
    // Pushed while the run is live in A: the lease is A's.
    env.bmad(&a, &["push", "feat"]).success();
    // A teammate with push access and no trusted key says it was released.
    let evil = attacker(&env, &remote);
    let forged = crate::test_trust::trailers(
        &id,
        "feat",
        "refs/heads/bmad/feat",
        &wt_a,
        "Bmad-Lease: released\n",
    );
    crate::test_trust::forge_checkpoint(&env, &evil, &id, &forged, false);
    env.bmad(&b, &["sync"]).success();
    let held = env.bmad(&b, &["resume", "feat"]).code(1);
    assert!(held.stderr.contains("--steal"), "{}", held.stderr);
    assert!(!env.root().join("b.feat").exists());
    write(&wt_a, "go", "");
    assert!(run.wait().unwrap().success());
    // A's own release, signed, hands it off as before (A first takes in what the remote
    // holds: its push never overwrites).
    env.bmad(&a, &["sync"]).success();
    env.bmad(&a, &["push", "feat"]).success();
    env.bmad(&b, &["sync"]).success();
    env.bmad(&b, &["resume", "feat"]).success();
}

#[test]
fn a_journal_forced_back_on_the_remote_is_refused_and_named() {
    let env = TestEnv::new();
    let (a, b, remote) = two_machines(&env);
    trust_each_other(&env, &a, &[&b]);
    let (id, wt_a) = a_parks_and_pushes(&env, &a);
    let notes = format!("refs/notes/bmad/{id}");
    let older = env.git(&remote, &["rev-parse", &notes]).trim().to_owned();
    env.bmad(&b, &["sync"]).success();
    // A goes on and pushes again; B sees it.
    env.bmad(
        &wt_a,
        &["journal", "append", "note", "--detail", "{\"n\":1}"],
    )
    .success();
    env.bmad(&wt_a, &["push"]).success();
    let newer = env.git(&remote, &["rev-parse", &notes]).trim().to_owned();
    assert_ne!(older, newer);
    env.bmad(&b, &["sync"]).success();
    // Someone who can push forces the older, validly signed journal back.
    let evil = attacker(&env, &remote);
    env.git(
        &evil,
        &["fetch", "-q", "origin", &format!("{notes}:refs/old")],
    );
    env.git(
        &evil,
        &[
            "push",
            "-q",
            "--force",
            "origin",
            &format!("{older}:{notes}"),
        ],
    );
    let synced = env.bmad(&b, &["sync", "--json"]).success().json();
    let ours = synced
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session"] == id.as_str())
        .cloned()
        .unwrap();
    assert_eq!(ours["outcome"], "refused", "{synced:#}");
    assert!(
        ours["refused"].as_str().unwrap().contains("went back"),
        "{synced:#}"
    );
    // B keeps what it saw, and says so again on the next sync.
    let tracking = env.git(
        &b,
        &[
            "for-each-ref",
            "--format=%(objectname)",
            &format!("refs/bmad/remotes/origin/notes/{id}"),
        ],
    );
    assert_eq!(tracking.trim(), newer, "B forgot the newer journal");
    let again = env.bmad(&b, &["sync", "--json"]).success().json();
    assert!(again.to_string().contains("went back"), "{again:#}");
}

/// Credentials that no name gives away, set in the user's environment.
const HIDDEN_CREDENTIALS: &[(&str, &str)] = &[
    ("GH_PAT", "ghp_patfromtheenvironment7f3a"),
    ("OPENAI_KEY_DEV", "sk-devkeyfromtheenvironment7f3a"),
    ("DATABASE_URL", "postgres://app:hunter2pass7f3a@db/app"),
    ("GIT_CONFIG_COUNT", "1"),
    ("GIT_CONFIG_KEY_0", "http.extraheader"),
    ("GIT_CONFIG_VALUE_0", "AUTHORIZATION: basic extraheader7f3a"),
    ("SENTRY_DSN", "https://sentrykey7f3a@o1.ingest.sentry.io/1"),
    ("GH_TOKEN", "gho_named7f3a"),
];

/// An agent and a test command that write down the environment they were given.
fn environment_seen(contained: bool) -> (String, String) {
    let env = if contained {
        TestEnv::contained()
    } else {
        TestEnv::new()
    };
    env.executable(
        "my-agent",
        "#!/bin/sh\nenv > agent-env.txt\necho '{\"result\":\"done\"}'\n",
    );
    let repo = env.repo("project");
    write(
        &repo,
        ".bmad/config.yaml",
        "runners:\n  default: generic\n  env: [TEST_DB_HOST]\n  generic:\n    command: [my-agent, \"{prompt}\"]\nchecks:\n  test_command: env > test-env.txt\n",
    );
    write(
        &repo,
        ".bmad/playbooks/one.yaml",
        "name: one\nsteps:\n  - id: work\n    command: do the work\n    postconditions: [tests_pass]\n",
    );
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-qm", "project"]);
    let (_, worktree) = env.start(&repo, "work");
    let mut vars: Vec<(&str, &str)> = HIDDEN_CREDENTIALS.to_vec();
    vars.push(("TEST_DB_HOST", "localhost:5433"));
    let run = env.bmad_with(&worktree, &["run", "one"], &vars);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    (
        read(&worktree, "agent-env.txt"),
        read(&worktree, "test-env.txt"),
    )
}

fn assert_allow_listed(seen: &str, what: &str) {
    for (name, value) in HIDDEN_CREDENTIALS {
        let set = seen.lines().any(|l| l.starts_with(&format!("{name}=")));
        // Nor under another name (a value as short as `1` says nothing).
        let copied = value.len() > 8 && seen.contains(value);
        assert!(!set && !copied, "{what} saw {name}:\n{seen}");
    }
    assert!(seen.contains("PATH="), "{what}:\n{seen}");
    assert!(
        seen.contains("TEST_DB_HOST=localhost:5433"),
        "{what}:\n{seen}"
    );
}

#[test]
fn an_uncontained_agent_and_its_tests_get_the_allow_listed_environment_only() {
    let (agent, tests) = environment_seen(false);
    assert_allow_listed(&agent, "the agent");
    assert_allow_listed(&tests, "the test command");
}

#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn a_contained_agent_and_its_tests_get_the_same_allow_listed_environment() {
    let (agent, tests) = environment_seen(true);
    assert_allow_listed(&agent, "the agent");
    assert_allow_listed(&tests, "the test command");
}

/// It tries a push its hooks refuse, then erases what they kept for git-bmad.
const ERASER: &str = r#"#!/bin/sh
common=$(git rev-parse --git-common-dir)
echo work > work.txt
git add work.txt && git commit -qm 'work'
git push origin HEAD:refs/heads/main 2>/dev/null
for dir in "$common"/bmad/deferred/*; do
  rm -f "$dir"/* 2>/dev/null
  rm -f "$dir"/report.sock 2>/dev/null && echo "removed the channel" >> erased.txt
  mv "$dir"/report.sock "$dir"/gone 2>/dev/null && echo "moved the channel" >> erased.txt
done
echo '{"result":"done"}'
"#;

#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn what_the_hooks_refused_in_a_step_cannot_be_erased_by_the_step() {
    let p = Project::new(ERASER);
    let remote = p.env.bare_remote(&p.repo);
    p.env.git(&p.repo, &["push", "-q", "origin", "main"]);
    let main_before = p.env.git(&remote, &["rev-parse", "main"]);
    let run = p.bmad(&p.worktree, &["run", "one"]);
    // The refused push is on the record: a gate, not a clean end.
    assert_eq!(run.code, 3, "{}\n{}", run.stdout, run.stderr);
    let refused: Vec<Value> = p
        .journal()
        .into_iter()
        .filter(|e| e["event"] == "policy_violation" && e["detail"]["hook"] == "pre-push")
        .collect();
    assert!(!refused.is_empty(), "{:#?}", p.journal());
    assert_eq!(refused[0]["step"], "work", "{:#}", refused[0]);
    assert_eq!(p.env.git(&remote, &["rev-parse", "main"]), main_before);
    assert!(
        !p.worktree.join("erased.txt").exists(),
        "the channel was removed"
    );
}

#[test]
fn a_branch_whose_trees_git_refuses_is_never_pushed() {
    let env = TestEnv::new();
    let repo = env.repo("project");
    let remote = env.bare_remote(&repo);
    env.git(&repo, &["push", "-q", "origin", "main"]);
    let (_, wt) = env.start(&repo, "work");
    // What an uncontained agent can do with plain git in its worktree.
    let made = env.sh(
        &wt,
        r#"blob=$(printf '#!/bin/sh\ntouch "$HOME/pwned"\n' | git hash-object -w --stdin)
hooks=$(printf '100755 blob %s\tpost-checkout\n' "$blob" | git mktree)
dotgit=$(printf '040000 tree %s\thooks\n' "$hooks" | git mktree)
tree=$(printf '040000 tree %s\t.GIT\n100644 blob %s\tREADME.md\n' "$dotgit" "$blob" | git mktree)
git update-ref HEAD "$(git commit-tree "$tree" -p HEAD -m 'looks harmless')""#,
    );
    assert_eq!(made.code, 0, "{}", made.stderr);
    let refused = env.bmad(&wt, &["push"]).code(4);
    assert!(
        refused.stderr.contains("refusing to push"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains(".GIT"), "{}", refused.stderr);
    let remote_refs = env.git(&remote, &["for-each-ref", "--format=%(refname)"]);
    assert!(!remote_refs.contains("bmad/work"), "{remote_refs}");
    // Back on a sound commit, it goes.
    env.git(&wt, &["reset", "-q", "--hard", "HEAD~1"]);
    env.bmad(&wt, &["push"]).success();
}

/// It looks for every watcher it could stop: the sockets under /tmp and the runtime
/// folder, and the abstract names earlier watchers used.
const WATCHER_KILLER: &str = r#"#!/bin/sh
for dir in /tmp/git-bmad-* "$XDG_RUNTIME_DIR"/git-bmad /run/user/*/git-bmad; do
  for sock in "$dir"/*.sock; do
    [ -S "$sock" ] && echo "found $sock" >> watchers.txt
    python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"stop\n")' "$sock" 2>/dev/null && echo "stopped $sock" >> watchers.txt
  done
done
python3 - "$OTHER_ABSTRACT" <<'PY' 2>/dev/null && echo "stopped the abstract one" >> watchers.txt
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect("\0" + sys.argv[1])
s.sendall(b"stop\n")
PY
echo '{"result":"done"}'
"#;

#[test]
#[cfg_attr(
    not(feature = "external-tests"),
    ignore = "needs bubblewrap (scripts/install-bubblewrap.sh): cargo test --features external-tests"
)]
fn a_contained_agent_reaches_no_other_sessions_watcher() {
    use sha2::{Digest, Sha256};
    let p = Project::new("#!/bin/sh\n");
    // Another session, whose watcher `start` set going.
    let (_, other) = p.env.start(&p.repo, "other");
    let digest = Sha256::digest(other.to_str().unwrap().as_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    let uid = p.env.sh(&p.repo, "id -u").stdout.trim().to_owned();
    let socket = PathBuf::from(format!("/tmp/git-bmad-{uid}/{hex}.sock"));
    assert!(
        socket.exists(),
        "the other session's watcher is not at {}",
        socket.display()
    );
    let abstract_name = format!("git-bmad-watch/{uid}/{hex}");
    p.env.executable(
        "my-agent",
        &WATCHER_KILLER.replace("$OTHER_ABSTRACT", &abstract_name),
    );
    let run = p.bmad(&p.worktree, &["run", "one"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let seen = std::fs::read_to_string(p.worktree.join("watchers.txt")).unwrap_or_default();
    assert!(!seen.contains("stopped"), "{seen}");
    assert!(!seen.contains(&hex), "{seen}");
    // The other session's watcher still serves.
    let alive = std::os::unix::net::UnixStream::connect(&socket);
    assert!(alive.is_ok(), "the other session's watcher is gone");
}

/// The first git-bmad processes of a clone, started together (an epic's first stories),
/// agree on one clone id and one key: none fails on git's config lock or another's key.
#[test]
fn processes_that_start_together_agree_on_one_clone_id_and_one_key() {
    let env = TestEnv::new();
    let repo = env.repo("together");
    let children: Vec<_> = (0..6)
        .map(|_| {
            env.bmad_command(&repo)
                .args(["trust", "show"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn git-bmad")
        })
        .collect();
    let lines: Vec<String> = children
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().expect("wait");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        })
        .collect();
    let ids = env.git(&repo, &["config", "--local", "--get-all", "bmad.cloneId"]);
    assert_eq!(ids.lines().count(), 1, "{ids}");
    assert!(lines.iter().all(|l| l == &lines[0]), "{lines:#?}");
}
