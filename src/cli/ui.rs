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

/// What [`Ui::paint`] puts before each of its sequences, so that the output filter keeps
/// only those: a private-use character and a number drawn anew by every process. The same
/// sequence written by an agent or a remote (a session name of `\x1b[31m`) lacks it and is
/// shown as an escape, wherever it stands.
fn paint_tag() -> &'static str {
    static TAG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TAG.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        format!("\u{e000}{:016x}\u{e001}", hasher.finish())
    })
}

/// Our own sequences as painted: each behind the tag.
fn tagged_paint() -> &'static [String] {
    static TAGGED: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    TAGGED.get_or_init(|| {
        PAINT
            .iter()
            .map(|p| format!("{}{p}", paint_tag()))
            .collect()
    })
}

/// Human output with every control character shown as an escape but our own colours.
pub fn safe_for_terminal(text: &str) -> String {
    let ours: Vec<&str> = tagged_paint().iter().map(String::as_str).collect();
    let safe = crate::text::terminal_safe_keeping(text, &ours);
    if safe.contains(paint_tag()) {
        safe.replace(paint_tag(), "")
    } else {
        safe
    }
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
        let paint = tagged_paint();
        let code = match style {
            Style::Green => &paint[0],
            Style::Yellow => &paint[1],
            Style::Red => &paint[2],
            Style::Dim => &paint[3],
            Style::Bold => &paint[4],
        };
        format!("{code}{}{}", crate::text::terminal_safe(text), paint[5])
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_own_paint_reaches_the_terminal_whatever_the_text_holds() {
        let ui = Ui {
            json: false,
            quiet: false,
            color: true,
        };
        // A remote's name that holds the very colour codes git-bmad paints with.
        let name = "\x1b[31mfeat\x1b[0m";
        let line = safe_for_terminal(&format!("{} {name}", ui.paint("running", Style::Green)));
        assert_eq!(line, "\x1b[32mrunning\x1b[0m \\x1b[31mfeat\\x1b[0m");
        // Inside a painted span too.
        let line = safe_for_terminal(&ui.paint(name, Style::Bold));
        assert_eq!(line, "\x1b[1m\\x1b[31mfeat\\x1b[0m\x1b[0m");
        // Text without colour is left as it is.
        assert_eq!(safe_for_terminal("plain \u{e000}"), "plain \u{e000}");
    }
}
