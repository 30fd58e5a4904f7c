//! One module per command; [`dispatch`] routes to them.

mod analyze;
mod answer;
mod checkpoint;
mod ci;
mod completions;
mod conformance;
mod contain;
mod demo;
mod demo_epic;
mod doctor;
mod epic;
mod finish;
mod gc;
mod generate_man;
mod guard;
mod hook;
mod hooks;
mod init;
mod install_man;
mod journal;
mod list;
mod playbook;
mod policy;
mod prune;
mod push;
mod remove;
mod report;
mod restore;
mod resume;
mod rollback;
mod run;
mod scan;
mod speckit;
mod start;
mod status;
mod stories;
mod sync;
mod template;
mod trust;
mod undo;
mod watch;
mod workflow;

use clap::{Args, Subcommand};

use super::error::CommandError;
use super::Context;

/// Which session a command acts on, named as its argument or by `-s`: the same either way.
#[derive(Debug, Args)]
pub struct SessionArg {
    /// Session id, id prefix or name (default: the current worktree's session)
    #[arg(value_name = "SESSION", conflicts_with = "session")]
    target: Option<String>,
    /// Session id, id prefix or name (the same as the argument)
    #[arg(long, short = 's', value_name = "SESSION")]
    session: Option<String>,
}

impl SessionArg {
    /// The session asked for, if one was.
    pub fn query(&self) -> Option<&str> {
        self.target.as_deref().or(self.session.as_deref())
    }
}

/// The session a command must be told, as its argument or by `-s`.
#[derive(Debug, Args)]
pub struct NamedSessionArg {
    /// Session id, id prefix or name
    #[arg(
        value_name = "SESSION",
        conflicts_with = "session",
        required_unless_present = "session"
    )]
    target: Option<String>,
    /// Session id, id prefix or name (the same as the argument)
    #[arg(long, short = 's', value_name = "SESSION")]
    session: Option<String>,
}

impl NamedSessionArg {
    /// The session named (clap requires one of the two).
    pub fn name(&self) -> &str {
        self.target
            .as_deref()
            .or(self.session.as_deref())
            .unwrap_or_default()
    }
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Set up git-bmad in this repository: .bmad/config.yaml and the notes config
    Init(init::InitArgs),
    /// Start a session: a branch and a worktree of its own, and a first checkpoint
    Start(start::StartArgs),
    /// Show one session: status, checkpoints, last event
    Status(status::StatusArgs),
    /// List all sessions
    List(list::ListArgs),
    /// Snapshot the session worktree as a checkpoint (index, HEAD and branch untouched)
    Checkpoint(checkpoint::CheckpointArgs),
    /// Show a session's journal, or append an event to it
    Journal(journal::JournalArgs),
    /// Restore the session worktree to a checkpoint, after saving the current state
    Rollback(rollback::RollbackArgs),
    /// Reverse the last rollback
    Undo(undo::UndoArgs),
    /// Mark a session completed (its worktree and branch stay for review)
    Finish(finish::FinishArgs),
    /// Delete a session: worktree, branch, checkpoints and journal
    Remove(remove::RemoveArgs),
    /// Record sessions whose worktrees were deleted by hand, and let git forget them
    Prune(prune::PruneArgs),
    /// Bring back a removed session, or the worktree of a pruned one
    Restore(restore::RestoreArgs),
    /// Delete removed sessions whose keep time has passed
    Gc(gc::GcArgs),
    /// Push a session: its branch, and its journal and checkpoints where the remote opted in
    Push(push::PushArgs),
    /// Fetch every session's state from a remote; bring local sessions up to date
    Sync(sync::SyncArgs),
    /// Which machines' pushed journals are acted on; this clone's key line to trust it
    Trust(trust::TrustArgs),
    /// The morning report: what each session did, what is done, what waits for you
    Report(report::ReportArgs),
    /// Check every invariant of the stored state; exit 1 if something needs repair
    Doctor(doctor::DoctorArgs),
    /// Run a command in the walls a step's command gets here
    Contain(contain::ContainArgs),
    /// Scan staged changes, files or commits for secrets; exit 4 if one is found
    Scan(scan::ScanArgs),
    /// Check or list playbooks
    Playbook(playbook::PlaybookArgs),
    /// Run a playbook in the current session until a gate, a failure or the end
    Run(run::RunArgs),
    /// Continue the current session's run after a crash, a stop or an answered gate
    Resume(resume::ResumeArgs),
    /// Answer the gate the current session's run waits at, then continue
    Answer(answer::AnswerArgs),
    /// BMAD stories: list, next, order, check drift, set a status in every file at once
    Stories(stories::StoriesArgs),
    /// The BMAD epic runner: plan, run (in parallel), status, resume
    Epic(epic::EpicArgs),
    /// CI that runs an epic's stories: the GitHub Actions workflow behind epic run --on actions
    Ci(ci::CiArgs),
    /// spec-kit: the current feature, its artifacts and task progress
    Speckit(speckit::SpeckitArgs),
    /// Load every BMAD and spec-kit file under a directory; one line per file
    #[command(hide = true)]
    Conformance(conformance::ConformanceArgs),
    /// Decision engine: menus in agent output, confidence from signals
    Analyze(analyze::AnalyzeArgs),
    /// BMAD workflows: show one resolved with its ordered steps, or lint them
    Workflow(workflow::WorkflowArgs),
    /// BMAD templates: render {{placeholders}}, {{#if}} and {{#each}} from a YAML file
    Template(template::TemplateArgs),
    /// Watch a playbook run with a simulated agent in a throwaway repository
    Demo(demo::DemoArgs),
    /// Print shell completions (bash, zsh, fish, elvish, powershell)
    Completions(completions::CompletionsArgs),
    /// Install the man pages so that `git bmad --help` works
    InstallMan(install_man::InstallManArgs),
    /// Install, remove or inspect the policy git hooks
    Hooks(hooks::HooksArgs),
    /// Export the policy for the server: pre-receive hook, GitHub rulesets, GitLab settings
    Policy(policy::PolicyArgs),
    /// Judge an agent's shell command before it runs (Claude Code PreToolUse hook)
    Guard(guard::GuardArgs),
    /// Run the check of a git hook (what the installed hooks call)
    #[command(hide = true)]
    Hook(hook::HookArgs),
    /// Write the man pages (used by scripts/install.sh)
    #[command(hide = true)]
    GenerateMan(generate_man::GenerateManArgs),
    /// Watch a worktree for the snapshots' change feed (started by snapshots)
    #[command(hide = true)]
    Watch(watch::WatchArgs),
}

