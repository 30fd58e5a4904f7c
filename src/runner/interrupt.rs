//! Ctrl-C, `kill` and a closed terminal, turned into a flag the wait loops read.
//!
//! Agents run in process groups of their own (so a timeout can kill all of them), which also
//! means the terminal's Ctrl-C reaches only git-bmad. Once [`install`] has run, SIGINT, SIGTERM
//! and SIGHUP set a flag instead of killing git-bmad at an arbitrary instant: the running
//! child's group is killed, the interruption is journaled, and the command exits 130 with its
//! state saved. This is the one piece of process-wide state in git-bmad, because a signal
//! handler can reach nothing else.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_signal: libc::c_int) {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// Catch SIGINT, SIGTERM and SIGHUP from now on (for commands that supervise agents).
pub fn install() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            libc::signal(signal, on_signal as *const () as libc::sighandler_t);
        }
    }
}

/// Whether an interrupt has arrived.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}
