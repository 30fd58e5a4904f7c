//! The `git-bmad` binary; git runs it as `git bmad`.

fn main() -> std::process::ExitCode {
    git_bmad::cli::run()
}
