//! The journal: append-only JSON-lines events in the notes of `refs/notes/bmad/<id>`.
//!
//! An event is appended to the note of the newest checkpoint. The notes commit message
//! carries the last `seq` (`Bmad-Seq: N`), so the next number is read from one commit instead
//! of from every note; the notes ref then moves by compare-and-swap from exactly the commit
//! that was read. Two writers that read the same tip cannot both win, and the loser retries
//! with the next number: `seq` stays dense and no event is lost.
//!
//! Events form a hash chain: each carries `prev`, the chain before it, and the chain moves on
//! as `sha256(prev, line)`; the notes commit carries the newest value (`Bmad-Chain: …`) so an
//! append reads it from one commit. A line that does not continue the chain (written with
//! `git notes`, by hand, or forged with a made-up `seq`) is not an event git-bmad wrote: it
//! is kept out of [`Journal::events`], so no replay (status, resume, undo) believes it, and
//! listed in [`Journal::unsealed`] for `doctor`, `status` and the supervisor to name. The
//! chain is no signature: it tells git-bmad's writes from everything else, and the
//! reference-transaction hook refuses git's own writes to these refs from a session.

use std::time::Duration;

use sha2::{Digest, Sha256};

use super::error::{Error, Result};
use super::event::{Event, NewEvent};
use super::id::SessionId;
use super::trailers::{seq_trailer, trailer};
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
    /// Its id: its link in the hash chain, or for a copy merged in by `sync`, the id it had
    /// where it was first written. The same on every machine.
    pub id: String,
    /// The chain after it, in this journal.
    pub link: String,
}

/// A line in the journal's notes that git-bmad did not write.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Unsealed {
    /// The `seq` it claims.
    pub seq: u64,
    /// The kind it claims.
    pub kind: String,
    /// The step it names.
    pub step: Option<String>,
    /// The checkpoint whose note holds it.
    pub checkpoint: String,
}

impl Unsealed {
    /// `journal #7 (a step_completed event for step review, on checkpoint 1a2b3c4d5e)`.
    pub fn describe(&self) -> String {
        format!(
            "journal #{} (a {} event{}, on checkpoint {})",
            self.seq,
            self.kind,
            self.step
                .as_deref()
                .map(|s| format!(" for step {s}"))
                .unwrap_or_default(),
            &self.checkpoint[..self.checkpoint.len().min(10)]
        )
    }
}

/// A session's journal, read from its notes.
#[derive(Clone, Debug, Default)]
pub struct Journal {
    /// The events git-bmad wrote, sorted by `seq`.
    pub entries: Vec<JournalEntry>,
    /// Lines that parse as events but do not continue the hash chain: not written by
    /// git-bmad, and ignored.
    pub unsealed: Vec<Unsealed>,
    /// The chain after the last event git-bmad wrote.
    pub chain: String,
    /// Lines that are not events, with where they were found (for `doctor`).
    pub malformed: Vec<String>,
    /// The last `seq` recorded in the notes commit message, if there is one.
    pub recorded_last_seq: Option<u64>,
}

impl Journal {
    /// The events replays may take as state: this clone's own, and copies an allowed signer
    /// vouched for (see [`Event::is_trusted`]).
    pub fn events(&self) -> impl Iterator<Item = &Event> {
        self.entries
            .iter()
            .map(|e| &e.event)
            .filter(|e| e.is_trusted())
    }

    /// Copies from another clone that no allowed signer vouched for: shown, never replayed.
    pub fn untrusted(&self) -> impl Iterator<Item = &Event> {
        self.entries
            .iter()
            .map(|e| &e.event)
            .filter(|e| !e.is_trusted())
    }

    /// The policy violations of `rule` journaled so far: what is already reported, and not
    /// to be reported again.
    pub fn violations(
        &self,
        rule: impl AsRef<str>,
    ) -> impl Iterator<Item = &super::schema::PolicyViolation> {
        self.events().filter_map(move |e| match &e.body {
            super::schema::Body::PolicyViolation(v) if v.rule == rule.as_ref() => Some(v),
            _ => None,
        })
    }

    /// The highest `seq`, 0 for an empty journal; a forged line's `seq` counts too, so the
    /// next event never shares its number.
    pub fn last_seq(&self) -> u64 {
        let sealed = self.entries.last().map_or(0, |e| e.event.seq);
        self.unsealed.iter().map(|u| u.seq).fold(sealed, u64::max)
    }
}

