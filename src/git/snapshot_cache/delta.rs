//! The delta file: what changed since the full snapshot cache file, written in place of
//! rewriting that file (see [`super`] for the format and when it is used).

use std::collections::BTreeSet;
use std::time::Duration;

use gix::bstr::{BString, ByteSlice};
use gix::index::entry::{Mode, Stat};

use super::super::ObjectId;
use super::index_seen::IndexSeen;
use super::{parse_time, Cached, DELTA_MAGIC};

/// The changes a delta file records over a full cache file.
pub(super) struct Delta {
    /// The snapshot tree the delta brings the full file's entries to.
    pub tree: ObjectId,
    /// When the stat data was known good, as the full file's header has it.
    pub verified: Duration,
    /// The worktree's index as that snapshot saw it.
    pub seen: Option<IndexSeen>,
    /// The change feed's token saved with that snapshot.
    pub feed: Option<String>,
    /// Each changed path with its entry, or `None` when the snapshot no longer has it.
    pub records: Vec<(BString, Option<Cached>)>,
}

impl Delta {
    /// The delta in `bytes`, if it builds on the full file whose header is `base` and is
    /// whole: as long, and with the checksum, its header says.
    pub fn parse(bytes: &[u8], base: &str) -> Option<Delta> {
        let (header, rest) = bytes.split_at(bytes.iter().position(|b| *b == b'\n')?);
        let rest = &rest[1..];
        let mut fields = std::str::from_utf8(header)
            .ok()?
            .strip_prefix(DELTA_MAGIC)?
            .split_whitespace();
        let tree = ObjectId::from_hex(fields.next()?.as_bytes()).ok()?;
        let verified = parse_time(fields.next()?)?;
        let length: usize = fields.next()?.parse().ok()?;
        let crc: u32 = fields.next()?.parse().ok()?;
        let seen = IndexSeen::parse(fields.next()?);
        let feed = fields.next().map(str::to_owned);
        if rest.len() != length || crc32fast::hash(rest) != crc {
            return None;
        }
        let mut lines = rest.splitn(2, |b| *b == b'\n');
        if lines.next()? != base.as_bytes() {
            return None;
        }
        let body = lines.next()?;
        let mut records = Vec::new();
        // Every record ends in NUL: a torn file leaves a last piece that is not empty.
        let mut pieces = body.split(|b| *b == 0);
        let last = pieces.next_back()?;
        if !last.is_empty() {
            return None;
        }
        for record in pieces {
            // A path is bytes (a name need not be UTF-8); every other field is text.
            if let Some(path) = record.strip_prefix(b"- ") {
                records.push((path.into(), None));
                continue;
            }
            let mut f = record.splitn(10, |b| *b == b' ');
            let mut field = || std::str::from_utf8(f.next()?).ok();
            let mode = Mode::from_bits(u32::from_str_radix(field()?, 8).ok()?)?;
            let id = ObjectId::from_hex(field()?.as_bytes()).ok()?;
            let mtime = parse_stat_time(field()?)?;
            let ctime = parse_stat_time(field()?)?;
            let mut number = || field()?.parse::<u32>().ok();
            let (dev, ino, uid, gid, size) =
                (number()?, number()?, number()?, number()?, number()?);
            let path = BString::from(f.next()?);
            let stat = Stat {
                mtime,
                ctime,
                dev,
                ino,
                uid,
                gid,
                size,
            };
            records.push((path, Some((id, mode, stat))));
        }
        Some(Delta {
            tree,
            verified,
            seen,
            feed,
            records,
        })
    }

