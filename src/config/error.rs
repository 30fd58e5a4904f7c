//! Errors of the config layer: a file that cannot be read, or a value that cannot be used.

use std::path::PathBuf;

/// A result of the config layer.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why the project configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `.bmad/config.yaml` has a value that cannot be used.
    #[error("{}{}: {message}", path.display(), location.map(|(l, c)| format!(":{l}:{c}")).unwrap_or_default())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Line and column, when known.
        location: Option<(usize, usize)>,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// The file exists but cannot be read.
    #[error("could not read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}
