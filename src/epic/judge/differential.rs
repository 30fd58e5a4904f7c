//! Differential evidence: the story's new and changed test files run over its base's code.
//! A test that passes without the story's code says nothing of the story's work; a story
//! whose new tests all run and pass on the base (more tests passing there than the base's
//! own) brought no evidence of new behaviour, and a human is asked with the list.

use std::sync::atomic::AtomicBool;
use std::time::Instant;

use super::{base_count, rules, run_on, Overlay, Walls, Work};
use crate::epic::Error;
use crate::session::{self, Repo};

/// The story's added or changed test files, when all of them, laid over the base, run and
/// pass there; empty otherwise (one of them needs the story's code, or none ran).
pub(super) fn new_tests_passing_on_base(
    repo: &Repo,
    work: &Work<'_>,
    command: &str,
    walls: &Walls,
    deadline: Instant,
    interrupt: &AtomicBool,
) -> Result<Vec<String>, Error> {
    let changed: Vec<_> = work
        .changes
        .iter()
        .filter(|c| matches!(c.status, 'A' | 'M') && rules::is_test_file(&c.path))
        .collect();
    let mut overlay = Vec::new();
    for change in &changed {
        let Some(bytes) = session::repository::file_at(repo, &work.head.to_string(), &change.path)?
        else {
            continue;
        };
        overlay.push(Overlay {
            path: change.path.clone(),
            bytes,
            executable: change.new_mode == "100755",
        });
    }
    if overlay.is_empty() {
        return Ok(Vec::new());
    }
    let before = base_count(repo, work.base, command, walls, deadline, interrupt)?;
    let ran = run_on(
        repo, work.base, &overlay, command, walls, deadline, interrupt,
    )?;
    let more_passed = match (ran.passed, before) {
        (Some(now), Some(then)) => now.count > then.count,
        (Some(now), None) => now.count > 0,
        (None, _) => false,
    };
    Ok(if ran.green && more_passed {
        overlay.into_iter().map(|o| o.path).collect()
    } else {
        Vec::new()
    })
}
