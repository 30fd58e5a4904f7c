//! The secret scanner: credentials in text, in patches (staged changes, commits) and in file
//! names, with entropy thresholds and placeholder filters to keep noise down.
//!
//! A rule's pattern is compiled only when one of its keywords occurs in the text, so clean
//! text (the common case, on every commit) costs one lower-casing and a few substring
//! searches. Findings carry a redacted excerpt, never the secret itself, so printing or
//! journaling a finding cannot leak what it found.
//!
//! Allow comments (`bmad:allow` on the line) let a human accept a false positive in their own
//! commit; they are not honoured for agents ([`Options::honour_allow_comments`]), because an
//! agent that can write the secret can write the comment.

mod patch;
mod rules;
#[cfg(test)]
mod vectors;

use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;

pub use patch::{scan_message, scan_patch};
pub use rules::{all as rules, Confidence, Rule};

/// The marker that suppresses a finding on its line, for humans only.
pub const ALLOW_MARKER: &str = "bmad:allow";

/// Substrings that mark a value as a documentation placeholder rather than a secret.
const PLACEHOLDERS: &[&str] = &[
    "example",
    "xxxxxx",
    "aaaaaa",
    "abcde",
    "00000",
    "sample",
    "*****",
    "placeholder",
    "dummy",
    "changeme",
    "your_",
    "your-",
    "redacted",
    "${",
    "{{",
    // Last, so the password rules can leave them out (see `plausible`).
    "<",
    ">",
];

/// How to scan.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Skip findings on lines carrying [`ALLOW_MARKER`] (never for agents).
    pub honour_allow_comments: bool,
}

/// One thing that looks like a secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The rule that matched.
    pub rule: &'static str,
    /// What the rule detects.
    pub description: &'static str,
    /// High blocks; low warns.
    pub confidence: Confidence,
    /// The file, when known.
    pub path: Option<String>,
    /// 1-based line (in the file, for patches), 0 for a file-name finding.
    pub line: usize,
    /// 1-based column (in bytes).
    pub column: usize,
    /// The commit that added it, when scanning commits.
    pub commit: Option<String>,
    /// The first characters of the secret and its length; never the whole secret.
    pub excerpt: String,
}

impl Finding {
    /// `path:line:col` (or what is known of it).
    pub fn location(&self) -> String {
        let path = self.path.as_deref().unwrap_or("<input>");
        match self.line {
            0 => path.to_owned(),
            line => format!("{path}:{line}:{}", self.column),
        }
    }
}

/// A match before it is tied to a file and line.
struct Hit {
    rule: &'static Rule,
    start: usize,
    end: usize,
}

/// Find secrets in `text`; `path` is only recorded in the findings.
pub fn scan_text(text: &str, path: Option<&str>, options: Options) -> Vec<Finding> {
    let lines = LineIndex::new(text);
    hits(text)
        .into_iter()
        .filter_map(|hit| {
            let (line, column) = lines.position(hit.start);
            if options.honour_allow_comments && lines.line_text(text, line).contains(ALLOW_MARKER) {
                return None;
            }
            Some(Finding {
                rule: hit.rule.id,
                description: hit.rule.description,
                confidence: hit.rule.confidence,
                path: path.map(str::to_owned),
                line,
                column,
                commit: None,
                excerpt: excerpt(&text[hit.start..hit.end]),
            })
        })
        .collect()
}

/// Every string in a JSON value, redacted (keys too): what a script hands the journal is
/// stored only after this.
pub fn redact_json(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => Value::String(redact(&s)),
        Value::Array(items) => Value::Array(items.into_iter().map(redact_json).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (redact(&k), redact_json(v)))
                .collect(),
        ),
        other => other,
    }
}

/// Replace every secret in `text` by `[REDACTED:<rule>]` (for agent output bound for a
/// journal note). Low-confidence matches are redacted too: a note is forever.
pub fn redact(text: &str) -> String {
    let hits = hits(text);
    if hits.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for hit in hits {
        if hit.start < at {
            continue;
        }
        out.push_str(&text[at..hit.start]);
        out.push_str(&format!("[REDACTED:{}]", hit.rule.id));
        at = hit.end;
    }
    out.push_str(&text[at..]);
    out
}

/// The blocking findings in one file about to be stored: its name, then its bytes. A key
/// in a `.sqlite` or a `.pyc` is still a key, so a binary file (a NUL in its first 8 KiB, as
/// git decides) is scanned too, as its printable runs of 8 or more characters, one per line
/// (`strings`): the line of a finding there is the run's number.
pub fn scan_file(path: &str, bytes: &[u8]) -> Vec<Finding> {
    let head = &bytes[..bytes.len().min(8000)];
    let text = if head.contains(&0) {
        std::borrow::Cow::Owned(printable_runs(bytes))
    } else {
        String::from_utf8_lossy(bytes)
    };
    check_path(path)
        .into_iter()
        .chain(scan_text(&text, Some(path), Options::default()))
        .filter(|f| f.confidence == Confidence::High)
        .collect()
}

