//! Where a set of refs point, taken before a step and compared after: how the supervisor
//! sees a protected branch moved by a step that switched the hooks off.

use serde::Serialize;

use super::Result;
use crate::git::ObjectId;

/// The refs and their commits at one moment.
#[derive(Clone, Debug, Default)]
pub struct RefTips(Vec<(String, Option<ObjectId>)>);

/// A ref that moved since its [`RefTips`] were taken.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MovedRef {
    /// The ref.
    pub name: String,
    /// Where it was (`None`: it did not exist).
    pub was: Option<String>,
    /// Where it is now (`None`: deleted).
    pub now: Option<String>,
}

impl MovedRef {
    /// The command that puts it back, if it still is where it moved to.
    pub fn undo(&self) -> String {
        match (&self.was, &self.now) {
            (Some(was), Some(now)) => format!("git update-ref {} {was} {now}", self.name),
            (Some(was), None) => format!("git update-ref {} {was}", self.name),
            (None, Some(now)) => format!("git update-ref -d {} {now}", self.name),
            (None, None) => String::new(),
        }
    }
}

impl RefTips {
    /// Where `names` point now.
    pub fn take(repo: &super::Repo, names: impl IntoIterator<Item = String>) -> Result<RefTips> {
        let repo = &repo.git;
        let mut tips = Vec::new();
        for name in names {
            let tip = repo.read_ref(&name)?;
            tips.push((name, tip));
        }
        Ok(RefTips(tips))
    }

    /// The refs that point elsewhere now.
    pub fn moved(&self, repo: &super::Repo) -> Result<Vec<MovedRef>> {
        let repo = &repo.git;
        let mut moved = Vec::new();
        for (name, was) in &self.0 {
            let now = repo.read_ref(name)?;
            if now != *was {
                moved.push(MovedRef {
                    name: name.clone(),
                    was: was.map(|id| id.to_string()),
                    now: now.map(|id| id.to_string()),
                });
            }
        }
        Ok(moved)
    }
}
