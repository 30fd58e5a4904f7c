//! `git bmad demo`: a real run of the auto-feature playbook in a throwaway repository, with a
//! simulated agent, shown command by command.
//!
//! Every step is the real `git bmad` binary and real git; only the agent is simulated (a short
//! shell script that writes canned artifacts and says so in every answer), so the demo needs
//! no API key and gives the same result every time.

use crate::runner::Program;
use std::path::{Path, PathBuf};

use clap::Args;

use crate::cli::error::{exit, CommandError};
use crate::cli::ui::{Style, Ui};
use crate::cli::Context;

/// Show git-bmad at work with simulated agents in a throwaway repository.
///
/// `demo` (or `demo session`): creates a repository with a spec-kit feature, starts a session
/// with the auto-feature playbook, runs it until the implementation is escalated to a gate,
/// answers it, approves the pull-request gate, prints the journal, and rolls the
/// implementation back and forth.
///
/// `demo epic`: runs a BMAD v6 epic of three stories unattended: the plan, the scope gate,
/// two stories at once, a review that finds a problem and a fix round, integration
/// checkpoints, draft pull requests to a local remote, the completion gate and the report.
///
/// The agents are simulated: shell scripts that write canned artifacts (they say so).
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Which demo: session (a playbook run) or epic (the BMAD epic runner)
    #[arg(value_enum, default_value = "session")]
    pub which: Which,
    /// Keep the throwaway repository (default: deleted at the end)
    #[arg(long)]
    pub keep: bool,
    /// Where to create it (default: a new directory under the system temp dir)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The demos.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Which {
    /// A playbook run in one session: gates, journal, rollback
    Session,
    /// A BMAD epic: stories in parallel, reviews, checkpoints, pull requests
    Epic,
}

/// The simulated agent, installed as `claude` on the demo's PATH.
const SIMULATED_AGENT: &str = r#"#!/bin/sh
# git-bmad demo: a SIMULATED agent. It is not an AI: it writes canned artifacts so that the
# demo shows the supervisor at work without an API key. It answers like `claude -p ...
# --output-format json` does.
feature=specs/001-greeting
say() {
  printf '{"type":"result","subtype":"success","is_error":false,"result":"[simulated agent] %s","session_id":"simulated-%s","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0},"permission_denials":[]}\n' "$1" "$BMAD_STEP"
}
case "$BMAD_STEP" in
  plan)
    printf '# Plan\n\nA shell script, src/greeting.sh, prints the greeting.\n' > "$feature/plan.md"
    say "wrote $feature/plan.md" ;;
  tasks)
    printf -- '- [ ] T001 Create src/greeting.sh\n- [ ] T002 Add tests/greeting.sh\n' > "$feature/tasks.md"
    say "wrote $feature/tasks.md (2 tasks)" ;;
  agreement|agreement-check)
    say "spec, plan and tasks agree\nVERDICT: PASS" ;;
  implement)
    mkdir -p src
    printf '#!/bin/sh\necho "hello, world"\n' > src/greeting.sh
    printf -- '- [x] T001 Create src/greeting.sh\n- [ ] T002 Add tests/greeting.sh\n' > "$feature/tasks.md"
    say "T001 done. T002: the test I wrote fails, I could not finish it" ;;
  qa-plan)
    mkdir -p "$feature/checklists"
    printf -- '- [x] The greeting is printed\n' > "$feature/checklists/qa.md"
    say "wrote the QA checklist" ;;
  qa-run)
    say "tests/greeting.sh passed; checklist complete\nVERDICT: PASS" ;;
  *)
    say "nothing to do for $BMAD_STEP" ;;
esac
"#;

const FAKE_GH: &str = "#!/bin/sh\n# git-bmad demo: a simulated `gh`; nothing leaves this machine.\necho \"[simulated gh] would open a draft pull request: gh $*\"\n";

/// Run `demo`.
pub fn cmd_demo(ctx: &Context, args: &DemoArgs) -> Result<u8, CommandError> {
    let base = match &args.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| io("create", dir, e))?;
            dir.clone()
        }
        None => std::env::temp_dir(),
    };
    let world = tempfile::Builder::new()
        .prefix("git-bmad-demo-")
        .tempdir_in(&base)
        .map_err(|e| io("create a directory in", &base, e))?;
    let root = std::fs::canonicalize(world.path()).map_err(|e| io("read", world.path(), e))?;
    let demo = Demo::new(&ctx.ui, &root)?;
    let result = match args.which {
        Which::Session => demo.play(),
        Which::Epic => demo.play_epic(),
    };
    if args.keep || result.is_err() {
        let kept = world.keep();
        ctx.ui.line(format!(
            "\nThe demo repository is kept in {}",
            kept.display()
        ));
    }
    result
}

