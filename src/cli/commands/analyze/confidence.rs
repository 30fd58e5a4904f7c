//! `git bmad analyze confidence`.

use crate::bmad::analysis::{confidence, tiers};
use crate::cli::error::{exit, CommandError};
use crate::cli::Context;

/// Score signals, and with a tier say what the score sets off.
pub(super) fn run(ctx: &Context, signals: &[String], tier: Option<u8>) -> Result<u8, CommandError> {
    let ui = &ctx.ui;
    let parsed = signals
        .iter()
        .map(|s| confidence::Signal::parse_assignment(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| CommandError::usage(format!("--signal {e}")))?;
    let c = confidence::confidence(&parsed);
    let effects = tier.map(|t| {
        let settings = tiers::Settings::for_tier(t);
        serde_json::json!({
            "tier": t,
            "party_mode": settings.party_mode_below.is_some_and(|below| c.score < f64::from(below)),
            "pre_final_review": settings.pre_final_review,
        })
    });
    if ui.json() {
        let mut value = serde_json::json!(c);
        if let Some(e) = &effects {
            value["tier"] = e.clone();
        }
        ui.print_json(&value);
        return Ok(exit::OK);
    }
    let word = |v: serde_json::Value| v.as_str().map(str::to_owned).unwrap_or_default();
    ui.line(format!(
        "confidence {} ({}): {}, checkpoint format {}",
        c.score,
        word(serde_json::json!(c.class)),
        word(serde_json::json!(c.action)),
        word(serde_json::json!(c.checkpoint_format))
    ));
    for p in &c.parts {
        ui.line(format!(
            "  {:<9} {:>5.1} of {:>4.1} points (value {:.0})",
            word(serde_json::json!(p.signal)),
            p.points,
            p.weight,
            p.value
        ));
    }
    if c.conflict {
        ui.line("  signals more than 30 points apart: priority multipliers applied");
    }
    if c.capped {
        ui.line("  one signal only: capped at 60");
    }
    if let Some(why) = &c.fallback {
        ui.line(format!("  {why}"));
    }
    if let Some(e) = effects {
        ui.line(format!(
            "tier {}: party mode {}, pre-final review {}",
            e["tier"],
            if e["party_mode"] == true {
                "starts (below 60)"
            } else {
                "not needed"
            },
            if e["pre_final_review"] == true {
                "due"
            } else {
                "not needed"
            },
        ));
    }
    Ok(exit::OK)
}
