//! `sprint-status.yaml`: read every era, write a status change back touching only its line.
//!
//! The file is parsed twice: by serde_yaml, which says whether it is YAML at all and what
//! the values are, and line by line, which says where each `development_status` entry's
//! value sits in the bytes. A change replaces exactly those bytes (quotes kept), plus the
//! `last_updated:` value when the file has one; comments, blank lines, order and the STATUS
//! DEFINITIONS block stay byte for byte. When the two readings disagree (a flow-style map,
//! say), the file is read but never written: git-bmad will not rewrite what it cannot edit
//! in place, because regenerating the file is how BMAD's own tools lost data (#2553).

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest, Sha256};

pub use super::key::{classify, KeyKind};
use super::status::{legal_move, Lifecycle, Status};
use super::write::write_unless_changed;
use super::yaml_lines::{lenient_yaml, split_entry, Lenient};
use super::{Error, Finding, Result};

/// One `development_status` entry.
#[derive(Clone, Debug, Serialize)]
pub struct Entry {
    /// The key, unquoted.
    pub key: String,
    /// The value as written (unquoted).
    pub raw_status: String,
    /// The value, normalised.
    pub status: Status,
    /// What the key names.
    #[serde(flatten)]
    pub kind: KeyKind,
    /// 1-based line.
    pub line: usize,
    /// Bytes of the value (inside any quotes) in the file.
    #[serde(skip)]
    value: Range<usize>,
}

/// A retrospective action item (v6.9+).
#[derive(Clone, Debug, Serialize)]
pub struct ActionItem {
    /// The epic.
    pub epic: Option<String>,
    /// What to do.
    pub action: String,
    /// Who.
    pub owner: Option<String>,
    /// open, in-progress, done.
    pub status: Option<String>,
}

/// A sprint-status file, read.
#[derive(Clone, Debug, Serialize)]
pub struct SprintStatus {
    /// The file.
    pub path: PathBuf,
    /// `generated:` as written (it can be anything, `05-06-2-2025 21:30` included).
    pub generated: Option<String>,
    /// `last_updated:` as written.
    pub last_updated: Option<String>,
    /// `project:`.
    pub project: Option<String>,
    /// `story_location:` as written.
    pub story_location: Option<String>,
    /// The entries, in file order.
    pub entries: Vec<Entry>,
    /// `action_items:`.
    pub action_items: Vec<ActionItem>,
    /// Odd things that do not stop reading.
    pub warnings: Vec<Finding>,
    /// Whether changes can be written back in place.
    pub editable: bool,
    #[serde(skip)]
    text: String,
    #[serde(skip)]
    last_updated_value: Option<Range<usize>>,
    /// Keys written more than once in `development_status`: read, never changed.
    #[serde(skip)]
    repeated: Vec<String>,
    #[serde(skip)]
    fingerprint: [u8; 32],
}

/// What `set` changed.
#[derive(Clone, Debug, Serialize)]
pub struct SprintChange {
    /// The key.
    pub key: String,
    /// Status before, as written.
    pub from: String,
    /// Status after.
    pub to: String,
    /// The epic lifted to in-progress with it, if any.
    pub epic_lifted: Option<String>,
    /// The lines changed (1-based).
    pub lines: Vec<usize>,
}

impl SprintStatus {
    /// Read and parse a file.
    pub fn load(path: &Path) -> Result<SprintStatus> {
        let bytes = std::fs::read(path).map_err(|e| Error::io("could not read", path, e))?;
        let text = String::from_utf8(bytes).map_err(|e| Error::Parse {
            path: path.to_path_buf(),
            line: 1,
            message: format!("not UTF-8: {e}"),
        })?;
        Self::parse(path, text)
    }

