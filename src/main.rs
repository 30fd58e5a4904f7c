//! The `git-bmad` binary; git runs it as `git bmad`.

fn main() -> std::process::ExitCode {
    // Started to raise the walls and become a contained program: nothing else runs first.
    if let Some(code) = git_bmad::runner::sandbox::enter_if_asked() {
        return code;
    }
    // Nobody but root reads this process's environment or memory through `/proc`: a
    // contained step, where no mount hides `/proc` (Landlock alone), reads neither the
    // credentials git-bmad was started with nor what it holds.
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    git_bmad::cli::run()
}
