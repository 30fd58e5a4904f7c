//! New objects written together as one pack, as `git index-pack` would leave it
//! (`objects/pack/pack-<hash>.pack` and its version 2 `.idx`), instead of one loose file
//! each.
//!
//! Why: a snapshot writes tens of objects, and every loose object is a new file. A new file
//! costs an inode, and on some filesystems (ext4 without a journal) finding one means
//! stepping past every inode deleted in the last minute, so right after a `git gc` pruned
//! thousands of loose objects a snapshot spent most of its time creating files. Two files
//! cost the same whatever the number of objects.
//!
//! Packs add up: [`Repo::write_held`] has small ones rolled up by a `git repack --geometric=2`
//! that runs on its own. It merges the small packs (with every object in them, reachable or
//! not, so nothing a concurrent checkpoint has yet to point at is lost) and leaves the big
//! ones, so they never reach `gc.autoPackLimit` (which makes the next `gc --auto` repack
//! everything).

use std::path::Path;

use gix::odb::pack::data::{self, entry::Header};
use gix::zlib::stream::deflate::{Compress, FlushCompress};

use super::error::{Error, Result};
use super::repo::Repo;
use super::ObjectId;

/// Fewer objects than this are written loose: a pack is two files and a longer search for
/// every object read later, which few objects do not pay for.
const PACK_MIN: usize = 8;
/// Held blobs are written out once they hold this many bytes, so memory stays bounded
/// whatever a snapshot stores.
const HOLD_MAX_BYTES: u64 = 16 << 20;
/// With this many packs, small ones are rolled up (`gc.autoPackLimit` is 50).
const ROLL_UP_AT: usize = 16;

impl Repo {
    /// This handle again, with its new objects kept in memory (reads see them) until
    /// [`Repo::write_held`] writes them. An operation that writes many objects holds them,
    /// so that they land as one pack. A `git` process sees none of them, so the handle
    /// writes them out before it starts one (`Repo::git`).
    pub fn holding_objects(&self) -> Repo {
        self.with_gix(self.gix().clone().with_object_memory(), true)
    }

    /// Whether this handle holds its new objects in memory.
    pub(super) fn is_holding(&self) -> bool {
        self.held_bytes().is_some()
    }

    /// Count `bytes` about to be held; write out what is held first when that is much.
    pub(super) fn hold_bytes(&self, bytes: usize) -> Result<()> {
        let Some(held) = self.held_bytes() else {
            return Ok(());
        };
        if held.get() + bytes as u64 > HOLD_MAX_BYTES {
            self.write_held(&[])?;
        }
        held.set(held.get() + bytes as u64);
        Ok(())
    }

    /// Write the objects this handle and `others` hold to the object database, together: one
    /// pack when there are many, loose otherwise. Nothing refers to them before this returns,
    /// so a crash before leaves only memory behind.
    pub fn write_held(&self, others: &[&Repo]) -> Result<()> {
        let mut held = std::collections::BTreeMap::new();
        for repo in std::iter::once(self).chain(others.iter().copied()) {
            if let Some(bytes) = repo.held_bytes() {
                bytes.set(0);
            }
            if let Some(mut objects) = repo.gix().objects.reset_object_memory() {
                held.extend(objects.drain());
            }
        }
        if held.len() < PACK_MIN {
            // Under the memory: straight to the object database.
            let store = &*self.gix().objects;
            for (id, (kind, bytes)) in held {
                use gix::objs::Write as _;
                store
                    .write_buf_with_known_id(kind, &bytes, id)
                    .map_err(|e| Error::gix(format!("could not write object {id}"), e))?;
            }
            return Ok(());
        }
        let objects: Vec<_> = held
            .iter()
            .map(|(id, (kind, bytes))| (*id, *kind, bytes.as_slice()))
            .collect();
        let dir = self.gix().objects.store_ref().path().join("pack");
        let (pack, index, checksum) = encode(self.gix().object_hash(), &objects)?;
        write_pack(&dir, checksum, &pack, &index)?;
        self.roll_up_packs(&dir);
        Ok(())
    }

