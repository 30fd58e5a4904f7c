//! A round's containment: the session worktree fenced before its steps start, each step's
//! walls, and the fence settled when they end (the branch's new commits taken in, anything
//! written beyond the walls journaled as a violation of the round's steps).

use std::path::Path;

use super::round::round_step;
use super::Engine;
use crate::config::Network;
use crate::policy::rules::OUTSIDE_WALLS;
use crate::runner::{Contained, Kind};
use crate::session::{self, Fence, NewEvent};
use crate::supervisor::contain;
use crate::supervisor::error::{Error, Result};

/// A contained round's fence, and the channel its steps' hooks report through.
pub(super) struct RoundFence {
    fence: Fence,
    reports: Option<session::ReportChannel>,
}

impl Engine<'_> {
    /// A fence around the session worktree, when the run is contained, and the channel its
    /// steps' hooks report through.
    pub(super) fn fence_round(&self) -> Result<Option<RoundFence>> {
        let Some(layers) = self.containment.layers() else {
            return Ok(None);
        };
        let kind = match layers.bwrap {
            Some(_) => session::FenceKind::Mounts,
            None => session::FenceKind::Shadow,
        };
        let fence = session::repository::fence(self.repo, self.session, &self.root, kind)?;
        // Without the channel (a socket's path past 107 bytes, say) the hooks keep their
        // reports in files, as before it: the step could erase those.
        let reports = match session::ReportChannel::listen(&fence.deferred()) {
            Ok(reports) => Some(reports),
            Err(e) => {
                tracing::warn!(
                    "no report channel at {}: {e}; the step's hooks keep their reports in files",
                    fence.report_socket().display()
                );
                None
            }
        };
        Ok(Some(RoundFence { fence, reports }))
    }

    /// What git in the session worktree needs while the run's checks run there in walls,
    /// held until dropped (see [`crate::policy::command_shadow`]).
    pub(super) fn checks_shadow(&self) -> Result<Option<session::CommandShadow>> {
        match (self.containment.layers(), &self.check_walls) {
            (Some(layers), Some(_)) => Ok(crate::policy::command_shadow(
                self.repo, layers, &self.root,
            )?),
            _ => Ok(None),
        }
    }

    /// Why the run's steps are not contained, if they are not.
    pub(super) fn uncontained(&self) -> Option<String> {
        match &self.containment {
            contain::Containment::On(_) => None,
            contain::Containment::Off(why) => Some(why.clone()),
        }
    }

    /// Which walls hold the run's steps, and what they lack here, when they are contained.
    pub(super) fn walls_held(&self) -> (Option<String>, Option<String>) {
        match self.containment.layers() {
            Some(layers) => (Some(layers.describe()), layers.lacks()),
            None => (None, None),
        }
    }

    /// The walls of one step's invocation inside `fence`: its private home holds what its
    /// CLI needs; a shell step reaches the network as `checks.network` says.
    pub(super) fn step_walls(
        &self,
        fence: Option<&RoundFence>,
        step: &str,
        kind: Kind,
        program: &Path,
    ) -> Result<Option<Contained>> {
        let (Some(RoundFence { fence, .. }), Some(layers)) = (fence, self.containment.layers())
        else {
            return Ok(None);
        };
        let folder: String = step
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let home = fence.scratch().join(format!("home-{folder}"));
        std::fs::create_dir_all(&home)
            .and_then(|()| contain::private_home(&home, kind.adapter().home_files(), self.repo))
            .map_err(|e| Error::Uncontained {
                why: format!("could not make a private home in {}: {e}", home.display()),
            })?;
        let network = kind.is_agent() || self.config.checks.network == Network::Full;
        let views = fence.views();
        let walls = contain::step_walls(&views, &self.hidden, &home, program, network);
        // Before it starts: a CLI whose install the walls hide would exit 127 with no word
        // of why.
        let unseen = walls.hide_from(program);
        if let Some(first) = unseen.first() {
            let folder = first.parent().unwrap_or(first);
            return Err(Error::Uncontained {
                why: format!(
                    "{} needs {} to run, which the walls hide; show it with \
                     `runners.sandbox_paths: {{read: [\"{}\"]}}` in .bmad/config.yaml",
                    program.display(),
                    unseen
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    folder.display()
                ),
            });
        }
        Ok(Some(Contained {
            layers: layers.clone(),
            walls,
        }))
    }

    /// Take in what the round's steps may change and journal what they wrote beyond that.
    pub(super) fn settle_fence(&mut self, round: RoundFence, ids: &[&str]) -> Result<()> {
        let RoundFence { fence, reports } = round;
        // What its hooks and guard refused, which they could not journal from inside: what
        // they reported (out of the step's reach), and what they kept in files when the
        // channel could not be had (which the step could have removed).
        let (reported, lost) = reports
            .map(|r| r.close(ids, round_step(ids)))
            .unwrap_or_default();
        for event in reported {
            self.record(event)?;
        }
        if let Some(lost) = lost {
            self.record(
                NewEvent::violation("supervisor", OUTSIDE_WALLS.id, "report channel", lost)
                    .step(round_step(ids)),
            )?;
        }
        for kept in session::violations_kept_in(&fence.deferred(), ids, round_step(ids)) {
            self.record(kept)?;
        }
        let beyond_walls = session::repository::settle_fence(self.repo, fence)?;
        for beyond in beyond_walls {
            let subject = beyond.split(':').next().unwrap_or_default().to_owned();
            self.record(
                NewEvent::violation(
                    "supervisor",
                    OUTSIDE_WALLS.id,
                    subject,
                    format!("the contained step wrote {beyond}; the write was dropped"),
                )
                .step(round_step(ids)),
            )?;
        }
        Ok(())
    }
}
