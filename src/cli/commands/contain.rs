//! `git bmad contain`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::runner::{sandbox, Program};

/// Run a command in the walls a step's command gets here: this worktree writable but its
/// `.git` link, the repository readable, a private home, no credential.
///
/// To see what an agent would see (`git bmad contain -- sh`), to check that a CLI runs inside
/// the walls (`git bmad contain -- claude --version`), or to time a layer. Exits with the
/// command's code (126 when the walls cannot be raised, 127 when the program cannot be found
/// inside them).
#[derive(Debug, Args)]
pub struct ContainArgs {
    /// Which layers raise the walls: what this machine has, or one of them alone
    #[arg(long, value_enum, default_value_t = Layer::Auto)]
    pub layers: Layer,
    /// Without the network
    #[arg(long)]
    pub offline: bool,
    /// The command and its arguments
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// A choice of layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Layer {
    /// Every layer this machine has
    Auto,
    /// bubblewrap alone
    Bubblewrap,
    /// Landlock (with its seccomp filter) alone
    Landlock,
    /// No walls: the same command run as it is (a baseline for timing)
    None,
}

/// Run `contain`.
pub fn cmd_contain(ctx: &Context, args: &ContainArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    if args.layers == Layer::None {
        let mut run = Program::new(&args.command[0], &args.command[1..]);
        run.cwd = Some(ctx.cwd.clone());
        let code = run.run_in_foreground(None).map_err(|e| {
            CommandError::failed(format!("could not start {}: {e}", args.command[0]))
        })?;
        return Ok(code.map_or(exit::FAILED, |c| c.clamp(0, 255) as u8));
    }
    let layers = match args.layers {
        Layer::Landlock => sandbox::Layers::landlock_here(),
        Layer::Bubblewrap => sandbox::Layers {
            landlock: None,
            ..sandbox::Layers::here()
        },
        Layer::Auto | Layer::None => sandbox::Layers::here(),
    };
    if !layers.any() {
        return Err(CommandError::failed(format!(
            "no walls can be raised here as asked: {}",
            layers.missing.join("; ")
        ))
        .hinted("`git bmad doctor` names the command that enables bubblewrap here"));
    }
    let program =
        which::which(&args.command[0]).unwrap_or_else(|_| PathBuf::from(&args.command[0]));
    let hidden = crate::policy::hidden_from_steps(crate::session::Repo::of(&repo));
    let readable = [repo.common_dir().to_owned()];
    let scratch = sandbox::scratch(
        &layers,
        repo.workdir(),
        &hidden,
        &readable,
        repo.identity(),
        !args.offline,
        Some(&program),
    )
    .map_err(|e| CommandError::failed(format!("could not make a private home: {e}")))?;
    let _shadow =
        crate::policy::command_shadow(crate::session::Repo::of(&repo), &layers, repo.workdir())?;
    let walls = &scratch.contained.walls;
    let launch = sandbox::launch(&layers, walls, &ctx.cwd, &program, &args.command[1..])
        .map_err(|e| CommandError::failed(format!("could not raise the walls: {e}")))?;
    ctx.ui.status(format!("walls: {}", layers.describe()));
    // Landlock cannot take a folder back out of a writable one: a repository's own `.git`
    // folder (the main worktree's) is as writable as the worktree around it.
    if layers.bwrap.is_none() && repo.workdir().join(".git").is_dir() {
        ctx.ui.warn(format!(
            "{} is writable in these walls (Landlock alone cannot hold it read-only inside the worktree); run this in a session worktree, where steps run",
            repo.workdir().join(".git").display()
        ));
    }
    let mut run = Program::new(&launch.program, launch.args);
    run.cwd = Some(ctx.cwd.clone());
    run.env_remove = sandbox::hidden_variables(&[]);
    run.env
        .extend(launch.env.into_iter().map(|(k, v)| (k.into(), v.into())));
    run.env.push((crate::env::CONTAINED.into(), "1".into()));
    let code = run.run_in_foreground(None).map_err(|e| {
        CommandError::failed(format!("could not start {}: {e}", launch.program.display()))
    })?;
    Ok(code.map_or(exit::FAILED, |c| c.clamp(0, 255) as u8))
}
