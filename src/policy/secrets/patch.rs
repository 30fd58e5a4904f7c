//! Reading patches for the scanner: what `git diff -U0` and `git log -p -U0` print, merge
//! commits' combined diffs (`--cc`) and commit messages included.
//!
//! Why combined diffs: `git log -p` shows a merge no diff at all, so a secret written while
//! resolving a merge ("evil merge") would leave unseen. A combined diff shows exactly the
//! lines the merge result has that no parent has (every prefix column `+`), which is what
//! the merge itself adds; lines it took from a parent were scanned with that parent's commit.

use super::{check_path, scan_text, Finding, Options};

/// The `path` of a finding in a commit's message.
pub const COMMIT_MESSAGE: &str = "(commit message)";

/// Scan the lines a patch adds (`git diff -U0`, `git log -p -U0 --cc`), reporting file lines
/// and commits; sensitive file names the patch adds to are reported too, and so are commit
/// messages, which `git log` prints indented by four spaces after each `commit <id>` line.
pub fn scan_patch(patch: &str, options: Options) -> Vec<Finding> {
    let mut reader = Reader {
        options,
        parents: 1,
        ..Reader::default()
    };
    for line in patch.lines() {
        reader.line(line);
    }
    reader.flush();
    reader.findings
}

/// Secrets in the message of commit or tag `object`; `what` stands for the file in findings.
pub fn scan_message(
    text: &str,
    what: &str,
    object: Option<&str>,
    options: Options,
) -> Vec<Finding> {
    let mut findings = scan_text(text, Some(what), options);
    for f in &mut findings {
        f.commit = object.map(str::to_owned);
    }
    findings
}

/// Where a patch reader is, and what it has found so far.
#[derive(Default)]
struct Reader {
    options: Options,
    findings: Vec<Finding>,
    commit: Option<String>,
    /// Between `commit <id>` and the commit's first file: message lines are read.
    in_message: bool,
    message: String,
    file: AddedLines,
    in_hunk: bool,
    /// Prefix columns of a hunk line: 1, or a merge's number of parents.
    parents: usize,
}

impl Reader {
    fn line(&mut self, line: &str) {
        // No hunk line starts with a letter (each has a `+`, `-`, ` ` or `\` prefix) and
        // message lines are indented, so these headers cannot be forged by content.
        if let Some(id) = line.strip_prefix("commit ") {
            self.flush();
            self.commit = id.split_whitespace().next().map(str::to_owned);
            self.in_message = true;
        } else if line.starts_with("diff --git ")
            || line.starts_with("diff --cc ")
            || line.starts_with("diff --combined ")
        {
            self.flush();
            self.parents = 1;
        } else if self.in_message {
            if let Some(text) = line.strip_prefix("    ") {
                self.message.push_str(text);
            }
            if line.is_empty() || line.starts_with("    ") {
                self.message.push('\n');
            }
        } else if line.starts_with('@') {
            self.in_hunk = true;
            self.parents = line.bytes().take_while(|b| *b == b'@').count().max(2) - 1;
            self.file.next_line = hunk_new_start(line).unwrap_or(1);
        } else if let Some(path) = line.strip_prefix("+++ ").filter(|_| !self.in_hunk) {
            self.file.path = path.strip_prefix("b/").map(str::to_owned);
        } else if self.in_hunk {
            let Some(prefix) = line.get(..self.parents) else {
                return;
            };
            if prefix.bytes().all(|b| b == b'+') {
                self.file.push(&line[self.parents..]);
            } else if !prefix.bytes().any(|b| b == b'-' || b == b'\\') {
                self.file.next_line += 1;
            }
        }
    }

    /// Scan what was read of the current file and message.
    fn flush(&mut self) {
        self.in_hunk = false;
        self.in_message = false;
        let message = std::mem::take(&mut self.message);
        self.findings.extend(scan_message(
            &message,
            COMMIT_MESSAGE,
            self.commit.as_deref(),
            self.options,
        ));
        let file = std::mem::take(&mut self.file);
        let Some(path) = file.path else {
            return;
        };
        if !file.numbers.is_empty() || self.commit.is_none() {
            if let Some(mut f) = check_path(&path) {
                f.commit = self.commit.clone();
                self.findings.push(f);
            }
        }
        for mut f in scan_text(&file.text, Some(&path), self.options) {
            f.line = file.numbers.get(f.line - 1).copied().unwrap_or(f.line);
            f.commit = self.commit.clone();
            self.findings.push(f);
        }
    }
}

/// The added lines of one file of a patch, joined, with their line numbers in the new file.
#[derive(Default)]
struct AddedLines {
    path: Option<String>,
    text: String,
    numbers: Vec<usize>,
    next_line: usize,
}

impl AddedLines {
    fn push(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
        self.numbers.push(self.next_line);
        self.next_line += 1;
    }
}

/// The new-file start line of a hunk header `@@ -a,b +c,d @@` (or a merge's `@@@ -a -b +c @@@`).
fn hunk_new_start(header: &str) -> Option<usize> {
    let plus = header.split_whitespace().find(|p| p.starts_with('+'))?;
    plus[1..].split(',').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk_live_4kR9tQ2mZ7xW1pL8vN3bH6cJ";

    #[test]
    fn a_merge_is_charged_only_with_what_no_parent_had() {
        let patch = format!(
            "commit 2222222222222222222222222222222222222222\n    Merge branch 'x'\n\ndiff --cc app.py\nindex 1,2..3\n--- a/app.py\n+++ b/app.py\n@@@ -1,1 -1,1 +1,3 @@@\n+ A = \"{KEY}\"\n +B = 2\n++C = \"{KEY}\"\n"
        );
        let found = scan_patch(&patch, Options::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].location(), "app.py:3:6");
        assert_eq!(
            found[0].commit.as_deref(),
            Some("2222222222222222222222222222222222222222")
        );
    }

    #[test]
    fn messages_are_scanned_and_cannot_forge_headers() {
        let patch = format!(
            "commit 3333333333333333333333333333333333333333\n    deploy with {KEY}\n    \n    diff --git a/x b/x\n    +++ b/.env\ndiff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -0,0 +1 @@\n+fine\n"
        );
        let found = scan_patch(&patch, Options::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].location(), "(commit message):1:13");
        assert_eq!(found[0].rule, "stripe-key");
    }

    #[test]
    fn removed_lines_and_no_newline_markers_do_not_count() {
        let patch = format!(
            "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1,2 +1,2 @@\n-old = \"{KEY}\"\n\\ No newline at end of file\n+new = 1\n+k = \"{KEY}\"\n"
        );
        let found = scan_patch(&patch, Options::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].location(), "a:2:6");
    }
}
