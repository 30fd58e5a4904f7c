//! All output goes through [`Ui`]: data to stdout, progress and hints to stderr.
//!
//! Colour only when stderr/stdout is a terminal and `NO_COLOR` is unset; `--quiet` silences
//! the stderr chatter but never the data; `--json` replaces human text with one JSON document.
//! A closed pipe (`git bmad list | head -1`) is not an error.

use std::io::{IsTerminal, Write};

use serde::Serialize;

/// Text styles used in human output.
#[derive(Clone, Copy, Debug)]
pub enum Style {
    /// Good news.
    Green,
    /// Needs attention.
    Yellow,
    /// Bad news.
    Red,
    /// Less important.
    Dim,
    /// Emphasis.
    Bold,
}

/// The escape sequences [`Ui::paint`] writes: the only ones human output keeps.
const PAINT: [&str; 6] = [
    "\x1b[32m", "\x1b[33m", "\x1b[31m", "\x1b[2m", "\x1b[1m", "\x1b[0m",
];

/// Human output with every control character shown as an escape but our own colours.
pub fn safe_for_terminal(text: &str) -> String {
    crate::text::terminal_safe_keeping(text, &PAINT)
}

/// The terminal, as the commands see it.
pub struct Ui {
    json: bool,
    quiet: bool,
    color: bool,
}

impl Ui {
    /// A UI for the given global flags, reading `NO_COLOR` from `no_color`.
    pub fn new(json: bool, quiet: bool, no_color: bool) -> Ui {
        let color = !no_color && std::io::stdout().is_terminal();
        Ui { json, quiet, color }
    }

    /// Whether `--json` was given.
    pub fn json(&self) -> bool {
        self.json
    }

    /// Whether status messages are shown (neither `--quiet` nor `--json`).
    pub fn chatty(&self) -> bool {
        !self.quiet && !self.json
    }

    /// Print a line of data on stdout. Text an agent or a remote wrote may be in it: a
    /// control character is shown, never obeyed (only our own colours pass).
    pub fn line(&self, text: impl AsRef<str>) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", safe_for_terminal(text.as_ref()));
    }

    /// Print a value as pretty JSON on stdout (JSON escapes every control character).
    pub fn print_json(&self, value: &impl Serialize) {
        let text = serde_json::to_string_pretty(value)
            .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{text}");
    }

    /// Print a status message on stderr (silenced by `--quiet` and `--json`).
    pub fn status(&self, text: impl AsRef<str>) {
        if !self.quiet && !self.json {
            let _ = writeln!(
                std::io::stderr().lock(),
                "{}",
                safe_for_terminal(text.as_ref())
            );
        }
    }

    /// Print a warning on stderr (silenced, like a status message, by `--quiet` and
    /// `--json`).
    pub fn warn(&self, text: impl AsRef<str>) {
        self.status(format!("warning: {}", text.as_ref()));
    }

    /// Paint text, if colour is on.
    pub fn paint(&self, text: impl AsRef<str>, style: Style) -> String {
        let text = text.as_ref();
        if !self.color {
            return text.to_owned();
        }
        let code = match style {
            Style::Green => PAINT[0],
            Style::Yellow => PAINT[1],
            Style::Red => PAINT[2],
            Style::Dim => PAINT[3],
            Style::Bold => PAINT[4],
        };
        format!("{code}{}{}", crate::text::terminal_safe(text), PAINT[5])
    }

    /// Print rows as aligned columns (the last column is not padded).
    pub fn table(&self, header: &[&str], rows: &[Vec<String>]) {
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for row in rows {
            for (i, cell) in row.iter().enumerate() {
                if let Some(w) = widths.get_mut(i) {
                    *w = (*w).max(cell.chars().count());
                }
            }
        }
        let format_row = |cells: Vec<String>| {
            let last = cells.len().saturating_sub(1);
            cells
                .into_iter()
                .enumerate()
                .map(|(i, c)| {
                    if i == last {
                        c
                    } else {
                        let pad = widths[i].saturating_sub(c.chars().count());
                        format!("{c}{}", " ".repeat(pad))
                    }
                })
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_owned()
        };
        self.line(self.paint(
            format_row(header.iter().map(|h| h.to_string()).collect()),
            Style::Bold,
        ));
        for row in rows {
            self.line(format_row(row.clone()));
        }
    }
}

/// "5m ago"-style age of a Unix time.
pub fn ago(then_secs: i64) -> String {
    let now = crate::time::Timestamp::now().secs() as i64;
    let d = (now - then_secs).max(0);
    match d {
        0..=59 => format!("{d}s ago"),
        60..=3599 => format!("{}m ago", d / 60),
        3600..=86_399 => format!("{}h ago", d / 3600),
        _ => format!("{}d ago", d / 86_400),
    }
}
