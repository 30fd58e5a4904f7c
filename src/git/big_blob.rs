//! Files too big to hold in memory, stored as git stores them: hashed, then written to the
//! object database a block at a time (gix's own way reads the whole file first, and a
//! handle that holds objects in memory would keep it there); and given back to disk a block
//! at a time too.

use std::io::Read;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use super::error::{Error, Result};
use super::repo::Repo;
use super::snapshot::{Vet, VET_LIMIT};
use super::ObjectId;

mod line_endings;

impl Repo {
    /// The blob of the file at `full`, `len` bytes that git stores unconverted, in bounded
    /// memory: hashed first, so content the database has is not written again, then written
    /// to the store itself, past any memory this handle holds objects in. `None` when the
    /// file changed size while it was read (shrank under the reader, or grew past `len`):
    /// the caller reads it again its own way.
    pub(super) fn stream_blob(&self, full: &Path, len: u64) -> Result<Option<ObjectId>> {
        let open = || std::fs::File::open(full).ok().map(|f| Exact::new(f, len));
        Ok(self.store_read(open, len).filter(|_| same_size(full, len)))
    }

    /// The blob of the `len` bytes each reader `open` makes gives (from their start):
    /// hashed first, so content the database has is not written again, then written to the
    /// store itself, past any memory this handle holds objects in. `None` when a reader
    /// cannot be made or gives another number of bytes.
    fn store_read<R: Read>(&self, open: impl Fn() -> Option<R>, len: u64) -> Option<ObjectId> {
        use gix::objs::Write as _;
        let id = self.hash_read(open()?, len)?;
        let repo = self.gix();
        if repo.has_object(id) {
            return Some(id);
        }
        let mut read = Counted::new(open()?);
        let written = (*repo.objects)
            .write_stream(gix::object::Kind::Blob, len, &mut read)
            .ok()?;
        (read.drained().count == len).then_some(written)
    }

    /// The id of the blob of the `len` bytes `read` gives, hashed a block at a time; `None`
    /// when it gives another number of bytes.
    fn hash_read(&self, read: impl Read, len: u64) -> Option<ObjectId> {
        let mut read = Counted::new(read);
        let id = gix::objs::compute_stream_hash(
            self.gix().object_hash(),
            gix::object::Kind::Blob,
            &mut read,
            len,
            &mut gix::progress::Discard,
            &AtomicBool::new(false),
        )
        .ok()?;
        (read.drained().count == len).then_some(id)
    }

    /// The blob of the file at `full` (`path` in the repository, `len` bytes) when git's way
    /// in converts its line endings and nothing else, converted a block at a time as git
    /// converts them: `text=auto` keeps a file whose bytes look binary, or whose blob in
    /// `index` has CRLF already, as it is. `None` when git converts more or nothing, or the
    /// file changed as it was read: the caller stores it its own way.
    pub(super) fn stream_blob_with_line_endings(
        &self,
        pipeline: &mut gix::filter::Pipeline<'_>,
        full: &Path,
        path: &gix::bstr::BStr,
        len: u64,
        index: &gix::index::State,
    ) -> Result<Option<ObjectId>> {
        let Some(way) = self.line_endings_in(pipeline, path)? else {
            return Ok(None);
        };
        let open = || std::fs::File::open(full).map(|f| Exact::new(f, len));
        let Ok(stats) = open().and_then(line_endings::stats_of) else {
            return Ok(None);
        };
        let auto = way == LineEndings::Auto;
        if stats.crlf == 0
            || (auto && stats.is_binary())
            || (auto && self.crlf_in_index(path, index)?)
        {
            return self.stream_blob(full, len);
        }
        let converted = || open().ok().map(line_endings::CrlfToLf::new);
        Ok(self
            .store_read(converted, len - stats.crlf as u64)
            .filter(|_| same_size(full, len)))
    }

