//! Dependencies as people write them in a story's text rather than its frontmatter: a
//! `**Dependencies**:` line (its value on the line or in the bullets under it), or a
//! `## Dependencies` section, naming `Story 2.1 (REQUIS — ProductEntity)`, `Stories
//! 2.1–2.4`, `Story 2.5, 2.6, 2.7`, `2.3/2.4` or story keys (`1-2-login`).
//!
//! A number counts only where it must be a story's: on a line that says "story", or one that
//! holds nothing but references (`- 1.2`, `2.5, 2.6`). A "Dependencies" section of a story's
//! technical notes (`- axios 1.6`) names libraries, not stories.

use std::sync::LazyLock;

/// The labels a dependency line or section starts with (lowercase).
const LABELS: [&str; 5] = [
    "dependencies",
    "dependency",
    "depends on",
    "prerequisites",
    "blocked by",
];

/// Words that, in the label of a line under a dependency heading, make its stories this
/// story's dependents, not its dependencies (`- **Blocks:** 1.2`, `Bloquea: …`, `Story 14.3
/// (next)`), lowercase; such a line is read as no edge at all.
const DEPENDENTS: [&str; 14] = [
    "blocks",
    "unblocks",
    "enables",
    "required by",
    "needed by",
    "used by",
    "dependents",
    "bloquea",
    "bloqueia",
    "bloque ",
    "habilita",
    "blockiert",
    "(next)",
    "next:",
];

/// Longest range read as every story in it (`2.1–2.40`); a longer one is a typo.
const LONGEST_RANGE: u32 = 50;

