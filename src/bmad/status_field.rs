//! Where a line of a story file writes the story's status, in every form real projects use:
//!
//! | form | example | source |
//! |---|---|---|
//! | plain | `Status: review` | v6 create-story template |
//! | heading with value | `## Status: Draft` | v4.0–4.9 story template |
//! | bold | `**Status:** review`, `**Status**: review`, `- **Status:** done` | hand-written and agent-written stories |
//! | joined | `**Epic:** 6 **Story ID:** 6.1 **Status:** done` | prettier joins consecutive bold lines |
//!
//! The `## Status` heading with the value on a later line (v4.10+) and frontmatter `status:`
//! (v6.11 specs) are read by the story parser, which sees more than one line.

use std::ops::Range;
use std::sync::OnceLock;

use regex::Regex;

/// How a line writes the status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Form {
    /// `Status: x` or a bold `**Status:** x`.
    Field,
    /// `## Status: x`.
    Heading,
}

/// The byte range of the status value in `line`, and its form. The range covers the whole
/// value (`done *(Pending: PM approval)*`), without emphasis wrapped around it, and stops
/// where the next bold field of a joined line starts.
pub(super) fn find(line: &str) -> Option<(Range<usize>, Form)> {
    static RE: OnceLock<[Regex; 3]> = OnceLock::new();
    let [plain, heading, bold] = RE.get_or_init(|| {
        [
            Regex::new(r"^(?:[-*+]\s+)?Status:[ \t]*").expect("plain"),
            Regex::new(r"^#{1,6}[ \t]+Status[ \t]*:[ \t]*").expect("heading"),
            Regex::new(r"(?:^|\s)(?:\*\*|__)Status(?::(?:\*\*|__)|(?:\*\*|__):)[ \t]*")
                .expect("bold"),
        ]
    });
    let (start, form) = if let Some(m) = plain.find(line) {
        (m.end(), Form::Field)
    } else if let Some(m) = heading.find(line) {
        (m.end(), Form::Heading)
    } else {
        (bold.find(line)?.end(), Form::Field)
    };
    let rest = &line[start..];
    let end = next_bold_field(rest).unwrap_or(rest.len());
    let range = unwrap_emphasis(rest, 0..end)?;
    Some((start + range.start..start + range.end, form))
}

/// Where the next `**Name:**` field of a prettier-joined line starts in `text`.
fn next_bold_field(text: &str) -> Option<usize> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"\s(?:\*\*|__)[^*_]{1,40}?(?::(?:\*\*|__)|(?:\*\*|__):)").expect("field")
    });
    re.find(text).map(|m| m.start())
}

/// `range` of `text`, trimmed, without `**…**`, `__…__` or `` `…` `` around all of it;
/// `None` when nothing is left.
pub(super) fn unwrap_emphasis(text: &str, range: Range<usize>) -> Option<Range<usize>> {
    let mut r = range;
    loop {
        let s = &text[r.clone()];
        let lead = s.len() - s.trim_start().len();
        let trail = s.len() - s.trim_end().len();
        r = r.start + lead..r.end - trail;
        let s = &text[r.clone()];
        let marker = ["**", "__", "`"]
            .into_iter()
            .find(|m| s.len() > 2 * m.len() && s.starts_with(m) && s.ends_with(m));
        match marker {
            Some(m) if !s[m.len()..s.len() - m.len()].contains(m) => {
                r = r.start + m.len()..r.end - m.len();
            }
            _ => break,
        }
    }
    (!r.is_empty()).then_some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(line: &str) -> Option<(&str, Form)> {
        find(line).map(|(r, f)| (&line[r], f))
    }

    #[test]
    fn every_real_form() {
        use Form::*;
        let cases = [
            ("Status: review", Some(("review", Field))),
            ("**Status:** review", Some(("review", Field))),
            ("**Status**: review", Some(("review", Field))),
            ("- **Status:** DONE", Some(("DONE", Field))),
            (
                "**Status:** done *(Pending: PM approval)*",
                Some(("done *(Pending: PM approval)*", Field)),
            ),
            (
                "**Epic:** 6 **Story ID:** 6.1 **Status:** done **Priority:** High",
                Some(("done", Field)),
            ),
            (
                "**Epic:** 6 **Story ID:** 6.1 **Status:** done",
                Some(("done", Field)),
            ),
            ("## Status: Draft", Some(("Draft", Heading))),
            (
                "### Status: Ready for Review",
                Some(("Ready for Review", Heading)),
            ),
            ("**Status:** **Done**", Some(("Done", Field))),
            ("Status: `in-progress`", Some(("in-progress", Field))),
            ("## Status", None),
            ("Status:", None),
            ("**Status:**", None),
            ("The Status: of x", None),
            ("No status here", None),
        ];
        for (line, want) in cases {
            assert_eq!(value(line), want, "{line}");
        }
    }

    #[test]
    fn no_panic_on_odd_input() {
        for line in [
            "**",
            "****",
            "**Status:** **",
            "`",
            "Status: ``",
            "**Status:**`**`",
        ] {
            let _ = find(line);
        }
    }
}
