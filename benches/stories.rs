//! Dependency ordering of 1,000 stories, in process (goal: under 10 ms; seed 001 allows
//! 100 ms). Baseline: sorting the same keys by name, the least any ordering must do.
//! Run: cargo bench --bench stories

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use git_bmad::bmad::queue::{self, Item};
use git_bmad::bmad::status::Status;

const STORIES: usize = 1_000;
const SAMPLES: usize = 101;

fn main() {
    // Twenty epics of fifty stories, each story after the one before it, plus a dependency
    // on a story of the previous epic: 1,000 stories, about 1,960 edges.
    let items: Vec<Item> = (0..STORIES)
        .map(|i| {
            let (epic, story) = (i / 50 + 1, i % 50 + 1);
            let mut deps = Vec::new();
            if story > 1 {
                deps.push(format!("{epic}-{}", story - 1));
            }
            if epic > 1 {
                deps.push(format!("{}-{story}", epic - 1));
            }
            Item {
                key: format!("{epic}-{story}"),
                status: Status::Backlog,
                depends_on: deps,
                met: false,
            }
        })
        .collect();
    let mut ours = Vec::new();
    let mut next = Vec::new();
    let mut base = Vec::new();
    for _ in 0..SAMPLES {
        let t = Instant::now();
        let (order, missing) = queue::order(&items).expect("no cycle");
        ours.push(t.elapsed());
        assert_eq!((order.len(), missing.len()), (STORIES, 0));
        let t = Instant::now();
        let _ = queue::next(&items).expect("no cycle");
        next.push(t.elapsed());
        let t = Instant::now();
        let mut keys: Vec<&str> = items.iter().map(|i| i.key.as_str()).collect();
        keys.sort_unstable();
        base.push(t.elapsed());
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (o, n, b) = (median(&mut ours), median(&mut next), median(&mut base));
    println!(
        "order of {STORIES} stories       median {:.3} ms   (goal < 10 ms)",
        o.as_secs_f64() * 1e3
    );
    println!(
        "next story (order + choice)  median {:.3} ms",
        n.as_secs_f64() * 1e3
    );
    println!(
        "sort of the keys (baseline)  median {:.3} ms",
        b.as_secs_f64() * 1e3
    );
    println!(
        "ratio order/sort             {:.1}",
        o.as_secs_f64() / b.as_secs_f64()
    );
}
