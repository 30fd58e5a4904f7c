//! Which refs are protected: one answer for push, guard and reference-transaction alike.

use super::Error;
use crate::config::Config;
use crate::git::Repo;
use crate::session;

/// Every protected branch (full ref names): `main`, `master`, the configured ones, and the
/// base branch of every session.
pub fn protected_refs(repo: &Repo) -> Result<Vec<String>, Error> {
    protected_refs_with(session::Repo::of(repo), &session::load_config(repo)?)
}

/// [`protected_refs`] with the configuration already loaded (the supervisor has it).
pub fn protected_refs_with(repo: &session::Repo, config: &Config) -> Result<Vec<String>, Error> {
    let mut refs = config.protected_refs();
    for s in session::list(repo)? {
        let base = format!("refs/heads/{}", s.base);
        let exists = repo.git(crate::git::Direct).read_ref(&base)?.is_some();
        if !s.base.is_empty() && !refs.contains(&base) && exists {
            refs.push(base);
        }
    }
    Ok(refs)
}

/// Whether `name` (a full ref name, or a branch's short name) is one of `protected`.
///
/// Compared without regard to ASCII case, everywhere: on a case-insensitive filesystem
/// (macOS, Windows) `refs/heads/MAIN` *is* `main`'s loose ref file, and hosting services
/// treat such names as the same branch; refusing `MAIN` on Linux too costs nothing and keeps
/// the three checks in agreement.
pub fn is_protected(name: &str, protected: &[String]) -> bool {
    let full = if name.starts_with("refs/") {
        std::borrow::Cow::Borrowed(name)
    } else {
        std::borrow::Cow::Owned(format!("refs/heads/{name}"))
    };
    protected.iter().any(|p| p.eq_ignore_ascii_case(&full))
}

#[cfg(test)]
mod tests {
    use super::is_protected;

    #[test]
    fn one_answer_for_every_spelling() {
        let protected = vec![
            "refs/heads/main".to_owned(),
            "refs/heads/release".to_owned(),
        ];
        for name in [
            "main",
            "refs/heads/main",
            "MAIN",
            "refs/heads/Main",
            "Release",
        ] {
            assert!(is_protected(name, &protected), "{name}");
        }
        for name in [
            "mainline",
            "refs/tags/main",
            "feature/main",
            "refs/remotes/origin/main",
        ] {
            assert!(!is_protected(name, &protected), "{name}");
        }
    }
}
