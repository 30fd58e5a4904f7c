//! How bad a finding is, shared by every validator that reports `file:line:col: severity:`
//! (playbooks, workflows).

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
