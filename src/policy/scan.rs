//! Where `git bmad scan` looks: the staged changes, files, or a range of commits.

use std::path::{Path, PathBuf};

use super::secrets::{self, Finding, Options};
use crate::git::Repo;

/// Errors of a scan.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The git layer failed.
    #[error(transparent)]
    Git(#[from] crate::git::Error),
    /// An argument is neither an existing path nor a revision range.
    #[error("{0:?} is neither a file or directory nor a revision range (like main..HEAD)")]
    NotAPathOrRange(String),
    /// A file could not be read.
    #[error("could not read {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// What to scan.
#[derive(Clone, Debug)]
pub enum Source {
    /// The lines the index adds to HEAD: what the next commit would contain.
    Staged,
    /// The same, from another index file (the one a running `git commit` is committing).
    StagedIn(PathBuf),
    /// Whole files (directories: their tracked and untracked-not-ignored files).
    Paths(Vec<PathBuf>),
    /// The lines added by each commit of a range.
    Range(String),
}

impl Source {
    /// Read command-line words: none means staged; existing paths (relative to `cwd`) mean
    /// files; a single other word must be a revision range.
    pub fn from_args(cwd: &Path, args: &[String]) -> Source {
        if args.is_empty() {
            return Source::Staged;
        }
        let paths: Vec<PathBuf> = args.iter().map(|a| cwd.join(a)).collect();
        if paths.iter().all(|p| p.exists()) {
            Source::Paths(paths)
        } else {
            Source::Range(args.join(" "))
        }
    }
}

/// Files larger than this are not read (build artefacts, datasets); a secret in one is still
/// found by the staged and commit scans, which only read the added lines.
const MAX_FILE_BYTES: u64 = 8 << 20;

/// Scan `source` in the worktree of `repo`.
pub fn scan(repo: &Repo, source: &Source, options: Options) -> Result<Vec<Finding>, Error> {
    match source {
        Source::Staged | Source::StagedIn(_) => {
            let index = match source {
                Source::StagedIn(index) => Some(index.as_path()),
                _ => None,
            };
            let patch = repo.staged_patch(index)?;
            Ok(secrets::scan_patch(
                &String::from_utf8_lossy(&patch),
                options,
            ))
        }
        Source::Range(range) => {
            if range.contains(char::is_whitespace) {
                return Err(Error::NotAPathOrRange(range.clone()));
            }
            let patch = repo
                .log_patch(range)
                .map_err(|_| Error::NotAPathOrRange(range.clone()))?;
            Ok(secrets::scan_patch(
                &String::from_utf8_lossy(&patch),
                options,
            ))
        }
        Source::Paths(paths) => {
            let mut findings = Vec::new();
            for file in repo.list_files(paths)? {
                findings.extend(secrets::check_path(&file));
                let path = repo.workdir().join(&file);
                let Ok(meta) = std::fs::symlink_metadata(&path) else {
                    continue; // listed by the index but deleted in the worktree
                };
                if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
                    continue;
                }
                let bytes = std::fs::read(&path).map_err(|source| Error::Io {
                    path: path.clone(),
                    source,
                })?;
                if bytes.iter().take(8000).any(|b| *b == 0) {
                    continue; // binary
                }
                findings.extend(secrets::scan_text(
                    &String::from_utf8_lossy(&bytes),
                    Some(&file),
                    options,
                ));
            }
            Ok(findings)
        }
    }
}
