//! Greenfield or brownfield, and which tier (0–4) a description suggests.
//!
//! Greenfield: no `src/`, `lib/` or `app/`, no package manifest, fewer than 10 source files.
//! Anything else is brownfield; a package manifest alone is enough. Tiers come from keywords:
//! the tier of more than half of the keywords found wins, with that share as its confidence;
//! no keyword (or no majority) gives tier 2 with low confidence. A brownfield codebase of
//! 1,000+ source files raises the tier by one, one of under 50 lowers it by one.

use std::path::Path;

use serde::Serialize;

const SOURCE_DIRS: &[&str] = &["src", "lib", "app"];
const MANIFESTS: &[&str] = &[
    "package.json",
    "pyproject.toml",
    "Cargo.toml",
    "go.mod",
    "pom.xml",
    "build.gradle",
    "Gemfile",
    "composer.json",
];
const SOURCE_EXTENSIONS: &[&str] = &[
    "rs", "py", "js", "ts", "tsx", "jsx", "go", "java", "kt", "rb", "php", "c", "cc", "cpp", "h",
    "hpp", "cs", "swift", "scala", "ex", "exs", "vue", "svelte",
];
const SKIP_DIRS: &[&str] = &[
    ".git",
    "node_modules",
    "target",
    "dist",
    "build",
    ".venv",
    "venv",
    "__pycache__",
    "_bmad",
    ".bmad",
];

/// What the project looks like.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProjectType {
    /// `greenfield` or `brownfield`.
    pub project_type: &'static str,
    /// The criteria that matched.
    pub detection_signals: Vec<String>,
    /// Source files found.
    pub source_files: usize,
}

/// Detect greenfield or brownfield.
pub fn detect(root: &Path) -> ProjectType {
    let mut signals = Vec::new();
    for dir in SOURCE_DIRS {
        if root.join(dir).is_dir() {
            signals.push(format!("{dir}/ directory"));
        }
    }
    for manifest in MANIFESTS {
        if root.join(manifest).is_file() {
            signals.push(format!("{manifest} present"));
        }
    }
    let mut count = 0;
    count_sources(root, &mut count, 0);
    if count >= 10 {
        signals.push(format!("{count} source files (10 or more)"));
    }
    ProjectType {
        project_type: if signals.is_empty() {
            "greenfield"
        } else {
            "brownfield"
        },
        detection_signals: if signals.is_empty() {
            vec![format!(
                "no src/, lib/ or app/, no package manifest, {count} source files"
            )]
        } else {
            signals
        },
        source_files: count,
    }
}

fn count_sources(dir: &Path, count: &mut usize, depth: usize) {
    if depth > 12 || *count > 100_000 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if !SKIP_DIRS.contains(&name.as_ref()) {
                count_sources(&entry.path(), count, depth + 1);
            }
        } else if kind.is_file()
            && name
                .rsplit_once('.')
                .is_some_and(|(_, ext)| SOURCE_EXTENSIONS.contains(&ext))
        {
            *count += 1;
        }
    }
}

/// Keywords by tier.
const TIER_WORDS: &[(u8, &[&str])] = &[
    (0, &["fix", "bug", "typo", "patch", "hotfix"]),
    (1, &["simple", "small", "minor", "tweak", "single"]),
    (2, &["medium", "module", "moderate"]),
    (
        3,
        &[
            "platform",
            "integration",
            "integrations",
            "complex",
            "complex system",
        ],
    ),
    (
        4,
        &[
            "enterprise",
            "multi-tenant",
            "compliance",
            "mission-critical",
        ],
    ),
];

/// A tier suggestion.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Tier {
    /// 0–4.
    pub tier: u8,
    /// `high`, `medium` or `low`.
    pub confidence: &'static str,
    /// The share of keywords that chose it, 0–100.
    pub confidence_score: u32,
    /// The keywords found, with their tiers.
    pub matched: Vec<(String, u8)>,
    /// Why the codebase changed it, if it did.
    pub adjusted: Option<String>,
}

/// Suggest a tier from a description and, for brownfield projects, the codebase size.
pub fn suggest(description: &str, project: Option<&ProjectType>) -> Tier {
    let lower = description.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut matched: Vec<(String, u8)> = Vec::new();
    for (tier, keys) in TIER_WORDS {
        for key in *keys {
            let hit = if key.contains(' ') {
                lower.contains(key)
            } else {
                words.contains(key)
            };
            // "complex system" already counts "complex".
            if hit
                && !matched
                    .iter()
                    .any(|(m, _)| m.contains(key) || key.contains(m.as_str()))
            {
                matched.push((key.to_string(), *tier));
            }
        }
    }
    let mut tier = 2;
    let mut share = 0;
    let mut confidence = "low";
    for (t, _) in TIER_WORDS {
        let n = matched.iter().filter(|(_, mt)| mt == t).count();
        if !matched.is_empty() && n * 2 > matched.len() {
            tier = *t;
            share = (n * 100 / matched.len()) as u32;
            confidence = if share >= 80 { "high" } else { "medium" };
        }
    }
    let mut adjusted = None;
    if let Some(p) = project.filter(|p| p.project_type == "brownfield") {
        if p.source_files >= 1000 && tier < 4 {
            tier += 1;
            adjusted = Some(format!(
                "raised: the codebase has {} source files",
                p.source_files
            ));
        } else if p.source_files < 50 && tier > 0 {
            tier -= 1;
            adjusted = Some(format!(
                "lowered: the codebase has only {} source files",
                p.source_files
            ));
        }
    }
    Tier {
        tier,
        confidence,
        confidence_score: share,
        matched,
        adjusted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(root: &Path, rel: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "x").unwrap();
    }

    #[test]
    fn greenfield_and_brownfield() {
        let dir = tempfile::tempdir().unwrap();
        touch(dir.path(), "README.md");
        touch(dir.path(), "notes/a.py");
        assert_eq!(detect(dir.path()).project_type, "greenfield");
        touch(dir.path(), "package.json");
        let p = detect(dir.path());
        assert_eq!(
            (p.project_type, p.detection_signals.clone()),
            ("brownfield", vec!["package.json present".to_owned()])
        );
        for i in 0..50 {
            touch(dir.path(), &format!("src/m{i}.ts"));
        }
        let p = detect(dir.path());
        assert!(p.detection_signals.contains(&"src/ directory".to_owned()));
        assert!(
            p.detection_signals
                .contains(&"51 source files (10 or more)".to_owned()),
            "{:?}",
            p.detection_signals
        );
    }

    #[test]
    fn tiers_from_keywords() {
        let t = suggest("fix the typo in the login bug", None);
        assert_eq!((t.tier, t.confidence_score), (0, 100));
        assert_eq!(suggest("an integration platform", None).tier, 3);
        // The seed's mixed example: simple (1), complex (3), integrations (3): 3 has 2 of 3.
        let mixed = suggest("simple dashboard with complex integrations", None);
        assert_eq!(
            (mixed.tier, mixed.confidence, mixed.confidence_score),
            (3, "medium", 66)
        );
        // No majority: the default.
        let split = suggest("a simple fix", None);
        assert_eq!((split.tier, split.confidence), (2, "low"));
        let none = suggest("make it nicer", None);
        assert_eq!((none.tier, none.confidence), (2, "low"));
        let big = ProjectType {
            project_type: "brownfield",
            detection_signals: vec![],
            source_files: 5000,
        };
        assert_eq!(suggest("a medium module", Some(&big)).tier, 3);
    }
}
