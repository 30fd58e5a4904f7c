//! Repository formats git-bmad cannot read yet (the reftable ref backend, which gix does not
//! read): named in one line with what to do, instead of an error from deep in decoding.
//! SHA-256 object ids are read and written as SHA-1 ones are.

use std::path::Path;
use std::process::{Command, Stdio};

use super::error::Error;

/// The error for a repository at `path` whose `extensions.*` config (read by `extension`)
/// names a format git-bmad cannot read, if it does.
pub(super) fn unsupported(
    path: &Path,
    extension: impl Fn(&str) -> Option<String>,
) -> Option<Error> {
    let is = |key: &str, value: &str| extension(key).is_some_and(|v| v.eq_ignore_ascii_case(value));
    let (what, next) = if is("extensions.refStorage", "reftable") {
        (
            "keeps its refs in reftable (extensions.refStorage = reftable)",
            "convert it to the files backend with: git refs migrate --ref-format=files (a git that migrates reflogs too: 2.48 or later)",
        )
    } else {
        return None;
    };
    Some(Error::UnsupportedFormat {
        path: path.to_path_buf(),
        what,
        next,
    })
}

/// A config value as `git config --get` in `dir` reads it (for a repository gix could not
/// open); `None` when unset or when git cannot say.
pub(super) fn git_config_in(dir: &Path, key: &str) -> Option<String> {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["config", "--get", key])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let value = String::from_utf8(out.stdout).ok()?;
    out.status.success().then(|| value.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reftable_is_named_with_what_to_do_and_others_pass() {
        let config = |pairs: &'static [(&'static str, &'static str)]| {
            move |key: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(key))
                    .map(|(_, v)| v.to_string())
            }
        };
        let path = Path::new("/repo");
        assert!(unsupported(path, config(&[("extensions.objectformat", "sha256")])).is_none());
        let reftable = unsupported(path, config(&[("extensions.refstorage", "reftable")]));
        assert!(reftable
            .unwrap()
            .to_string()
            .contains("git refs migrate --ref-format=files"));
        assert!(unsupported(path, config(&[("extensions.objectformat", "sha1")])).is_none());
        assert!(unsupported(path, config(&[])).is_none());
    }
}
