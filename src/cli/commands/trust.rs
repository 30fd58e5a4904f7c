//! `git bmad trust show|list`.

use clap::{Args, Subcommand};

use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::session::trust;

/// Which machines' journals this clone acts on, and how to trust this one elsewhere.
///
/// A journal pushed by another machine is taken as state (its runs resumed, its gates and
/// answers honoured) only where that machine signed it and its key is an allowed signer:
/// `.bmad/allowed_signers` as committed on a protected branch (main, master, or one named in
/// `policy.protected_branches`), in git's `allowedSignersFile`
/// format; your own `gpg.ssh.allowedSignersFile` counts too. Everything else from a remote
/// is shown as "not trusted" and never acted on.
///
/// To trust a second machine: run `git bmad trust show` there, add the line it prints to
/// `.bmad/allowed_signers` on main through a reviewed change, pull it on this machine, and
/// `git bmad sync` again.
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// What to do
    #[command(subcommand)]
    pub action: TrustAction,
}

/// The `trust` actions.
#[derive(Debug, Subcommand)]
pub enum TrustAction {
    /// Print this clone's allowed-signers line (its key is made if it has none yet)
    Show,
    /// Where the allowed signers come from, and how many keys each holds
    List,
}

/// Run `trust`.
pub fn cmd_trust(ctx: &Context, args: &TrustArgs) -> Result<u8, CommandError> {
    let repo = ctx.repo()?;
    match args.action {
        TrustAction::Show => {
            let key = trust::own_key(crate::session::Repo::of(&repo), true)?
                .ok_or_else(|| CommandError::failed("this clone has no signing key"))?;
            if ctx.ui.json() {
                ctx.ui.print_json(&serde_json::json!({
                    "principal": key.principal,
                    "key": key.public,
                    "path": key.path,
                    "user_signing_key": key.user_key,
                    "line": key.allowed_signers_line(),
                }));
            } else {
                ctx.ui.line(key.allowed_signers_line());
                ctx.ui.status(format!(
                    "Add this line to {} on main (a reviewed change) so other clones act on \
                     what this one pushes.",
                    trust::ALLOWED_SIGNERS
                ));
            }
        }
        TrustAction::List => {
            let allowed = trust::allowed_signers(&repo)?;
            if ctx.ui.json() {
                ctx.ui.print_json(&allowed);
            } else if allowed.sources.is_empty() {
                ctx.ui.line(format!(
                    "No allowed signers: only this clone's own journal events are acted on \
                     (add keys to {} on main)",
                    trust::ALLOWED_SIGNERS
                ));
            } else {
                ctx.ui.line(format!(
                    "{} key(s) from: {}",
                    allowed.keys,
                    allowed.sources.join(", ")
                ));
            }
        }
    }
    Ok(exit::OK)
}
