//! Who git-bmad's commits and reflog entries are by, and when.
//!
//! Names and emails are resolved from the same configuration keys gix resolves them from
//! (`GIT_COMMITTER_NAME` and friends arrive there as overrides), with git-bmad's fallback
//! identity installed where the user has none. The time is taken here, not by gix: the
//! instant once per handle when it is opened (as gix took it), the zone's offset only when
//! something is signed. gix asks jiff for the local time zone, and jiff
//! reads the name of every zone on the system first (about half a millisecond, on every
//! command). The C library's local offset is the one git itself records, and costs one read
//! of the zone file. A date git is told to use (`GIT_COMMITTER_DATE`, `GIT_AUTHOR_DATE`) is
//! still parsed by gix, as git would.

use gix::actor::Signature;
use gix::config::tree::{gitoxide, Author, Committer, User};

use super::cli::{FALLBACK_EMAIL, FALLBACK_NAME};
use super::error::{Error, Result};

/// Whether a commit's committer or author is meant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    Committer,
    Author,
}

/// Install git-bmad's fallback identity where the configuration has no name or email for
/// the committer or the author, so that checkpoints and notes never fail for a missing
/// `user.name`. Returns whether it was needed (then `git` processes need it too).
pub(super) fn install_fallback(repo: &mut gix::Repository) -> Result<bool> {
    let missing = [Role::Committer, Role::Author]
        .into_iter()
        .filter(|role| resolve(repo, *role).is_none())
        .collect::<Vec<_>>();
    if missing.is_empty() {
        return Ok(false);
    }
    let mut config = repo.config_snapshot_mut();
    for role in missing {
        let (name, email) = match role {
            Role::Committer => (
                &gitoxide::Committer::NAME_FALLBACK,
                &gitoxide::Committer::EMAIL_FALLBACK,
            ),
            Role::Author => (
                &gitoxide::Author::NAME_FALLBACK,
                &gitoxide::Author::EMAIL_FALLBACK,
            ),
        };
        config
            .set_value(name, FALLBACK_NAME)
            .and_then(|_| config.set_value(email, FALLBACK_EMAIL))
            .map_err(|e| Error::gix("could not set up the fallback identity", e))?;
    }
    Ok(true)
}

/// The committer or author of something written through `repo`, dated `at` (seconds since
/// the epoch, in the local time zone's offset then) unless the environment gives a date.
pub(super) fn signature(repo: &gix::Repository, role: Role, at: i64) -> Result<Signature> {
    let (name, email) = resolve(repo, role).ok_or_else(|| {
        Error::Corrupt("no identity to write with, not even git-bmad's fallback".into())
    })?;
    let date = match role {
        Role::Committer => &gitoxide::Commit::COMMITTER_DATE,
        Role::Author => &gitoxide::Commit::AUTHOR_DATE,
    };
    let time = if repo.config_snapshot().string(date).is_some() {
        given_time(repo, role)?
    } else {
        // The zone is looked up only here: a handle that writes nothing (a hook's) never
        // reads it.
        gix::date::Time {
            seconds: at,
            offset: crate::time::local_offset(at),
        }
    };
    Ok(Signature { name, email, time })
}

/// The name and email of `role`, in the order gix and git look for them: the role's own
/// keys, then `user.*` (and `EMAIL`), then the fallback keys.
fn resolve(repo: &gix::Repository, role: Role) -> Option<(gix::bstr::BString, gix::bstr::BString)> {
    let config = repo.config_snapshot();
    let (name, email, name_fallback, email_fallback) = match role {
        Role::Committer => (
            config.string(Committer::NAME),
            config.string(Committer::EMAIL),
            &gitoxide::Committer::NAME_FALLBACK,
            &gitoxide::Committer::EMAIL_FALLBACK,
        ),
        Role::Author => (
            config.string(Author::NAME),
            config.string(Author::EMAIL),
            &gitoxide::Author::NAME_FALLBACK,
            &gitoxide::Author::EMAIL_FALLBACK,
        ),
    };
    let name = name
        .or_else(|| config.string(User::NAME))
        .or_else(|| config.string(name_fallback))?;
    let email = email
        .or_else(|| config.string(User::EMAIL))
        .or_else(|| config.string(gitoxide::User::EMAIL_FALLBACK))
        .or_else(|| config.string(email_fallback))?;
    Some((name, email))
}

/// The time of `role` when the environment names one, as gix parses it.
fn given_time(repo: &gix::Repository, role: Role) -> Result<gix::date::Time> {
    let signature = match role {
        Role::Committer => repo.committer(),
        Role::Author => repo.author(),
    };
    signature
        .transpose()
        .map_err(|e| Error::gix("could not read the date git was given", e))?
        .map(|s| s.time())
        .transpose()
        .map_err(|e| Error::gix("could not read the date git was given", e))?
        .ok_or_else(|| Error::Corrupt("no identity to write with".into()))
}
