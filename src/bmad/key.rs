//! The grammar of `development_status` keys: which name an epic, a retrospective, a
//! retro item or a story.

use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;

/// What a `development_status` key names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum KeyKind {
    /// `epic-N`.
    Epic {
        /// N.
        epic: u32,
    },
    /// `epic-N-retrospective`.
    Retrospective {
        /// N.
        epic: u32,
    },
    /// `epic-N-retro-item-M-slug` (bmad-loop).
    RetroItem {
        /// N.
        epic: u32,
        /// M.
        item: u32,
    },
    /// `N-M-slug`, `N-Ma-slug`, `N-M-K-slug`.
    Story {
        /// N.
        epic: u32,
        /// `M`, `Ma` or `M.K`.
        number: String,
    },
    /// Anything else (kept, warned about).
    Unknown,
}

/// Classify a key by BMAD's grammar (`sprint_plan.py`, plus bmad-loop's retro items and the
/// three-number and letter-suffixed keys real projects use).
pub fn classify(key: &str) -> KeyKind {
    static RE: OnceLock<[Regex; 4]> = OnceLock::new();
    let [epic, retro, item, story] = RE.get_or_init(|| {
        [
            Regex::new(r"^epic-(\d+)$").expect("epic"),
            Regex::new(r"^epic-(\d+)-retrospective$").expect("retro"),
            Regex::new(r"^epic-(\d+)-retro-item-(\d+)(?:-.*)?$").expect("item"),
            Regex::new(r"^(\d+)-(\d+[a-z]?)(?:-(\d+))?-(.+)$").expect("story"),
        ]
    });
    let n = |s: &str| s.parse::<u32>().ok();
    if let Some(c) = epic.captures(key) {
        if let Some(e) = n(&c[1]) {
            return KeyKind::Epic { epic: e };
        }
    }
    if let Some(c) = retro.captures(key) {
        if let Some(e) = n(&c[1]) {
            return KeyKind::Retrospective { epic: e };
        }
    }
    if let Some(c) = item.captures(key) {
        if let (Some(e), Some(i)) = (n(&c[1]), n(&c[2])) {
            return KeyKind::RetroItem { epic: e, item: i };
        }
    }
    if let Some(c) = story.captures(key) {
        if let Some(e) = n(&c[1]) {
            let number = match c.get(3) {
                Some(third) => format!("{}.{}", &c[2], third.as_str()),
                None => c[2].to_owned(),
            };
            return KeyKind::Story { epic: e, number };
        }
    }
    KeyKind::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_key() {
        assert_eq!(classify("epic-3"), KeyKind::Epic { epic: 3 });
        assert_eq!(
            classify("epic-3-retrospective"),
            KeyKind::Retrospective { epic: 3 }
        );
        assert_eq!(
            classify("epic-2-retro-item-4-fix-ci"),
            KeyKind::RetroItem { epic: 2, item: 4 }
        );
        assert_eq!(
            classify("1-2-login"),
            KeyKind::Story {
                epic: 1,
                number: "2".into()
            }
        );
        assert_eq!(
            classify("1-2a-login"),
            KeyKind::Story {
                epic: 1,
                number: "2a".into()
            }
        );
        assert_eq!(
            classify("1-2-3-login"),
            KeyKind::Story {
                epic: 1,
                number: "2.3".into()
            }
        );
        assert_eq!(classify("epic-x"), KeyKind::Unknown);
        assert_eq!(classify("notes"), KeyKind::Unknown);
    }
}
