//! Dependency order and the next story to work on.
//!
//! Order is topological with file order as the tie-break (Kahn's algorithm over a heap of
//! file positions: O((n + e) log n)); a cycle is an error that names its stories; a
//! dependency on a story that does not exist is reported and blocks the story that has it.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use serde::Serialize;

use super::status::Status;
use super::{Error, Result};

/// A story as the queue sees it.
#[derive(Clone, Debug)]
pub struct Item {
    /// Its key or name.
    pub key: String,
    /// Its status.
    pub status: Status,
    /// Keys it depends on.
    pub depends_on: Vec<String>,
    /// Whether what depends on it may start (done; in v7 also in review).
    pub met: bool,
}

/// A dependency on a story that does not exist.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Missing {
    /// The story.
    pub story: String,
    /// What it names.
    pub dependency: String,
}

/// Stories in dependency order (indices into `items`), and the missing dependencies.
pub fn order(items: &[Item]) -> Result<(Vec<usize>, Vec<Missing>)> {
    let index: HashMap<&str, usize> = items
        .iter()
        .enumerate()
        .map(|(i, it)| (it.key.as_str(), i))
        .collect();
    let mut indegree = vec![0usize; items.len()];
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); items.len()];
    let mut missing = Vec::new();
    for (i, item) in items.iter().enumerate() {
        for dep in &item.depends_on {
            match index.get(dep.as_str()) {
                Some(&d) if d != i => {
                    indegree[i] += 1;
                    dependents[d].push(i);
                }
                Some(_) => {
                    return Err(Error::Cycle {
                        cycle: vec![item.key.clone(), item.key.clone()],
                    })
                }
                None => missing.push(Missing {
                    story: item.key.clone(),
                    dependency: dep.clone(),
                }),
            }
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> = (0..items.len())
        .filter(|i| indegree[*i] == 0)
        .map(Reverse)
        .collect();
    let mut out = Vec::with_capacity(items.len());
    while let Some(Reverse(i)) = ready.pop() {
        out.push(i);
        for &d in &dependents[i] {
            indegree[d] -= 1;
            if indegree[d] == 0 {
                ready.push(Reverse(d));
            }
        }
    }
    if out.len() < items.len() {
        return Err(Error::Cycle {
            cycle: find_cycle(items, &index, &indegree),
        });
    }
    Ok((out, missing))
}

/// A cycle among the stories Kahn's algorithm could not place, by name.
fn find_cycle(items: &[Item], index: &HashMap<&str, usize>, indegree: &[usize]) -> Vec<String> {
    let Some(start) = (0..items.len()).find(|i| indegree[*i] > 0) else {
        return Vec::new();
    };
    // Walk dependencies that are themselves stuck until a story repeats.
    let mut path = vec![start];
    let mut seen = HashMap::from([(start, 0usize)]);
    let mut at = start;
    loop {
        let next = items[at]
            .depends_on
            .iter()
            .filter_map(|d| index.get(d.as_str()).copied())
            .find(|d| indegree[*d] > 0);
        let Some(next) = next else {
            break;
        };
        if let Some(&pos) = seen.get(&next) {
            let mut cycle: Vec<String> =
                path[pos..].iter().map(|i| items[*i].key.clone()).collect();
            cycle.push(items[next].key.clone());
            // Reads as "a depends on b depends on … a"; show it in the order work would flow.
            cycle.reverse();
            return cycle;
        }
        seen.insert(next, path.len());
        path.push(next);
        at = next;
    }
    path.iter().map(|i| items[*i].key.clone()).collect()
}

/// The story to work on next, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Next {
    /// Index into the items.
    pub index: usize,
    /// Its key.
    pub key: String,
    /// Its status.
    pub status: Status,
    /// Why this one.
    pub reason: String,
}

