//! Pushes to a real local bare remote through the installed pre-push hook: one scenario per
//! row, each asserting allowed or refused, the rule in the message, and on refusal that the
//! remote did not move.

use std::path::{Path, PathBuf};

use crate::common::{write, Run, TestEnv};

/// A repository with hooks installed, pushed to a bare remote: `main` and `feat` on both.
/// The rules bind every push here (`bmad.policyScope everywhere`), so each spelling is
/// tried from the main worktree; `test_policy_scope` covers whom they bind by default.
struct Fixture {
    env: TestEnv,
    repo: PathBuf,
    remote: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let env = TestEnv::new();
        let repo = env.repo("proj");
        let remote = env.root().join("remote.git");
        env.git(
            &env.root(),
            &[
                "init",
                "-q",
                "--bare",
                "-b",
                "main",
                remote.to_str().unwrap(),
            ],
        );
        env.git(
            &repo,
            &["remote", "add", "origin", remote.to_str().unwrap()],
        );
        env.git(&repo, &["push", "-q", "origin", "main"]);
        env.git(&repo, &["checkout", "-q", "-b", "feat"]);
        commit(&env, &repo, "feat.txt", "one\n");
        env.git(&repo, &["push", "-q", "origin", "feat"]);
        env.bmad(&repo, &["hooks", "install"]).success();
        env.git(&repo, &["config", "bmad.policyScope", "everywhere"]);
        Fixture { env, repo, remote }
    }

    fn push(&self, dir: &Path, args: &[&str]) -> Run {
        let mut cmd = self.env.git_command(dir);
        cmd.arg("push").args(args);
        let out = cmd.output().expect("spawn git push");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn remote_refs(&self) -> String {
        self.env.git(
            &self.remote,
            &["for-each-ref", "--format=%(refname) %(objectname)"],
        )
    }

    fn git(&self, args: &[&str]) -> String {
        self.env.git(&self.repo, args)
    }
}

fn commit(env: &TestEnv, dir: &Path, file: &str, content: &str) {
    write(dir, file, content);
    env.git(dir, &["add", file]);
    env.git(dir, &["commit", "-q", "-m", &format!("change {file}")]);
}

/// Commit `file` as a person who skips their pre-commit hook: what only a push check sees.
fn commit_past_pre_commit(fx: &Fixture, file: &str, content: &str) {
    write(&fx.repo, file, content);
    fx.git(&["add", file]);
    fx.git(&["commit", "-q", "--no-verify", "-m", &format!("add {file}")]);
}

