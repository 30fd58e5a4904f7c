//! What the benchmarks share: the median time of a closure over many samples, a hermetic
//! git for the process and its children, and running git.
// Each benchmark is its own crate and uses a part of this.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The median wall time of `samples` calls of `f` (the median, so one slow call from the
/// machine's noise does not move the result).
pub fn median_time(samples: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..samples)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

/// The release binary (built beforehand: `cargo build --release`) and a temporary directory
/// this process's git is pointed at (see [`hermetic_git`]).
pub fn release_binary_and_hermetic_dir() -> (std::path::PathBuf, tempfile::TempDir) {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/git-bmad");
    assert!(
        bin.exists(),
        "build the binary first: cargo build --release"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    hermetic_git(dir.path());
    (bin, dir)
}

/// Point this process (and every git it starts) at a home of its own under `dir`, with a
/// user for commits and no system config.
pub fn hermetic_git(dir: &Path) {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).expect("home");
    std::env::set_var("HOME", &home);
    std::env::set_var("GIT_CONFIG_NOSYSTEM", "1");
    std::env::set_var("GIT_CONFIG_GLOBAL", home.join(".gitconfig"));
    std::fs::write(
        home.join(".gitconfig"),
        "[user]\n\tname = Bench\n\temail = bench@example.com\n",
    )
    .expect("config");
}

/// Run git in `dir`, asserting success; its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("spawn git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Milliseconds, for printing.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