pub(super) fn io(what: &str, path: &Path, e: std::io::Error) -> CommandError {
    CommandError::failed(format!("could not {what} {}: {e}", path.display()))
}

/// A demo's world: its own HOME, PATH (the simulated agents first) and repositories.
pub(super) struct Demo<'a> {
    ui: &'a Ui,
    pub(super) root: PathBuf,
    exe: PathBuf,
    path: std::ffi::OsString,
}

impl<'a> Demo<'a> {
    fn new(ui: &'a Ui, root: &Path) -> Result<Demo<'a>, CommandError> {
        let exe = std::env::current_exe()
            .map_err(|e| CommandError::failed(format!("cannot find the git-bmad binary: {e}")))?;
        let bin = root.join("bin");
        let home = root.join("home");
        for dir in [&bin, &home] {
            std::fs::create_dir_all(dir).map_err(|e| io("create", dir, e))?;
        }
        write_exec(&bin.join("claude"), SIMULATED_AGENT)?;
        write_exec(&bin.join("gh"), FAKE_GH)?;
        write(
            &home.join(".gitconfig"),
            "[user]\n\tname = Demo User\n\temail = demo@example.com\n",
        )?;
        let mut dirs = vec![bin];
        dirs.extend(std::env::split_paths(
            &crate::env::Var::Path.os().unwrap_or_default(),
        ));
        let path = std::env::join_paths(dirs).map_err(|e| CommandError::failed(e.to_string()))?;
        Ok(Demo {
            ui,
            root: root.to_path_buf(),
            exe,
            path,
        })
    }

    /// A command with the demo's own HOME, PATH and git config, nothing inherited from git.
    fn command(&self, program: &Path, dir: &Path, args: &[&str]) -> Program {
        let mut cmd = Program::new(program, args);
        cmd.cwd = Some(dir.to_path_buf());
        cmd.env = vec![
            ("HOME".into(), self.root.join("home").into()),
            ("PATH".into(), self.path.clone()),
            ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
            ("NO_COLOR".into(), "1".into()),
        ];
        cmd.env_remove = ["SPECIFY_FEATURE_DIRECTORY", "SPECIFY_FEATURE"]
            .iter()
            .chain(crate::env::child::REPO_REDIRECTING_VARS)
            .map(|k| k.to_string())
            .collect();
        cmd
    }

    pub(super) fn git(&self, dir: &Path, args: &[&str]) -> Result<(), CommandError> {
        let (code, _, stderr) = self
            .command(Path::new("git"), dir, args)
            .output()
            .map_err(|e| CommandError::failed(format!("could not run git: {e}")))?;
        if code != Some(0) {
            return Err(CommandError::failed(format!(
                "git {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&stderr)
            )));
        }
        Ok(())
    }

    /// Show and run `git bmad <args>`; its exit code must be `expect`.
    pub(super) fn bmad(
        &self,
        dir: &Path,
        args: &[&str],
        expect: u8,
        why: &str,
    ) -> Result<(), CommandError> {
        self.ui.line(format!(
            "\n{} {}",
            self.ui.paint("$ git bmad", Style::Bold),
            args.join(" ")
        ));
        // Inherited streams keep the command's own order of progress and results.
        let code = self
            .command(&self.exe, dir, args)
            .run_in_foreground(None)
            .map_err(|e| CommandError::failed(format!("could not run git-bmad: {e}")))?
            .unwrap_or(-1);
        if code != i32::from(expect) {
            return Err(CommandError::failed(format!(
                "`git bmad {}` exited {code}, the demo expected {expect}",
                args.join(" ")
            )));
        }
        if !why.is_empty() {
            self.ui
                .line(self.ui.paint(format!("  (exit {code}: {why})"), Style::Dim));
        }
        Ok(())
    }

    pub(super) fn say(&self, text: &str) {
        self.ui.line(format!(
            "\n{}",
            self.ui.paint(format!("# {text}"), Style::Yellow)
        ));
    }

    fn play(&self) -> Result<u8, CommandError> {
        let repo = self.root.join("greeting");
        std::fs::create_dir_all(&repo).map_err(|e| io("create", &repo, e))?;
        self.say(&format!(
            "A throwaway repository in {} with a finished spec-kit spec. The agent is SIMULATED: a shell script installed as `claude` that writes canned files.",
            repo.display()
        ));
        self.git(&repo, &["init", "-q", "-b", "main"])?;
        write(&repo.join("README.md"), "# greeting\n")?;
        write(&repo.join("Makefile"), "test:\n\tsh tests/greeting.sh\n")?;
        write(
            &repo.join("specs/001-greeting/spec.md"),
            "# Feature: greeting\n\nThe program prints `hello, world`.\n",
        )?;
        for cmd in ["plan", "tasks", "analyze", "implement", "checklist"] {
            write(
                &repo.join(format!(".claude/commands/speckit.{cmd}.md")),
                &format!("---\ndescription: spec-kit {cmd} (stub for the demo)\n---\n$ARGUMENTS\n"),
            )?;
        }
        self.bmad(&repo, &["init"], exit::OK, "")?;
        self.git(&repo, &["add", "-A"])?;
        self.git(&repo, &["commit", "-q", "-m", "spec and git-bmad"])?;

        self.say("A session: its own branch and worktree. The playbook is checked before anything is created.");
        self.bmad(
            &repo,
            &["start", "greeting", "--playbook", "auto-feature"],
            exit::OK,
            "",
        )?;
        let wt = self.root.join("greeting.greeting");

        self.say("Run it: every step is a fresh agent process, checkpointed before and after, its artifacts checked by git-bmad.");
        self.bmad(
            &wt,
            &["run"],
            exit::GATED,
            "parked at a gate; nothing waits on a terminal",
        )?;

        self.say("A human does what the agent could not (the test git-bmad ran itself failed), then answers. The answer is journaled.");
        write(
            &wt.join("tests/greeting.sh"),
            "#!/bin/sh\n[ \"$(sh src/greeting.sh)\" = \"hello, world\" ]\n",
        )?;
        write(
            &wt.join("specs/001-greeting/tasks.md"),
            "- [x] T001 Create src/greeting.sh\n- [x] T002 Add tests/greeting.sh\n",
        )?;
        self.bmad(
            &wt,
            &["answer", "continue", "-m", "wrote the test myself"],
            exit::GATED,
            "the pull request step always asks first",
        )?;

        self.bmad(&wt, &["status"], exit::OK, "")?;
        self.bmad(
            &wt,
            &["answer", "continue", "-m", "ship it"],
            exit::OK,
            "done",
        )?;

        self.say("The journal: every step, decision, duration and answer (each commit of the session carries it as .bmad/sessions/<id>/journal.md, for the pull request).");
        self.bmad(&wt, &["journal"], exit::OK, "")?;

        self.say("Anything can be undone: roll the worktree back to before the implementation, then undo that.");
        self.bmad(
            &wt,
            &["rollback", "--step", "implement", "--dry-run"],
            exit::OK,
            "",
        )?;
        self.bmad(&wt, &["rollback", "--step", "implement"], exit::OK, "")?;
        self.ui.line(format!(
            "  src/greeting.sh is {}",
            if wt.join("src/greeting.sh").exists() {
                "still there"
            } else {
                "gone"
            }
        ));
        self.bmad(&wt, &["undo"], exit::OK, "")?;
        self.ui.line(format!(
            "  src/greeting.sh is {}",
            if wt.join("src/greeting.sh").exists() {
                "back"
            } else {
                "missing"
            }
        ));
        self.say("That was git-bmad with a simulated agent. With a real one: git bmad init; git bmad start <name> --playbook auto-feature; cd there; git bmad run.");
        Ok(exit::OK)
    }
}

pub(super) fn write(path: &Path, text: &str) -> Result<(), CommandError> {
    crate::fs::write_atomically(path, text.as_bytes(), None).map_err(|e| io("write", path, e))
}

pub(super) fn write_exec(path: &Path, text: &str) -> Result<(), CommandError> {
    crate::fs::write_atomically(path, text.as_bytes(), Some(0o755))
        .map_err(|e| io("write", path, e))
}
