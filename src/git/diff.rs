//! Diffs read back: the lines a range of history added and removed, per file (what an epic's
//! integration checkpoint reads to see which files a story changed and which public items it
//! touched), and the diff of two texts for a person to review.

use super::error::Result;
use super::repo::Repo;
use gix::ObjectId;

/// One file's changed lines from one commit to another.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChangedFile {
    /// The path after the change (before it, for a deleted file).
    pub path: String,
    /// Lines added, without the `+`.
    pub added: Vec<String>,
    /// Lines removed, without the `-`.
    pub removed: Vec<String>,
}

/// One changed path between two trees, from `git diff-tree --raw`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TreeChange {
    /// `A` added, `D` deleted, `M` modified, `T` type changed (file ↔ symlink ↔ submodule).
    pub status: char,
    /// The path, relative to the worktree root.
    pub path: String,
    /// Mode before (`000000` when added).
    pub old_mode: String,
    /// Mode after (`000000` when deleted).
    pub new_mode: String,
    /// The object after (all zeros when deleted): two changes to one path with the same
    /// `new_id` left the same content.
    pub new_id: String,
}

impl Repo {
    /// A unified diff from blob `from` to blob `to`, its sides named by the labels; empty
    /// when they are the same.
    pub fn diff_blobs(
        &self,
        (from, from_label): (ObjectId, &str),
        (to, to_label): (ObjectId, &str),
    ) -> Result<String> {
        let out = self.git()?.run([
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            &from.to_string(),
            &to.to_string(),
        ])?;
        let text = String::from_utf8_lossy(&out);
        // git names the sides by object id: the hunks alone, under the caller's names.
        let Some(hunks) = text.find("\n@@").map(|at| &text[at + 1..]) else {
            return Ok(String::new());
        };
        Ok(format!("--- {from_label}\n+++ {to_label}\n{hunks}"))
    }

    /// A unified diff of `paths` from commit `from` to commit `to`.
    pub fn diff_paths(&self, from: ObjectId, to: ObjectId, paths: &[&str]) -> Result<String> {
        let (from, to) = (from.to_string(), to.to_string());
        let mut args = vec![
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            from.as_str(),
            to.as_str(),
            "--",
        ];
        // Names, not patterns: a path may hold `*` or start with `:`.
        let literal: Vec<String> = paths.iter().map(|p| format!(":(literal){p}")).collect();
        args.extend(literal.iter().map(String::as_str));
        let out = self.git()?.run(args)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// The paths that differ between two trees (or commits).
    pub fn diff_trees(&self, from: ObjectId, to: ObjectId) -> Result<Vec<TreeChange>> {
        let out = self.git()?.run([
            "diff-tree",
            "-r",
            "-z",
            "--raw",
            "--no-renames",
            &from.to_string(),
            &to.to_string(),
        ])?;
        Ok(parse_raw_diff(&out))
    }

    /// Every file changed from `from` to `to`, with the lines added and removed (`-U0`, no
    /// renames, so a moved file is one removed and one added). Binary files are listed with
    /// no lines.
    pub fn changed_lines(&self, from: ObjectId, to: ObjectId) -> Result<Vec<ChangedFile>> {
        let out = self.git()?.run([
            "diff",
            "-U0",
            "--no-renames",
            "--no-color",
            "--no-ext-diff",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            &from.to_string(),
            &to.to_string(),
        ])?;
        Ok(parse_patch(&String::from_utf8_lossy(&out)))
    }
}

/// Parse `diff-tree -z --raw`: `:<old mode> <new mode> <old> <new> <status>\0<path>\0`.
fn parse_raw_diff(out: &[u8]) -> Vec<TreeChange> {
    let mut fields = out.split(|b| *b == 0);
    let mut changes = Vec::new();
    while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
        let meta = String::from_utf8_lossy(meta);
        let parts: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        if parts.len() < 5 {
            continue;
        }
        changes.push(TreeChange {
            status: parts[4].chars().next().unwrap_or('M'),
            path: String::from_utf8_lossy(path).into_owned(),
            old_mode: parts[0].to_owned(),
            new_mode: parts[1].to_owned(),
            new_id: parts[3].to_owned(),
        });
    }
    changes
}

/// Read a unified diff's files and lines. Paths come from `diff --git a/x b/x`, then from
/// the `+++`/`---` lines, which name a deleted file's old path.
fn parse_patch(patch: &str) -> Vec<ChangedFile> {
    let mut files: Vec<ChangedFile> = Vec::new();
    let mut in_hunk = false;
    for line in patch.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            let path = rest
                .rsplit_once(" b/")
                .map(|(_, b)| b)
                .unwrap_or(rest)
                .to_owned();
            files.push(ChangedFile {
                path,
                ..Default::default()
            });
            in_hunk = false;
            continue;
        }
        let Some(file) = files.last_mut() else {
            continue;
        };
        if line.starts_with("@@") {
            in_hunk = true;
        } else if !in_hunk {
            if let Some(path) = line.strip_prefix("+++ b/") {
                file.path = path.to_owned();
            } else if let Some(path) = line.strip_prefix("--- a/") {
                file.path = path.to_owned();
            }
        } else if let Some(added) = line.strip_prefix('+') {
            file.added.push(added.to_owned());
        } else if let Some(removed) = line.strip_prefix('-') {
            file.removed.push(removed.to_owned());
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_their_lines_are_read_from_a_zero_context_patch() {
        let patch = "diff --git a/src/a.rs b/src/a.rs\nindex 1..2 100644\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1 +1,2 @@\n-pub fn old() {}\n+pub fn new() {}\n+--- not a header\ndiff --git a/gone.ts b/gone.ts\ndeleted file mode 100644\n--- a/gone.ts\n+++ /dev/null\n@@ -1 +0,0 @@\n-export const x = 1;\ndiff --git a/img.png b/img.png\nnew file mode 100644\nBinary files /dev/null and b/img.png differ\n";
        let files = parse_patch(patch);
        assert_eq!(files.len(), 3);
        assert_eq!(files[0].path, "src/a.rs");
        assert_eq!(files[0].removed, vec!["pub fn old() {}"]);
        assert_eq!(files[0].added, vec!["pub fn new() {}", "--- not a header"]);
        assert_eq!(files[1].path, "gone.ts");
        assert_eq!(files[1].removed, vec!["export const x = 1;"]);
        assert!(files[1].added.is_empty());
        assert_eq!(files[2].path, "img.png");
        assert!(files[2].added.is_empty() && files[2].removed.is_empty());
    }

    #[test]
    fn parses_raw_diff() {
        let out = b":100644 100755 aaaa bbbb M\0bin/run me\0:000000 120000 0000 cccc A\0l\xc3\xa9nk\0:100644 000000 dddd 0000 D\0gone\0";
        let changes = parse_raw_diff(out);
        assert_eq!(changes.len(), 3);
        assert_eq!(changes[0].status, 'M');
        assert_eq!(changes[0].path, "bin/run me");
        assert_eq!(changes[0].new_mode, "100755");
        assert_eq!(changes[0].new_id, "bbbb");
        assert_eq!(changes[1].path, "lénk");
        assert_eq!(changes[2].status, 'D');
    }
}