/// Where a session's chain starts.
fn genesis(id: &SessionId) -> String {
    link("bmad-journal", id.as_str().as_bytes())
}

/// The chain after `line`, given the chain before it.
fn link(prev: &str, line: &[u8]) -> String {
    let mut hash = Sha256::new();
    hash.update(prev.as_bytes());
    hash.update(b"\n");
    hash.update(line);
    format!("{:x}", hash.finalize())
}

/// Append one event to a session's journal; returns it with its `seq` and time.
///
/// The event is attached to the session's newest checkpoint, which must exist. Callers
/// outside this layer use [`record`], which journals a hook's deferred events first.
pub fn append(repo: &Repo, id: &SessionId, event: NewEvent) -> Result<Event> {
    append_all(repo, id, vec![event], None)?
        .pop()
        .ok_or_else(|| Error::InvalidInput("no event to journal".into()))
}

/// Append events in order, in one notes commit, to the note of `head` (`None`: the
/// session's newest checkpoint, which must exist); returns them as stored.
pub(crate) fn append_all(
    repo: &Repo,
    id: &SessionId,
    events: Vec<NewEvent>,
    head: Option<ObjectId>,
) -> Result<Vec<Event>> {
    let notes = notes_ref(id);
    let started = std::time::Instant::now();
    for attempt in (0..MAX_ATTEMPTS).take_while(|_| started.elapsed() < MAX_WAIT) {
        let head = match head {
            Some(head) => head,
            None => repo
                .read_ref(&checkpoints_ref(id))?
                .ok_or_else(|| Error::NoCheckpoint {
                    session: id.to_string(),
                })?,
        };
        let prepared = prepare(repo, id, &events, head)?;
        match publish(repo, id, prepared)? {
            Some(stored) => return Ok(stored),
            None => backoff(attempt),
        }
    }
    Err(repo.contention(&notes, MAX_ATTEMPTS).into())
}

/// Events written into the journal's objects, not yet on its ref: [`publish`] moves the ref.
pub(crate) struct Prepared {
    tip: Option<ObjectId>,
    commit: Option<ObjectId>,
    reflog: String,
    stored: Vec<Event>,
}

/// Write the notes commit that appends `events` to the note of `head`, after the journal's
/// tip as it is now. Objects only: written through a holding handle, they can travel with
/// others in one pack.
pub(crate) fn prepare(
    repo: &Repo,
    id: &SessionId,
    events: &[NewEvent],
    head: ObjectId,
) -> Result<Prepared> {
    let tip = repo.notes_tip(&notes_ref(id))?;
    let recorded = (
        seq_trailer(&tip.message),
        trailer(&tip.message, "Bmad-Chain"),
    );
    let (last, mut chain) = match recorded {
        (Some(seq), Some(chain)) => (seq, chain.to_owned()),
        // Written by something else (`git notes append`, a notes merge) or before the
        // chain existed: read it the hard way.
        _ if tip.commit.is_some() => {
            let journal = read(super::Repo::of(repo), id)?;
            (journal.last_seq(), journal.chain)
        }
        _ => (0, genesis(id)),
    };
    let mut note = repo.note_in(tip.tree, head)?.unwrap_or_default();
    if !note.is_empty() && !note.ends_with(b"\n") {
        note.push(b'\n');
    }
    let now = Timestamp::now();
    let mut stored = Vec::with_capacity(events.len());
    for (n, event) in events.iter().enumerate() {
        let event = event
            .clone()
            .into_event(last + 1 + n as u64, id, now, Some(chain.clone()));
        let line = serde_json::to_string(&event)
            .map_err(|e| Error::InvalidInput(format!("event cannot be stored as JSON: {e}")))?;
        note.extend_from_slice(line.as_bytes());
        note.push(b'\n');
        chain = link(&chain, line.as_bytes());
        stored.push(event);
    }
    let Some(newest) = stored.last() else {
        return Ok(Prepared {
            tip: tip.commit,
            commit: None,
            reflog: String::new(),
            stored,
        });
    };
    let message = format!(
        "journal: {} #{}\n\nBmad-Seq: {}\nBmad-Chain: {}\n",
        newest.kind(),
        newest.seq,
        newest.seq,
        chain
    );
    let commit = repo.notes_commit_with(&tip, head, &note, &message)?;
    Ok(Prepared {
        tip: tip.commit,
        commit: Some(commit),
        reflog: format!("bmad journal: {} #{}", newest.kind(), newest.seq),
        stored,
    })
}