    /// How git's way in converts the line endings of the file at `path`, when that is all
    /// it converts; `None` when it converts more, nothing, or cannot be told this way (then
    /// the pipeline converts the file itself). Asked of the pipeline with two probes and no
    /// index: CRLF text converted says it converts; CRLF after a NUL converted says it does
    /// whatever the content (`text`), kept says only what looks like text (`text=auto`).
    fn line_endings_in(
        &self,
        pipeline: &mut gix::filter::Pipeline<'_>,
        path: &gix::bstr::BStr,
    ) -> Result<Option<LineEndings>> {
        use gix::filter::plumbing::pipeline::{convert::ToGitOutcome, CrlfRoundTripCheck};
        use std::os::unix::ffi::OsStrExt;
        let repo = self.gix();
        // `core.safecrlf=true` refuses what the content decides: the pipeline's to say.
        let refuses = gix::filter::Pipeline::options(repo).map_or(true, |o| {
            matches!(o.crlf_roundtrip_check, CrlfRoundTripCheck::Fail)
        });
        if refuses || self.converts_beyond_line_endings(path)? {
            return Ok(None);
        }
        let no_index = gix::index::State::new(repo.object_hash());
        let rela = std::ffi::OsStr::from_bytes(path);
        // Converted: its CR gone (a probe read into the pipeline's buffer may come back as
        // it went in).
        let mut converts = |probe: &[u8]| -> Option<bool> {
            match pipeline.convert_to_git(probe, rela.as_ref(), &no_index) {
                Ok(ToGitOutcome::Unchanged(_)) => Some(false),
                Ok(ToGitOutcome::Buffer(out)) => Some(out != probe),
                _ => None,
            }
        };
        Ok(match (converts(b"a\r\n"), converts(b"\0\r\n")) {
            (Some(true), Some(true)) => Some(LineEndings::Always),
            (Some(true), Some(false)) => Some(LineEndings::Auto),
            _ => None,
        })
    }

    /// Whether `path`'s blob in `index` has CRLF line endings in what looks like text (what
    /// keeps `text=auto` from converting a file it would), read a block at a time when big.
    fn crlf_in_index(&self, path: &gix::bstr::BStr, index: &gix::index::State) -> Result<bool> {
        let Some(entry) = index.entry_by_path(path) else {
            return Ok(false);
        };
        let Ok(header) = self.gix().find_header(entry.id) else {
            return Ok(false);
        };
        if header.kind() != gix::object::Kind::Blob {
            return Ok(false);
        }
        let stats = if header.size() <= VET_LIMIT {
            gix::filter::plumbing::eol::Stats::from_bytes(&self.read_blob(entry.id)?)
        } else {
            use std::io::Seek;
            let io = |e| Error::io("could not spool a blob into", self.git_dir(), e);
            let mut spool = tempfile::tempfile_in(self.git_dir()).map_err(io)?;
            self.git()?
                .cat_blob_into(entry.id, spool.try_clone().map_err(io)?)?;
            spool.rewind().map_err(io)?;
            line_endings::stats_of(spool).map_err(io)?
        };
        Ok(!stats.is_binary() && stats.crlf > 0)
    }

    /// The blob id of the file at `full`, `len` bytes as it is stored, hashed a block at a
    /// time; `None` when it is not `len` bytes long by the end (it changed as it was read).
    pub(super) fn hash_file(&self, full: &Path, len: u64) -> Result<Option<ObjectId>> {
        let file = std::fs::File::open(full).map_err(|e| Error::io("could not read", full, e))?;
        let mut exact = Exact::new(file, len);
        let id = self.hash_read(&mut exact, len);
        Ok(id.filter(|_| !exact.short && same_size(full, len)))
    }

    /// The bytes of the worktree file at `path` exactly as they are on disk (no filter, no
    /// line-ending change) as a blob, shown to `vet` first as a checkpoint shows a file: a
    /// file past [`VET_LIMIT`] by its head, then streamed to the store, never held whole.
    /// `None` when `vet` refuses it.
    pub fn store_file_as_is(&self, path: &str, vet: Vet<'_>) -> Result<Option<ObjectId>> {
        let full = self.workdir().join(path);
        let io = |e| Error::io("could not read", &full, e);
        let len = std::fs::metadata(&full).map_err(io)?.len();
        if len > VET_LIMIT {
            let mut head = Vec::with_capacity(VET_LIMIT as usize);
            std::fs::File::open(&full)
                .and_then(|f| f.take(VET_LIMIT).read_to_end(&mut head))
                .map_err(io)?;
            if !vet(path, &head) {
                return Ok(None);
            }
            if let Some(id) = self.stream_blob(&full, len)? {
                return Ok(Some(id));
            }
            // It changed as it was read: read as it is now.
        }
        let bytes = std::fs::read(&full).map_err(io)?;
        if !vet(path, &bytes[..bytes.len().min(VET_LIMIT as usize)]) {
            return Ok(None);
        }
        Ok(Some(self.write_blob(&bytes)?))
    }

