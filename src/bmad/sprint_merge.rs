//! A three-way merge of a sprint status. BMAD's dev and review workflows each write the
//! story's line; two stories stacked into one branch then change neighbouring lines, which
//! git's line merge calls a conflict. Key by key it is none: each story moved its own key.

use std::path::Path;

use super::sprint::SprintStatus;

/// `ours` with every key `theirs` moved since `base` moved too; a key both moved takes the
/// one further along (`done` over `review`). `None` when a side does not parse as a sprint
/// status or a key's move cannot be ranked: git's conflict stands.
pub fn merge(path: &Path, base: &str, ours: &str, theirs: &str) -> Option<String> {
    let read = |text: &str| SprintStatus::parse(path, text.to_owned()).ok();
    let (base, ours_status, theirs) = (read(base)?, read(ours)?, read(theirs)?);
    let mut lines: Vec<String> = ours.split('\n').map(str::to_owned).collect();
    for entry in &ours_status.entries {
        let Some(their) = theirs.entry(&entry.key) else {
            continue;
        };
        let was = base.entry(&entry.key).map(|e| &e.status);
        if Some(&their.status) == was || their.status == entry.status {
            continue;
        }
        let take_theirs = if Some(&entry.status) == was {
            true
        } else {
            match (entry.status.rank(), their.status.rank()) {
                (Some(mine), Some(other)) => other > mine,
                _ => return None,
            }
        };
        if !take_theirs {
            continue;
        }
        let line = lines.get_mut(entry.line.checked_sub(1)?)?;
        let colon = line.find(':')?;
        let at = colon + line[colon..].find(entry.raw_status.as_str())?;
        line.replace_range(at..at + entry.raw_status.len(), &their.raw_status);
    }
    Some(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "# generated: 2026-11-20\ndevelopment_status:\n  epic-3: in-progress\n  3-1-api-client: ready-for-dev\n  3-2-storage: ready-for-dev  # next\n  3-3-sync-engine: ready-for-dev\n";

    fn with(pairs: &[(&str, &str)]) -> String {
        let mut text = BASE.to_owned();
        for (key, status) in pairs {
            let from = format!("  {key}: ready-for-dev");
            text = text.replace(&from, &format!("  {key}: {status}"));
        }
        text
    }

    #[test]
    fn each_side_keeps_the_keys_it_moved() {
        let path = Path::new("sprint-status.yaml");
        let ours = with(&[("3-1-api-client", "review")]);
        let theirs = with(&[("3-2-storage", "done")]);
        let merged = merge(path, BASE, &ours, &theirs).unwrap();
        assert_eq!(
            merged,
            with(&[("3-1-api-client", "review"), ("3-2-storage", "done")])
        );
        assert!(merged.contains("3-2-storage: done  # next"), "{merged}");
    }

    #[test]
    fn a_key_both_moved_goes_as_far_as_either_and_odd_input_is_left_to_git() {
        let path = Path::new("sprint-status.yaml");
        let ours = with(&[("3-1-api-client", "review")]);
        let theirs = with(&[("3-1-api-client", "done")]);
        assert_eq!(
            merge(path, BASE, &ours, &theirs).unwrap(),
            with(&[("3-1-api-client", "done")])
        );
        assert_eq!(
            merge(path, BASE, &theirs, &ours).unwrap(),
            with(&[("3-1-api-client", "done")])
        );
        let blocked = with(&[("3-1-api-client", "blocked")]);
        assert_eq!(merge(path, BASE, &ours, &blocked), None);
        assert_eq!(merge(path, BASE, &ours, "development_status: ["), None);
    }
}