/// Move the journal's ref to a prepared notes commit; `None` when another event got there
/// first (prepare again).
pub(crate) fn publish(
    repo: &Repo,
    id: &SessionId,
    prepared: Prepared,
) -> Result<Option<Vec<Event>>> {
    let Some(commit) = prepared.commit else {
        return Ok(Some(prepared.stored));
    };
    Ok(
        match repo.cas_ref(&notes_ref(id), prepared.tip, commit, &prepared.reflog)? {
            CasOutcome::Updated => Some(prepared.stored),
            CasOutcome::Conflict => None,
        },
    )
}

/// Append one event to a session's journal: the one way every layer records an event.
///
/// Events a hook kept for later are journaled first, so they come before anything that
/// happened after them.
pub fn record(repo: &super::Repo, session: &super::Session, event: NewEvent) -> Result<Event> {
    let repo = &repo.git;
    flush_deferred(super::Repo::of(repo), session)?;
    append(repo, &session.id, event)
}

/// Journal the events a hook kept for later ([`super::deferred`]); returns them as stored.
pub fn flush_deferred(repo: &super::Repo, session: &super::Session) -> Result<Vec<Event>> {
    let repo = &repo.git;
    let mut flushed = Vec::new();
    for (waiting, file) in super::deferred::take(repo, &session.id) {
        let event = append(repo, &session.id, waiting)?;
        let _ = std::fs::remove_file(file);
        flushed.push(event);
    }
    // An event another process claimed is journaled by it: wait for that (briefly), so
    // whoever reads the journal next sees it, as it would have seen it had we taken it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while super::deferred::in_flight(repo, &session.id) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    Ok(flushed)
}

/// Read a session's whole journal, oldest event first.
pub fn read(repo: &super::Repo, id: &SessionId) -> Result<Journal> {
    let repo = &repo.git;
    read_at(repo, id, None)
}

/// The most a journal's notes are read, in bytes, together.
const MAX_JOURNAL_BYTES: u64 = 64 << 20;

/// Read a session's journal as the notes commit `at` has it (`None`: the notes ref's tip);
/// `sync` reads another machine's journal this way.
pub fn read_at(repo: &Repo, id: &SessionId, at: Option<ObjectId>) -> Result<Journal> {
    let tip = match at {
        None => repo.notes_tip(&notes_ref(id))?,
        Some(commit) => {
            let info = repo.commit_info(commit)?;
            crate::git::NotesTip {
                commit: Some(commit),
                tree: info.tree,
                message: info.message,
            }
        }
    };
    let mut journal = Journal {
        recorded_last_seq: seq_trailer(&tip.message),
        ..Default::default()
    };
    let mut lines = Vec::new();
    let mut read = 0u64;
    for (checkpoint, blob) in repo.notes_list(tip.tree)? {
        // What a remote sends is read within bounds: a journal is kilobytes, its notes
        // together never near this.
        let size = repo.object_size(blob).unwrap_or(u64::MAX);
        read = read.saturating_add(size);
        if read > MAX_JOURNAL_BYTES {
            journal.malformed.push(format!(
                "note on {checkpoint}: the journal's notes pass {} MiB; the rest is not read",
                MAX_JOURNAL_BYTES >> 20
            ));
            break;
        }
        let data = repo.read_blob(blob)?;
        for (n, line) in String::from_utf8_lossy(&data).lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Event>(line) {
                Ok(event) => lines.push((event, checkpoint, line.to_owned())),
                Err(e) => journal
                    .malformed
                    .push(format!("note on {checkpoint}, line {}: {e}", n + 1)),
            }
        }
    }
    seal(&mut journal, id, lines);
    Ok(journal)
}

