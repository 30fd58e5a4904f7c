//! `git bmad analyze tier`.

use crate::bmad::analysis::tiers;
use crate::cli::error::{exit, CommandError};
use crate::cli::Context;

pub(super) fn run(
    ctx: &Context,
    message: Option<&str>,
    base: u8,
    earlier: &[String],
) -> Result<u8, CommandError> {
    let ui = &ctx.ui;
    let parsed = earlier
        .iter()
        .map(String::as_str)
        .chain(message)
        .map(tiers::parse)
        .collect::<Result<Vec<_>, _>>();
    let parsed = match parsed {
        Ok(p) => p,
        Err(blocked) => {
            if ui.json() {
                ui.print_json(&blocked);
                return Ok(exit::POLICY);
            }
            return Err(CommandError::policy(blocked.to_string()));
        }
    };
    let (session, current) = if message.is_some() {
        let (s, c) = parsed.split_at(parsed.len() - 1);
        (s.concat(), c.concat())
    } else {
        (parsed.concat(), Vec::new())
    };
    let r = tiers::resolve(base, &session, &current);
    if ui.json() {
        ui.print_json(&r);
        return Ok(exit::OK);
    }
    let describe = |s: &tiers::Settings| {
        format!(
            "tier {}, batch size {}, party mode below {}, pre-final review {}",
            s.tier,
            s.batch_size.map_or("all".to_owned(), |b| b.to_string()),
            s.party_mode_below
                .map_or("never".to_owned(), |p| p.to_string()),
            if s.pre_final_review { "yes" } else { "no" }
        )
    };
    ui.line(format!("session: {}", describe(&r.settings)));
    if r.operation != r.settings {
        ui.line(format!("this operation: {}", describe(&r.operation)));
    }
    for a in &r.overrides {
        let source = serde_json::json!(a.by.source);
        ui.line(format!(
            "  {} {:?} ({}){}",
            if a.applied { "applied  " } else { "overruled" },
            a.by.text,
            source.as_str().unwrap_or_default().replace('_', " "),
            a.overruled_by
                .map(|s| format!(
                    " by the {}",
                    serde_json::json!(s)
                        .as_str()
                        .unwrap_or_default()
                        .replace('_', " ")
                ))
                .unwrap_or_default()
        ));
    }
    Ok(exit::OK)
}
