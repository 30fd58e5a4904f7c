//! The entries of the full cache file found by path without decoding the rest: the file
//! keeps, after its index body, the byte offset of every [`STRIDE`]th entry, so a path is a
//! binary search over those and a walk of at most [`STRIDE`] entries. A snapshot of a few
//! changed paths then decodes the entries around them, not a million.

use std::ops::Range;

/// Every this many entries the table has one's offset.
pub(super) const STRIDE: usize = 64;

/// The entries of an index body of version 2 or 3, with its offset table.
pub(super) struct Entries<'a> {
    body: &'a [u8],
    table: &'a [u8],
    count: usize,
    hash_len: usize,
}

/// One entry: its path and where its bytes lie in the body.
type Raw<'a> = (&'a [u8], Range<usize>);

/// Where the entries start, after the index header (`DIRC`, version, count).
const FIRST: usize = 12;

impl<'a> Entries<'a> {
    /// The entries of `body` found through `table`, if both are whole and of a version
    /// with no path compression.
    pub fn new(body: &'a [u8], table: &'a [u8], hash: gix::hash::Kind) -> Option<Self> {
        let (count, _) = header(body)?;
        (table.len() == count.div_ceil(STRIDE) * 8).then_some(Entries {
            body,
            table,
            count,
            hash_len: hash.len_in_bytes(),
        })
    }

    /// The offset table of `body`: the offset of every [`STRIDE`]th entry, 8 bytes each,
    /// little-endian. `None` if the body cannot be walked.
    pub fn table_of(body: &[u8], hash: gix::hash::Kind) -> Option<Vec<u8>> {
        let (count, _) = header(body)?;
        let mut table = Vec::with_capacity(count.div_ceil(STRIDE) * 8);
        let mut offset = FIRST;
        for i in 0..count {
            if i % STRIDE == 0 {
                table.extend_from_slice(&(offset as u64).to_le_bytes());
            }
            (_, offset) = entry_at(body, offset, hash.len_in_bytes())?;
        }
        Some(table)
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.count
    }

    /// The entry at `path`, if there is one.
    pub fn find(&self, path: &[u8]) -> Option<Raw<'a>> {
        self.from(path).next().filter(|(found, _)| *found == path)
    }

    /// The entries whose path starts with `prefix`, in order.
    pub fn under<'b>(&'b self, prefix: &'b [u8]) -> impl Iterator<Item = Raw<'a>> + 'b {
        self.from(prefix)
            .take_while(move |(path, _)| path.starts_with(prefix))
    }

    /// The entries from the first whose path is not below `key`, in order.
    fn from(&self, key: &[u8]) -> Walk<'_, 'a> {
        let slots = self.count.div_ceil(STRIDE);
        // The first slot whose entry is not below `key`: the entry sought is in the slot
        // before it, or is that slot's first.
        let after = partition(slots, |slot| {
            self.slot_offset(slot)
                .and_then(|offset| entry_at(self.body, offset, self.hash_len))
                .is_some_and(|((path, _), _)| path < key)
        });
        let slot = after.saturating_sub(1);
        let mut walk = Walk {
            entries: self,
            index: slot * STRIDE,
            offset: self.slot_offset(slot).unwrap_or(usize::MAX),
        };
        while walk.peek().is_some_and(|(path, _)| path < key) {
            walk.next();
        }
        walk
    }

    fn slot_offset(&self, slot: usize) -> Option<usize> {
        let bytes = self.table.get(slot * 8..slot * 8 + 8)?;
        usize::try_from(u64::from_le_bytes(bytes.try_into().ok()?)).ok()
    }
}

/// Entries in order from one, until the last.
struct Walk<'e, 'a> {
    entries: &'e Entries<'a>,
    index: usize,
    offset: usize,
}

impl<'a> Walk<'_, 'a> {
    fn peek(&self) -> Option<Raw<'a>> {
        if self.index >= self.entries.count {
            return None;
        }
        let ((path, _), end) = entry_at(self.entries.body, self.offset, self.entries.hash_len)?;
        Some((path, self.offset..end))
    }
}

impl<'a> Iterator for Walk<'_, 'a> {
    type Item = Raw<'a>;

    fn next(&mut self) -> Option<Raw<'a>> {
        let raw = self.peek()?;
        self.index += 1;
        self.offset = raw.1.end;
        Some(raw)
    }
}

/// The entry count and version of an index body, if it is one this reader walks.
fn header(body: &[u8]) -> Option<(usize, u32)> {
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(body.get(at..at + 4)?.try_into().ok()?))
    };
    let version = word(4)?;
    (body.starts_with(b"DIRC") && matches!(version, 2 | 3))
        .then_some((usize::try_from(word(8)?).ok()?, version))
}

