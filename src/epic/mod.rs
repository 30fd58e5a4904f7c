//! The BMAD epic runner's layer: what joins the BMAD project files to sessions. For now,
//! recording a story's status change in the session it happens in; the story queue, sprint
//! pipelines and review rounds build on it.

mod status;

pub use status::set_story_status;

/// Errors of the epic layer: the one below it, named.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The BMAD files.
    #[error(transparent)]
    Bmad(#[from] crate::bmad::Error),
    /// The session and its journal.
    #[error(transparent)]
    Session(#[from] crate::session::Error),
}