/// The runs of 8 or more printable ASCII characters of binary bytes, one per line.
fn printable_runs(bytes: &[u8]) -> String {
    let mut out = String::new();
    for run in bytes
        .split(|b| !(b.is_ascii_graphic() || *b == b' ' || *b == b'\t'))
        .filter(|run| run.len() >= 8)
    {
        out.push_str(&String::from_utf8_lossy(run));
        out.push('\n');
    }
    out
}

/// A finding for a file that should never be committed, whatever it contains.
pub fn check_path(path: &str) -> Option<Finding> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let lower = name.to_ascii_lowercase();
    let env_file = lower == ".env"
        || (lower.starts_with(".env.")
            && ![".example", ".sample", ".template", ".dist", ".defaults"]
                .iter()
                .any(|s| lower.ends_with(s)));
    let key_file = [".pem", ".key", ".p12", ".pfx", ".jks", ".keystore"]
        .iter()
        .any(|ext| lower.ends_with(ext))
        || ["id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"].contains(&lower.as_str());
    let (rule, description) = if env_file {
        (
            "env-file",
            "an environment file (.env): keep it out of git, commit a .env.example instead",
        )
    } else if key_file {
        ("key-file", "a key or certificate store file")
    } else {
        return None;
    };
    Some(Finding {
        rule,
        description,
        confidence: Confidence::High,
        path: Some(path.to_owned()),
        line: 0,
        column: 0,
        commit: None,
        excerpt: String::new(),
    })
}

/// All rule matches in `text`, by position, a low-confidence match dropped where it overlaps
/// a high-confidence one.
fn hits(text: &str) -> Vec<Hit> {
    let lower = text.to_ascii_lowercase();
    let mut hits: Vec<Hit> = Vec::new();
    for (rule, regex) in rules::all().iter().zip(compiled()) {
        if !rule.keywords.iter().any(|k| lower.contains(k)) {
            continue;
        }
        let Some(regex) = regex.get_or_init(|| compile(rule)) else {
            continue;
        };
        for caps in regex.captures_iter(text) {
            let Some(m) = caps
                .name("secret")
                .or_else(|| caps.get(1))
                .or_else(|| caps.get(0))
            else {
                continue;
            };
            if plausible(rule, m.as_str()) {
                hits.push(Hit {
                    rule,
                    start: m.start(),
                    end: m.end(),
                });
            }
        }
    }
    hits.sort_by_key(|h| (h.start, std::cmp::Reverse(h.rule.confidence)));
    let high: Vec<(usize, usize)> = hits
        .iter()
        .filter(|h| h.rule.confidence == Confidence::High)
        .map(|h| (h.start, h.end))
        .collect();
    hits.retain(|h| {
        h.rule.confidence == Confidence::High
            || !high.iter().any(|(s, e)| h.start < *e && *s < h.end)
    });
    hits
}

/// One lazily compiled regex per rule, shared by every scan in the process.
fn compiled() -> &'static [OnceLock<Option<Regex>>] {
    static COMPILED: OnceLock<Vec<OnceLock<Option<Regex>>>> = OnceLock::new();
    COMPILED.get_or_init(|| rules::all().iter().map(|_| OnceLock::new()).collect())
}

fn compile(rule: &Rule) -> Option<Regex> {
    match regex::RegexBuilder::new(&rules::pattern_of(rule))
        .size_limit(64 << 20)
        .build()
    {
        Ok(regex) => Some(regex),
        Err(e) => {
            // A rule that does not compile is a bug of ours; the unit tests compile them all.
            tracing::error!(rule = rule.id, error = %e, "secret rule does not compile");
            None
        }
    }
}

/// The rules a server without git-bmad can apply with `grep -P` (see
/// [`crate::policy::export`]): high-confidence ones whose matches need no check of their
/// value beyond the placeholder words ([`placeholder_words`]); `(id, PCRE pattern)`.
pub fn server_rules() -> Vec<(&'static str, String)> {
    rules::all()
        .iter()
        .filter(|r| r.confidence == Confidence::High && !VALUE_CHECKED.contains(&r.id))
        .map(|r| (r.id, rules::pattern_of(r)))
        .collect()
}

/// Words that mark a match as an example, not a credential.
pub fn placeholder_words() -> &'static [&'static str] {
    PLACEHOLDERS
}

/// Rules whose matches [`plausible`] judges by their value (a JWT from the tutorials, a
/// password that is the word "password"): a pattern alone would refuse those.
const VALUE_CHECKED: &[&str] = &[
    "jwt",
    "password-assignment",
    "password-in-environment",
    "url-with-password",
    "database-url-with-password",
    "jdbc-password",
];

