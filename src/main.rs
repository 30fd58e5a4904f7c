//! The `git-bmad` binary; git runs it as `git bmad`.

fn main() -> std::process::ExitCode {
    // Started to raise the walls and become a contained program: nothing else runs first.
    if let Some(code) = git_bmad::runner::sandbox::enter_if_asked() {
        return code;
    }
    git_bmad::cli::run()
}
