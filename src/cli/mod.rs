//! The command line: parsing (clap), one file per command under `commands/`, printing through
//! [`ui::Ui`], exit codes in [`error::exit`]. Commands are thin: they parse, call the library,
//! print.

pub mod commands;
pub mod error;
pub mod progress;
pub mod ui;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use crate::git::Repo;
use error::{exit, CommandError};
use ui::Ui;

/// Run autonomous AI coding agents on a git repository, safely: each session gets its own
/// branch and worktree, checkpoints on hidden refs, a journal in git notes, and rollback.
#[derive(Debug, Parser)]
#[command(
    name = "git-bmad",
    bin_name = "git bmad",
    version,
    propagate_version = true
)]
#[command(
    after_help = "Start with `git bmad init`, then `git bmad start <name>`.\nEverything git-bmad stores lives in this repository's git database."
)]
pub struct Cli {
    /// Run as if started in PATH
    #[arg(short = 'C', value_name = "PATH", global = true)]
    pub directory: Option<PathBuf>,
    /// Print machine-readable JSON on stdout instead of text
    #[arg(long, global = true)]
    pub json: bool,
    /// Print only data, no progress or hints
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// The command
    #[command(subcommand)]
    pub command: commands::Command,
}

/// Everything a command needs from its surroundings, built once in [`run`].
pub struct Context {
    /// Output.
    pub ui: Ui,
    /// Where the command runs.
    pub cwd: PathBuf,
    /// The policy every session operation of this command obeys.
    pub policy: crate::policy::SessionPolicy,
}

impl Context {
    /// Open the repository the command runs in.
    pub fn repo(&self) -> Result<Repo, CommandError> {
        let repo = Repo::discover(&self.cwd).map_err(|e| {
            let not_repo = matches!(e, crate::git::Error::NotARepository { .. });
            let err = CommandError::from(e);
            if not_repo {
                err.hinted("cd into a git repository, or pass -C <path>")
            } else {
                err
            }
        })?;
        // A key an older git-bmad kept in the repository leaves it on the next command, before
        // any step can read it (a contained process cannot write the repository's folder).
        if !crate::env::Var::Contained.is_set() {
            if let Err(e) = crate::session::trust::move_legacy_key(&repo) {
                self.ui.warn(format!(
                    "this clone's signing key is still in the repository: {e}"
                ));
            }
        }
        Ok(repo)
    }

    /// The project configuration, with the runner names it uses checked against the
    /// registered runners (the config layer cannot know them).
    pub fn config(&self, repo: &Repo) -> Result<crate::config::Config, CommandError> {
        let config = crate::session::load_config(repo)?;
        let problems = crate::runner::config_problems(&config);
        if problems.is_empty() {
            return Ok(config);
        }
        let path = repo.main_workdir()?.join(crate::config::CONFIG_PATH);
        Err(crate::session::Error::from(crate::config::Error::Invalid {
            path,
            location: None,
            message: problems.join("; "),
        })
        .into())
    }
}

/// Parse the arguments, run the command, and turn the outcome into an exit code.
pub fn run() -> ExitCode {
    crate::env::read_once();
    init_logging();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            commands::ensure_man_pages();
            let _ = e.print();
            return ExitCode::from(match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    exit::OK
                }
                _ => exit::USAGE,
            });
        }
    };
    let ui = Ui::new(
        cli.json,
        cli.quiet,
        crate::env::Var::NoColor.os().is_some_and(|v| !v.is_empty()),
    );
    let cwd = match resolve_cwd(cli.directory.as_deref()) {
        Ok(cwd) => cwd,
        Err(e) => return report(&ui, e),
    };
    let json = cli.json;
    if let Ok(exe) = std::env::current_exe() {
        crate::git::enable_watcher(exe);
    }
    // Not for commands a machine runs: hooks run on every commit and push.
    if !cli.command.is_machine_run() {
        commands::ensure_man_pages();
        // A step killed with git-bmad may have left this worktree naming the step's shadow
        // of the repository: the repository itself first (a hook's git already chose).
        if !crate::env::Var::Contained.is_set() {
            if let Err(e) = crate::git::put_back_abandoned_shadow(&cwd) {
                ui.warn(format!("a killed step's worktree link: {e}"));
            }
        }
    }
    let ctx = Context {
        ui,
        cwd,
        policy: crate::policy::SessionPolicy::default(),
    };
    match commands::dispatch(&ctx, cli.command) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            let ui = Ui::new(json, false, true);
            report(&ui, e)
        }
    }
}

fn report(ui: &Ui, e: CommandError) -> ExitCode {
    if ui.json() {
        eprintln!("{}", e.to_json());
    } else {
        eprint!("{}", ui::safe_for_terminal(&e.render()));
    }
    ExitCode::from(e.code)
}

fn resolve_cwd(directory: Option<&std::path::Path>) -> Result<PathBuf, CommandError> {
    let here = std::env::current_dir()
        .map_err(|e| CommandError::failed(format!("cannot read the current directory: {e}")))?;
    Ok(match directory {
        Some(dir) if dir.is_absolute() => dir.to_path_buf(),
        Some(dir) => here.join(dir),
        None => here,
    })
}

/// `GIT_BMAD_LOG=debug` (or `RUST_LOG`) turns on logging to stderr; off by default.
fn init_logging() {
    let filter = crate::env::Var::GitBmadLog
        .get()
        .or_else(|| crate::env::Var::RustLog.get());
    if let Some(filter) = filter {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .try_init();
    }
}

/// The clap definition, for man pages and completions.
pub fn command() -> clap::Command {
    Cli::command()
}

#[cfg(test)]
mod tests {
    /// Every command, with the words that reach it (`["journal", "export"]`).
    fn every_command(
        command: &clap::Command,
        path: Vec<String>,
        out: &mut Vec<(Vec<String>, clap::Command)>,
    ) {
        for sub in command.get_subcommands() {
            let mut words = path.clone();
            words.push(sub.get_name().to_owned());
            out.push((words.clone(), sub.clone()));
            every_command(sub, words, out);
        }
    }

    #[test]
    fn the_definition_is_consistent() {
        super::command().debug_assert();
    }

    #[test]
    fn every_command_that_takes_one_session_takes_it_by_s_too() {
        let mut commands = Vec::new();
        every_command(&super::command(), Vec::new(), &mut commands);
        let mut missing = Vec::new();
        for (words, command) in &commands {
            let names_a_session = command
                .get_arguments()
                .any(|a| a.get_value_names().is_some_and(|v| v == ["SESSION"]));
            let by_s = command
                .get_arguments()
                .any(|a| a.get_short() == Some('s') && a.get_long() == Some("session"));
            if names_a_session && !by_s {
                missing.push(words.join(" "));
            }
        }
        assert!(missing.is_empty(), "no -s/--session: {missing:?}");
    }
}
