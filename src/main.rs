//! The `git-bmad` binary; git runs it as `git bmad`.

/// Hooks and agents start git-bmad for every commit, push and checkpoint: short runs that
/// build large tables once (indexes, trees) and exit, where mimalloc takes a third of the
/// page faults the C library's allocator does.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    git_bmad::cli::run()
}
