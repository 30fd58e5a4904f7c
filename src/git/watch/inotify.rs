//! The little of Linux's inotify the change feed needs: an instance, directory watches, and
//! its events read without blocking.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
use rustix::io::Errno;

/// What a directory watch reports: every change to a name in it that can change what a
/// snapshot holds (content, mode, a name created, removed or renamed), and the directory's
/// own removal. Symlinks are never followed: a link is a file to git.
const MASK: u32 = libc::IN_MODIFY
    | libc::IN_ATTRIB
    | libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR
    | libc::IN_DONT_FOLLOW
    | libc::IN_EXCL_UNLINK;

/// One event: the watch it came from, what happened, and the name in the watched directory
/// (empty for the directory itself).
#[derive(Debug)]
pub(super) struct Event {
    pub wd: i32,
    pub mask: u32,
    pub name: Vec<u8>,
}

/// An inotify instance, non-blocking.
pub(super) struct Inotify {
    fd: OwnedFd,
}

impl Inotify {
    pub fn new() -> std::io::Result<Inotify> {
        let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)?;
        Ok(Inotify { fd })
    }

    /// Watch the directory `dir`; the same directory watched twice keeps one watch.
    pub fn watch(&self, dir: &Path) -> std::io::Result<i32> {
        Ok(inotify::add_watch(
            &self.fd,
            dir,
            WatchFlags::from_bits_retain(MASK),
        )?)
    }

    pub fn unwatch(&self, wd: i32) {
        // A watch the kernel already dropped fails harmlessly.
        let _ = inotify::remove_watch(&self.fd, wd);
    }

    /// The events queued now, in order; empty when there are none.
    pub fn read(&self) -> std::io::Result<Vec<Event>> {
        let mut events = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match rustix::io::read(&self.fd, &mut buf) {
                Ok(0) => return Ok(events),
                Ok(n) => parse(&buf[..n], &mut events),
                Err(Errno::AGAIN) => return Ok(events),
                Err(Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
}

impl AsFd for Inotify {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// The events in `bytes`: each a `struct inotify_event` (wd, mask, cookie, len) followed by
/// a NUL-padded name of `len` bytes. The kernel never splits one across reads.
fn parse(bytes: &[u8], events: &mut Vec<Event>) {
    const HEADER: usize = 16;
    let word = |at: usize| -> [u8; 4] {
        let mut w = [0; 4];
        w.copy_from_slice(&bytes[at..at + 4]);
        w
    };
    let mut at = 0;
    while at + HEADER <= bytes.len() {
        let wd = i32::from_ne_bytes(word(at));
        let mask = u32::from_ne_bytes(word(at + 4));
        let len = u32::from_ne_bytes(word(at + 12)) as usize;
        let Some(raw) = bytes.get(at + HEADER..at + HEADER + len) else {
            return;
        };
        let name = raw.split(|b| *b == 0).next().unwrap_or_default().to_vec();
        events.push(Event { wd, mask, name });
        at += HEADER + len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read_in_order_with_their_names() {
        let dir = tempfile::tempdir().unwrap();
        let inotify = Inotify::new().unwrap();
        let wd = inotify.watch(dir.path()).unwrap();
        assert!(inotify.read().unwrap().is_empty(), "nothing happened yet");
        std::fs::write(dir.path().join("a-rather-long-file-name.txt"), "x").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::rename(dir.path().join("sub"), dir.path().join("moved")).unwrap();
        let events = inotify.read().unwrap();
        let names: Vec<(&[u8], bool)> = events
            .iter()
            .filter(|e| e.wd == wd)
            .map(|e| (e.name.as_slice(), e.mask & libc::IN_ISDIR != 0))
            .collect();
        assert_eq!(
            names,
            [
                (&b"a-rather-long-file-name.txt"[..], false),
                (b"a-rather-long-file-name.txt", false),
                (b"sub", true),
                (b"sub", true),
                (b"moved", true),
            ]
        );
    }
}
