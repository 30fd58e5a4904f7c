//! Ctrl-C, `kill` and a closed terminal, turned into a flag the wait loops read.
//!
//! Agents run in process groups of their own (so a timeout can kill all of them), which also
//! means the terminal's Ctrl-C reaches only git-bmad. Once [`install`] has run, SIGINT, SIGTERM
//! and SIGHUP set the flag it returns instead of killing git-bmad at an arbitrary instant: the
//! running child's group is killed, the interruption is journaled, and the command exits 130
//! with its state saved. As in gitoxide, the flag is passed to the operations that wait
//! (`&AtomicBool`), never read from a global, so a test injects its own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// Catch SIGINT, SIGTERM and SIGHUP from now on; the flag turns true when one arrives.
pub fn install() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        signal_hook::flag::register(signal, Arc::clone(&flag))?;
    }
    Ok(flag)
}

/// Sleep `total`, waking early (within 50 ms) when `interrupt` turns true.
pub fn sleep(total: Duration, interrupt: &AtomicBool) {
    let until = Instant::now() + total;
    while Instant::now() < until && !interrupt.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50).min(total));
    }
}
