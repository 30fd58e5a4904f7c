//! Line endings converted as git converts them on the way in (each CR before an LF dropped),
//! a block at a time, for files too big to hold: the whole file's statistics first (what
//! decides whether `text=auto` converts, and the converted size an object's header needs),
//! then the file read again through the conversion.

use std::io::Read;

use gix::filter::plumbing::eol::Stats;

/// The block read at a time.
const BLOCK: usize = 64 << 10;

/// The statistics git gathers over a whole file's bytes, gathered a block at a time: a CR
/// at a block's end is counted with the block after it, and a DOS end-of-file marker counts
/// as printable only at the file's end, as for the whole file at once.
pub(super) fn stats_of(mut reader: impl Read) -> std::io::Result<Stats> {
    let mut total = Stats::default();
    let mut block = vec![0u8; BLOCK + 1];
    let mut carried = 0;
    // The last block ended with the marker, which counts as printable if it was the file's
    // last byte: taken back once a byte follows it.
    let mut marker_last = false;
    loop {
        let n = read_some(&mut reader, &mut block[carried..])?;
        let filled = carried + n;
        if filled == 0 {
            return Ok(total);
        }
        if std::mem::take(&mut marker_last) {
            total.non_printable += 1;
        }
        let at_end = n == 0;
        // A CR last in the block may begin a CRLF: counted with what follows.
        let counted = match block[..filled].last() {
            Some(b'\r') if !at_end => filled - 1,
            _ => filled,
        };
        let part = Stats::from_bytes(&block[..counted]);
        marker_last = block[..counted].last() == Some(&0x1a);
        total.null += part.null;
        total.lone_cr += part.lone_cr;
        total.lone_lf += part.lone_lf;
        total.crlf += part.crlf;
        total.printable += part.printable;
        total.non_printable += part.non_printable;
        block.copy_within(counted..filled, 0);
        carried = filled - counted;
        if at_end && carried == 0 {
            return Ok(total);
        }
    }
}

/// A read that retries on interruption; 0 only at the end.
fn read_some(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match reader.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// `inner`'s bytes with each CR that stands before an LF dropped (a lone CR kept), as git
/// stores a file whose line endings it converts.
pub(super) struct CrlfToLf<R> {
    inner: R,
    block: Vec<u8>,
    start: usize,
    end: usize,
    /// A CR that ended the last block, waiting for the block that says what it was.
    carried_cr: bool,
    at_end: bool,
}

impl<R: Read> CrlfToLf<R> {
    pub(super) fn new(inner: R) -> Self {
        CrlfToLf {
            inner,
            block: vec![0u8; BLOCK + 1],
            start: 0,
            end: 0,
            carried_cr: false,
            at_end: false,
        }
    }

    fn refill(&mut self) -> std::io::Result<()> {
        let from = usize::from(self.carried_cr);
        if self.carried_cr {
            self.block[0] = b'\r';
            self.carried_cr = false;
        }
        let n = read_some(&mut self.inner, &mut self.block[from..])?;
        self.at_end = n == 0;
        self.start = 0;
        self.end = from + n;
        Ok(())
    }
}

impl<R: Read> Read for CrlfToLf<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let mut written = 0;
        while written < out.len() {
            if self.start == self.end {
                if self.at_end || written > 0 {
                    break;
                }
                self.refill()?;
                if self.start == self.end {
                    break;
                }
            }
            let b = self.block[self.start];
            if b == b'\r' {
                match self
                    .block
                    .get(self.start + 1)
                    .filter(|_| self.start + 1 < self.end)
                {
                    Some(b'\n') => {
                        self.start += 1;
                        continue;
                    }
                    None if !self.at_end => {
                        self.carried_cr = true;
                        self.start += 1;
                        continue;
                    }
                    _ => {}
                }
            }
            out[written] = b;
            written += 1;
            self.start += 1;
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most `step` bytes at a time: block ends anywhere.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.bytes.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    fn samples() -> Vec<Vec<u8>> {
        let mut long = Vec::new();
        for i in 0..(3 * BLOCK / 7) {
            long.extend_from_slice(match i % 5 {
                0 => b"line\r\n".as_slice(),
                1 => b"lf only\n",
                2 => b"lone\rcr",
                3 => b"\r\r\n",
                _ => b"\x1a\t\x00",
            });
        }
        let mut cr_at_block_end = vec![b'a'; BLOCK - 1];
        cr_at_block_end.extend_from_slice(b"\r\nb\r");
        vec![
            Vec::new(),
            b"\r".to_vec(),
            b"\n".to_vec(),
            b"\r\n".to_vec(),
            b"a\r\r\nb\r".to_vec(),
            b"text\x1a".to_vec(),
            b"\x1a\x1a".to_vec(),
            cr_at_block_end,
            long,
        ]
    }

    #[test]
    fn stats_gathered_a_block_at_a_time_are_the_whole_files() {
        for sample in samples() {
            for step in [1, 2, 3, 7, BLOCK, usize::MAX] {
                let trickle = Trickle {
                    bytes: &sample,
                    step,
                };
                assert_eq!(
                    stats_of(trickle).unwrap(),
                    Stats::from_bytes(&sample),
                    "{} bytes, {step} at a time",
                    sample.len()
                );
            }
        }
    }

    #[test]
    fn the_conversion_a_block_at_a_time_drops_exactly_the_crs_before_an_lf() {
        for sample in samples() {
            let mut expected = Vec::new();
            let mut bytes = sample.iter().peekable();
            while let Some(b) = bytes.next() {
                if !(*b == b'\r' && bytes.peek() == Some(&&b'\n')) {
                    expected.push(*b);
                }
            }
            for step in [1, 2, 3, 7, BLOCK, usize::MAX] {
                for out_size in [1, 5, BLOCK * 2] {
                    let mut reader = CrlfToLf::new(Trickle {
                        bytes: &sample,
                        step,
                    });
                    let mut converted = Vec::new();
                    let mut out = vec![0u8; out_size];
                    loop {
                        let n = reader.read(&mut out).unwrap();
                        if n == 0 {
                            break;
                        }
                        converted.extend_from_slice(&out[..n]);
                    }
                    assert_eq!(
                        converted.len(),
                        sample.len() - Stats::from_bytes(&sample).crlf,
                        "{step}/{out_size}"
                    );
                    assert!(converted == expected, "{step}/{out_size}");
                }
            }
        }
    }
}
