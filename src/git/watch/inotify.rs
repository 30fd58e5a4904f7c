//! The little of Linux's inotify the change feed needs: an instance, directory watches, and
//! its events read without blocking.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

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
        // SAFETY: no pointers; the result is checked.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor nothing else owns.
        Ok(Inotify {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Watch the directory `dir`; the same directory watched twice keeps one watch.
    pub fn watch(&self, dir: &Path) -> std::io::Result<i32> {
        let path = CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: `path` is NUL-terminated.
        let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), path.as_ptr(), MASK) };
        if wd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(wd)
    }

    pub fn unwatch(&self, wd: i32) {
        // SAFETY: no pointers. A watch the kernel already dropped fails harmlessly.
        unsafe { libc::inotify_rm_watch(self.fd.as_raw_fd(), wd) };
    }

    /// The events queued now, in order; empty when there are none.
    pub fn read(&self) -> std::io::Result<Vec<Event>> {
        let mut events = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: `buf` is valid for `buf.len()` bytes.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EAGAIN) => return Ok(events),
                    Some(libc::EINTR) => continue,
                    _ => return Err(e),
                }
            }
            parse(&buf[..n as usize], &mut events);
            if n == 0 {
                return Ok(events);
            }
        }
    }
}

impl AsRawFd for Inotify {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
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
