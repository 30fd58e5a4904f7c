//! Tests the story's agents never see: the acceptance tests written from its criteria
//! before its dev began, kept in git-bmad's sealed store ([`crate::env::acceptance_store`]),
//! not in the repository (a contained agent lists every object there with `git cat-file
//! --batch-all-objects`, and reads every ref the walls show). Only the judge's clean
//! checkout gets them, laid over the commit it judges.
//!
//! A story's tests are kept in `<store>/<clone id>/<story>/<base commit>/`: `said` (what
//! the record shows), `spent` (what writing them cost: millionths of a dollar, invocations,
//! milliseconds) and `files/` (the tests, at their paths in the checkout). A folder is
//! written whole under a temporary name and renamed into place, so a kill leaves either
//! nothing (the tests are written again) or all of it.

use std::path::{Path, PathBuf};

use super::Overlay;
use crate::epic::Error;
use crate::session::{self, ObjectId, Repo};
use crate::supervisor::purse::Amounts;

/// A story's acceptance tests, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hidden {
    /// The tests (none when the agent wrote none that fail on the base).
    pub files: Vec<Overlay>,
    /// What the story's record says of them.
    pub said: String,
    /// What writing them cost.
    pub spent: Amounts,
    /// Where they are kept, for a person who wants to read them.
    pub place: PathBuf,
}

/// The tests stored for story `key` at `base`, if any were.
pub fn stored(repo: &Repo, key: &str, base: ObjectId) -> Result<Option<Hidden>, Error> {
    let place = place(repo, key, base)?;
    let said = match std::fs::read_to_string(place.join("said")) {
        Ok(said) => said,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(Error::Write {
                path: place,
                source,
            })
        }
    };
    let root = place.join("files");
    let files = Overlay::read_under(&root, None).map_err(|source| Error::Write {
        path: root.clone(),
        source,
    })?;
    let spent = std::fs::read_to_string(place.join("spent")).unwrap_or_default();
    let mut numbers = spent
        .split_whitespace()
        .map(|n| n.parse::<u64>().unwrap_or(0));
    let mut next = || numbers.next().unwrap_or(0);
    let spent = Amounts {
        micro_usd: next(),
        invocations: u32::try_from(next()).unwrap_or(u32::MAX),
        ms: next(),
        tokens: next(),
        // Written since the fifth number was: none before.
        premium_milli: next(),
    };
    Ok(Some(Hidden {
        files,
        said: said.trim().to_owned(),
        spent,
        place,
    }))
}

/// Keep `files` as story `key`'s acceptance tests at `base`, with what its record says.
pub fn store(
    repo: &Repo,
    key: &str,
    base: ObjectId,
    files: Vec<Overlay>,
    said: String,
    spent: Amounts,
) -> Result<Hidden, Error> {
    let place = place(repo, key, base)?;
    let parent = place.parent().unwrap_or(&place).to_owned();
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| Error::Write { path, source }
    };
    std::fs::create_dir_all(&parent).map_err(io(&parent))?;
    let draft = tempfile::Builder::new()
        .prefix(".draft-")
        .tempdir_in(&parent)
        .map_err(io(&parent))?;
    let root = draft.path().join("files");
    for file in &files {
        file.write_under(&root)
            .map_err(io(&root.join(&file.path)))?;
    }
    let said_file = draft.path().join("said");
    std::fs::write(&said_file, format!("{said}\n")).map_err(io(&said_file))?;
    let spent_file = draft.path().join("spent");
    let numbers = format!(
        "{} {} {} {} {}\n",
        spent.micro_usd, spent.invocations, spent.ms, spent.tokens, spent.premium_milli
    );
    std::fs::write(&spent_file, numbers).map_err(io(&spent_file))?;
    // Written once: tests another run of the story stored first stay the story's.
    if !place.exists() {
        std::fs::rename(draft.keep(), &place).map_err(io(&place))?;
    }
    Ok(Hidden {
        files,
        said,
        spent,
        place,
    })
}

/// `<store>/<clone id>/<story>/<base>`.
fn place(repo: &Repo, key: &str, base: ObjectId) -> Result<PathBuf, Error> {
    let store = crate::env::acceptance_store().ok_or_else(|| {
        Error::Judge(
            "neither XDG_CONFIG_HOME nor HOME names a place to keep acceptance tests; set \
             HOME, or epic.acceptance_tests: off in .bmad/config.yaml"
                .into(),
        )
    })?;
    let clone = session::ensure_clone_id(repo)?;
    // A story key names a folder: only what keys are made of.
    let key: String = key
        .chars()
        .map(|c| match c {
            c if c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_' => c,
            _ => '_',
        })
        .collect();
    Ok(store
        .join(clone)
        .join(key.trim_start_matches('.'))
        .join(base.to_string()))
}
