//! Story and epic statuses across BMAD's eras, normalised to the v6 words.
//!
//! | era | words | normalised |
//! |---|---|---|
//! | v6 | backlog, ready-for-dev, in-progress, review, done; retro optional | as they are |
//! | alpha | drafted, contexted, completed | ready-for-dev, in-progress, done |
//! | v4 | Draft, Approved, InProgress / Dev, Review / Ready for Review, Done | backlog … done |
//!
//! A word none of these know (bmad-loop's `awaiting-operator`) is kept as it is, never reset:
//! BMAD's own tooling lost such statuses (#2871).

use std::fmt;

use serde::Serialize;

/// A normalised status.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Only in the epics file (v4: Draft).
    Backlog,
    /// Story file written (alpha: drafted; v4: Approved).
    ReadyForDev,
    /// Being implemented (alpha epics: contexted; v4: InProgress, Dev).
    InProgress,
    /// Implemented, waiting for review (v4: Ready for Review).
    Review,
    /// Finished (alpha retros: completed).
    Done,
    /// A retrospective that may be skipped.
    Optional,
    /// A word git-bmad does not know, kept verbatim.
    #[serde(untagged)]
    Other(String),
}

impl Status {
    /// Normalise a status word from any era; never fails.
    pub fn parse(raw: &str) -> Status {
        let word: String = raw
            .trim()
            .trim_matches(['"', '\''])
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c == '_' || c == ' ' { '-' } else { c })
            .collect();
        match word.as_str() {
            "backlog" | "draft" => Status::Backlog,
            "ready-for-dev" | "drafted" | "approved" | "ready" => Status::ReadyForDev,
            "in-progress" | "contexted" | "inprogress" | "dev" | "in-dev" => Status::InProgress,
            "review" | "ready-for-review" | "in-review" => Status::Review,
            "done" | "completed" | "complete" => Status::Done,
            "optional" => Status::Optional,
            _ => Status::Other(raw.trim().to_owned()),
        }
    }

    /// The v6 word.
    pub fn as_str(&self) -> &str {
        match self {
            Status::Backlog => "backlog",
            Status::ReadyForDev => "ready-for-dev",
            Status::InProgress => "in-progress",
            Status::Review => "review",
            Status::Done => "done",
            Status::Optional => "optional",
            Status::Other(word) => word,
        }
    }

    /// Position in a story's life, for "forward" and "backward".
    pub fn rank(&self) -> Option<u8> {
        Some(match self {
            Status::Backlog => 0,
            Status::ReadyForDev => 1,
            Status::InProgress => 2,
            Status::Review => 3,
            Status::Done => 4,
            Status::Optional | Status::Other(_) => return None,
        })
    }

    /// Which to work on first: review, then in-progress, ready-for-dev, backlog (the v4
    /// order Ready for Review → Dev → Approved → Draft is the same one). Done comes last.
    pub fn priority(&self) -> u8 {
        match self {
            Status::Review => 0,
            Status::InProgress => 1,
            Status::ReadyForDev => 2,
            Status::Backlog => 3,
            Status::Other(_) => 4,
            Status::Optional => 5,
            Status::Done => 6,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a story may move from `from` to `to` without `--force`: one step forward, or
/// back from review to in-progress (the review found problems; BMAD's code-review does this).
pub fn legal_transition(from: &Status, to: &Status) -> Result<(), String> {
    if from == to {
        return Ok(());
    }
    match (from.rank(), to.rank()) {
        (Some(a), Some(b)) if b == a + 1 => Ok(()),
        (Some(3), Some(2)) => Ok(()),
        (Some(a), Some(b)) if b < a => Err(format!(
            "{from} → {to} goes backwards; only review → in-progress may (pass --force to do it anyway)"
        )),
        (Some(_), Some(_)) => Err(format!(
            "{from} → {to} skips a stage; a story moves backlog → ready-for-dev → in-progress → review → done (pass --force to skip)"
        )),
        _ => Err(format!(
            "{from} → {to}: `{}` is not a story status git-bmad knows (pass --force to set it anyway)",
            if from.rank().is_none() { from.as_str() } else { to.as_str() }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_era_normalises() {
        let cases = [
            ("backlog", Status::Backlog),
            ("drafted", Status::ReadyForDev),
            ("contexted", Status::InProgress),
            ("completed", Status::Done),
            ("Ready for Review", Status::Review),
            ("InProgress", Status::InProgress),
            ("Approved", Status::ReadyForDev),
            ("Draft", Status::Backlog),
            ("in_progress", Status::InProgress),
            ("'done'", Status::Done),
        ];
        for (raw, want) in cases {
            assert_eq!(Status::parse(raw), want, "{raw}");
        }
        assert_eq!(
            Status::parse("awaiting-operator").as_str(),
            "awaiting-operator"
        );
    }

    #[test]
    fn transitions() {
        use Status::*;
        assert!(legal_transition(&ReadyForDev, &InProgress).is_ok());
        assert!(legal_transition(&Review, &InProgress).is_ok());
        assert!(legal_transition(&Done, &Review)
            .unwrap_err()
            .contains("backwards"));
        assert!(legal_transition(&Backlog, &Done)
            .unwrap_err()
            .contains("skips"));
        assert!(legal_transition(&Other("x".into()), &Done).is_err());
        assert!(legal_transition(&Done, &Done).is_ok());
    }
}