    /// Roll small packs up into one (`git repack --geometric=2`) once there are many. git
    /// does it on its own while this command goes on: it takes tens of milliseconds, every
    /// [`ROLL_UP_AT`] checkpoints or so, and nothing needs its result (every object is in some
    /// pack before, during and after it). A repack that cannot start only leaves the packs as
    /// they are, so it is logged, not returned.
    fn roll_up_packs(&self, dir: &Path) {
        let packs = std::fs::read_dir(dir).map_or(0, |entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.path().extension().is_some_and(|x| x == "idx"))
                .count()
        });
        if packs < ROLL_UP_AT {
            return;
        }
        // Checkpoints that follow while it runs see as many packs: one roll-up at a time.
        let marker = self.common_dir().join(ROLL_UP_MARKER);
        if roll_up_under_way(&marker) {
            return;
        }
        // `-n`: no `info/refs` for dumb HTTP, which would list every ref of every session.
        let rolled = self.git().and_then(|git| {
            git.start_detached(["repack", "--geometric=2", "-d", "-l", "-n", "-q"])
        });
        match rolled {
            Ok(pid) => {
                if let Some(parent) = marker.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                if let Err(e) = crate::fs::overwrite_unsynced(&marker, pid.to_string().as_bytes()) {
                    tracing::debug!("could not note the roll-up: {e}");
                }
            }
            Err(e) => tracing::debug!("rolling up {packs} packs: {e}"),
        }
    }
}

/// Where the process id of the last roll-up started is noted, in the common git dir.
const ROLL_UP_MARKER: &str = "bmad/roll-up";

/// Whether the roll-up `marker` notes still runs: its process's command line is still a
/// `git repack` (a finished one's is gone, or empty while a zombie, or another program's once
/// the id is reused).
fn roll_up_under_way(marker: &Path) -> bool {
    let pid = crate::fs::read_private(marker)
        .ok()
        .and_then(|text| String::from_utf8(text).ok())
        .and_then(|text| text.trim().parse::<u32>().ok());
    pid.and_then(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).ok())
        .is_some_and(|cmdline| cmdline.split(|&b| b == 0).any(|arg| arg == b"repack"))
}

/// The pack and its index for `objects`, sorted by id, and the pack's checksum (its name).
fn encode(
    hash: gix::hash::Kind,
    objects: &[(ObjectId, gix::objs::Kind, &[u8])],
) -> Result<(Vec<u8>, Vec<u8>, ObjectId)> {
    let corrupt = |e: std::io::Error| Error::Corrupt(format!("could not encode a pack: {e}"));
    let count = u32::try_from(objects.len())
        .map_err(|_| Error::Corrupt("too many objects for one pack".into()))?;
    let mut pack = data::header::encode(data::Version::V2, count).to_vec();
    // One compressor for all: setting one up costs more than compressing a small object.
    let mut compress = Compress::new(gix::zlib::Compression::BEST_SPEED);
    let mut entries = Vec::with_capacity(objects.len());
    for (id, kind, bytes) in objects {
        let offset = pack.len();
        let header = match kind {
            gix::objs::Kind::Blob => Header::Blob,
            gix::objs::Kind::Tree => Header::Tree,
            gix::objs::Kind::Commit => Header::Commit,
            gix::objs::Kind::Tag => Header::Tag,
        };
        header
            .write_to(bytes.len() as u64, &mut pack)
            .map_err(corrupt)?;
        deflate_into(&mut compress, bytes, &mut pack)?;
        // Index version 2 keeps 31-bit offsets unless it adds a table of large ones: a pack
        // this writer makes stays below that (see HOLD_MAX_BYTES).
        let offset = u32::try_from(offset)
            .ok()
            .filter(|o| *o < 0x8000_0000)
            .ok_or_else(|| Error::Corrupt("a pack too large for a small index".into()))?;
        entries.push((*id, crc32fast::hash(&pack[offset as usize..]), offset));
    }
    let checksum = digest(hash, &pack)?;
    pack.extend_from_slice(checksum.as_slice());

    let mut index = Vec::with_capacity(1072 + entries.len() * (hash.len_in_bytes() + 8));
    index.extend_from_slice(b"\xfftOc");
    index.extend_from_slice(&2u32.to_be_bytes());
    let mut fanout = [0u32; 256];
    for (id, _, _) in &entries {
        fanout[id.as_slice()[0] as usize] += 1;
    }
    let mut total = 0;
    for slot in fanout {
        total += slot;
        index.extend_from_slice(&total.to_be_bytes());
    }
    for (id, _, _) in &entries {
        index.extend_from_slice(id.as_slice());
    }
    for (_, crc, _) in &entries {
        index.extend_from_slice(&crc.to_be_bytes());
    }
    for (_, _, offset) in &entries {
        index.extend_from_slice(&offset.to_be_bytes());
    }
    index.extend_from_slice(checksum.as_slice());
    let own = digest(hash, &index)?;
    index.extend_from_slice(own.as_slice());
    Ok((pack, index, checksum))
}