impl Command {
    /// Whether a machine runs this, not a person: git on every commit and push, an agent
    /// CLI on every tool call, git-bmad itself in the background (the watcher).
    pub fn is_machine_run(&self) -> bool {
        matches!(
            self,
            Command::Hook(_) | Command::Guard(_) | Command::Watch(_)
        )
    }
}

/// Put the man pages beside the binary on first use (see `generate_man`).
pub fn ensure_man_pages() {
    generate_man::ensure_installed();
}

/// Run a command; its exit code on success.
pub fn dispatch(ctx: &Context, command: Command) -> Result<u8, CommandError> {
    match command {
        Command::Init(args) => init::cmd_init(ctx, &args),
        Command::Start(args) => start::cmd_start(ctx, &args),
        Command::Status(args) => status::cmd_status(ctx, &args),
        Command::List(args) => list::cmd_list(ctx, &args),
        Command::Checkpoint(args) => checkpoint::cmd_checkpoint(ctx, &args),
        Command::Journal(args) => journal::cmd_journal(ctx, &args),
        Command::Rollback(args) => rollback::cmd_rollback(ctx, &args),
        Command::Undo(args) => undo::cmd_undo(ctx, &args),
        Command::Finish(args) => finish::cmd_finish(ctx, &args),
        Command::Remove(args) => remove::cmd_remove(ctx, &args),
        Command::Prune(args) => prune::cmd_prune(ctx, &args),
        Command::Restore(args) => restore::cmd_restore(ctx, &args),
        Command::Gc(args) => gc::cmd_gc(ctx, &args),
        Command::Report(args) => report::cmd_report(ctx, &args),
        Command::Push(args) => push::cmd_push(ctx, &args),
        Command::Sync(args) => sync::cmd_sync(ctx, &args),
        Command::Trust(args) => trust::cmd_trust(ctx, &args),
        Command::Doctor(args) => doctor::cmd_doctor(ctx, &args),
        Command::Contain(args) => contain::cmd_contain(ctx, &args),
        Command::Scan(args) => scan::cmd_scan(ctx, &args),
        Command::Playbook(args) => playbook::cmd_playbook(ctx, &args),
        Command::Run(args) => run::cmd_run(ctx, &args),
        Command::Resume(args) => resume::cmd_resume(ctx, &args),
        Command::Answer(args) => answer::cmd_answer(ctx, &args),
        Command::Demo(args) => demo::cmd_demo(ctx, &args),
        Command::Analyze(args) => analyze::cmd_analyze(ctx, &args),
        Command::Workflow(args) => workflow::cmd_workflow(ctx, &args),
        Command::Template(args) => template::cmd_template(ctx, &args),
        Command::Stories(args) => stories::cmd_stories(ctx, &args),
        Command::Epic(args) => epic::cmd_epic(ctx, &args),
        Command::Ci(args) => ci::cmd_ci(ctx, &args),
        Command::Speckit(args) => speckit::cmd_speckit(ctx, &args),
        Command::Conformance(args) => conformance::cmd_conformance(ctx, &args),
        Command::Hooks(args) => hooks::cmd_hooks(ctx, &args),
        Command::Policy(args) => policy::cmd_policy(ctx, &args),
        Command::Guard(args) => guard::cmd_guard(ctx, &args),
        Command::Hook(args) => hook::cmd_hook(ctx, &args),
        Command::GenerateMan(args) => generate_man::cmd_generate_man(ctx, &args),
        Command::Watch(args) => watch::cmd_watch(ctx, &args),
        Command::Completions(args) => completions::cmd_completions(ctx, &args),
        Command::InstallMan(args) => install_man::cmd_install_man(ctx, &args),
    }
}
