//! What git's checkout writes for a file (the blob through its smudge filter, `ident`, `eol`
//! and `working-tree-encoding`), compared with what is on disk. Where the two differ, the
//! bytes on disk cannot be had back from the blob (a CRLF file under `text=auto`, an
//! expanded `$Id$`, a lossy clean filter): whoever must give them back keeps them as they are.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use super::error::Result;
use super::repo::Repo;
use super::ObjectId;

/// Paths handed to one git command, well under any command-line limit.
const PATHS_PER_CALL: usize = 500;

/// What git's checkout does to a file, by its attributes and config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Checkout {
    /// Nothing, either way: the file is what was stored when a tree was made from it.
    Plain,
    /// It writes the blob as stored (line endings are converted on the way in only).
    AsStored,
    /// It converts the blob (a smudge filter, `ident`, an encoding, CRLF out).
    Converted,
}

impl Repo {
    /// Of `paths`, those whose file on disk is not byte for byte what git's checkout of
    /// `tree` writes there; a path that is no plain file on disk, or that git neither
    /// converts in nor out, is left out. Where git converts, it writes the forms itself, into
    /// a scratch folder; a path it writes none for (one `tree` lacks, a required filter that
    /// fails) differs: keeping bytes that were not needed costs a blob, losing them costs
    /// the user's work.
    pub fn unlike_checkout(&self, tree: ObjectId, paths: &[String]) -> Result<Vec<String>> {
        let on_disk: Vec<&String> = paths
            .iter()
            .filter(|p| !self.beyond_symlink(p.as_str()))
            .filter(|p| {
                std::fs::symlink_metadata(self.workdir().join(p)).is_ok_and(|m| m.is_file())
            })
            .collect();
        let kinds = self.checkout_kinds(&on_disk)?;
        let mut unlike = Vec::new();
        let mut converted = Vec::new();
        for path in on_disk {
            match kinds.get(path.as_str()) {
                Some(Checkout::AsStored) => {
                    let stored = self.entry_in(tree, path.as_str())?.map(|(_, id)| id);
                    let full = self.workdir().join(path);
                    let on_disk = match std::fs::metadata(&full) {
                        Ok(meta) => self.hash_file(&full, meta.len())?,
                        Err(_) => None,
                    };
                    if stored.is_none() || on_disk != stored {
                        unlike.push(path.clone());
                    }
                }
                Some(Checkout::Converted) => converted.push(path),
                _ => {}
            }
        }
        if !converted.is_empty() {
            unlike.extend(self.unlike_written_forms(tree, &converted)?);
        }
        Ok(unlike)
    }

    /// Of `paths`, those whose file differs from the form git's checkout of `tree` writes,
    /// written by git into a scratch folder.
    fn unlike_written_forms(&self, tree: ObjectId, paths: &[&String]) -> Result<Vec<String>> {
        let scratch = self.scratch_dir("checkout")?;
        let index = scratch.path().join("index");
        let forms = scratch.path().join("forms");
        let git = self.git()?;
        git.run_on_index(Some(&index), ["read-tree", &tree.to_string()])?;
        let prefix = format!("--prefix={}/", forms.display());
        let mut unlike = Vec::new();
        for chunk in paths.chunks(PATHS_PER_CALL) {
            let mut args = vec!["checkout-index", "-f", "-q", prefix.as_str(), "--"];
            args.extend(chunk.iter().map(|p| p.as_str()));
            // It writes what it can and fails for the rest, which then differ.
            if let Err(e) = git.run_on_index(Some(&index), args) {
                tracing::debug!(%e, "checkout-index wrote some forms");
            }
            unlike.extend(
                chunk
                    .iter()
                    .filter(|p| !same_bytes(&self.workdir().join(p), &forms.join(p)))
                    .map(|p| (*p).clone()),
            );
        }
        Ok(unlike)
    }