/// The story to work on next: BMAD's rule (in progress, then review, then ready-for-dev,
/// then backlog; among equals the first in `items`, which callers give in epic/story number
/// order as `sprint_plan.py` sorts them), skipping stories whose dependencies are not done.
/// Blocked, unknown and cancelled stories are never recommended. Also returns why each
/// waiting story waits.
pub fn next(items: &[Item]) -> Result<(Option<Next>, Vec<String>)> {
    // A story in a cycle waits for a dependency that is not met, so it is never picked; the
    // cycle is named for a human, and the rest of the project goes on.
    let cycle = match order(items) {
        Err(Error::Cycle { cycle }) => Some(cycle),
        _ => None,
    };
    let done: HashMap<&str, bool> = items.iter().map(|i| (i.key.as_str(), i.met)).collect();
    let mut blocked = Vec::new();
    let mut best: Option<(u8, usize)> = None;
    for (i, item) in items.iter().enumerate() {
        let Some(priority) = item.status.priority() else {
            continue;
        };
        let waiting: Vec<&str> = item
            .depends_on
            .iter()
            .filter(|d| !done.get(d.as_str()).copied().unwrap_or(false))
            .map(String::as_str)
            .collect();
        if !waiting.is_empty() {
            let absent: Vec<&&str> = waiting.iter().filter(|d| !done.contains_key(**d)).collect();
            blocked.push(if absent.is_empty() {
                format!("{} waits for {}", item.key, waiting.join(", "))
            } else {
                format!(
                    "{} depends on {}, which does not exist",
                    item.key,
                    absent
                        .iter()
                        .map(|s| s.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            });
            continue;
        }
        if best.is_none_or(|b| (priority, i) < b) {
            best = Some((priority, i));
        }
    }
    if let Some(cycle) = cycle {
        let open = cycle
            .iter()
            .any(|k| items.iter().any(|i| &i.key == k && !i.met));
        if open {
            blocked.push(format!(
                "stories depend on each other in a cycle: {}; a human decides which comes first",
                cycle.join(" → ")
            ));
        }
    }
    let next = best.map(|(_, i)| {
        let item = &items[i];
        let why_status = match item.status {
            Status::InProgress => "it is already in progress: finish it before anything else",
            Status::Review => "it waits for review, which comes before any new work",
            Status::ReadyForDev => "it is the first story ready for development",
            Status::Backlog => "nothing is further along; it is the first story in the backlog",
            _ => "it is the first story in its status",
        };
        let all_done = item.depends_on.iter().all(|d| {
            items
                .iter()
                .any(|i| &i.key == d && i.status == Status::Done)
        });
        let deps = match (item.depends_on.is_empty(), all_done) {
            (true, _) => String::new(),
            (false, true) => format!(
                " (its dependencies {} are done)",
                item.depends_on.join(", ")
            ),
            (false, false) => format!(
                " (its dependencies {} are done or in review)",
                item.depends_on.join(", ")
            ),
        };
        Next {
            index: i,
            key: item.key.clone(),
            status: item.status.clone(),
            reason: format!("{why_status}{deps}"),
        }
    });
    Ok((next, blocked))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(key: &str, status: &str, deps: &[&str]) -> Item {
        Item {
            key: key.into(),
            status: Status::parse(status),
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
            met: status == "done",
        }
    }

    #[test]
    fn topological_with_file_order_tie_break() {
        let items = vec![
            item("c", "backlog", &["b"]),
            item("a", "backlog", &[]),
            item("b", "backlog", &["a"]),
            item("d", "backlog", &[]),
        ];
        let (order, missing) = order(&items).unwrap();
        let keys: Vec<&str> = order.iter().map(|i| items[*i].key.as_str()).collect();
        assert_eq!(keys, ["a", "b", "c", "d"]);
        assert!(missing.is_empty());
    }

    #[test]
    fn cycles_and_missing_are_named() {
        let items = vec![
            item("a", "backlog", &["c"]),
            item("b", "backlog", &["a"]),
            item("c", "backlog", &["b"]),
            item("d", "backlog", &[]),
        ];
        let err = order(&items).unwrap_err().to_string();
        assert!(
            err.contains("a → b → c → a")
                || err.contains("b → c → a → b")
                || err.contains("c → a → b → c"),
            "{err}"
        );
        let err = order(&[item("x", "backlog", &["x"])])
            .unwrap_err()
            .to_string();
        assert!(err.contains("x → x"), "{err}");
        let (_, missing) = order(&[item("a", "backlog", &["ghost"])]).unwrap();
        assert_eq!(missing[0].dependency, "ghost");
    }

    #[test]
    fn next_prefers_progress_then_review_and_respects_dependencies() {
        let items = vec![
            item("1-1", "done", &[]),
            item("1-2", "ready-for-dev", &["1-1"]),
            item("1-3", "review", &[]),
            item("1-4", "in-progress", &[]),
            item("1-5", "in-progress", &["1-9"]),
            item("1-6", "cancelled", &[]),
            item("1-7", "blocked", &[]),
        ];
        let (next, blocked) = next(&items).unwrap();
        let next = next.unwrap();
        assert_eq!(next.key, "1-4");
        assert!(next.reason.contains("already in progress"));
        assert_eq!(blocked, ["1-5 depends on 1-9, which does not exist"]);
        let (next, _) = super::next(&items[..4]).unwrap();
        assert_eq!(next.unwrap().key, "1-4");
        let (next, _) = super::next(&[items[2].clone(), items[1].clone()]).unwrap();
        assert_eq!(next.unwrap().key, "1-3", "review before ready-for-dev");
        let (none, _) = super::next(&items[5..]).unwrap();
        assert!(none.is_none(), "blocked and cancelled wait for a human");
        let (none, _) = super::next(&[item("a", "done", &[])]).unwrap();
        assert!(none.is_none());
    }

    #[test]
    fn a_cycle_holds_its_stories_and_not_the_project() {
        let items = vec![
            item("1-1", "backlog", &["1-2"]),
            item("1-2", "backlog", &["1-1"]),
            item("1-3", "ready-for-dev", &[]),
        ];
        let (next, blocked) = next(&items).unwrap();
        assert_eq!(next.unwrap().key, "1-3");
        assert!(
            blocked
                .iter()
                .any(|b| b.contains("cycle") && b.contains("1-1")),
            "{blocked:?}"
        );
        // A cycle among done stories holds nothing and is not worth a word.
        let done = vec![
            item("2-1", "done", &["2-2"]),
            item("2-2", "done", &["2-1"]),
            item("2-3", "backlog", &["2-1"]),
        ];
        let (next, blocked) = super::next(&done).unwrap();
        assert_eq!(next.unwrap().key, "2-3");
        assert!(blocked.is_empty(), "{blocked:?}");
    }

    #[test]
    fn a_thousand_stories_order_deterministically() {
        let items: Vec<Item> = (0..1000)
            .map(|i| {
                let deps: Vec<String> = if i > 0 {
                    vec![format!("s{}", (i * 7919) % i)]
                } else {
                    vec![]
                };
                Item {
                    key: format!("s{i}"),
                    status: Status::Backlog,
                    depends_on: deps,
                    met: false,
                }
            })
            .collect();
        let (a, _) = order(&items).unwrap();
        let (b, _) = order(&items).unwrap();
        assert_eq!(a, b);
        let pos: HashMap<usize, usize> = a.iter().enumerate().map(|(p, i)| (*i, p)).collect();
        for (i, it) in items.iter().enumerate() {
            for d in &it.depends_on {
                let di: usize = d[1..].parse().unwrap();
                assert!(pos[&di] < pos[&i]);
            }
        }
    }
}