    /// Parse the text of a file.
    pub fn parse(path: &Path, text: String) -> Result<SprintStatus> {
        let parse_error = |e: crate::config::yaml::DeError| Error::Parse {
            path: path.to_path_buf(),
            line: e.location.map_or(1, |l| l.0),
            message: e.to_string(),
        };
        // A key written twice, or a value BMAD writes unquoted that is not strict YAML, stops
        // no command: the file is read the lenient way BMAD's own workflows read it.
        let Lenient {
            doc,
            repeated,
            as_text,
        } = lenient_yaml(&text).map_err(parse_error)?;
        let scalar = |key: &str| -> Option<String> {
            match doc.get(key)? {
                crate::config::yaml::Data::String(s) => Some(s.clone()),
                crate::config::yaml::Data::Null => None,
                other => Some(crate::config::yaml::to_string(other).trim().to_owned()),
            }
        };
        let mut status = SprintStatus {
            path: path.to_path_buf(),
            generated: scalar("generated"),
            last_updated: scalar("last_updated"),
            project: scalar("project"),
            story_location: scalar("story_location"),
            entries: Vec::new(),
            action_items: Vec::new(),
            warnings: Vec::new(),
            editable: true,
            last_updated_value: None,
            repeated: Vec::new(),
            fingerprint: Sha256::digest(text.as_bytes()).into(),
            text: String::new(),
        };
        // Read leniently or not, the section holds keys; anything else is no sprint status.
        let section = doc.get("development_status");
        if !doc.is_mapping() && !doc.is_null()
            || section.is_some_and(|d| !d.is_mapping() && !d.is_null())
        {
            return Err(Error::Parse {
                path: path.to_path_buf(),
                line: 1,
                message: "a sprint-status file is a mapping with a development_status section of keys and statuses"
                    .into(),
            });
        }
        status.read_lines(&text);
        for line in as_text {
            status.warnings.push(Finding::line_warning(line, "this value is not strict YAML (as BMAD's sprint-planning writes `story_location`); it is read as the text it is, as BMAD's own workflows read it".into()));
        }
        for (key, line, first) in &repeated {
            status.warnings.push(Finding::line_error(*line,
                format!("`{key}` is written twice (first at line {first}); BMAD's parser refuses the file until one is removed. git-bmad reads the first and will not change `{key}`"),
            ));
            status.repeated.push(key.clone());
        }
        status.entries.retain({
            let mut seen = std::collections::HashSet::new();
            move |e| seen.insert(e.key.clone())
        });
        status.cross_check(&doc);
        if let Some(items) = doc.get("action_items").and_then(|v| v.as_sequence()) {
            for item in items {
                let field = |k: &str| match item.get(k) {
                    Some(crate::config::yaml::Data::String(s)) => Some(s.clone()),
                    Some(crate::config::yaml::Data::Number(n)) => Some(n.to_string()),
                    _ => None,
                };
                status.action_items.push(ActionItem {
                    epic: field("epic"),
                    action: field("action").unwrap_or_default(),
                    owner: field("owner"),
                    status: field("status"),
                });
            }
        }
        for entry in &status.entries {
            if entry.kind == KeyKind::Unknown {
                status.warnings.push(Finding::line_warning(entry.line, format!("key `{}` is neither an epic, a retrospective nor a story (N-M-slug); kept as it is", entry.key)));
            }
            if let Status::Other(word) = &entry.status {
                // What the schedulers do with it, by the rule they share.
                let why = entry.status.why_no_run().unwrap_or_default();
                status.warnings.push(Finding::line_warning(
                    entry.line,
                    format!(
                        "status `{word}` of `{}` is not a BMAD status; kept as it is, and no run starts it: {why}",
                        entry.key
                    ),
                ));
            }
        }
        if doc.get("development_status").is_none() {
            status.warnings.push(Finding::line_warning(
                1,
                "no development_status section".to_owned(),
            ));
        }
        status.text = text;
        Ok(status)
    }

    /// Find `development_status:` and its entries, and `last_updated:`, by line.
    fn read_lines(&mut self, text: &str) {
        let mut offset = 0;
        let mut in_section = false;
        for (n, line) in text.split_inclusive('\n').enumerate() {
            let start = offset;
            offset += line.len();
            let body = line.trim_end_matches(['\n', '\r']);
            let trimmed = body.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let indented = body.len() != trimmed.len();
            if !indented {
                in_section = false;
                if let Some((key, value)) = split_entry(body) {
                    match key.as_str() {
                        "development_status" if value.is_none() => in_section = true,
                        "last_updated" => {
                            self.last_updated_value = value.map(|r| start + r.start..start + r.end)
                        }
                        _ => {}
                    }
                }
                continue;
            }
            if !in_section {
                continue;
            }
            let indent = body.len() - trimmed.len();
            let Some((key, value)) = split_entry(trimmed) else {
                continue;
            };
            let Some(value) = value else {
                continue;
            };
            let raw = &trimmed[value.clone()];
            self.entries.push(Entry {
                kind: classify(&key),
                status: Status::parse(raw),
                raw_status: raw.to_owned(),
                key,
                line: n + 1,
                value: start + indent + value.start..start + indent + value.end,
            });
        }
    }