    /// What `read` gives as a blob (a clean filter's output, whose size is known only at
    /// its end): spooled to a file with no name, which goes with this process however it
    /// ends, then stored from there. An error of `read` is the filter's: `failed` says so.
    pub(super) fn store_spooled(
        &self,
        mut read: impl Read,
        failed: impl FnOnce(std::io::Error) -> Error,
    ) -> Result<Option<ObjectId>> {
        use std::io::Seek;
        let io = |e| Error::io("could not spool into", self.git_dir(), e);
        let mut spool = tempfile::tempfile_in(self.git_dir()).map_err(io)?;
        let len = std::io::copy(&mut read, &mut spool).map_err(failed)?;
        let open = || {
            let mut file = spool.try_clone().ok()?;
            file.rewind().ok()?;
            Some(file)
        };
        Ok(self.store_read(open, len))
    }

    /// `bytes` as a blob, written to the store itself however much this handle holds in
    /// memory: for a file's converted form too big to hold twice.
    pub(super) fn store_big_bytes(&self, bytes: &[u8]) -> Result<ObjectId> {
        use gix::objs::Write as _;
        let repo = self.gix();
        (*repo.objects)
            .write_stream(gix::object::Kind::Blob, bytes.len() as u64, &mut &bytes[..])
            .map_err(|e| Error::gix("could not write a blob", e))
    }

    /// The size of blob `id`, read from its header.
    fn blob_size(&self, id: ObjectId) -> Result<u64> {
        self.gix()
            .find_header(id)
            .map(|header| header.size())
            .map_err(|e| Error::gix(format!("could not read blob {id}"), e))
    }

    /// The first `limit` bytes of blob `id`: one past [`VET_LIMIT`] read by git a block at a
    /// time, never held whole.
    pub(super) fn blob_head(&self, id: ObjectId, limit: u64) -> Result<Vec<u8>> {
        if self.blob_size(id)? <= VET_LIMIT {
            let mut bytes = self.read_blob(id)?;
            bytes.truncate(limit as usize);
            return Ok(bytes);
        }
        self.git()?.cat_blob_head(id, limit)
    }

    /// Write blob `id` over the file at `path` (atomically, keeping its mode): one past
    /// [`VET_LIMIT`] streamed out by git, never held whole.
    pub fn write_blob_over(&self, id: ObjectId, path: &Path) -> Result<()> {
        let io = |e| Error::io("could not write", path, e);
        if self.blob_size(id)? <= VET_LIMIT {
            let bytes = self.read_blob(id)?;
            return crate::fs::replace_keeping_mode(path, &bytes).map_err(io);
        }
        crate::fs::replace_keeping_mode_with(path, |file| {
            self.git()
                .and_then(|git| git.cat_blob_into(id, file))
                .map_err(std::io::Error::other)
        })
        .map_err(io)
    }
}

/// Whether the file at `full` is `len` bytes long: one that grew while it was read is not
/// what was read.
fn same_size(full: &Path, len: u64) -> bool {
    std::fs::metadata(full).is_ok_and(|m| m.len() == len)
}

/// How git converts a file's line endings on the way in, where it converts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LineEndings {
    /// `text=auto` (or `core.autocrlf` with no attribute): only a file that looks like text,
    /// and whose blob in the index has no CRLF.
    Auto,
    /// `text`, `eol`: whatever the file holds.
    Always,
}

/// A reader that counts what it gives.
struct Counted<R> {
    inner: R,
    count: u64,
}

impl<R: Read> Counted<R> {
    fn new(inner: R) -> Self {
        Counted { inner, count: 0 }
    }

    /// This, read to its end (what a consumer of a given length left unread is counted).
    fn drained(mut self) -> Self {
        let _ = std::io::copy(&mut self, &mut std::io::sink());
        self
    }
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
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