    /// What git's checkout does to each of `paths`, from their attributes (`check-attr`)
    /// and `core.autocrlf` / `core.eol`.
    fn checkout_kinds(&self, paths: &[&String]) -> Result<HashMap<String, Checkout>> {
        let config = |key: &str| self.config_string(key).map(|v| v.to_ascii_lowercase());
        let autocrlf = config("core.autocrlf");
        let crlf_out = autocrlf.as_deref().is_some_and(is_true)
            || config("core.eol").as_deref() == Some("crlf");
        let converts_in = autocrlf
            .as_deref()
            .is_some_and(|v| v == "input" || is_true(v));
        let git = self.git()?;
        let mut kinds = HashMap::new();
        for chunk in paths.chunks(PATHS_PER_CALL) {
            let mut args = vec!["check-attr", "-z"];
            args.extend(ATTRIBUTES);
            args.push("--");
            args.extend(chunk.iter().map(|p| p.as_str()));
            let out = git.run(args)?;
            // NUL-separated triples: path, attribute, value.
            let mut values: HashMap<&[u8], Vec<Attribute<'_>>> = HashMap::new();
            let fields: Vec<&[u8]> = out.split(|b| *b == 0).collect();
            for triple in fields.chunks_exact(3) {
                values
                    .entry(triple[0])
                    .or_default()
                    .push((triple[1], triple[2]));
            }
            for path in chunk {
                let attrs = values
                    .get(path.as_bytes())
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                let kind = checkout_of(attrs, converts_in, crlf_out);
                kinds.insert((*path).clone(), kind);
            }
        }
        Ok(kinds)
    }

    /// Whether git converts more than the line endings of `path`, either way (a filter,
    /// `ident`, a working-tree encoding), by its attributes as `git check-attr` reads them.
    pub(super) fn converts_beyond_line_endings(&self, path: &[u8]) -> Result<bool> {
        use std::os::unix::ffi::OsStrExt;
        let out = self.git()?.run([
            std::ffi::OsStr::new("check-attr"),
            "-z".as_ref(),
            "filter".as_ref(),
            "ident".as_ref(),
            "working-tree-encoding".as_ref(),
            "--".as_ref(),
            std::ffi::OsStr::from_bytes(path),
        ])?;
        let fields: Vec<&[u8]> = out.split(|b| *b == 0).collect();
        let attrs: Vec<Attribute<'_>> = fields.chunks_exact(3).map(|t| (t[1], t[2])).collect();
        Ok(beyond_line_endings(&attrs))
    }
}

/// An attribute's name and value, as `check-attr` prints them.
type Attribute<'a> = (&'a [u8], &'a [u8]);

/// The attributes by which git converts a file between disk and blob.
const ATTRIBUTES: [&str; 6] = [
    "text",
    "eol",
    "crlf",
    "ident",
    "filter",
    "working-tree-encoding",
];

/// Whether these `(attribute, value)` pairs convert more than line endings, either way: a
/// filter, `ident`, a working-tree encoding.
fn beyond_line_endings(attrs: &[Attribute<'_>]) -> bool {
    let given = |name: &[u8]| !matches!(value(attrs, name), b"unspecified" | b"unset");
    given(b"filter") || value(attrs, b"ident") == b"set" || given(b"working-tree-encoding")
}

/// The value of attribute `name` in these pairs (`unspecified` when they lack it).
fn value<'a>(attrs: &[Attribute<'a>], name: &[u8]) -> &'a [u8] {
    attrs
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(&b"unspecified"[..], |(_, v)| *v)
}