/// The expected outcome of a scenario.
enum Expect {
    Allowed,
    Refused(&'static str),
}

/// Run one scenario: `setup` prepares and returns the push arguments.
fn scenario(name: &str, expect: Expect, setup: impl FnOnce(&Fixture) -> Vec<String>) {
    let fx = Fixture::new();
    let args = setup(&fx);
    let before = fx.remote_refs();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = fx.push(&fx.repo, &args);
    match expect {
        Expect::Allowed => {
            assert_eq!(
                run.code, 0,
                "{name}: expected the push to be allowed\n{}",
                run.stderr
            );
            assert!(!run.stderr.contains("refused"), "{name}: {}", run.stderr);
        }
        Expect::Refused(rule) => {
            assert_ne!(
                run.code, 0,
                "{name}: expected a refusal, the push went through\n{}",
                run.stderr
            );
            assert!(
                run.stderr.contains(&format!("[{rule}]")),
                "{name}: expected rule {rule}\n{}",
                run.stderr
            );
            assert!(
                run.stderr.contains("instead:"),
                "{name}: a refusal names the safe alternative\n{}",
                run.stderr
            );
            assert_eq!(
                fx.remote_refs(),
                before,
                "{name}: the remote changed despite the refusal"
            );
        }
    }
}

fn s(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

#[test]
fn fast_forward_and_new_branches_are_allowed() {
    scenario("fast-forward feature push", Expect::Allowed, |fx| {
        commit(&fx.env, &fx.repo, "feat.txt", "two\n");
        s(&["origin", "feat"])
    });
    scenario("new branch", Expect::Allowed, |fx| {
        fx.git(&["checkout", "-q", "-b", "fresh"]);
        commit(&fx.env, &fx.repo, "fresh.txt", "fresh\n");
        s(&["origin", "fresh"])
    });
    scenario("new branch with -u from HEAD", Expect::Allowed, |_| {
        s(&["-u", "origin", "HEAD:refs/heads/other"])
    });
    scenario("delete a feature branch", Expect::Allowed, |_| {
        s(&["origin", ":feat"])
    });
    scenario(
        "delete a feature branch with --delete",
        Expect::Allowed,
        |_| s(&["origin", "--delete", "feat"]),
    );
    scenario("new tag", Expect::Allowed, |fx| {
        fx.git(&["tag", "v1"]);
        s(&["origin", "v1"])
    });
    scenario("--all with main unchanged", Expect::Allowed, |fx| {
        commit(&fx.env, &fx.repo, "feat.txt", "two\n");
        s(&["--all", "origin"])
    });
    scenario("notes", Expect::Allowed, |fx| {
        fx.git(&[
            "notes",
            "--ref=refs/notes/bmad/x",
            "add",
            "-m",
            "journal",
            "HEAD",
        ]);
        s(&["origin", "refs/notes/bmad/x"])
    });
    scenario("bmad refs", Expect::Allowed, |fx| {
        fx.git(&["update-ref", "refs/bmad/sessions/x/checkpoints", "HEAD"]);
        s(&["origin", "refs/bmad/sessions/x/checkpoints"])
    });
    scenario("nothing to push", Expect::Allowed, |_| {
        s(&["origin", "feat"])
    });
    scenario(
        "a low-confidence secret only warns",
        Expect::Allowed,
        |fx| {
            commit(
                &fx.env,
                &fx.repo,
                "conf.ini",
                "client_secret = q8Zr3Lm0Xv7Tn2Wk5Pb9Hs4D\n",
            );
            s(&["origin", "feat"])
        },
    );
}

#[test]
fn force_pushes_are_refused_in_every_spelling() {
    let rewrite = |fx: &Fixture| {
        fx.git(&["commit", "-q", "--amend", "-m", "rewritten"]);
    };
    scenario("-f", Expect::Refused("force-push"), |fx| {
        rewrite(fx);
        s(&["-f", "origin", "feat"])
    });
    scenario("--force", Expect::Refused("force-push"), |fx| {
        rewrite(fx);
        s(&["--force", "origin", "feat"])
    });
    scenario("+refspec", Expect::Refused("force-push"), |fx| {
        rewrite(fx);
        s(&["origin", "+feat"])
    });
    scenario("--force-with-lease", Expect::Refused("force-push"), |fx| {
        rewrite(fx);
        s(&["--force-with-lease", "origin", "feat"])
    });
    scenario(
        "--force-with-lease --force-if-includes",
        Expect::Refused("force-push"),
        |fx| {
            rewrite(fx);
            s(&[
                "--force-with-lease",
                "--force-if-includes",
                "origin",
                "feat",
            ])
        },
    );
    scenario(
        "a forced reset to an older commit",
        Expect::Refused("force-push"),
        |fx| {
            fx.git(&["reset", "-q", "--hard", "HEAD~1"]);
            s(&["-f", "origin", "feat"])
        },
    );
    scenario(
        "push.default with a + in remote.origin.push",
        Expect::Refused("force-push"),
        |fx| {
            rewrite(fx);
            fx.git(&[
                "config",
                "remote.origin.push",
                "+refs/heads/feat:refs/heads/feat",
            ]);
            s(&["origin"])
        },
    );
    scenario(
        "--dry-run of a force push",
        Expect::Refused("force-push"),
        |fx| {
            rewrite(fx);
            s(&["--dry-run", "-f", "origin", "feat"])
        },
    );
    // Someone else pushed to feat, and we committed without fetching.
    let diverge = |fx: &Fixture| {
        let other = fx.env.root().join("other");
        let (remote, clone) = (fx.remote.to_str().unwrap(), other.to_str().unwrap());
        fx.env.git(
            &fx.env.root(),
            &["clone", "-q", "-b", "feat", remote, clone],
        );
        commit(&fx.env, &other, "theirs.txt", "theirs\n");
        fx.env.git(&other, &["push", "-q", "origin", "feat"]);
        commit(&fx.env, &fx.repo, "ours.txt", "ours\n");
    };
    scenario(
        "remote has commits we lack (forced)",
        Expect::Refused("remote-ahead"),
        |fx| {
            diverge(fx);
            s(&["-f", "origin", "feat"])
        },
    );
    scenario(
        "remote has commits we lack (unforced)",
        Expect::Refused("remote-ahead"),
        |fx| {
            diverge(fx);
            s(&["origin", "feat"])
        },
    );
    // A force push in two steps: the branch deleted (allowed), then pushed again rewritten.
    for delete in [":feat", "--delete"] {
        scenario(
            &format!("deleted with {delete}, pushed again rewritten"),
            Expect::Refused("force-push"),
            |fx| {
                let args: &[&str] = if delete == "--delete" {
                    &["origin", "--delete", "feat"]
                } else {
                    &["origin", ":feat"]
                };
                assert_eq!(fx.push(&fx.repo, args).code, 0, "the deletion is allowed");
                rewrite(fx);
                s(&["origin", "feat"])
            },
        );
    }
    scenario(
        "deleted, pushed again with what it held",
        Expect::Allowed,
        |fx| {
            assert_eq!(fx.push(&fx.repo, &["origin", ":feat"]).code, 0);
            commit(&fx.env, &fx.repo, "more.txt", "more\n");
            s(&["origin", "feat"])
        },
    );
}

#[test]
fn protected_branches_are_never_pushed_deleted_or_mirrored() {
    scenario("main", Expect::Refused("push-to-protected"), |fx| {
        fx.git(&["checkout", "-q", "main"]);
        commit(&fx.env, &fx.repo, "m.txt", "m\n");
        s(&["origin", "main"])
    });
    scenario("HEAD:main", Expect::Refused("push-to-protected"), |_| {
        s(&["origin", "HEAD:main"])
    });
    scenario("main:master", Expect::Refused("push-to-protected"), |_| {
        s(&["origin", "main:master"])
    });
    scenario("<sha>:main", Expect::Refused("push-to-protected"), |fx| {
        let sha = fx.git(&["rev-parse", "feat"]);
        s(&["origin", &format!("{}:refs/heads/main", sha.trim())])
    });
    scenario(
        "HEAD:refs/heads/MAIN (case)",
        Expect::Refused("push-to-protected"),
        |_| s(&["origin", "HEAD:refs/heads/MAIN"]),
    );
    scenario("delete main", Expect::Refused("delete-protected"), |_| {
        s(&["origin", ":main"])
    });
    scenario("--delete main", Expect::Refused("delete-protected"), |_| {
        s(&["origin", "--delete", "main"])
    });
    scenario(
        "--all with main ahead",
        Expect::Refused("push-to-protected"),
        |fx| {
            fx.git(&["checkout", "-q", "main"]);
            commit(&fx.env, &fx.repo, "m.txt", "m\n");
            s(&["--all", "origin"])
        },
    );
    scenario(
        "one bad ref refuses the whole push",
        Expect::Refused("push-to-protected"),
        |fx| {
            commit(&fx.env, &fx.repo, "feat.txt", "two\n");
            s(&["origin", "feat", "HEAD:main"])
        },
    );
    scenario("--mirror", Expect::Refused("mirror"), |_| {
        s(&["--mirror", "origin"])
    });
    scenario("remote.origin.mirror", Expect::Refused("mirror"), |fx| {
        fx.git(&["config", "remote.origin.mirror", "true"]);
        s(&["origin"])
    });
    scenario(
        "--mirro (an abbreviation git takes)",
        Expect::Refused("mirror"),
        |_| s(&["--mirro", "origin"]),
    );
    scenario(
        "delete a published tag",
        Expect::Refused("tag-rewrite"),
        |fx| {
            fx.git(&["tag", "v1", "HEAD"]);
            fx.git(&["push", "-q", "--no-verify", "origin", "v1"]);
            s(&["origin", ":refs/tags/v1"])
        },
    );
    scenario(
        "a configured protected branch",
        Expect::Refused("push-to-protected"),
        |fx| {
            write(
                &fx.repo,
                ".bmad/config.yaml",
                "version: 1\npolicy:\n  protected_branches: [release]\n",
            );
            s(&["origin", "HEAD:release"])
        },
    );
    scenario(
        "a moved tag with --tags -f",
        Expect::Refused("tag-rewrite"),
        |fx| {
            fx.git(&["tag", "v1", "HEAD~1"]);
            fx.git(&["push", "-q", "--no-verify", "origin", "v1"]);
            fx.git(&["tag", "-f", "v1", "HEAD"]);
            s(&["--tags", "-f", "origin"])
        },
    );
    scenario(
        "an auto-merge push option",
        Expect::Refused("auto-merge"),
        |fx| {
            fx.env.git(
                &fx.remote,
                &["config", "receive.advertisePushOptions", "true"],
            );
            commit(&fx.env, &fx.repo, "feat.txt", "two\n");
            s(&[
                "-o",
                "merge_request.merge_when_pipeline_succeeds",
                "origin",
                "feat",
            ])
        },
    );
    scenario(
        "a secret committed past pre-commit",
        Expect::Refused("secret"),
        |fx| {
            // Outside a session a human may skip pre-commit; the push still stops the secret.
            commit_past_pre_commit(
                fx,
                "deploy.sh",
                "export STRIPE=sk_live_4kR9tQ2mZ7xW1pL8vN3bH6cJ\n",
            );
            s(&["origin", "feat"])
        },
    );
}

/// `git -c remote.origin.mirror=true push origin`: the setting reaches the hook only
/// through git's environment, and a mirror push would delete the remote's other branches.
#[test]
fn a_mirror_push_set_on_the_command_line_is_refused() {
    let fx = Fixture::new();
    fx.env.git(&fx.repo, &["branch", "-D", "main"]);
    let before = fx.remote_refs();
    let run = fx
        .env
        .sh(&fx.repo, "git -c remote.origin.mirror=true push origin");
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("[mirror]"), "{}", run.stderr);
    assert_eq!(fx.remote_refs(), before, "the remote moved");
}

/// A new branch pushed to a remote that has none of the history (a fresh fork, a URL):
/// only the commits no remote-tracking ref has are read, so an old secret upstream long
/// since rotated neither blocks nor slows the push.
#[test]
fn a_push_to_a_fresh_remote_reads_only_commits_new_to_every_remote() {
    let fx = Fixture::new();
    fx.env.git(&fx.repo, &["checkout", "-q", "main"]);
    // Old history, on origin already: one commit carries a key.
    commit_past_pre_commit(
        &fx,
        "old.sh",
        "export STRIPE=sk_live_4kR9tQ2mZ7xW1pL8vN3bH6cJ\n",
    );
    fx.git(&["rm", "-q", "old.sh"]);
    fx.git(&["commit", "-q", "-m", "rotated"]);
    fx.env
        .git(&fx.repo, &["push", "-q", "--no-verify", "origin", "main"]);
    let fork = fx.env.root().join("fork.git");
    fx.env.git(
        &fx.env.root(),
        &["init", "-q", "--bare", fork.to_str().unwrap()],
    );
    fx.git(&["checkout", "-q", "-b", "topic"]);
    commit(&fx.env, &fx.repo, "topic.txt", "new work\n");
    let run = fx.push(&fx.repo, &[fork.to_str().unwrap(), "topic"]);
    assert_eq!(
        run.code, 0,
        "history origin has was scanned: {}",
        run.stderr
    );
    // What is new is still read.
    commit_past_pre_commit(
        &fx,
        "new.sh",
        "export STRIPE=sk_live_9zQ2mZ7xW1pL8vN3bH6cJ4kR\n",
    );
    let run = fx.push(&fx.repo, &[fork.to_str().unwrap(), "topic:topic2"]);
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("[secret]"), "{}", run.stderr);
}

