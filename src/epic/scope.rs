//! The epic's scope confirmation: before the first story, a person sees the plan (the
//! stories, their waves, the integration checkpoints) and says go; in every gates mode
//! when the agents would run with no walls the configuration did not turn off.

use super::gates::open;
use super::names::SCOPE;
use super::options::Gates;
use super::plan::Plan;
use super::state::EpicState;
use super::Error;
use crate::session::schema::Answer;
use crate::session::{Repo, Session};

/// Where the scope confirmation stands.
pub(super) enum Scope {
    /// Answered `continue`, or not asked in this mode.
    Confirmed,
    /// Asked, not answered: the run parks.
    Waiting,
    /// Answered `abort` or `skip`: nothing runs, and why.
    Cancelled(String),
}

/// Why the epic's agents would run with no walls though the configuration did not turn
/// them off (`runners.sandbox: auto` on a machine with neither bubblewrap nor Landlock).
pub(super) fn unwalled(config: &crate::config::Config) -> Result<Option<String>, Error> {
    let here = crate::supervisor::contain::decide(config)?;
    Ok(unwalled_by(config.runners.sandbox, here))
}

/// Why steps run with no walls under `mode` where `here` says so, unless `mode` turned
/// them off.
fn unwalled_by(
    mode: crate::config::Sandbox,
    here: crate::supervisor::contain::Containment,
) -> Option<String> {
    match here {
        crate::supervisor::contain::Containment::Off(why)
            if mode != crate::config::Sandbox::Off =>
        {
            Some(why)
        }
        _ => None,
    }
}

/// The scope confirmation: asked once per run (new options are a new run), before the
/// first story; in every gates mode when its agents would run `unwalled` (why).
pub(super) fn scope(
    repo: &Repo,
    epic: &Session,
    plan: &Plan,
    state: &mut EpicState,
    mode: Gates,
    unwalled: Option<String>,
) -> Result<Scope, Error> {
    if mode == Gates::None && unwalled.is_none() {
        return Ok(Scope::Confirmed);
    }
    match state.answers.get(SCOPE) {
        Some(Answer::Continue) => Ok(Scope::Confirmed),
        Some(_) => Ok(Scope::Cancelled(
            "a human cancelled the run at its scope confirmation".into(),
        )),
        None => {
            if state.gate.is_none() {
                let (mut question, evidence) = scope_question(plan);
                if let Some(why) = unwalled {
                    question = format!("{} {question}", unwalled_warning(&why));
                }
                open(repo, epic, state, SCOPE, &question, &evidence)?;
            }
            Ok(Scope::Waiting)
        }
    }
}

/// The scope confirmation: the plan, for a human to accept or cancel.
pub(super) fn scope_question(plan: &Plan) -> (String, String) {
    let keys: Vec<&str> = plan.to_run().map(|s| s.key.as_str()).collect();
    let question = format!(
        "Run epic {} as planned: {} stories ({}) in {} waves? continue runs it; abort cancels (start again with --stories to run some).",
        plan.epic,
        keys.len(),
        keys.join(", "),
        plan.waves.len()
    );
    let mut evidence = String::new();
    for (i, wave) in plan.waves.iter().enumerate() {
        evidence.push_str(&format!("wave {}: {}\n", i + 1, wave.join(", ")));
    }
    for s in plan.to_run().filter(|s| s.integration_checkpoint) {
        evidence.push_str(&format!("integration checkpoint after {}\n", s.key));
    }
    (question, evidence)
}

/// What a person accepts by running an epic's agents with no walls.
fn unwalled_warning(why: &str) -> String {
    format!(
        "Its agents would run with no walls on this machine ({why}): each could read your \
         home (SSH keys, the gh and cloud logins, every repository here), the credentials in \
         your environment and other processes, and push or merge with your git and gh logins. \
         Abort and install bubblewrap (git bmad doctor says how), or set runners.sandbox: off \
         to run them so knowingly."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_without_walls_are_asked_about_unless_the_configuration_turned_them_off() {
        use crate::config::Sandbox;
        use crate::runner::sandbox::{Containment, Layers};
        let bare = Layers {
            bwrap: None,
            landlock: None,
            missing: vec!["bubblewrap: not installed".into(), "Landlock: no".into()],
        };
        let here = Containment::decide_for(Sandbox::Auto, bare.clone()).unwrap();
        let why = unwalled_by(Sandbox::Auto, here).unwrap();
        assert!(why.contains("bubblewrap: not installed"), "{why}");
        let off = Containment::decide_for(Sandbox::Off, bare).unwrap();
        assert_eq!(unwalled_by(Sandbox::Off, off), None);
        let warning = unwalled_warning(&why);
        for named in ["SSH keys", "gh", "push or merge", "runners.sandbox: off"] {
            assert!(warning.contains(named), "{warning}");
        }
    }
}
