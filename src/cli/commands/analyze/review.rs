//! `git bmad analyze review`.

use std::io::Read;
use std::path::PathBuf;

use super::read;
use crate::bmad::analysis::review;
use crate::cli::error::{exit, CommandError};
use crate::cli::Context;

/// Read a review and say where it leaves the story.
pub(super) fn run(ctx: &Context, file: Option<&PathBuf>) -> Result<u8, CommandError> {
    let ui = &ctx.ui;
    let text = match file {
        Some(f) => read(ctx, f)?,
        None => {
            let mut t = String::new();
            std::io::stdin()
                .read_to_string(&mut t)
                .map_err(|e| CommandError::failed(format!("could not read stdin: {e}")))?;
            t
        }
    };
    let r = review::parse(&text);
    if ui.json() {
        ui.print_json(&r);
    } else {
        ui.line(format!(
            "outcome: {} → {}",
            serde_json::json!(r.outcome).as_str().unwrap_or_default(),
            r.next
        ));
        for f in &r.findings {
            ui.line(format!(
                "  [{}]{} {}{}{}",
                f.severity,
                if f.must_fix { " MUST-FIX" } else { "" },
                f.text,
                f.location
                    .as_deref()
                    .map(|l| format!(" ({l})"))
                    .unwrap_or_default(),
                if f.done { " (done)" } else { "" }
            ));
        }
        ui.line(format!(
            "  {} finding(s), {} MUST-FIX open{}",
            r.findings.len(),
            r.must_fix_open,
            if r.adversarial_count_ok {
                ""
            } else {
                "; the review should name 3 to 10 specific problems"
            }
        ));
        if let Some((d, t)) = r.checklist {
            ui.line(format!(
                "  checklist: {d}/{t}{}",
                if r.checklist_complete {
                    ""
                } else {
                    " (the code-review checklist has 19 items, all to be checked)"
                }
            ));
        }
    }
    Ok(if r.outcome == review::Outcome::Approve {
        exit::OK
    } else {
        exit::FAILED
    })
}
