//! What a validator found and where, shared by every validator that reports
//! `file:line:col: severity:` (playbooks, workflows, templates, instructions).

use std::fmt;

use serde::Serialize;

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// It cannot work as written.
    Error,
    /// It works, but probably not as meant.
    Warning,
}

impl Severity {
    /// `error` or `warning`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// A finding with its place: `file:line:col: severity: [field: ]message`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The file, as shown to the user; empty when the caller names it (a playbook's own
    /// findings, rendered with [`Diagnostic::render`]).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub file: String,
    /// 1-based line (0: the file as a whole).
    pub line: usize,
    /// 1-based column (0: unknown).
    pub col: usize,
    /// The field, as a path (`steps[2].autonomy`), in a file of named fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// What is wrong and what would be right.
    pub message: String,
    /// How to fix it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl Diagnostic {
    /// A warning at a place of `file`.
    pub fn warning(file: &str, line: usize, col: usize, message: String) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            file: file.to_owned(),
            line,
            col,
            field: None,
            message,
            hint: None,
        }
    }

    /// An error at a place of `file`.
    pub fn error(file: &str, line: usize, col: usize, message: String) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            ..Diagnostic::warning(file, line, col, message)
        }
    }

    /// A warning at `line` of a file the caller names.
    pub fn line_warning(line: usize, message: String) -> Diagnostic {
        Diagnostic::warning("", line, 0, message)
    }

    /// An error at `line` of a file the caller names.
    pub fn line_error(line: usize, message: String) -> Diagnostic {
        Diagnostic::error("", line, 0, message)
    }

    /// A finding about the field `field` at `line`:`col` of a file the caller names.
    pub fn at_field(
        severity: Severity,
        line: usize,
        col: usize,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic {
            severity,
            field: Some(field.into()),
            ..Diagnostic::warning("", line, col, message.into())
        }
    }

    /// With a fix hint.
    pub fn hint(mut self, hint: impl Into<String>) -> Diagnostic {
        self.hint = Some(hint.into());
        self
    }

    /// `file:line:col: severity: [field: ]message[ (fix: hint)]`, with `file` named here.
    pub fn render(&self, file: &str) -> String {
        let mut out = format!(
            "{file}:{}:{}: {}: ",
            self.line,
            self.col,
            self.severity.as_str()
        );
        if let Some(field) = &self.field {
            out.push_str(&format!("{field}: "));
        }
        out.push_str(&self.message);
        if let Some(h) = &self.hint {
            out.push_str(&format!(" (fix: {h})"));
        }
        out
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(&self.file))
    }
}

#[cfg(test)]
pub(crate) mod testing {
    /// `count` strings of up to `max_len` characters drawn from `alphabet` by a fixed-seed
    /// generator: the same inputs every run, for "never panics" property tests.
    pub fn random_strings(alphabet: &str, seed: u64, count: usize, max_len: u64) -> Vec<String> {
        let chars: Vec<char> = alphabet.chars().collect();
        let mut state = seed;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state >> 33
        };
        (0..count)
            .map(|_| {
                let len = next() % (max_len + 1);
                (0..len)
                    .map(|_| chars[next() as usize % chars.len()])
                    .collect()
            })
            .collect()
    }
}
