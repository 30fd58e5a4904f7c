//! What the in-process benchmarks share: the median time of a closure over many samples.

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
