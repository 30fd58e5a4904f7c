//! Tying sprint-status keys to story files, and dependency names to keys, without
//! guessing: a match by number alone must agree on the slug, or it is no match.
//!
//! Why: real projects renumber and reuse numbers. A key `34-1-architecture-…` next to a
//! file `story-34-1-back-button-….md` names two different stories; tying them would make
//! `stories set` rewrite the wrong story's Status and Change Log.

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use regex::Regex;

use super::key::{classify, KeyKind};
use super::view::StoryView;

/// Whether a file name looks like a story: `1-2-slug.md`, `1.1.title.md`, `story-1.2.md`,
/// `5.0.6-x.md`, `7b-3-x.md`, and v6.11's `spec-1-2-slug.md`.
pub fn is_story_name(name: &str) -> bool {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)^(?:spec-)?(?:story[-_.]?)?\d+[a-z]?[-.]\d+[a-z]?(?:[-.].*)?\.md$")
            .expect("story name")
    })
    .is_match(name)
}

/// Whether a file of a v4 project's stories folder follows BMAD's v4 story template, as every
/// story its Scrum Master drafts does: a `## Story` or `## Acceptance Criteria` section.
/// Notes kept beside the stories under a story's number (`7.5.AUTH_FIX.md`, a deployment
/// summary, a progress report) have neither, and are no stories.
pub fn follows_v4_template(text: &str) -> bool {
    text.lines().any(|line| {
        let Some(heading) = line
            .strip_prefix("## ")
            .or_else(|| line.strip_prefix("### "))
        else {
            return false;
        };
        let heading = heading.trim().trim_end_matches(':').to_lowercase();
        matches!(
            heading.as_str(),
            "story" | "user story" | "acceptance criteria"
        )
    })
}

/// The key a story file's name gives: the stem without v6.11's `spec-` prefix and v4's
/// `.story` suffix (`1.1.story.md`).
pub fn stem_key(name: &str) -> &str {
    let stem = name.strip_suffix(".md").unwrap_or(name);
    let stem = stem.strip_prefix("spec-").unwrap_or(stem);
    stem.strip_suffix(".story").unwrap_or(stem)
}

/// A story name's number and what follows it: `story-1.2-x` → `((1, "2"), "-x")`,
/// `6-9-1-deep` → `((6, "9.1"), "-deep")`, `spec-3-2-y` → `((3, "2"), "-y")`. One pattern
/// for both, so a number and a slug are always cut at the same place.
fn split_number(text: &str) -> Option<((u32, String), &str)> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"(?i)^(?:spec-)?(?:story[-_. ]?)?(\d+)[a-z]?[-.](\d+[a-z]?)(?:[-.](\d+)\b)?")
            .expect("story number")
    });
    let c = re.captures(text)?;
    let epic = c[1].parse().ok()?;
    let number = match c.get(3) {
        Some(third) => format!("{}.{}", &c[2], third.as_str()),
        None => c[2].to_owned(),
    };
    Some(((epic, number), &text[c.get(0).map_or(0, |m| m.end())..]))
}

/// The epic and story number a name or title starts with (`1.7`, `story-1-2-x`).
pub(super) fn number_in(text: &str) -> Option<(u32, String)> {
    split_number(text).map(|(number, _)| number)
}

/// What follows the story number in a key or a file stem (`1-2-login` → `login`,
/// `story-1.2.md` → ``, `1.1.title` → `title`), lowercased, non-alphanumerics as `-`.
pub fn slug(stem: &str) -> String {
    normalise(split_number(stem).map_or(stem, |(_, rest)| rest))
}

/// Lowercase, every run of non-alphanumerics one `-`, none at the ends.
pub fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_owned()
}

/// Whether a key and a file that share a story number name the same story: the file says
/// nothing else (no slug, no title), or its slug or title agrees with the key's slug. One
/// may be a prefix of the other, because BMAD cuts keys at 60 characters.
pub fn agree(key: &str, file_stem: &str, title: Option<&str>) -> bool {
    let key_slug = slug(key);
    let file_slug = slug(file_stem);
    let title_slug = title.map(normalise).unwrap_or_default();
    if file_slug.is_empty() && title_slug.is_empty() {
        return true;
    }
    let same =
        |a: &str, b: &str| !a.is_empty() && !b.is_empty() && (a.starts_with(b) || b.starts_with(a));
    same(&key_slug, &file_slug) || same(&key_slug, &title_slug) || key_slug.is_empty()
}

