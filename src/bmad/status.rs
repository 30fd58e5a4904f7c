//! Story and epic statuses across BMAD's eras, normalised to the v6 words.
//!
//! | era | words | normalised |
//! |---|---|---|
//! | v6 | backlog, ready-for-dev, in-progress, review, done; retro optional | as they are |
//! | alpha | drafted, contexted, completed | ready-for-dev, in-progress, done |
//! | v4 | Draft, Approved, InProgress / Dev, Review / Ready for Review, Done | backlog … done |
//! | v6.11 spec frontmatter | draft, ready-for-dev, in-progress, in-review, done, blocked | backlog … done, blocked |
//!
//! A word none of these know (bmad-loop's `awaiting-operator`) is kept as it is, never reset:
//! BMAD's own tooling lost such statuses (#2871).
//!
//! Sprint-status values are read word for word ([`Status::parse`]), as `sprint_plan.py` reads
//! them. Story files are prose, and real ones decorate the word (`✅ Complete - October 1,
//! 2024`, `In Development - Tasks 1-7 completed`, `done *(Pending: PM approval)*`):
//! [`Status::parse_prose`] reads the leading status phrase and ignores what follows it.

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
    /// Halted on a blocking condition (v6.11 spec frontmatter; bmad-build-auto's HALT).
    Blocked,
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
            "blocked" => Status::Blocked,
            _ => Status::Other(raw.trim().to_owned()),
        }
    }

    /// Read the status a story file writes in prose: the word itself, or a known phrase at
    /// the start of decorated text (emoji, emphasis, a date or a note after it). Text that
    /// starts with no known phrase is kept verbatim as [`Status::Other`].
    pub fn parse_prose(raw: &str) -> Status {
        let exact = Status::parse(raw);
        if !matches!(exact, Status::Other(_)) {
            return exact;
        }
        let words: Vec<String> = raw
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        // Longest phrases first, so "ready for review" is not read as "ready".
        const PHRASES: &[(&[&str], Status)] = &[
            (&["ready", "for", "development"], Status::ReadyForDev),
            (&["ready", "for", "dev"], Status::ReadyForDev),
            (&["ready", "for", "review"], Status::Review),
            (&["in", "development"], Status::InProgress),
            (&["in", "progress"], Status::InProgress),
            (&["in", "review"], Status::Review),
            (&["under", "review"], Status::Review),
        ];
        for (phrase, status) in PHRASES {
            if words.len() >= phrase.len() && words.iter().zip(phrase.iter()).all(|(w, p)| w == p) {
                return status.clone();
            }
        }
        // One status word followed by anything else (`Done - 2024-10-01`, `DONE ✅`).
        match words.first().map(|w| Status::parse(w)) {
            Some(Status::Other(_)) | None => Status::Other(raw.trim().to_owned()),
            Some(first) => first,
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
            Status::Blocked => "blocked",
            Status::Other(word) => word,
        }
    }

    /// The v6.11 spec lifecycle's word (`bmad-build/spec-template.md`: draft | ready-for-dev
    /// | in-progress | in-review | done, and `blocked` from bmad-build-auto).
    pub fn as_spec_word(&self) -> &str {
        match self {
            Status::Backlog => "draft",
            Status::Review => "in-review",
            other => other.as_str(),
        }
    }

    /// The v4 word.
    pub fn as_v4_word(&self) -> &str {
        match self {
            Status::Backlog => "Draft",
            Status::ReadyForDev => "Approved",
            Status::InProgress => "InProgress",
            Status::Review => "Review",
            Status::Done => "Done",
            other => other.as_str(),
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
            Status::Optional | Status::Blocked | Status::Other(_) => return None,
        })
    }

    /// Which to work on first, `None` for what is never recommended. BMAD's rule since
    /// v6.0 (the sprint-status workflow's instructions; HEAD `sprint_plan.py` `cmd_status`):
    /// finish what is in progress, then review, then start what is ready, then the backlog.
    /// A blocked, unknown or cancelled story waits for a human.
    pub fn priority(&self) -> Option<u8> {
        match self {
            Status::InProgress => Some(0),
            Status::Review => Some(1),
            Status::ReadyForDev => Some(2),
            Status::Backlog => Some(3),
            Status::Done | Status::Optional | Status::Blocked | Status::Other(_) => None,
        }
    }
}

/// The words real boards use for a story nobody should build any more: abandoned,
/// replaced, put off or de-scoped (v7's `dropped` among them), normalised as
/// [`Status::parse`] normalises.
const SET_ASIDE: &[&str] = &[
    "cancelled",
    "canceled",
    "superseded",
    "wontfix",
    "won't-fix",
    "wont-fix",
    "deferred",
    "obsolete",
    "duplicate",
    "dropped",
    "descoped",
    "de-scoped",
    "out-of-scope",
    "abandoned",
    "rejected",
    "postponed",
    "on-hold",
    "parked",
];