/// Sort the lines of a journal by `seq` and keep those that continue its hash chain; the
/// others go to [`Journal::unsealed`].
fn seal(journal: &mut Journal, id: &SessionId, mut lines: Vec<(Event, ObjectId, String)>) {
    lines.sort_by_key(|(event, _, _)| event.seq);
    // A journal from before the chain has events without `prev`; one upgraded since has them
    // up to its first chained event, whose `prev` then covers exactly them. Anything else
    // without `prev` (a forged line that sorts first, say) is not git-bmad's.
    let legacy = match lines.iter().position(|(event, _, _)| event.prev.is_some()) {
        None => lines.len(),
        Some(first) => {
            let before = lines[..first]
                .iter()
                .fold(genesis(id), |chain, (_, _, line)| {
                    link(&chain, line.as_bytes())
                });
            if lines[first].0.prev.as_deref() == Some(before.as_str()) {
                first
            } else {
                0
            }
        }
    };
    let mut chain = genesis(id);
    for (n, (event, checkpoint, line)) in lines.into_iter().enumerate() {
        if n < legacy || event.prev.as_deref() == Some(chain.as_str()) {
            chain = link(&chain, line.as_bytes());
            let id = event.origin.clone().unwrap_or_else(|| chain.clone());
            journal.entries.push(JournalEntry {
                event,
                checkpoint,
                id,
                link: chain.clone(),
            });
        } else {
            journal.unsealed.push(Unsealed {
                seq: event.seq,
                kind: event.kind().to_owned(),
                step: event.step.clone(),
                checkpoint: checkpoint.to_string(),
            });
        }
    }
    journal.chain = chain;
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
    use super::*;

    const ID: &str = "20261123-230523-dbccaf";

    /// Journal lines as git-bmad writes them: `legacy` first without `prev` (a journal from
    /// before the chain), then `chained` with it; `forged` lines are added as they are.
    fn journal_of(legacy: &[u64], chained: &[u64], forged: &[&str]) -> Journal {
        let id = SessionId::parse(ID).unwrap();
        let line = |seq: u64, prev: Option<&str>| {
            let prev = prev.map_or(String::new(), |p| format!(",\"prev\":\"{p}\""));
            format!("{{\"seq\":{seq},\"ts\":\"2026-11-23T00:00:00Z\",\"session\":\"{ID}\",\"event\":\"run_interrupted\"{prev}}}")
        };
        let mut texts = Vec::new();
        let mut chain = genesis(&id);
        for &seq in legacy {
            texts.push(line(seq, None));
            chain = link(&chain, texts.last().unwrap().as_bytes());
        }
        for &seq in chained {
            texts.push(line(seq, Some(&chain)));
            chain = link(&chain, texts.last().unwrap().as_bytes());
        }
        texts.extend(forged.iter().map(|f| f.to_string()));
        let lines = texts
            .into_iter()
            .map(|t| {
                let event = serde_json::from_str::<Event>(&t).unwrap();
                (event, ObjectId::from_hex(&[b'0'; 40]).unwrap(), t)
            })
            .collect();
        let mut journal = Journal::default();
        seal(&mut journal, &id, lines);
        journal
    }

    fn seqs(journal: &Journal) -> Vec<u64> {
        journal.entries.iter().map(|e| e.event.seq).collect()
    }

    #[test]
    fn a_journal_from_before_the_chain_and_one_upgraded_since_are_whole() {
        let old = journal_of(&[1, 2, 3], &[], &[]);
        assert_eq!(seqs(&old), [1, 2, 3]);
        assert!(old.unsealed.is_empty());
        let upgraded = journal_of(&[1, 2], &[3, 4], &[]);
        assert_eq!(seqs(&upgraded), [1, 2, 3, 4]);
        assert!(upgraded.unsealed.is_empty());
        let new = journal_of(&[], &[1, 2], &[]);
        assert_eq!(seqs(&new), [1, 2]);
    }

    #[test]
    fn lines_that_break_the_chain_are_set_aside_wherever_they_sort() {
        let forged = |seq: u64| {
            format!("{{\"seq\":{seq},\"ts\":\"2026-11-23T00:00:00Z\",\"session\":\"{ID}\",\"event\":\"step_completed\",\"step\":\"review\"}}")
        };
        // After the chain, and before every real event (seq 0): the real ones all stand.
        for seq in [90, 0] {
            let text = forged(seq);
            let j = journal_of(&[], &[1, 2, 3], &[&text]);
            assert_eq!(seqs(&j), [1, 2, 3], "seq {seq}");
            assert_eq!(j.unsealed.len(), 1);
            assert_eq!(j.unsealed[0].seq, seq);
            assert_eq!(j.unsealed[0].step.as_deref(), Some("review"));
        }
        // After an upgraded journal's chain, the legacy prefix still stands.
        let text = forged(90);
        let j = journal_of(&[1, 2], &[3], &[&text]);
        assert_eq!(seqs(&j), [1, 2, 3]);
        assert_eq!(j.unsealed.len(), 1);
        // Inside its legacy prefix, the prefix no longer hashes to the first `prev`: nothing
        // is trusted (fail closed), so every line is named and the run parks.
        let text = forged(0);
        let j = journal_of(&[1, 2], &[3], &[&text]);
        assert!(seqs(&j).is_empty());
        assert_eq!(j.unsealed.len(), 4);
    }
}