/// Append `bytes`, zlib-compressed as one stream, to `out`.
fn deflate_into(compress: &mut Compress, bytes: &[u8], out: &mut Vec<u8>) -> Result<()> {
    compress.reset();
    let mut input = bytes;
    let mut chunk = [0u8; 16 << 10];
    loop {
        let (read, written) = (compress.total_in(), compress.total_out());
        let status = compress
            .compress(input, &mut chunk, FlushCompress::Finish)
            .map_err(|e| Error::Corrupt(format!("could not compress an object: {e}")))?;
        out.extend_from_slice(&chunk[..(compress.total_out() - written) as usize]);
        input = &input[(compress.total_in() - read) as usize..];
        if status == gix::zlib::Status::StreamEnd {
            return Ok(());
        }
        if (compress.total_in(), compress.total_out()) == (read, written) {
            return Err(Error::Corrupt("the compressor stopped short".into()));
        }
    }
}

fn digest(hash: gix::hash::Kind, bytes: &[u8]) -> Result<ObjectId> {
    let mut hasher = gix::hash::hasher(hash);
    hasher.update(bytes);
    hasher
        .try_finalize()
        .map_err(|e| Error::Corrupt(format!("could not hash a pack: {e}")))
}

/// Put a pack in `dir` as `git index-pack` does: the data first, then the index that makes
/// readers see it, each renamed into place whole. A pack already there is left as it is.
fn write_pack(dir: &Path, checksum: ObjectId, pack: &[u8], index: &[u8]) -> Result<()> {
    // A database need not have its `pack` folder yet (git makes it when it first packs).
    std::fs::create_dir_all(dir).map_err(|e| Error::io("could not make", dir, e))?;
    let name = format!("pack-{}", checksum.to_hex());
    for (bytes, extension) in [(pack, "pack"), (index, "idx")] {
        let path = dir.join(format!("{name}.{extension}"));
        if path.exists() {
            continue;
        }
        crate::fs::place_read_only(&path, bytes)
            .map_err(|e| Error::io("could not write the pack", &path, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn a_roll_up_is_under_way_while_the_noted_process_is_a_repack() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("roll-up");
        assert!(!roll_up_under_way(&marker), "nothing noted");
        let note = |pid: u32| std::fs::write(&marker, format!("{pid}\n")).unwrap();
        note(std::process::id());
        assert!(
            !roll_up_under_way(&marker),
            "a live process that is not a repack"
        );
        let mut repack = std::process::Command::new("sleep")
            .arg0("repack")
            .arg("30")
            .spawn()
            .unwrap();
        note(repack.id());
        // `spawn` returns once the exec has begun; the new command line is set a moment later.
        let cmdline = format!("/proc/{}/cmdline", repack.id());
        while std::fs::read(&cmdline).unwrap().is_empty() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(roll_up_under_way(&marker), "a running repack");
        repack.kill().unwrap();
        // Killed and not yet reaped: a zombie, whose command line is empty.
        let zombie = format!("/proc/{}/stat", repack.id());
        while !std::fs::read_to_string(&zombie).is_ok_and(|stat| stat.contains(") Z ")) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!roll_up_under_way(&marker), "a zombie");
        repack.wait().unwrap();
        assert!(!roll_up_under_way(&marker), "a finished one");
        std::fs::write(&marker, "not a pid").unwrap();
        assert!(!roll_up_under_way(&marker), "a marker that is not a pid");
    }
}