/// The entry at `offset` of `body`: its path (and where it starts), and where the next
/// entry begins. An entry is its stat data and id (40 bytes and the hash), 16 bits of
/// flags (the path's length, or 0xfff for a longer one; whether 16 bits of extended flags
/// follow), the path, a NUL, and NULs to a multiple of 8 bytes.
fn entry_at(body: &[u8], offset: usize, hash_len: usize) -> Option<((&[u8], usize), usize)> {
    let flags_at = offset.checked_add(40 + hash_len)?;
    let flags = u16::from_be_bytes(body.get(flags_at..flags_at + 2)?.try_into().ok()?);
    let extended = flags & 0x4000 != 0;
    let start = flags_at + 2 + if extended { 2 } else { 0 };
    let rest = body.get(start..)?;
    let path_len = match usize::from(flags & 0x0fff) {
        0x0fff => rest.iter().position(|b| *b == 0)?,
        len => len,
    };
    let path = rest.get(..path_len)?;
    let end = offset + ((start - offset + path_len + 8) & !7);
    (end <= body.len()).then_some(((path, start), end))
}

/// How many of `0..len` satisfy `below`, which holds for a first part of them only.
fn partition(len: usize, below: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// An index body holding only `raws` (in path order), taken from `body`: version and
/// entries as they are, no extensions, a zero checksum (as `index.skipHash` writes).
pub(super) fn body_of(body: &[u8], raws: &[Range<usize>], hash: gix::hash::Kind) -> Vec<u8> {
    let mut out = Vec::with_capacity(FIRST + raws.iter().map(|r| r.len()).sum::<usize>() + 32);
    out.extend_from_slice(&body[..8]);
    out.extend_from_slice(&(raws.len() as u32).to_be_bytes());
    for raw in raws {
        out.extend_from_slice(&body[raw.clone()]);
    }
    out.resize(out.len() + hash.len_in_bytes(), 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use gix::index::entry::{Flags, Mode, Stat};

    fn body_with(paths: &[Vec<u8>]) -> Vec<u8> {
        let id = gix::ObjectId::from_bytes_or_panic(&[7; 20]);
        let mut state = gix::index::State::new(gix::hash::Kind::Sha1);
        for (i, path) in paths.iter().enumerate() {
            // Some marked skip-worktree: extended flags, a version 3 file.
            let flags = if i % 5 == 0 {
                Flags::SKIP_WORKTREE | Flags::EXTENDED
            } else {
                Flags::empty()
            };
            let path: &[u8] = path;
            state.dangerously_push_entry(Stat::default(), id, flags, Mode::FILE, path.into());
        }
        let mut body = Vec::new();
        state
            .write_to(
                &mut body,
                gix::index::write::Options {
                    extensions: gix::index::write::Extensions::None,
                    skip_hash: true,
                },
            )
            .expect("in memory");
        body.resize(body.len() + 20, 0);
        body
    }

    /// Every path is found, and every prefix's entries are the ones a sort would give,
    /// whatever their lengths (one past git's 12-bit length field) and flags.
    #[test]
    fn entries_are_found_by_path_as_a_sorted_list_would_find_them() {
        let mut paths: Vec<Vec<u8>> = Vec::new();
        for d in 0..40 {
            for f in 0..9 {
                paths.push(format!("d{d:02}/f{f}.txt").into_bytes());
                paths.push(format!("d{d:02}-x/{}", "n".repeat(f * 7)).into_bytes());
            }
            paths.push(format!("d{d:02}").into_bytes());
        }
        paths.push(format!("long/{}", "x".repeat(5000)).into_bytes());
        paths.push(b"z\xfc".to_vec());
        paths.sort();
        paths.dedup();
        let body = body_with(&paths);
        let hash = gix::hash::Kind::Sha1;
        let table = Entries::table_of(&body, hash).expect("walks");
        let entries = Entries::new(&body, &table, hash).expect("reads");
        for path in &paths {
            let (found, raw) = entries.find(path).expect("found");
            assert_eq!(found, path.as_slice());
            assert!(raw.start % 8 == FIRST % 8);
        }
        for missing in [&b"a"[..], b"d05/", b"d05/f9.txt", b"zz", b"d39-x/o"] {
            assert!(entries.find(missing).is_none(), "{missing:?}");
        }
        for prefix in [&b"d07/"[..], b"d07", b"long/", b"", b"q"] {
            let want: Vec<&[u8]> = paths
                .iter()
                .filter(|p| p.starts_with(prefix))
                .map(Vec::as_slice)
                .collect();
            let got: Vec<&[u8]> = entries.under(prefix).map(|(p, _)| p).collect();
            assert_eq!(got, want, "{prefix:?}");
        }
        // A body of some of the entries decodes to those entries. (Not the long path's:
        // gix reads no padding after a path of 4,095 bytes or more.)
        let picked: Vec<Range<usize>> = [&b"d03/f1.txt"[..], b"d10", b"z"]
            .iter()
            .flat_map(|p| entries.under(p).map(|(_, r)| r))
            .collect();
        let small = body_of(&body, &picked, hash);
        let (state, _) = gix::index::State::from_bytes(
            &small,
            filetime::FileTime::zero(),
            hash,
            Default::default(),
        )
        .expect("decodes");
        let decoded: Vec<_> = state
            .entries()
            .iter()
            .map(|e| e.path(&state).to_vec())
            .collect();
        let want: Vec<Vec<u8>> = paths
            .iter()
            .filter(|p| {
                p.starts_with(b"d03/f1.txt") || p.starts_with(b"d10") || p.starts_with(b"z")
            })
            .cloned()
            .collect();
        assert_eq!(decoded, want);
        // A table of another length is not trusted.
        assert!(Entries::new(&body, &table[8..], hash).is_none());
    }
}
