//! What a push did, ref by ref: the record `git push --porcelain` is read into.

/// A ref a push did not move, and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Refused {
    /// The remote ref.
    pub remote_ref: String,
    /// git's summary: `[rejected] (non-fast-forward)`, `[remote rejected] (…)`.
    pub reason: String,
    /// What git and the hooks printed.
    pub stderr: String,
}

/// What a push did, ref by ref.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PushOutcome {
    /// Refs the push did not move (then none moved: the push is atomic).
    pub refused: Vec<Refused>,
    /// Refs the remote already had at the pushed value.
    pub up_to_date: Vec<String>,
}
