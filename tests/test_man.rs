//! The committed man pages are the ones the clap definitions generate.

use crate::common::TestEnv;

#[test]
fn committed_man_pages_are_up_to_date() {
    let env = TestEnv::new();
    let out = env.root().join("man");
    env.bmad(&env.root(), &["generate-man", out.to_str().unwrap()])
        .success();
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    let mut names: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert!(names.iter().any(|n| n == "git-bmad.1"));
    assert!(names.iter().any(|n| n == "git-bmad-rollback.1"));
    for name in &names {
        let fresh = std::fs::read(out.join(name)).unwrap();
        let kept = std::fs::read(committed.join(name)).unwrap_or_default();
        assert!(
            fresh == kept,
            "man/{} is stale: run `cargo run -- generate-man man`",
            name.to_string_lossy()
        );
    }
    let committed_count = std::fs::read_dir(&committed).unwrap().count();
    assert_eq!(
        committed_count,
        names.len(),
        "man/ holds pages no command generates"
    );
}

/// Every command and subcommand the clap tree defines, as the words that name it.
fn every_command(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<Vec<String>>) {
    for sub in cmd.get_subcommands() {
        if sub.get_name() == "help" {
            continue;
        }
        let mut words = path.clone();
        words.push(sub.get_name().to_owned());
        out.push(words.clone());
        every_command(sub, words, out);
    }
}

#[test]
fn help_works_for_every_command() {
    let env = TestEnv::new();
    let mut commands = Vec::new();
    every_command(&git_bmad::cli::command(), Vec::new(), &mut commands);
    assert!(commands.len() > 40, "only {} commands", commands.len());
    for words in &commands {
        let mut args: Vec<&str> = words.iter().map(String::as_str).collect();
        args.push("--help");
        let run = env.bmad(&env.root(), &args).success();
        let usage = format!("Usage: git bmad {}", words.join(" "));
        assert!(
            run.stdout.contains(&usage),
            "{}: {}",
            words.join(" "),
            run.stdout
        );
    }
}

#[test]
fn a_cargo_install_alone_gets_its_man_pages_on_first_use() {
    let env = TestEnv::new();
    // A binary installed the way `cargo install` does: <prefix>/bin/git-bmad.
    let prefix = env.root().join("home/.cargo");
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    let bin = prefix.join("bin/git-bmad");
    std::fs::copy(crate::common::BIN, &bin).unwrap();
    // The hermetic environment, with our copy instead of the test binary.
    let cmd = env.bmad_command(&env.root());
    let run = || {
        std::process::Command::new(&bin)
            .envs(cmd.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
            .env_remove("GIT_BMAD_LOG")
            .arg("--version")
            .output()
    };
    // A process another test forks while the copy is still open for writing holds it open
    // until its exec: the kernel refuses to run a file open for writing (ETXTBSY) meanwhile.
    let mut out = run();
    for _ in 0..50 {
        match &out {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(20));
                out = run();
            }
            _ => break,
        }
    }
    let out = out.unwrap();
    assert!(out.status.success());
    let page = prefix.join("share/man/man1/git-bmad.1");
    let text = std::fs::read_to_string(&page).expect("git-bmad.1 written beside the binary");
    assert!(text.contains(env!("CARGO_PKG_VERSION")));
    assert!(prefix.join("share/man/man1/git-bmad-rollback.1").exists());
    // `man` finds it from PATH alone, as `git bmad --help` will ask it to.
    if let Ok(man) = std::process::Command::new("man")
        .args(["-w", "git-bmad"])
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", prefix.join("bin").display()),
        )
        .env_remove("MANPATH")
        .output()
    {
        if man.status.code() != Some(127)
            && !String::from_utf8_lossy(&man.stderr).contains("not found")
        {
            assert!(
                String::from_utf8_lossy(&man.stdout).contains("git-bmad.1"),
                "man -w: {}",
                String::from_utf8_lossy(&man.stderr)
            );
        }
    }
}

#[test]
fn install_man_writes_into_a_named_directory() {
    let env = TestEnv::new();
    let dir = env.root().join("mine/man1");
    let run = env
        .bmad(
            &env.root(),
            &["install-man", dir.to_str().unwrap(), "--json"],
        )
        .success();
    assert!(run.json()["pages"].as_u64().unwrap() > 20);
    assert!(dir.join("git-bmad.1").exists());
}

#[test]
fn completions_come_from_the_same_definitions() {
    let env = TestEnv::new();
    let bash = env.bmad(&env.root(), &["completions", "bash"]).success();
    assert!(bash.stdout.contains("rollback"), "{}", bash.stdout);
    assert!(bash.stdout.contains("--dry-run"));
    let zsh = env.bmad(&env.root(), &["completions", "zsh"]).success();
    assert!(zsh.stdout.contains("#compdef git-bmad"));
    env.bmad(&env.root(), &["completions", "tcsh"]).code(2);
    // A reader that stops at the first line (`| head -1`) is no crash.
    let mut child = env
        .bmad_command(&env.root())
        .args(["completions", "bash"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}
