//! How `run`, `resume` and `answer` show a run's progress on stderr, in the four modes of
//! [`ProgressMode`]. The run's state is the supervisor's replay of the journal, kept up to
//! date with every event as it is journaled, so every mode tells the same numbers.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::ui::safe_for_terminal;
use crate::config::ProgressMode;
use crate::session::run_state::RunState;
use crate::session::{Body, Event};
use crate::text::duration;

/// Operations (step events) between two summaries, and the longest wait for one.
const SUMMARY_EVERY: usize = 5;
const SUMMARY_AFTER: Duration = Duration::from_secs(30);
/// How long a step runs before streaming shows it, and how often off a terminal.
const STREAM_AFTER: Duration = Duration::from_secs(30);

/// What the streaming ticker needs to know.
struct Live {
    state: RunState,
    step: Option<(String, Instant)>,
}

/// The progress printer of one run.
pub struct Progress {
    mode: ProgressMode,
    live: Arc<Mutex<Live>>,
    started: Instant,
    ops: usize,
    last_summary: Instant,
    stop: Arc<AtomicBool>,
    ticker: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// A printer in `mode`, starting from the run as the journal has it (`events`).
    pub fn new(mode: ProgressMode, events: &[Event]) -> Progress {
        let live = Arc::new(Mutex::new(Live {
            state: RunState::replay(events),
            step: None,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let ticker = (mode == ProgressMode::Streaming).then(|| {
            let (live, stop) = (live.clone(), stop.clone());
            std::thread::spawn(move || stream(&live, &stop))
        });
        Progress {
            mode,
            live,
            started: Instant::now(),
            ops: 0,
            last_summary: Instant::now(),
            stop,
            ticker,
        }
    }

    /// Take in one journaled event; `verbose` prints its line (the caller's, styled).
    pub fn event(&mut self, event: &Event, verbose: impl FnOnce() -> Option<String>) {
        {
            let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
            live.state.apply(event);
            match &event.body {
                Body::StepStarted(_) => {
                    live.step = event.step.clone().map(|s| (s, Instant::now()));
                }
                Body::StepCompleted(_)
                | Body::StepFailed(_)
                | Body::Escalated(_)
                | Body::StepSkipped(_) => live.step = None,
                _ => {}
            }
        }
        let op = matches!(
            event.body,
            Body::StepStarted(_)
                | Body::StepCompleted(_)
                | Body::StepFailed(_)
                | Body::Escalated(_)
                | Body::StepSkipped(_)
                | Body::Retry(_)
        );
        match self.mode {
            ProgressMode::Verbose => {
                if let Some(line) = verbose() {
                    let _ = writeln!(std::io::stderr(), "{}", safe_for_terminal(&line));
                }
            }
            ProgressMode::Summary if op => {
                self.ops += 1;
                if self.ops.is_multiple_of(SUMMARY_EVERY)
                    || self.last_summary.elapsed() >= SUMMARY_AFTER
                {
                    self.last_summary = Instant::now();
                    let _ = writeln!(std::io::stderr(), "{}", safe_for_terminal(&self.summary()));
                }
            }
            _ => {}
        }
    }

    /// `3/7 steps done (42%), now: implement, 5m10s elapsed, remaining: test, review`.
    pub fn summary(&self) -> String {
        let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        summary_line(&live, self.started.elapsed())
    }

    /// Stop the ticker; the caller prints the end of the run.
    pub fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(ticker) = self.ticker.take() {
            let _ = ticker.join();
        }
    }
}

fn summary_line(live: &Live, elapsed: Duration) -> String {
    let (done, total) = live.state.progress();
    let percent = (done * 100).checked_div(total).unwrap_or(100);
    let now = live
        .step
        .as_ref()
        .map(|(s, _)| format!(", now: {s}"))
        .unwrap_or_default();
    let remaining: Vec<&str> = live
        .state
        .manifest
        .as_ref()
        .map(|m| {
            m.steps
                .iter()
                .filter(|s| !live.state.finished(s))
                .map(String::as_str)
                .collect()
        })
        .unwrap_or_default();
    let remaining = if remaining.is_empty() {
        String::new()
    } else {
        format!(", remaining: {}", remaining.join(", "))
    };
    format!(
        "{done}/{total} steps done ({percent}%){now}, {} elapsed{remaining}",
        duration(elapsed.as_millis() as u64)
    )
}

/// The streaming ticker: once a step has run for [`STREAM_AFTER`], its name and the run's
/// percentage, on a live line on a terminal, or a line every [`STREAM_AFTER`] otherwise.
fn stream(live: &Mutex<Live>, stop: &AtomicBool) {
    let tty = std::io::stderr().is_terminal();
    let mut last_line = Instant::now();
    let mut drawn = false;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(200));
        let text = {
            let live = live.lock().unwrap_or_else(|p| p.into_inner());
            let Some((step, since)) = &live.step else {
                if drawn {
                    let _ = write!(std::io::stderr(), "\r\x1b[K");
                    drawn = false;
                }
                continue;
            };
            if since.elapsed() < STREAM_AFTER {
                continue;
            }
            let (done, total) = live.state.progress();
            let percent = (done * 100).checked_div(total).unwrap_or(100);
            format!(
                "▸ {step} running for {} ({done}/{total} steps, {percent}%)",
                duration(since.elapsed().as_millis() as u64)
            )
        };
        let text = safe_for_terminal(&text);
        if tty {
            let _ = write!(std::io::stderr(), "\r\x1b[K{text}");
            let _ = std::io::stderr().flush();
            drawn = true;
        } else if last_line.elapsed() >= STREAM_AFTER {
            let _ = writeln!(std::io::stderr(), "{text}");
            last_line = Instant::now();
        }
    }
    if drawn {
        let _ = write!(std::io::stderr(), "\r\x1b[K");
    }
}
