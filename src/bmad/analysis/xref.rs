//! Planning documents against each other (seed 000, story 1.3): functional requirements of
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
    static FR: OnceLock<Regex> = OnceLock::new();
    static ADR: OnceLock<Regex> = OnceLock::new();
    let fr = FR.get_or_init(|| Regex::new(r"\bFR-?\d+\b").expect("fr"));
    let adr = ADR.get_or_init(|| Regex::new(r"\bADR-?\d+\b").expect("adr"));
    let number = |id: &str| {
        id.trim_start_matches(|c: char| c.is_ascii_alphabetic())
            .parse::<u64>()
            .unwrap_or(0)
    };
    let mut orphaned: Vec<String> = ids(fr, prd)
        .difference(&ids(fr, architecture))
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
}
