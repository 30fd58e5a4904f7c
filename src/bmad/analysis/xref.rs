//! Planning documents against each other: functional requirements of
//! the PRD that the architecture never mentions are orphaned (HIGH); architecture decisions
//! no story references are unaddressed (MEDIUM). Issues come sorted HIGH > MEDIUM > LOW;
//! none means ALIGNED.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;

/// One alignment issue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Issue {
    /// HIGH, MEDIUM or LOW.
    pub severity: &'static str,
    /// `orphaned_requirement`, `unaddressed_decision`.
    pub kind: &'static str,
    /// The id (`FR3`, `ADR-001`).
    pub id: String,
    /// What to do.
    pub message: String,
}

/// The comparison.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Alignment {
    /// `ALIGNED` or `MISALIGNED`.
    pub alignment_status: &'static str,
    /// FRs of the PRD not in the architecture.
    pub orphaned_requirements: Vec<String>,
    /// ADRs of the architecture no story references.
    pub unaddressed_decisions: Vec<String>,
    /// Every issue, most severe first.
    pub issues: Vec<Issue>,
}

fn ids(re: &Regex, text: &str) -> BTreeSet<String> {
    re.find_iter(text)
        .map(|m| m.as_str().replace('-', "").to_uppercase())
        .collect()
}

/// The longest FR range expanded: a wider one is a typo or not a range.
const MAX_RANGE: u64 = 1000;

/// Functional requirement ids, ranges expanded as architectures write them to cover many at
/// once: `FR1–5`, `FR1-FR15`, `FR-3 to FR-7`, `FR10..12` (BMAD's architecture template maps
/// "FR Category → Architecture Components" this way).
fn requirement_ids(text: &str) -> BTreeSet<String> {
    static FR: OnceLock<Regex> = OnceLock::new();
    let fr = FR.get_or_init(|| {
        Regex::new(r"\bFR-?(\d+)(?:\s*(?:[-–—]|\.\.|\bto\b|\bthrough\b)\s*(?:FR-?)?(\d+)\b)?\b")
            .expect("fr")
    });
    let mut ids = BTreeSet::new();
    for c in fr.captures_iter(text) {
        let Ok(first) = c[1].parse::<u64>() else {
            continue;
        };
        let last = c
            .get(2)
            .and_then(|m| m.as_str().parse::<u64>().ok())
            .filter(|&last| last > first && last - first <= MAX_RANGE)
            .unwrap_or(first);
        ids.extend((first..=last).map(|n| format!("FR{n}")));
    }
    ids
}

fn canonical_adr(id: &str) -> String {
    // ADR001 → ADR-001 for display.
    format!("ADR-{}", id.trim_start_matches("ADR"))
}

/// Every story of a stories folder (each `.md` in it), as one text for [`compare`].
pub fn read_stories(dir: &std::path::Path) -> std::io::Result<String> {
    let mut paths: Vec<std::path::PathBuf> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    let mut text = String::new();
    for path in paths {
        text.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
        text.push('\n');
    }
    Ok(text)
}

/// Compare a PRD, an architecture and the stories' text.
pub fn compare(prd: &str, architecture: &str, stories: &str) -> Alignment {
    static ADR: OnceLock<Regex> = OnceLock::new();
    let adr = ADR.get_or_init(|| Regex::new(r"\bADR-?\d+\b").expect("adr"));
    let number = |id: &str| {
        id.trim_start_matches(|c: char| c.is_ascii_alphabetic())
            .parse::<u64>()
            .unwrap_or(0)
    };
    let mut orphaned: Vec<String> = requirement_ids(prd)
        .difference(&requirement_ids(architecture))
        .cloned()
        .collect();
    orphaned.sort_by_key(|id| number(id));
    let mut unaddressed: Vec<String> = ids(adr, architecture)
        .difference(&ids(adr, stories))
        .map(|id| canonical_adr(id))
        .collect();
    unaddressed.sort_by_key(|id| number(&id.replace('-', "")));
    let mut issues: Vec<Issue> = orphaned
        .iter()
        .map(|id| Issue {
            severity: "HIGH",
            kind: "orphaned_requirement",
            id: id.clone(),
            message: format!("{id} is in the PRD but the architecture never addresses it"),
        })
        .chain(unaddressed.iter().map(|id| Issue {
            severity: "MEDIUM",
            kind: "unaddressed_decision",
            id: id.clone(),
            message: format!("{id} is decided in the architecture but no story implements it"),
        }))
        .collect();
    let rank = |s: &str| match s {
        "HIGH" => 0,
        "MEDIUM" => 1,
        _ => 2,
    };
    issues.sort_by_key(|i| rank(i.severity));
    Alignment {
        alignment_status: if issues.is_empty() {
            "ALIGNED"
        } else {
            "MISALIGNED"
        },
        orphaned_requirements: orphaned,
        unaddressed_decisions: unaddressed,
        issues,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_examples() {
        let a = compare(
            "FR1 login\nFR2 logout\nFR3 export",
            "Covers FR1 and FR2. ADR-001: Postgres.",
            "Story 1.1 implements ADR-002",
        );
        assert_eq!(a.orphaned_requirements, ["FR3"]);
        assert_eq!(a.unaddressed_decisions, ["ADR-001"]);
        assert_eq!(a.issues[0].severity, "HIGH");
        assert_eq!(a.issues[1].severity, "MEDIUM");
        let ok = compare("FR-1", "FR1, ADR-7", "uses ADR-007? no: ADR-7");
        assert_eq!((ok.alignment_status, ok.issues.len()), ("ALIGNED", 0));
    }

    #[test]
    fn requirement_ranges_cover_every_id_in_them() {
        let prd = (1..=20)
            .map(|n| format!("FR{n} thing\n"))
            .collect::<String>();
        let arch =
            "FR1–5 auth. FR6-FR10 data. FR-11 to FR-13 api. FR14..15 ui. FR16 - 17. FR18, FR19.";
        assert_eq!(compare(&prd, arch, "").orphaned_requirements, ["FR20"]);
        assert_eq!(
            requirement_ids("FR9-3 FR1-99999"),
            ["FR1", "FR9"].map(String::from).into_iter().collect()
        );
    }
}
