//! The journal: append-only JSON-lines events in the notes of `refs/notes/bmad/<id>`.
//!
//! An event is appended to the note of the newest checkpoint. The notes commit message
//! carries the last `seq` (`Bmad-Seq: N`), so the next number is read from one commit instead
//! of from every note; the notes ref then moves by compare-and-swap from exactly the commit
//! that was read. Two writers that read the same tip cannot both win, and the loser retries
//! with the next number: `seq` stays dense and no event is lost.

use std::time::Duration;

use super::error::{Error, Result};
use super::event::{Event, NewEvent};
use super::id::SessionId;
use super::{checkpoints_ref, notes_ref};
use crate::git::{CasOutcome, ObjectId, Repo};
use crate::time::Timestamp;

/// How often, and for how long, an append retries against other writers before giving up.
const MAX_ATTEMPTS: u32 = 500;
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(30);

/// One event and the checkpoint whose note holds it.
#[derive(Clone, Debug)]
pub struct JournalEntry {
    /// The event.
    pub event: Event,
    /// The checkpoint commit it is attached to.
    pub checkpoint: ObjectId,
}

/// A session's journal, read from its notes.
#[derive(Clone, Debug, Default)]
pub struct Journal {
    /// The events, sorted by `seq`.
    pub entries: Vec<JournalEntry>,
    /// Lines that are not events, with where they were found (for `doctor`).
    pub malformed: Vec<String>,
    /// The last `seq` recorded in the notes commit message, if there is one.
    pub recorded_last_seq: Option<u64>,
}

impl Journal {
    /// The events alone.
    pub fn events(&self) -> impl Iterator<Item = &Event> {
        self.entries.iter().map(|e| &e.event)
    }

    /// The highest `seq`, 0 for an empty journal.
    pub fn last_seq(&self) -> u64 {
        self.entries.last().map_or(0, |e| e.event.seq)
    }
}

/// Append one event to a session's journal; returns it with its `seq` and time.
///
/// The event is attached to the session's newest checkpoint, which must exist. This does not
/// touch `journal.md`: callers outside this layer use [`record`], which does.
pub fn append(repo: &Repo, id: &SessionId, event: NewEvent) -> Result<Event> {
    let notes = notes_ref(id);
    let chain = checkpoints_ref(id);
    let started = std::time::Instant::now();
    for attempt in (0..MAX_ATTEMPTS).take_while(|_| started.elapsed() < MAX_WAIT) {
        let tip = repo.notes_tip(&notes)?;
        let last = match seq_trailer(&tip.message) {
            Some(seq) => seq,
            // Written by something else (`git notes append`, a notes merge): count the hard way.
            None if tip.commit.is_some() => read(repo, id)?.last_seq(),
            None => 0,
        };
        let head = repo.read_ref(&chain)?.ok_or_else(|| Error::NoCheckpoint {
            session: id.to_string(),
        })?;
        let stored = event.clone().into_event(last + 1, id, Timestamp::now());
        let mut note = repo.note_in(tip.tree, head)?.unwrap_or_default();
        if !note.is_empty() && !note.ends_with(b"\n") {
            note.push(b'\n');
        }
        let line = serde_json::to_string(&stored)
            .map_err(|e| Error::InvalidInput(format!("event cannot be stored as JSON: {e}")))?;
        note.extend_from_slice(line.as_bytes());
        note.push(b'\n');
        let message = format!(
            "journal: {} #{}\n\nBmad-Seq: {}\n",
            stored.kind(),
            stored.seq,
            stored.seq
        );
        let commit = repo.notes_commit_with(&tip, head, &note, &message)?;
        let reflog = format!("bmad journal: {} #{}", stored.kind(), stored.seq);
        match repo.cas_ref(&notes, tip.commit, commit, &reflog)? {
            CasOutcome::Updated => return Ok(stored),
            CasOutcome::Conflict => backoff(attempt),
        }
    }
    Err(crate::git::Error::Contended {
        name: notes,
        attempts: MAX_ATTEMPTS,
    }
    .into())
}

/// Append one event to a session's journal and keep its rendered `journal.md` current: the
/// one way every layer records an event.
pub fn record(repo: &Repo, session: &super::Session, event: NewEvent) -> Result<Event> {
    let event = append(repo, &session.id, event)?;
    super::render::update_rendered(repo, session, &event)?;
    Ok(event)
}

/// Read a session's whole journal, oldest event first.
pub fn read(repo: &Repo, id: &SessionId) -> Result<Journal> {
    let tip = repo.notes_tip(&notes_ref(id))?;
    let mut journal = Journal {
        recorded_last_seq: seq_trailer(&tip.message),
        ..Default::default()
    };
    for (checkpoint, blob) in repo.notes_list(tip.tree)? {
        let data = repo.read_blob(blob)?;
        for (n, line) in String::from_utf8_lossy(&data).lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Event>(line) {
                Ok(event) => journal.entries.push(JournalEntry { event, checkpoint }),
                Err(e) => journal
                    .malformed
                    .push(format!("note on {checkpoint}, line {}: {e}", n + 1)),
            }
        }
    }
    journal.entries.sort_by_key(|e| e.event.seq);
    Ok(journal)
}

/// The `Bmad-Seq: N` trailer of a message.
pub(crate) fn seq_trailer(message: &str) -> Option<u64> {
    message
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("Bmad-Seq: "))
        .and_then(|v| v.trim().parse().ok())
}

/// Wait a little before retrying a lost compare-and-swap, longer the more often we lost,
/// with per-process jitter so the same writers do not collide again in lockstep.
pub(crate) fn backoff(attempt: u32) {
    let jitter = u64::from(std::process::id() % 7);
    let millis = u64::from(attempt.min(20)) + jitter / 2;
    std::thread::sleep(Duration::from_millis(millis.max(1)));
}

#[cfg(test)]
mod tests {
    use super::seq_trailer;

    #[test]
    fn reads_the_seq_trailer() {
        assert_eq!(
            seq_trailer("journal: checkpoint #12\n\nBmad-Seq: 12\n"),
            Some(12)
        );
        assert_eq!(seq_trailer("Notes added by 'git notes add'\n"), None);
        assert_eq!(seq_trailer(""), None);
    }
}