/// Whether a match is worth reporting: entropy high enough, not a placeholder, and the
/// rule's own exceptions.
fn plausible(rule: &Rule, secret: &str) -> bool {
    if let Some(min) = rule.entropy {
        if shannon_entropy(secret) <= min {
            return false;
        }
    }
    let lower = secret.to_ascii_lowercase();
    let masked = secret
        .chars()
        .all(|c| matches!(c, '*' | 'x' | 'X' | '.' | '#'));
    // A key block's base64 is long enough to hold any short run by chance (every OpenSSH
    // key body has `AAAAAA`): only words mark it as an example.
    let placeholders: &[&str] = match rule.id {
        "private-key" => &[
            "example",
            "placeholder",
            "redacted",
            "dummy",
            "xxxxxx",
            "...",
        ],
        // A password may hold `<` and `>`; one that is `<…>` is rejected by its shape.
        "password-assignment" | "password-in-environment" => {
            &PLACEHOLDERS[..PLACEHOLDERS.len() - 2]
        }
        _ => PLACEHOLDERS,
    };
    if masked || placeholders.iter().any(|p| lower.contains(p)) {
        return false;
    }
    match rule.id {
        "aws-access-key-id" => !secret.ends_with("EXAMPLE"),
        // The token every JWT tutorial shows (jwt.io's "John Doe"), not a credential.
        "jwt" => !secret.contains("SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"),
        "url-with-password" | "database-url-with-password" | "jdbc-password" => {
            !secret.starts_with('$')
                && ![
                    "password", "pass", "passwd", "pwd", "secret", "user", "test",
                ]
                .contains(&lower.as_str())
        }
        "password-assignment" | "password-in-environment" => looks_like_a_password(secret),
        _ => true,
    }
}

/// Whether a value given to something named like a password is one, not a reference to it
/// (`${DB_PASSWORD}`, `{{ vault.pw }}`, `<password>`, `%(pw)s`, `settings.DB_PASSWORD`, a
/// file such as `/run/secrets/db-password`) or a
/// word a test types: random-looking hex, or mixed character classes, or long and varied.
fn looks_like_a_password(value: &str) -> bool {
    let variable = value
        .strip_prefix('$')
        .is_some_and(|name| name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    let placeholder = value.starts_with('<') && value.ends_with('>');
    // Docker's and Kubernetes' secrets are files: a path names where the password is.
    let path = ["/", "./", "../", "~/", "file:"]
        .iter()
        .any(|p| value.starts_with(p));
    let template = ["{{", "${", "$(", "%("].iter().any(|t| value.contains(t));
    if variable || placeholder || path || template {
        return false;
    }
    let identifier = value.split('.').all(|part| {
        part.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    }) && value.chars().any(|c| c == '.' || c.is_ascii_uppercase())
        && !value.chars().any(|c| c.is_ascii_digit());
    if identifier {
        return false;
    }
    let entropy = shannon_entropy(value);
    let hex = value.len() >= 16 && value.chars().all(|c| c.is_ascii_hexdigit());
    let classes = [
        value.chars().any(|c| c.is_ascii_lowercase()),
        value.chars().any(|c| c.is_ascii_uppercase()),
        value.chars().any(|c| c.is_ascii_digit()),
        value.chars().any(|c| !c.is_ascii_alphanumeric()),
    ]
    .iter()
    .filter(|present| **present)
    .count();
    (hex && entropy > 2.0)
        || (classes >= 3 && value.len() >= 10 && entropy > 2.8)
        || (value.len() >= 20 && entropy > 3.5)
}

/// Shannon entropy in bits per character.
pub fn shannon_entropy(text: &str) -> f64 {
    if text.is_empty() {
        return 0.0;
    }
    let mut counts = [0usize; 256];
    for b in text.bytes() {
        counts[b as usize] += 1;
    }
    let len = text.len() as f64;
    counts
        .iter()
        .filter(|c| **c > 0)
        .map(|c| {
            let p = *c as f64 / len;
            -p * p.log2()
        })
        .sum()
}

/// `ghp_…(40 chars)`: enough to find it, not enough to use it.
fn excerpt(secret: &str) -> String {
    let shown: String = secret.chars().take(4).collect();
    format!("{shown}…({} chars)", secret.chars().count())
}

/// Byte offset → (line, column), both 1-based.
struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    fn new(text: &str) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        LineIndex { starts }
    }

    fn position(&self, offset: usize) -> (usize, usize) {
        let line = self.starts.partition_point(|s| *s <= offset);
        (line, offset - self.starts[line - 1] + 1)
    }

    fn line_text<'t>(&self, text: &'t str, line: usize) -> &'t str {
        let start = self.starts[line - 1];
        let end = self.starts.get(line).copied().unwrap_or(text.len());
        &text[start..end]
    }
}