/// What checkout does to a file with these `(attribute, value)` pairs: `converts_in` when
/// `core.autocrlf` converts line endings of what it finds to be text, `crlf_out` when it or
/// `core.eol` writes text with CRLF.
fn checkout_of(attrs: &[Attribute<'_>], converts_in: bool, crlf_out: bool) -> Checkout {
    if beyond_line_endings(attrs) {
        return Checkout::Converted;
    }
    let (text, eol, crlf) = (
        value(attrs, b"text"),
        value(attrs, b"eol"),
        value(attrs, b"crlf"),
    );
    let binary = text == b"unset" || crlf == b"unset";
    if binary {
        return Checkout::Plain;
    }
    let text_attr = text != b"unspecified" || crlf != b"unspecified" || eol != b"unspecified";
    let out_crlf = eol == b"crlf" || (crlf_out && eol != b"lf" && crlf != b"input");
    if (text_attr || converts_in) && out_crlf {
        Checkout::Converted
    } else if text_attr || converts_in {
        Checkout::AsStored
    } else {
        Checkout::Plain
    }
}

fn is_true(value: &str) -> bool {
    matches!(value, "true" | "yes" | "on" | "1")
}

/// Whether two files hold the same bytes, read a block at a time (a file of any size in
/// bounded memory); one that cannot be read is not the same.
fn same_bytes(a: &Path, b: &Path) -> bool {
    let (Ok(mut a), Ok(mut b)) = (std::fs::File::open(a), std::fs::File::open(b)) else {
        return false;
    };
    match (a.metadata(), b.metadata()) {
        (Ok(ma), Ok(mb)) if ma.len() == mb.len() => {}
        _ => return false,
    }
    let (mut x, mut y) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    loop {
        let (Ok(n), Ok(m)) = (read_full(&mut a, &mut x), read_full(&mut b, &mut y)) else {
            return false;
        };
        if n != m || x[..n] != y[..m] {
            return false;
        }
        if n == 0 {
            return true;
        }
    }
}

/// Fill `buf` as far as the file goes: the count read (less than its length only at the end).
fn read_full(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bytes_reads_past_one_block_and_tells_a_late_difference() {
        let dir = tempfile::tempdir().unwrap();
        let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut other = big.clone();
        *other.last_mut().unwrap() ^= 1;
        let (a, b, c) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("c"),
        );
        std::fs::write(&a, &big).unwrap();
        std::fs::write(&b, &big).unwrap();
        std::fs::write(&c, &other).unwrap();
        assert!(same_bytes(&a, &b));
        assert!(!same_bytes(&a, &c));
        assert!(!same_bytes(&a, &dir.path().join("missing")));
    }

    #[test]
    fn checkout_converts_by_filter_ident_encoding_and_crlf_out_only() {
        let kind = |attrs: &[(&str, &str)], converts_in, crlf_out| {
            let attrs: Vec<Attribute<'_>> = attrs
                .iter()
                .map(|(n, v)| (n.as_bytes(), v.as_bytes()))
                .collect();
            checkout_of(&attrs, converts_in, crlf_out)
        };
        use Checkout::*;
        assert_eq!(kind(&[], false, false), Plain);
        assert_eq!(
            kind(&[], false, true),
            Plain,
            "core.eol alone converts no file"
        );
        assert_eq!(kind(&[], true, false), AsStored, "autocrlf=input");
        assert_eq!(kind(&[], true, true), Converted, "autocrlf=true");
        assert_eq!(kind(&[("text", "auto")], false, false), AsStored);
        assert_eq!(
            kind(&[("text", "set")], false, true),
            Converted,
            "core.eol=crlf"
        );
        assert_eq!(
            kind(&[("text", "auto"), ("eol", "lf")], true, true),
            AsStored
        );
        assert_eq!(kind(&[("eol", "crlf")], false, false), Converted);
        assert_eq!(kind(&[("crlf", "input")], false, true), AsStored);
        assert_eq!(kind(&[("text", "unset")], true, true), Plain, "binary");
        assert_eq!(kind(&[("ident", "set")], false, false), Converted);
        assert_eq!(kind(&[("filter", "lfs")], false, false), Converted);
        assert_eq!(kind(&[("filter", "unset")], false, false), Plain);
        assert_eq!(
            kind(&[("working-tree-encoding", "UTF-16")], false, false),
            Converted
        );
    }
}
