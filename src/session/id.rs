//! Session ids: `YYYYMMDD-HHMMSS-xxxxxx`, UTC time and six random hex digits; and this
//! clone's id (`bmad.cloneId`), of the same form.
//!
//! The time makes ids sort by creation; the random part keeps two sessions started in the same
//! second apart. A collision is still possible, so the id is claimed by creating its
//! checkpoint ref with "must not exist" and regenerated if that fails.

use std::fmt;
use std::hash::{BuildHasher, Hasher};

use super::error::Result;
use crate::git::Repo;
use crate::time::Timestamp;

/// The git config key naming this clone of the repository (local config: every clone has
/// its own).
const CLONE_ID_KEY: &str = "bmad.cloneId";

/// This clone's id, if it has one yet.
pub fn clone_id(repo: &Repo) -> Option<String> {
    repo.config_string(CLONE_ID_KEY)
}

/// This clone's id, made when it has none yet: the time and six random hex digits, in
/// the form of a session id.
pub fn ensure_clone_id(repo: &super::Repo) -> Result<String> {
    let repo = &repo.git;
    if let Some(id) = clone_id(repo) {
        return Ok(id);
    }
    // Written since this process read its config, maybe by a process starting beside it:
    // git's word, not the cached one.
    let id = SessionId::generate(crate::time::Timestamp::now()).to_string();
    Ok(repo.config_or_add(CLONE_ID_KEY, &id)?)
}

/// A validated session id.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct SessionId(String);

impl SessionId {
    /// A fresh id for a session created at `now`.
    pub fn generate(now: Timestamp) -> SessionId {
        SessionId(format!(
            "{}-{:06x}",
            now.compact(),
            random_u32() & 0xff_ffff
        ))
    }

    /// Accept `text` if it has the id's exact shape.
    pub fn parse(text: &str) -> Option<SessionId> {
        let b = text.as_bytes();
        let shape = b.len() == 22
            && b[8] == b'-'
            && b[15] == b'-'
            && b[..8].iter().chain(&b[9..15]).all(u8::is_ascii_digit)
            && b[16..]
                .iter()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c));
        shape.then(|| SessionId(text.to_owned()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// 32 random bits without a crate: the std hasher is seeded randomly per process, and the
/// process id and a clock reading separate processes started in the same instant.
fn random_u32() -> u32 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u64(Timestamp::now().millis());
    if let Ok(d) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        hasher.write_u32(d.subsec_nanos());
    }
    (hasher.finish() >> 16) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_parse_and_differ() {
        let now = Timestamp::from_secs(1_795_342_500);
        let a = SessionId::generate(now);
        let b = SessionId::generate(now);
        assert!(a.as_str().starts_with("20261122-101500-"));
        assert_eq!(SessionId::parse(a.as_str()), Some(a.clone()));
        assert_ne!(a, b);
    }

    #[test]
    fn rejects_other_shapes() {
        for bad in [
            "",
            "20261122-101500",
            "20261122-101500-ABCDEF",
            "2026112a-101500-abcdef",
            "20261122_101500-abcdef",
            "20261122-101500-abcdef0",
        ] {
            assert_eq!(SessionId::parse(bad), None, "{bad}");
        }
    }
}