    /// A delta of `changed` paths as `state` now has them, over the full file whose header
    /// is `base`; its header is `head` (magic, tree, time), the length and checksum, `tail`
    /// (the index seen and the feed's token, each after a space).
    pub fn encode(
        state: &gix::index::State,
        head: &str,
        tail: &str,
        base: &str,
        changed: &BTreeSet<BString>,
    ) -> Vec<u8> {
        let mut out = format!("{base}\n").into_bytes();
        for path in changed {
            match state.entry_by_path(path.as_bstr()) {
                Some(e) => {
                    let s = &e.stat;
                    out.extend_from_slice(
                        format!(
                            "{:o} {} {}.{:09} {}.{:09} {} {} {} {} {} ",
                            e.mode.bits(),
                            e.id,
                            s.mtime.secs,
                            s.mtime.nsecs,
                            s.ctime.secs,
                            s.ctime.nsecs,
                            s.dev,
                            s.ino,
                            s.uid,
                            s.gid,
                            s.size
                        )
                        .as_bytes(),
                    );
                }
                None => out.extend_from_slice(b"- "),
            }
            out.extend_from_slice(path);
            out.push(0);
        }
        let header = format!("{head} {} {}{tail}\n", out.len(), crc32fast::hash(&out));
        let mut bytes = header.into_bytes();
        bytes.extend_from_slice(&out);
        bytes
    }
}

/// A record's file time, `<seconds>.<nanoseconds>`.
fn parse_stat_time(text: &str) -> Option<gix::index::entry::stat::Time> {
    let (secs, nsecs) = text.split_once('.')?;
    Some(gix::index::entry::stat::Time {
        secs: secs.parse().ok()?,
        nsecs: nsecs.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gix::bstr::BStr;
    use gix::index::entry::Flags;

    /// A delta keeps a path's bytes as they are (a name need not be UTF-8), and one that is
    /// not whole (torn anywhere, or new bytes over a longer old delta) is not read at all.
    #[test]
    fn a_delta_keeps_paths_as_bytes_and_one_not_whole_is_refused() {
        let id = ObjectId::from_hex(b"0123456789abcdef0123456789abcdef01234567").unwrap();
        let mut state = gix::index::State::new(gix::hash::Kind::Sha1);
        let stat = Stat {
            size: 7,
            ino: 42,
            ..Stat::default()
        };
        let latin1 = BStr::new(b"d\xfcr/caf\xe9 two.txt");
        state.dangerously_push_entry(stat, id, Flags::empty(), Mode::FILE, latin1);
        let changed: BTreeSet<BString> = [latin1.to_owned(), BString::from("gone.txt")].into();
        let head = format!("{DELTA_MAGIC} {id} 1.000000000");
        let bytes = Delta::encode(&state, &head, " - feed-token", "base", &changed);
        let delta = Delta::parse(&bytes, "base").expect("a whole delta reads");
        assert_eq!(
            (delta.tree, delta.feed.as_deref()),
            (id, Some("feed-token"))
        );
        assert_eq!(delta.records.len(), 2);
        let (path, entry) = &delta.records[0];
        assert_eq!(path.as_bstr(), latin1);
        assert_eq!(
            entry.map(|(i, m, s)| (i, m, s.size, s.ino)),
            Some((id, Mode::FILE, 7, 42))
        );
        assert_eq!(delta.records[1], (BString::from("gone.txt"), None));
        assert!(Delta::parse(&bytes, "another base").is_none());
        for end in 0..bytes.len() {
            assert!(
                Delta::parse(&bytes[..end], "base").is_none(),
                "torn after {end} bytes"
            );
        }
        // Written over a longer delta, and the writer killed before it cut the file short.
        let shorter: BTreeSet<BString> = [BString::from("gone.txt")].into();
        let mut overwritten = Delta::encode(&state, &head, " -", "base", &shorter);
        let new_len = overwritten.len();
        overwritten.extend_from_slice(&bytes[new_len..]);
        assert!(Delta::parse(&overwritten, "base").is_none());
        assert!(Delta::parse(&overwritten[..new_len], "base").is_some());
        // Two writers' bytes mixed: same length, other content.
        let mut mixed = bytes.clone();
        let at = mixed.len() - 3;
        mixed[at] ^= 1;
        assert!(Delta::parse(&mixed, "base").is_none());
    }
}