#[test]
fn shallow_clones_push_fast_forwards_and_fail_closed_on_force() {
    let fx = Fixture::new();
    let shallow = fx.env.root().join("shallow");
    let url = format!("file://{}", fx.remote.display());
    fx.env.git(
        &fx.env.root(),
        &[
            "clone",
            "-q",
            "--depth",
            "1",
            "-b",
            "feat",
            &url,
            shallow.to_str().unwrap(),
        ],
    );
    fx.env.bmad(&shallow, &["hooks", "install"]).success();
    fx.env
        .git(&shallow, &["config", "bmad.policyScope", "everywhere"]);
    commit(&fx.env, &shallow, "s.txt", "s\n");
    fx.push(&shallow, &["origin", "feat"]);
    let run = fx.push(&shallow, &["origin", "feat"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    fx.env
        .git(&shallow, &["commit", "-q", "--amend", "-m", "rewritten"]);
    let run = fx.push(&shallow, &["-f", "origin", "feat"]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("[force-push]") || run.stderr.contains("[ancestry-unknown]"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_session_base_is_protected_and_refusals_are_journaled() {
    let fx = Fixture::new();
    let (id, wt) = fx.env.start(&fx.repo, "agent");
    // The session started from `feat`: now nobody may push to it.
    commit(&fx.env, &wt, "agent.txt", "agent\n");
    let run = fx.push(&wt, &["origin", "HEAD:feat"]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("[push-to-protected] refs/heads/feat"),
        "{}",
        run.stderr
    );
    let run = fx.push(&wt, &["origin", "HEAD:refs/heads/bmad/agent"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let journal = fx.env.bmad(&wt, &["journal", "--json"]).success().json();
    let violation = journal
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "policy_violation")
        .expect("the refusal is journaled");
    assert_eq!(violation["detail"]["rule"], "push-to-protected");
    assert_eq!(violation["session"], id.as_str());
}

#[test]
fn secrets_are_found_wherever_a_push_carries_them() {
    const STRIPE: &str = "sk_live_4kR9tQ2mZ7xW1pL8vN3bH6cJ";
    /// A merge of a side branch into `feat`; `evil` is written while resolving it.
    fn merge(fx: &Fixture, evil: Option<&str>) {
        fx.git(&["checkout", "-q", "-b", "side"]);
        commit(&fx.env, &fx.repo, "side.txt", "side\n");
        fx.git(&["checkout", "-q", "feat"]);
        commit(&fx.env, &fx.repo, "feat2.txt", "two\n");
        fx.git(&["merge", "-q", "--no-ff", "--no-commit", "side"]);
        if let Some(content) = evil {
            write(&fx.repo, "side.txt", content);
            fx.git(&["add", "side.txt"]);
        }
        fx.git(&["commit", "-q", "--no-verify", "-m", "merge side"]);
    }
    scenario("a clean merge", Expect::Allowed, |fx| {
        merge(fx, None);
        s(&["origin", "feat"])
    });
    scenario(
        "a secret written while resolving a merge",
        Expect::Refused("secret"),
        |fx| {
            merge(fx, Some(&format!("side\nkey = \"{STRIPE}\"\n")));
            s(&["origin", "feat"])
        },
    );
    scenario(
        "a secret inside a binary file",
        Expect::Refused("secret"),
        |fx| {
            commit_past_pre_commit(
                fx,
                "cache.db",
                "SQLite\0\u{1}\u{2}aws=AKIAQ7ZK2M4XW6RT5PLN\0\u{7}",
            );
            s(&["origin", "feat"])
        },
    );
    scenario(
        "a secret in a commit message",
        Expect::Refused("secret"),
        |fx| {
            fx.git(&[
                "commit",
                "-q",
                "--no-verify",
                "--allow-empty",
                "-m",
                &format!("deploy\n\nused {STRIPE} for the test"),
            ]);
            s(&["origin", "feat"])
        },
    );
    scenario(
        "a secret in an annotated tag's message",
        Expect::Refused("secret"),
        |fx| {
            fx.git(&["tag", "-a", "v1", "-m", &format!("release, key {STRIPE}")]);
            s(&["origin", "v1"])
        },
    );
    // Passwords and tokens a pattern of their own does not name: hex, special characters,
    // Twilio's auth token.
    for (file, content) in [
        ("config/db.env", "DB_PASSWORD=9c41f0e7b2a85d36\n"),
        (
            "config/app.json",
            "{\"database\": {\"password\": \"k7$Qz:9w;Lm2{x}|R8\"}}\n",
        ),
        (
            "config/sms.yml",
            "twilio_auth_token: \"5f2b8e91c04d7a63b1e9f0c28d4a7b36\"\n",
        ),
    ] {
        scenario(
            &format!("a secret in {file}"),
            Expect::Refused("secret"),
            |fx| {
                commit_past_pre_commit(fx, file, content);
                s(&["origin", "feat"])
            },
        );
    }
    scenario("a clean annotated tag", Expect::Allowed, |fx| {
        fx.git(&["tag", "-a", "v1", "-m", "release one"]);
        s(&["origin", "v1"])
    });
    scenario(
        "a secret on a hidden ref",
        Expect::Refused("secret"),
        |fx| {
            write(&fx.repo, "deploy.sh", &format!("export K={STRIPE}\n"));
            fx.git(&["add", "deploy.sh"]);
            let tree = fx.git(&["write-tree"]);
            let commit = fx.git(&["commit-tree", tree.trim(), "-m", "checkpoint"]);
            fx.git(&["reset", "-q"]);
            s(&[
                "origin",
                &format!("{}:refs/bmad/checkpoints/x", commit.trim()),
            ])
        },
    );
}

/// The exported pre-receive hook, installed in the bare remote, refuses what a pusher who
/// skips their own hooks sends: a force push to main, a secret, a tag deletion; ordinary
/// work still lands.
#[test]
fn the_exported_pre_receive_hook_holds_on_the_server_whatever_the_client_skips() {
    let fx = Fixture::new();
    let hook = fx.remote.join("hooks/pre-receive");
    fx.env
        .bmad(
            &fx.repo,
            &[
                "policy",
                "export",
                "--pre-receive",
                "-o",
                hook.to_str().unwrap(),
            ],
        )
        .success();
    let server = |args: &[&str]| fx.push(&fx.repo, args);
    let refused = |run: Run, rule: &str| {
        assert_ne!(run.code, 0, "{rule}: the server took it\n{}", run.stderr);
        assert!(
            run.stderr.contains(&format!("refused [{rule}]")),
            "{rule}: {}",
            run.stderr
        );
    };
    let before = fx.remote_refs();
    fx.git(&["checkout", "-q", "main"]);
    fx.git(&["commit", "-q", "--amend", "-m", "rewritten main"]);
    refused(
        server(&["--no-verify", "--force", "origin", "main"]),
        "force-push",
    );
    refused(
        server(&["--no-verify", "origin", ":main"]),
        "delete-protected",
    );
    fx.git(&["reset", "-q", "--hard", "origin/main"]);
    commit(&fx.env, &fx.repo, "m.txt", "m\n");
    refused(
        server(&["--no-verify", "origin", "main"]),
        "push-to-protected",
    );
    fx.git(&["checkout", "-q", "feat"]);
    commit_past_pre_commit(
        &fx,
        "deploy.sh",
        "export STRIPE=sk_live_4kR9tQ2mZ7xW1pL8vN3bH6cJ\n",
    );
    refused(server(&["--no-verify", "origin", "feat"]), "secret");
    assert_eq!(fx.remote_refs(), before, "the server moved");

    // Ordinary work lands; tags are published once and stay.
    fx.git(&["reset", "-q", "--hard", "HEAD~1"]);
    commit(&fx.env, &fx.repo, "feat.txt", "two\n");
    let run = server(&["--no-verify", "origin", "feat"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    fx.git(&["tag", "v1"]);
    let run = server(&["--no-verify", "origin", "v1"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    refused(
        server(&["--no-verify", "origin", ":refs/tags/v1"]),
        "tag-rewrite",
    );

    // A secret in a message, an annotated tag, a blob pushed as a ref: refused.
    let secret = "sk_live_4kR9tQ2mZ7xW1pL8vN3bH6cJ";
    fx.git(&[
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        &format!("key {secret}"),
    ]);
    refused(server(&["--no-verify", "origin", "feat"]), "secret");
    fx.git(&["reset", "-q", "--hard", "HEAD~1"]);
    fx.git(&["tag", "-a", "v2", "-m", &format!("key {secret}")]);
    refused(server(&["--no-verify", "origin", "v2"]), "secret");
    write(&fx.repo, "blob.txt", &format!("STRIPE={secret}\n"));
    let blob = fx.git(&["hash-object", "-w", "blob.txt"]);
    refused(
        server(&[
            "--no-verify",
            "origin",
            &format!("{}:refs/bmad/blob", blob.trim()),
        ]),
        "secret",
    );
    fx.git(&["add", "blob.txt"]);
    let tree = fx.git(&["write-tree"]);
    fx.git(&["reset", "-q"]);
    refused(
        server(&[
            "--no-verify",
            "origin",
            &format!("{}:refs/bmad/tree", tree.trim()),
        ]),
        "secret",
    );
    std::fs::remove_file(fx.repo.join("blob.txt")).unwrap();

    // A secret only a merge's resolution adds: the combined diff shows it.
    fx.git(&["checkout", "-q", "-b", "side"]);
    commit(&fx.env, &fx.repo, "side.txt", "s\n");
    fx.git(&["checkout", "-q", "feat"]);
    commit(&fx.env, &fx.repo, "feat2.txt", "f\n");
    fx.git(&["merge", "-q", "--no-commit", "--no-ff", "side"]);
    write(&fx.repo, "deploy.sh", &format!("export STRIPE={secret}\n"));
    fx.git(&["add", "deploy.sh"]);
    fx.git(&["commit", "-q", "--no-verify", "-m", "merge side"]);
    refused(server(&["--no-verify", "origin", "feat"]), "secret");
    fx.git(&["reset", "-q", "--hard", "HEAD~1"]);

    // git-bmad's state only ever fast-forwards: no rewrite, no deletion.
    let one = fx.git(&["commit-tree", "HEAD^{tree}", "-m", "one"]);
    let run = server(&[
        "--no-verify",
        "origin",
        &format!("{}:refs/notes/bmad/x", one.trim()),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let other = fx.git(&["commit-tree", "HEAD^{tree}", "-m", "other"]);
    refused(
        server(&[
            "--no-verify",
            "--force",
            "origin",
            &format!("{}:refs/notes/bmad/x", other.trim()),
        ]),
        "bmad-state",
    );
    refused(
        server(&["--no-verify", "origin", ":refs/notes/bmad/x"]),
        "bmad-state",
    );
}