impl Status {
    /// Why no run may start a story in this status, in words (`None`: one may). The one rule
    /// every scheduler shares (`stories next`, `epic plan`, the epic run): a run starts from
    /// what [`Status::priority`] ranks; done needs nothing; blocked, set-aside and unknown
    /// words wait for a person.
    pub fn why_no_run(&self) -> Option<String> {
        if self.priority().is_some() {
            return None;
        }
        Some(match self {
            Status::Done => "done".to_owned(),
            Status::Optional => "optional (a retrospective)".to_owned(),
            Status::Blocked => "blocked".to_owned(),
            _ if self.is_built() => "built: its build finished and waits for a person to call it \
                 done (tickets.py mark <ticket> done) or send it back"
                .to_owned(),
            Status::Other(word) if self.is_set_aside() => {
                format!("set aside ({word}): a person put it out of the work")
            }
            Status::Other(word) => format!(
                "its status {word:?} is none a run starts from (backlog, ready-for-dev, in-progress, review): a person decides what it means"
            ),
            _ => self.as_str().to_owned(),
        })
    }

    /// v7's `built`: the build finished; only a person calls it done.
    pub fn is_built(&self) -> bool {
        matches!(self, Status::Other(word) if word == "built")
    }

    /// Whether the word says the story was put out of the work (cancelled, superseded, …).
    pub fn is_set_aside(&self) -> bool {
        let Status::Other(word) = self else {
            return false;
        };
        let word: String = word
            .trim()
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c == '_' || c == ' ' { '-' } else { c })
            .collect();
        SET_ASIDE.contains(&word.as_str())
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whose lifecycle a status follows: `sprint_plan.py`'s `STORY_RANK`, `EPIC_RANK` and
/// `RETRO_RANK`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifecycle {
    /// backlog → ready-for-dev → in-progress → review → done.
    Story,
    /// backlog → in-progress → done.
    Epic,
    /// optional → done.
    Retrospective,
}

impl Lifecycle {
    /// The lifecycle a `development_status` key moves by. Keys outside BMAD's grammar
    /// (`epic-2.5`, `epic-2.5-retrospective`: BMAD's parser rejects them, real boards have
    /// them) move as what their name says.
    pub fn of(key: &str, kind: &super::key::KeyKind) -> Lifecycle {
        use super::key::KeyKind;
        match kind {
            KeyKind::Epic { .. } => Lifecycle::Epic,
            KeyKind::Retrospective { .. } => Lifecycle::Retrospective,
            KeyKind::Unknown if key.starts_with("epic-") && key.ends_with("-retrospective") => {
                Lifecycle::Retrospective
            }
            KeyKind::Unknown if key.starts_with("epic-") => Lifecycle::Epic,
            _ => Lifecycle::Story,
        }
    }

    /// The words BMAD's sprint tools know for this lifecycle. Any other word in
    /// sprint-status.yaml is reset by v6.12's `sprint_plan.py` (to backlog, for a story:
    /// BMAD-METHOD #2871), which would send a parked story back to be run.
    pub fn sprint_words(self) -> &'static [Status] {
        match self {
            Lifecycle::Story => &[
                Status::Backlog,
                Status::ReadyForDev,
                Status::InProgress,
                Status::Review,
                Status::Done,
            ],
            Lifecycle::Epic => &[Status::Backlog, Status::InProgress, Status::Done],
            Lifecycle::Retrospective => &[Status::Optional, Status::Done],
        }
    }

    /// Whether BMAD's sprint tools read `raw`, as written in a sprint status, as one of their
    /// words (v6.12's `sprint_plan.py` also maps v6's `drafted` and `contexted`); to them any
    /// other spelling (`in progress`, `Review`) is illegal, and a regeneration resets it.
    pub fn reads_word(self, raw: &str) -> bool {
        let word = raw.trim().trim_matches(['"', '\'']);
        self.sprint_words().iter().any(|s| s.as_str() == word)
            || self == Lifecycle::Story && matches!(word, "drafted" | "contexted")
    }

    /// Refuse a word BMAD's sprint tools do not know in this lifecycle
    /// ([`Self::sprint_words`]).
    pub fn sprint_word(self, to: &Status) -> Result<(), String> {
        if self.sprint_words().contains(to) {
            return Ok(());
        }
        let known: Vec<&str> = self.sprint_words().iter().map(Status::as_str).collect();
        Err(format!(
            "`{to}` is no word BMAD's sprint tools know here ({}); v6.12's sprint_plan.py resets such a word (BMAD-METHOD #2871 sent a parked story back to backlog, to be run again), so the sprint status never holds it",
            known.join(", ")
        ))
    }
}

