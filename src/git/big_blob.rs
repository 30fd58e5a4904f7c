//! Files too big to hold in memory, stored as git stores them: hashed, then written to the
//! object database a block at a time (gix's own way reads the whole file first, and a
//! handle that holds objects in memory would keep it there).

use std::io::Read;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use super::error::{Error, Result};
use super::repo::Repo;
use super::ObjectId;

impl Repo {
    /// The blob of the file at `full`, `len` bytes that git stores unconverted, in bounded
    /// memory: hashed first, so content the database has is not written again, then written
    /// to the store itself, past any memory this handle holds objects in. `None` when the
    /// file changed size while it was read (shrank under the reader, or grew past `len`):
    /// the caller reads it again its own way.
    pub(super) fn stream_blob(&self, full: &Path, len: u64) -> Result<Option<ObjectId>> {
        use gix::objs::Write as _;
        let Some(id) = self.hash_file(full, len)? else {
            return Ok(None);
        };
        let repo = self.gix();
        if repo.has_object(id) {
            return Ok(Some(id));
        }
        let file = std::fs::File::open(full).map_err(|e| Error::io("could not read", full, e))?;
        let mut exact = Exact::new(file, len);
        let written = (*repo.objects).write_stream(gix::object::Kind::Blob, len, &mut exact);
        match written {
            Ok(written) if !exact.short && same_size(full, len) => Ok(Some(written)),
            _ => Ok(None),
        }
    }

    /// The blob id of the file at `full`, `len` bytes as it is stored, hashed a block at a
    /// time; `None` when it is not `len` bytes long by the end (it changed as it was read).
    pub(super) fn hash_file(&self, full: &Path, len: u64) -> Result<Option<ObjectId>> {
        let file = std::fs::File::open(full).map_err(|e| Error::io("could not read", full, e))?;
        let mut exact = Exact::new(file, len);
        let hashed = gix::objs::compute_stream_hash(
            self.gix().object_hash(),
            gix::object::Kind::Blob,
            &mut exact,
            len,
            &mut gix::progress::Discard,
            &AtomicBool::new(false),
        );
        Ok(hashed.ok().filter(|_| !exact.short && same_size(full, len)))
    }
}

/// Whether the file at `full` is `len` bytes long: one that grew while it was read is not
/// what was read.
fn same_size(full: &Path, len: u64) -> bool {
    std::fs::metadata(full).is_ok_and(|m| m.len() == len)
}

/// A reader of exactly `left` bytes: one that ends sooner fails (and says so in `short`), so
/// no object is written whose header names a size its content does not have.
struct Exact {
    file: std::io::Take<std::fs::File>,
    left: u64,
    short: bool,
}

impl Exact {
    fn new(file: std::fs::File, len: u64) -> Exact {
        Exact {
            file: file.take(len),
            left: len,
            short: false,
        }
    }
}

impl Read for Exact {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read(buf)?;
        if n == 0 && self.left > 0 && !buf.is_empty() {
            self.short = true;
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the file shrank while it was read",
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_of_exact_size_fails_on_a_file_that_shrank_and_stops_at_its_length() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"0123456789").unwrap();
        let mut out = Vec::new();
        let mut exact = Exact::new(std::fs::File::open(&path).unwrap(), 4);
        exact.read_to_end(&mut out).unwrap();
        assert_eq!(out, b"0123");
        let mut exact = Exact::new(std::fs::File::open(&path).unwrap(), 20);
        assert!(exact.read_to_end(&mut Vec::new()).is_err());
        assert!(exact.short);
    }
}
