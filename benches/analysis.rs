//! The decision engine's speed (seed 000 NFR2 allows 5 s per decision; the goals here are a
//! thousand times lower): menu analysis of a 64 KiB agent output under 1 ms, confidence in
//! microseconds. Baseline: one pass of `str::lines` over the same output,
//! the least any analysis must read. Run: cargo bench --bench analysis

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use git_bmad::bmad::analysis::{confidence, menu};

const SAMPLES: usize = 201;

fn time(f: impl FnMut()) -> Duration {
    common::median_time(SAMPLES, f)
}

fn main() {
    let mut output = String::new();
    let mut i = 0;
    while output.len() < 64 * 1024 {
        output.push_str(&format!(
            "Line {i}: wrote src/module_{i}.rs with tests; `cargo test` passed.\n"
        ));
        i += 1;
    }
    output
        .push_str("\n**Select an Option:** [A] Advanced Elicitation [P] Party Mode [C] Continue\n");
    let ours = time(|| assert!(menu::analyze(&output, "continue").detected));
    let base = time(|| assert!(output.lines().count() > 0));
    let conf = time(|| {
        let c = confidence::confidence(&[
            (confidence::Signal::Verdict, 0.9),
            (confidence::Signal::Memory, 0.4),
            (confidence::Signal::Reviewer, 0.8),
            (confidence::Signal::Party, 0.7),
        ]);
        assert!(c.score > 0.0);
    });
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "menu analysis, {} KiB output  median {:.1} µs   (goal < 1000 µs)",
        output.len() / 1024,
        us(ours)
    );
    println!("lines() over it (baseline)    median {:.1} µs", us(base));
    println!("ratio ours/baseline           {:.1}", us(ours) / us(base));
    println!("confidence, 4 signals         median {:.2} µs", us(conf));
}