/// Whether `from` → `to` is a legal move without `--force` in `lifecycle`.
pub fn legal_move(lifecycle: Lifecycle, from: &Status, to: &Status) -> Result<(), String> {
    if lifecycle == Lifecycle::Story {
        return legal_transition(from, to);
    }
    let steps = lifecycle.sprint_words();
    if from == to {
        return Ok(());
    }
    let at = |s: &Status| steps.iter().position(|x| x == s);
    let path = steps
        .iter()
        .map(Status::as_str)
        .collect::<Vec<_>>()
        .join(" → ");
    let what = match lifecycle {
        Lifecycle::Epic => "an epic",
        _ => "a retrospective",
    };
    match (at(from), at(to)) {
        (Some(a), Some(b)) if b == a + 1 => Ok(()),
        (Some(a), Some(b)) if b < a => Err(format!(
            "{from} → {to} goes backwards; {what} moves {path} (pass --force to do it anyway)"
        )),
        (Some(_), Some(_)) => Err(format!(
            "{from} → {to} skips a stage; {what} moves {path} (pass --force to skip)"
        )),
        _ => Err(format!(
            "{from} → {to}: {what} moves {path} (pass --force to set it anyway)"
        )),
    }
}

/// Whether a story may move from `from` to `to` without `--force`: one step forward, or
/// back from review to in-progress (the review found problems; BMAD's code-review does this).
/// `blocked` (bmad-build-auto's HALT) may be entered from any stage and left to any.
pub fn legal_transition(from: &Status, to: &Status) -> Result<(), String> {
    if from == to || *from == Status::Blocked || *to == Status::Blocked {
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
    fn a_run_starts_only_from_what_next_would_recommend() {
        for word in [
            "backlog",
            "ready-for-dev",
            "in-progress",
            "review",
            "Approved",
            "drafted",
        ] {
            assert_eq!(Status::parse(word).why_no_run(), None, "{word}");
        }
        for word in [
            "Cancelled",
            "superseded",
            "wontfix",
            "Won't Fix",
            "deferred",
            "on_hold",
            "dropped",
        ] {
            let status = Status::parse(word);
            assert!(status.is_set_aside(), "{word}");
            assert!(
                status.why_no_run().unwrap().starts_with("set aside"),
                "{word}"
            );
        }
        assert_eq!(Status::parse("done").why_no_run().as_deref(), Some("done"));
        assert_eq!(
            Status::parse("blocked").why_no_run().as_deref(),
            Some("blocked")
        );
        let unknown = Status::parse("awaiting-operator");
        assert!(!unknown.is_set_aside());
        assert!(unknown.why_no_run().unwrap().contains("a person decides"));
    }

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
    fn decorated_story_statuses_read_by_their_leading_phrase() {
        let cases = [
            ("✅ Complete - October 1, 2024", Status::Done),
            ("Ready for Development", Status::ReadyForDev),
            ("In Development - Tasks 1-7 completed", Status::InProgress),
            ("DONE", Status::Done),
            ("done *(Pending: PM approval)*", Status::Done),
            ("Ready for Review ✅", Status::Review),
            ("Draft (v2)", Status::Backlog),
            ("in-review", Status::Review),
            ("blocked", Status::Blocked),
        ];
        for (raw, want) in cases {
            assert_eq!(Status::parse_prose(raw), want, "{raw}");
        }
        assert_eq!(
            Status::parse_prose("Waiting on legal"),
            Status::Other("Waiting on legal".into())
        );
        // Sprint-status values stay word for word.
        assert_eq!(
            Status::parse("Done - 2024"),
            Status::Other("Done - 2024".into())
        );
    }

    #[test]
    fn epics_and_retrospectives_follow_their_own_lifecycles() {
        use Status::*;
        assert!(legal_move(Lifecycle::Epic, &Backlog, &InProgress).is_ok());
        assert!(legal_move(Lifecycle::Epic, &InProgress, &Done).is_ok());
        assert!(legal_move(Lifecycle::Epic, &Backlog, &Done)
            .unwrap_err()
            .contains("skips"));
        assert!(legal_move(Lifecycle::Epic, &Done, &InProgress)
            .unwrap_err()
            .contains("backwards"));
        assert!(legal_move(Lifecycle::Retrospective, &Optional, &Done).is_ok());
        assert!(legal_move(Lifecycle::Retrospective, &Optional, &Review).is_err());
        assert!(legal_transition(&InProgress, &Blocked).is_ok());
        assert!(legal_transition(&Blocked, &InProgress).is_ok());
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