/// A dependency as written, cleaned for lookup: without a trailing note (`5-4-x (done)`),
/// quotes, or an ellipsis that marks a shortened key (`5-4-…`).
pub fn clean_dependency(raw: &str) -> String {
    let mut text = raw.trim().trim_matches(['"', '\'', '`']).trim();
    if let Some(open) = text.rfind(" (") {
        if text.ends_with(')') {
            text = text[..open].trim_end();
        }
    }
    text.trim_end_matches(['…', '.', '-', ' ']).to_owned()
}

/// Name every dependency by key, whatever form it was written in: a key, a file name or
/// stem, a story number (`1.7`), with a note (`5-4-x (done)`) or shortened (`5-4-…`).
pub(super) fn resolve_dependencies(stories: &mut [StoryView]) {
    let mut aliases: HashMap<String, String> = HashMap::new();
    let mut numbers: HashMap<(u32, String), Vec<String>> = HashMap::new();
    for v in stories.iter() {
        aliases.insert(v.key.clone(), v.key.clone());
        if let Some(file) = &v.file {
            let name = Path::new(file)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            aliases.insert(stem_key(&name).to_owned(), v.key.clone());
            aliases.insert(name, v.key.clone());
        }
        if let KeyKind::Story { epic, number } = classify(&v.key) {
            numbers
                .entry((epic, number))
                .or_default()
                .push(v.key.clone());
        }
    }
    let keys: Vec<String> = stories.iter().map(|v| v.key.clone()).collect();
    for view in stories.iter_mut() {
        for dep in &mut view.depends_on {
            if let Some(key) = aliases.get(dep.as_str()) {
                *dep = key.clone();
                continue;
            }
            let clean = clean_dependency(dep);
            if let Some(key) = aliases.get(clean.as_str()) {
                *dep = key.clone();
                continue;
            }
            // `1.7`, `1-7`, `Story 1.7`: a number alone names the one story that has it.
            if slug(&clean).is_empty() {
                if let Some((epic, number)) = number_in(clean.trim_start_matches("Story ")) {
                    if let Some([key]) = numbers.get(&(epic, number)).map(Vec::as_slice) {
                        *dep = key.clone();
                        continue;
                    }
                }
            }
            // A shortened key names the one key it starts.
            let longer: Vec<&String> = keys
                .iter()
                .filter(|k| clean.len() >= 3 && k.starts_with(&format!("{clean}-")))
                .collect();
            if let [key] = longer.as_slice() {
                *dep = (*key).clone();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v4_story_follows_the_sms_template_and_a_note_does_not() {
        assert!(follows_v4_template(
            "# Story 1.1: Setup\n\n## Status\n\nDone\n\n## Story\n\nAs a user\n"
        ));
        assert!(follows_v4_template(
            "## Status\nDraft\n### Acceptance Criteria:\n1. x\n"
        ));
        assert!(!follows_v4_template(
            "# Story 7.5 - Auth Fix\n\n**Status:** FIXED\n\n## Problem\n"
        ));
        assert!(!follows_v4_template("# Task 7\n## Story points\n"));
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("1-2-login-page"), "login-page");
        assert_eq!(slug("story-34-1-back-button"), "back-button");
        assert_eq!(slug("1.1.title"), "title");
        assert_eq!(slug("story-1.2"), "");
        assert_eq!(slug("6-9-1-deep"), "deep");
        assert_eq!(slug("spec-3-2-digest-delivery"), "digest-delivery");
    }

    #[test]
    fn agreement() {
        assert!(agree("1-2-login", "1-2-login", None));
        assert!(agree(
            "1-2-login-page-with-a-very-long-na",
            "1-2-login-page-with-a-very-long-name",
            None
        ));
        assert!(
            agree("1-2-login", "story-1.2", None),
            "nothing to disagree with"
        );
        assert!(agree("1-2-login", "story-1.2", Some("Login")));
        assert!(agree("1-2-login", "1.2.story", Some("Login form")));
        assert!(!agree(
            "34-1-architecture-review",
            "story-34-1-back-button-fix",
            Some("Back button fix")
        ));
        assert!(!agree("1-2-login", "story-1.2", Some("Profile page")));
    }

    #[test]
    fn dependencies_as_written() {
        assert_eq!(clean_dependency("5-4-user-roles (done)"), "5-4-user-roles");
        assert_eq!(clean_dependency("\"1.7\""), "1.7");
        assert_eq!(clean_dependency("5-4-…"), "5-4");
        assert_eq!(clean_dependency("5-4-user..."), "5-4-user");
    }
}