    /// The line reading must agree with the YAML reading, or the file is read-only.
    fn cross_check(&mut self, doc: &crate::config::yaml::Data) {
        let Some(section) = doc.get("development_status") else {
            self.editable = false;
            return;
        };
        let Some(map) = section.as_mapping() else {
            if !section.is_null() {
                self.editable = false;
                self.warnings.push(Finding::line_warning(
                    1,
                    "development_status is not a mapping".into(),
                ));
            }
            return;
        };
        let yaml: Vec<(String, String)> = map
            .iter()
            .map(|(k, v)| {
                let text = |v: &crate::config::yaml::Data| match v {
                    crate::config::yaml::Data::String(s) => s.clone(),
                    other => crate::config::yaml::to_string(other).trim().to_owned(),
                };
                (text(k), text(v))
            })
            .collect();
        let lines: Vec<(String, String)> = self
            .entries
            .iter()
            .map(|e| (e.key.clone(), e.raw_status.clone()))
            .collect();
        if yaml != lines {
            // Trust the YAML reading for values; never write.
            self.editable = false;
            self.warnings.push(Finding::line_warning(1,
                "development_status is laid out in a way git-bmad cannot edit in place (flow style, multi-line values or anchors); it is read, never written".into(),
            ));
            self.entries = yaml
                .into_iter()
                .map(|(key, raw)| Entry {
                    kind: classify(&key),
                    status: Status::parse(&raw),
                    raw_status: raw,
                    key,
                    line: 0,
                    value: 0..0,
                })
                .collect();
        }
    }

    /// The file's text as it was read.
    pub fn original(&self) -> &str {
        &self.text
    }

    /// The entry of a key.
    pub fn entry(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.key == key)
    }

    /// Story entries, in file order.
    pub fn stories(&self) -> impl Iterator<Item = &Entry> {
        self.entries
            .iter()
            .filter(|e| matches!(e.kind, KeyKind::Story { .. }))
    }

    /// The text with `key`'s status set to `to` (and its epic lifted, and `last_updated`
    /// stamped), and what changed. Nothing is written.
    pub fn with_status(
        &self,
        key: &str,
        to: &Status,
        force: bool,
        now: &crate::time::Timestamp,
    ) -> Result<(String, SprintChange)> {
        if !self.editable {
            return Err(Error::NotEditable {
                path: self.path.clone(),
            });
        }
        let entry = self.entry(key).ok_or_else(|| Error::UnknownKey {
            key: key.to_owned(),
            path: self.path.clone(),
        })?;
        if self.repeated.iter().any(|k| k == key) {
            return Err(Error::Parse {
                path: self.path.clone(),
                line: entry.line,
                message: format!(
                    "`{key}` is written more than once; remove the extra line, then set it"
                ),
            });
        }
        let lifecycle = Lifecycle::of(key, &entry.kind);
        // A word BMAD's own tools would reset is refused even with --force.
        lifecycle
            .sprint_word(to)
            .and_then(|()| match force {
                true => Ok(()),
                false => legal_move(lifecycle, &entry.status, to),
            })
            .map_err(|why| Error::IllegalTransition {
                key: key.to_owned(),
                why,
            })?;
        let mut edits: Vec<(Range<usize>, String)> =
            vec![(entry.value.clone(), to.as_str().to_owned())];
        let mut lines = vec![entry.line];
        let mut epic_lifted = None;
        if let KeyKind::Story { epic, .. } = entry.kind {
            let moved_on = to.rank().is_some_and(|r| r >= 1);
            if let Some(epic_entry) = self
                .entries
                .iter()
                .find(|e| e.kind == KeyKind::Epic { epic })
            {
                if moved_on && epic_entry.status == Status::Backlog {
                    edits.push((
                        epic_entry.value.clone(),
                        Status::InProgress.as_str().to_owned(),
                    ));
                    lines.push(epic_entry.line);
                    epic_lifted = Some(epic_entry.key.clone());
                }
            }
        }
        if let (Some(range), Some(old)) = (&self.last_updated_value, &self.last_updated) {
            edits.push((range.clone(), stamp_like(old, now)));
            let line = self.text[..range.start].matches('\n').count() + 1;
            lines.push(line);
        }
        edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
        let mut text = self.text.clone();
        for (range, value) in edits {
            text.replace_range(range, &value);
        }
        lines.sort_unstable();
        Ok((
            text,
            SprintChange {
                key: key.to_owned(),
                from: entry.raw_status.clone(),
                to: to.as_str().to_owned(),
                epic_lifted,
                lines,
            },
        ))
    }

    /// Write a text produced by [`with_status`](Self::with_status), unless the file changed
    /// since it was read.
    pub fn write(&self, text: &str) -> Result<()> {
        write_unless_changed(&self.path, &self.fingerprint, text)
    }
}