/// Add to `found` the stories the dependency lines of a story's markdown `body` name, in
/// order, each once: `N.M` numbers (`2.4`) and story keys (`2-4-cart`), as the dependency
/// resolver takes them.
pub(super) fn add_from_body(body: &str, found: &mut Vec<String>) {
    // The value of a label with nothing after it, or of a heading: the lines under it.
    let mut collecting: Option<Collecting> = None;
    let mut fenced = false;
    for line in body.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if let Some(mode) = collecting {
            let ends = match mode {
                Collecting::Section => trimmed.starts_with('#'),
                Collecting::Bullets => !is_bullet(trimmed),
            };
            if !ends {
                if !names_dependents(trimmed) {
                    references(trimmed, found);
                }
                continue;
            }
            collecting = None;
        }
        if let Some(heading) = trimmed.strip_prefix('#') {
            let title = heading.trim_start_matches('#').trim().to_lowercase();
            if LABELS.iter().any(|l| title.trim_end_matches(':') == *l) {
                collecting = Some(Collecting::Section);
            }
            continue;
        }
        if let Some(value) = labelled(trimmed) {
            if value.trim().is_empty() {
                collecting = Some(Collecting::Bullets);
            } else {
                references(value, found);
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Collecting {
    /// Under a `## Dependencies` heading, until the next heading.
    Section,
    /// The bullets under a `**Dependencies:**` line with no value of its own.
    Bullets,
}

fn is_bullet(line: &str) -> bool {
    line.starts_with("- ") || line.starts_with("* ") || line.starts_with("+ ")
}

/// Whether a line under a dependency heading or label names this story's dependents: its
/// label (what comes before its first `:`), or an annotation, says so.
fn names_dependents(line: &str) -> bool {
    let lower = line.to_lowercase();
    let label = lower.split(':').next().unwrap_or_default();
    DEPENDENTS.iter().any(|word| {
        if word.starts_with('(') || word.ends_with(':') {
            lower.contains(word)
        } else {
            label.contains(word)
        }
    })
}

/// The value of a `Dependencies: …` line, however it is bulleted and bolded.
fn labelled(line: &str) -> Option<&str> {
    let line = ["- ", "* ", "+ "]
        .iter()
        .find_map(|b| line.strip_prefix(b))
        .unwrap_or(line)
        .trim_start();
    let bare = line.trim_start_matches(['*', '_']);
    let lower = bare.to_lowercase();
    let label = LABELS.iter().find(|l| lower.starts_with(**l))?;
    // Lowercasing may change lengths (the Kelvin sign becomes `k`): a line whose label is
    // not the same bytes in `bare` is no label line.
    let rest = bare
        .get(label.len()..)
        .filter(|_| bare[..label.len()].eq_ignore_ascii_case(label))?
        .trim_start_matches(['*', '_', ' ']);
    let rest = rest.strip_prefix(':')?;
    Some(rest.trim_start_matches(['*', '_']))
}

/// Push the stories `text` names onto `found`, each once.
fn references(text: &str, found: &mut Vec<String>) {
    static NUMBER_OR_RANGE: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
        regex::Regex::new(
            r"(?i)\b(\d+)\.(\d+)([a-z]?)\b(?:\s*(?:–|—|-|\bto\b|\bthrough\b)\s*(?:(\d+)\.)?(\d+)\b)?",
        )
        .ok()
    });
    static KEY: LazyLock<Option<regex::Regex>> =
        LazyLock::new(|| regex::Regex::new(r"\b\d+-\d+[a-z]?-[a-z0-9][a-z0-9-]*").ok());
    let mut push = |reference: String| {
        if !found.contains(&reference) {
            found.push(reference);
        }
    };
    if let Some(key) = KEY.as_ref() {
        for m in key.find_iter(text) {
            push(m.as_str().trim_end_matches('-').to_owned());
        }
    }
    let Some(numbers) = NUMBER_OR_RANGE.as_ref() else {
        return;
    };
    if !says_story(text) && !only_references(&numbers.replace_all(text, "")) {
        return;
    }
    for c in numbers.captures_iter(text) {
        let (Some(epic), Some(first)) = (c.get(1), c.get(2)) else {
            continue;
        };
        let suffix = c.get(3).map_or("", |m| m.as_str());
        let start = format!("{}.{}{suffix}", epic.as_str(), first.as_str());
        let range_end = c.get(5).and_then(|end| end.as_str().parse::<u32>().ok());
        let same_epic = c.get(4).is_none_or(|e| e.as_str() == epic.as_str());
        match (first.as_str().parse::<u32>(), range_end) {
            (Ok(from), Some(to))
                if suffix.is_empty() && same_epic && from < to && to - from <= LONGEST_RANGE =>
            {
                for n in from..=to {
                    push(format!("{}.{n}", epic.as_str()));
                }
            }
            _ => {
                push(start);
                // `2.1-3.4` across epics: both ends, nothing between.
                if let (Some(e), Some(end)) = (c.get(4), c.get(5)) {
                    push(format!("{}.{}", e.as_str(), end.as_str()));
                }
            }
        }
    }
}

fn says_story(text: &str) -> bool {
    let lower = text.to_lowercase();
    lower.contains("story") || lower.contains("stories")
}

/// Whether what is left of a text once its numbers are taken out is only what joins them.
fn only_references(rest: &str) -> bool {
    rest.split(|c: char| c.is_whitespace() || ",;/&–—-.".contains(c))
        .all(|word| matches!(word, "" | "and" | "or" | "to" | "through"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_body(body: &str) -> Vec<String> {
        let mut found = Vec::new();
        add_from_body(body, &mut found);
        found
    }

    #[test]
    fn every_form_people_write() {
        let cases: [(&str, &[&str]); 12] = [
            (
                "- **Dependencies**: Story 2.1 (REQUIS — ProductEntity)",
                &["2.1"],
            ),
            (
                "- **Dependencies**: Story 2.5, 2.6, 2.7",
                &["2.5", "2.6", "2.7"],
            ),
            ("**Dependencies:** Story 2.3/2.4", &["2.3", "2.4"]),
            (
                "Dependencies: Stories 2.1–2.4",
                &["2.1", "2.2", "2.3", "2.4"],
            ),
            ("* Depends on: 1.2 and 1.3", &["1.2", "1.3"]),
            (
                "- **Prerequisites**: 3.1 through 3.3",
                &["3.1", "3.2", "3.3"],
            ),
            ("Blocked by: 1-2-login-page", &["1-2-login-page"]),
            ("- **Dependencies**: None", &[]),
            ("- **Dependencies**: Epic 1 done, story 4.2a", &["4.2a"]),
            ("Dependencies: 2.1-3.4", &["2.1", "3.4"]),
            ("The dependencies are listed below.", &[]),
            ("Dependencies: axios 1.6 (HTTP)", &[]),
        ];
        for (line, expected) in cases {
            assert_eq!(in_body(line), expected, "{line}");
        }
    }

    #[test]
    fn no_panic_on_odd_input() {
        for text in [
            "BlocKed by: 1.2",
            "Dependencies",
            "- **Dependencies**:",
            "## Dependencies\n- ",
            "Dependencies: 9.4294967296-9.1",
        ] {
            let _ = in_body(text);
        }
        // The Kelvin sign lowercases to `k`: not the label's bytes, so no label.
        assert_eq!(in_body("Bloc\u{212A}ed by: 1.2"), Vec::<String>::new());
    }

    #[test]
    fn sections_and_bullets_under_a_label() {
        let body = "## Story\n\nAs a user (see 9.9).\n\n## Dependencies\n\n- Story 1.1 (auth)\n- 1.2\n- react 18.2\n\n## Tasks\n\n- [ ] 7.7 not a dependency\n\n**Depends on:**\n- 3.1\n- 3-2-cart\n\nText 8.8 after.\n```\nDependencies: 6.6\n```\n";
        assert_eq!(in_body(body), ["1.1", "1.2", "3.1", "3-2-cart"]);
    }

    #[test]
    fn lines_naming_dependents_are_no_dependencies() {
        // As real projects write them: the story blocks others, or names the next one.
        let body = "### Dependencies

- **Bloquea:** TODAS las stories (1.1b, 1.2, 1.3)
- **Depende de:** Nada (story raiz)

## Notes

**Dependencies:**
- **Requiere:** Story 1.1a - DONE
- Blocks: Story 4.1

### Dependencies

- **Story 14.1** (done): Package structure
- **Story 14.3** (next): Routing configuration uses workspace context
- Enables 9.9
";
        assert_eq!(in_body(body), ["1.1a", "14.1"]);
    }
}
