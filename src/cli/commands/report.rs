//! `git bmad report`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use crate::cli::error::{exit, CommandError};
use crate::cli::ui::Style;
use crate::cli::Context;
use crate::report::{self, text::Tone};
use crate::time::{parse_duration, Timestamp};

/// The morning report: what every session did over a period, what is done (with the
/// evidence git-bmad checked itself), what waits for you, and what went wrong.
///
/// Sessions with a problem come first, newest problem first: parked at a gate (with the
/// question and the command that answers it), failed, over budget, stalled. Then running
/// and done sessions, with tests git-bmad ran, commits, diff and PR. Policy violations and
/// secrets caught, agent time, tokens and cost per session and in total.
///
/// `--json` prints the report as one object (shape: see `docs/guide/report.md`);
/// `--html FILE` writes the same content as one self-contained page (no network, light and
/// dark, readable on a phone).
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The period: a duration back from now (90m, 12h, 2d) or an RFC 3339 time
    #[arg(long, default_value = "24h", value_name = "WHEN")]
    pub since: String,
    /// A running session with nothing journaled for this long is reported stalled
    #[arg(long, default_value = "2h", value_name = "DURATION")]
    pub stall_after: String,
    /// Also write the report as a self-contained HTML page to FILE
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Open the HTML page in the browser ($BROWSER, xdg-open or open); without --html the
    /// page is written to a temporary file
    #[arg(long)]
    pub open: bool,
    /// List each session's events of the period in the terminal report
    #[arg(long)]
    pub timeline: bool,
}

/// Run `report`.
pub fn cmd_report(ctx: &Context, args: &ReportArgs) -> Result<u8, CommandError> {
    let now = Timestamp::now();
    let since = since(&args.since, now)?;
    let stall_after = parse_duration(&args.stall_after).ok_or_else(|| {
        CommandError::usage(format!(
            "--stall-after {:?} is not a duration",
            args.stall_after
        ))
        .hinted("write it as 90m, 2h or 1d")
    })?;
    let repo = ctx.repo()?;
    let report = report::gather(
        crate::session::Repo::of(&repo),
        report::Options {
            since,
            now,
            stall_after,
        },
    )?;
    let html_path = match (&args.html, args.open) {
        (Some(path), _) => Some(path.clone()),
        (None, true) => {
            Some(std::env::temp_dir().join(format!("git-bmad-report-{}.html", now.compact())))
        }
        (None, false) => None,
    };
    if let Some(path) = &html_path {
        let page = report::html::render(&report);
        crate::fs::write_atomically(path, page.as_bytes(), None).map_err(|e| {
            CommandError::failed(format!("could not write {}: {e}", path.display()))
        })?;
        ctx.ui.status(format!("wrote {}", path.display()));
        if args.open {
            open_in_browser(path)?;
        }
    }
    if ctx.ui.json() {
        ctx.ui.print_json(&report);
        return Ok(exit::OK);
    }
    let paint = |text: &str, tone: Tone| {
        let style = match tone {
            Tone::Good => Style::Green,
            Tone::Warn => Style::Yellow,
            Tone::Bad => Style::Red,
            Tone::Dim => Style::Dim,
            Tone::Strong => Style::Bold,
        };
        ctx.ui.paint(text, style)
    };
    let text = report::text::render(&report, args.timeline, &paint);
    ctx.ui.line(text.trim_end_matches('\n'));
    Ok(exit::OK)
}

/// `--since`: a duration back from `now`, or a time.
fn since(text: &str, now: Timestamp) -> Result<Timestamp, CommandError> {
    if let Some(at) = Timestamp::parse_rfc3339(text) {
        return Ok(at);
    }
    let back = parse_duration(text).ok_or_else(|| {
        CommandError::usage(format!("--since {text:?} is neither a duration nor a time"))
            .hinted("write it as 12h, 2d, 90m or 2026-11-22T08:00:00Z")
    })?;
    let back = back.min(Duration::from_millis(now.millis()));
    Ok(Timestamp::from_millis(
        now.millis() - back.as_millis() as u64,
    ))
}

/// Hand the page to the reader's browser, without waiting for it.
fn open_in_browser(path: &Path) -> Result<(), CommandError> {
    let browser = crate::env::Var::Browser
        .get()
        .filter(|b| !b.trim().is_empty())
        .or_else(|| {
            ["xdg-open", "open"]
                .into_iter()
                .find(|c| which::which(c).is_ok())
                .map(str::to_owned)
        })
        .ok_or_else(|| {
            CommandError::failed("no browser to open the report with")
                .hinted(format!("open {} yourself, or set $BROWSER", path.display()))
        })?;
    crate::runner::Program::new(&browser, [path])
        .start_detached()
        .map_err(|e| CommandError::failed(format!("could not start {browser}: {e}")))?;
    Ok(())
}