/// A time in the format of the value it replaces, when it is one `sprint_plan.py` reads
/// (`STAMP_FORMATS`: `%m-%d-%Y %H:%M`, `%Y-%m-%d %H:%M`, `%Y-%m-%d`) or an RFC 3339 stamp;
/// anything else (free text) becomes BMAD's own `MM-DD-YYYY HH:MM`, which its parser reads.
fn stamp_like(old: &str, now: &crate::time::Timestamp) -> String {
    // 2026-11-22T06:10:07Z
    let rfc = now.rfc3339();
    let (year, month, day, hm) = (&rfc[0..4], &rfc[5..7], &rfc[8..10], &rfc[11..16]);
    let shape: String = old
        .trim()
        .chars()
        .map(|c| if c.is_ascii_digit() { '9' } else { c })
        .collect();
    match shape.as_str() {
        "9999-99-99 99:99" => format!("{year}-{month}-{day} {hm}"),
        "9999-99-99" => format!("{year}-{month}-{day}"),
        s if s.starts_with("9999-99-99T99:99") => rfc,
        _ => format!("{month}-{day}-{year} {hm}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V6: &str = "# generated: 2026-01-01\n# STATUS DEFINITIONS:\n#   - backlog: x\n\ngenerated: 05-06-2-2025 21:30\nlast_updated: 05-06-2025 21:30\nproject: Demo\nstory_location: \"{project-root}/docs/stories\"\n\ndevelopment_status:\n  epic-1: backlog\n  1-1-login: ready-for-dev   # first\n  '1-2-profile': \"backlog\"\n  # a comment inside the map\n  1-6-mcp-player-profile-权限门: drafted\n  6-9-1-deep: backlog\n  1-12a-suffix: backlog\n  epic-1-retrospective: optional\n\n  epic-2: contexted\n  2-1-x: completed\n  epic-2-retro-item-1-fix-ci: awaiting-operator\n\naction_items:\n  - epic: 1\n    action: \"Add a review step\"\n    owner: Charlie\n    status: open\n";

    fn load(text: &str) -> SprintStatus {
        SprintStatus::parse(Path::new("s.yaml"), text.to_owned()).unwrap()
    }

    #[test]
    fn reads_every_variant() {
        let s = load(V6);
        assert!(s.editable);
        assert_eq!(s.generated.as_deref(), Some("05-06-2-2025 21:30"));
        let keys: Vec<(&str, &str)> = s
            .entries
            .iter()
            .map(|e| (e.key.as_str(), e.status.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                ("epic-1", "backlog"),
                ("1-1-login", "ready-for-dev"),
                ("1-2-profile", "backlog"),
                ("1-6-mcp-player-profile-权限门", "ready-for-dev"),
                ("6-9-1-deep", "backlog"),
                ("1-12a-suffix", "backlog"),
                ("epic-1-retrospective", "optional"),
                ("epic-2", "in-progress"),
                ("2-1-x", "done"),
                ("epic-2-retro-item-1-fix-ci", "awaiting-operator"),
            ]
        );
        assert_eq!(
            s.entries[4].kind,
            KeyKind::Story {
                epic: 6,
                number: "9.1".into()
            }
        );
        assert_eq!(
            s.entries[5].kind,
            KeyKind::Story {
                epic: 1,
                number: "12a".into()
            }
        );
        assert_eq!(s.entries[9].kind, KeyKind::RetroItem { epic: 2, item: 1 });
        assert_eq!(s.entries[1].line, 12);
        assert_eq!(s.action_items[0].owner.as_deref(), Some("Charlie"));
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
    }

    #[test]
    fn a_change_touches_its_line_the_epic_and_last_updated_only() {
        let s = load(V6);
        let now = crate::time::Timestamp::from_secs(1_795_000_000);
        let (text, change) = s
            .with_status("1-1-login", &Status::InProgress, false, &now)
            .unwrap();
        assert_eq!(change.epic_lifted.as_deref(), Some("epic-1"));
        let old: Vec<&str> = V6.lines().collect();
        let new: Vec<&str> = text.lines().collect();
        assert_eq!(old.len(), new.len());
        let changed: Vec<usize> = (0..old.len())
            .filter(|i| old[*i] != new[*i])
            .map(|i| i + 1)
            .collect();
        assert_eq!(changed, change.lines);
        assert_eq!(new[11], "  1-1-login: in-progress   # first");
        assert_eq!(new[10], "  epic-1: in-progress");
        assert!(
            new[5].starts_with("last_updated: ")
                && new[5].len() == "last_updated: 05-06-2025 21:30".len(),
            "{}",
            new[5]
        );
        // Quotes are kept.
        let (text, _) = s
            .with_status("1-2-profile", &Status::ReadyForDev, false, &now)
            .unwrap();
        assert!(text.contains("  '1-2-profile': \"ready-for-dev\"\n"));
        // Backwards is refused unless forced.
        let err = s
            .with_status("2-1-x", &Status::Review, false, &now)
            .unwrap_err()
            .to_string();
        assert!(err.contains("goes backwards"), "{err}");
        assert!(s.with_status("2-1-x", &Status::Review, true, &now).is_ok());
    }

    #[test]
    fn keys_outside_the_grammar_move_as_their_name_says() {
        let s = load("development_status:\n  epic-2.5: in-progress\n  2.5-1-fix: ready-for-dev\n  epic-2.5-retrospective: optional\n");
        let now = crate::time::Timestamp::from_secs(1_795_000_000);
        // An epic: in-progress → done is its next stage, backlog is backwards.
        assert!(s
            .with_status("epic-2.5", &Status::Done, false, &now)
            .is_ok());
        let err = s
            .with_status("epic-2.5", &Status::Backlog, false, &now)
            .unwrap_err()
            .to_string();
        assert!(err.contains("an epic moves"), "{err}");
        // A retrospective: optional → done.
        assert!(s
            .with_status("epic-2.5-retrospective", &Status::Done, false, &now)
            .is_ok());
        // Anything else keeps the story lifecycle.
        assert!(s
            .with_status("2.5-1-fix", &Status::InProgress, false, &now)
            .is_ok());
        assert!(s
            .with_status("2.5-1-fix", &Status::Done, false, &now)
            .is_err());
    }

    #[test]
    fn flow_style_is_read_not_written() {
        let s = load("development_status: {epic-1: backlog, 1-1-a: done}\n");
        assert!(!s.editable);
        assert_eq!(s.entries.len(), 2);
        let now = crate::time::Timestamp::from_secs(0);
        assert!(s.with_status("1-1-a", &Status::Review, true, &now).is_err());
    }

    #[test]
    fn no_panic_on_odd_input() {
        for text in [
            "",
            "x",
            "- a",
            "development_status:\n  : x\n",
            "development_status:\n  'a: b\n",
            "development_status:\n  a: 'b\n",
            ":\n  :",
            "development_status:\n  \"\": \"\"\n",
        ] {
            let _ = SprintStatus::parse(Path::new("s"), text.to_owned());
        }
    }
}
