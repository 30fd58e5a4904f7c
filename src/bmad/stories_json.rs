//! `stories.json`: an array of `{name, status, dependencies, signatures}`, one per
//! story file. Generated from the stories directory; updated in place: existing entries keep
//! their position (the order is the dependency order its authors chose), new stories are
//! appended in file order, entries whose file is gone are kept and reported, never dropped.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{Error, Result};

/// The file's name, in the stories directory.
pub const FILE_NAME: &str = "stories.json";

/// One signature: who changed what, when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signature {
    /// The agent or user.
    pub agent: String,
    /// RFC 3339.
    pub timestamp: String,
    /// What was done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
}

/// One story.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The story's file name.
    pub name: String,
    /// Its status as the story file writes it.
    pub status: String,
    /// Names of the stories it depends on.
    #[serde(default)]
    pub dependencies: Vec<String>,
    /// The audit trail.
    #[serde(default)]
    pub signatures: Vec<Signature>,
}

/// Read and validate a stories.json.
pub fn load(path: &Path) -> Result<Vec<Entry>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io("could not read", path, e))?;
    parse(path, &text)
}

/// Validate the text of a stories.json against the schema.
pub fn parse(path: &Path, text: &str) -> Result<Vec<Entry>> {
    let entries: Vec<Entry> = serde_json::from_str(text).map_err(|e| Error::Parse {
        path: path.to_path_buf(),
        line: e.line().max(1),
        message: format!("not a valid stories.json ({e}); each entry is {{\"name\", \"status\", \"dependencies\": [..], \"signatures\": [{{\"agent\", \"timestamp\"}}]}}"),
    })?;
    for (i, entry) in entries.iter().enumerate() {
        if entry.name.trim().is_empty() {
            return Err(Error::Parse {
                path: path.to_path_buf(),
                line: 1,
                message: format!("entry {i} has an empty name"),
            });
        }
    }
    Ok(entries)
}

/// A story as found on disk, for [`update`].
#[derive(Clone, Debug)]
pub struct Found {
    /// File name.
    pub name: String,
    /// Status as written.
    pub status: String,
    /// Dependencies from its frontmatter.
    pub dependencies: Vec<String>,
}

/// What [`update`] did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Update {
    /// Entries appended.
    pub added: Vec<String>,
    /// Entries whose status changed.
    pub updated: Vec<String>,
    /// Entries whose file is gone (kept).
    pub orphaned: Vec<String>,
}

/// Bring entries up to date with the files: statuses refreshed (and signed), new stories
/// appended, nothing removed, the order kept.
pub fn update(entries: &mut Vec<Entry>, found: &[Found], by: &str, now: &str) -> Update {
    let mut report = Update::default();
    for entry in entries.iter_mut() {
        match found.iter().find(|f| f.name == entry.name) {
            Some(f) => {
                if f.status != entry.status {
                    entry.signatures.push(Signature {
                        agent: by.to_owned(),
                        timestamp: now.to_owned(),
                        action: Some(format!(
                            "status {} → {} (from the story file)",
                            entry.status, f.status
                        )),
                    });
                    entry.status = f.status.clone();
                    report.updated.push(entry.name.clone());
                }
                for dep in &f.dependencies {
                    if !entry.dependencies.contains(dep) {
                        entry.dependencies.push(dep.clone());
                    }
                }
            }
            None => report.orphaned.push(entry.name.clone()),
        }
    }
    for f in found {
        if !entries.iter().any(|e| e.name == f.name) {
            entries.push(Entry {
                name: f.name.clone(),
                status: f.status.clone(),
                dependencies: f.dependencies.clone(),
                signatures: vec![Signature {
                    agent: by.to_owned(),
                    timestamp: now.to_owned(),
                    action: Some("added".into()),
                }],
            });
            report.added.push(f.name.clone());
        }
    }
    report
}

/// Write entries as pretty JSON, atomically.
pub fn write(path: &Path, entries: &[Entry]) -> Result<()> {
    let mut text = serde_json::to_string_pretty(entries).map_err(|e| Error::Parse {
        path: path.to_path_buf(),
        line: 1,
        message: e.to_string(),
    })?;
    text.push('\n');
    crate::fs::write_atomically(path, text.as_bytes(), None)
        .map_err(|e| Error::io("could not write", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(name: &str, status: &str) -> Found {
        Found {
            name: name.into(),
            status: status.into(),
            dependencies: vec![],
        }
    }

    #[test]
    fn update_keeps_order_appends_and_never_drops() {
        let mut entries = parse(
            Path::new("s.json"),
            r#"[{"name":"1.2.b.md","status":"Draft","dependencies":["1.1.a.md"],"signatures":[]},{"name":"gone.md","status":"Done"}]"#,
        )
        .unwrap();
        let report = update(
            &mut entries,
            &[
                found("1.1.a.md", "Done"),
                found("1.2.b.md", "Approved"),
                found("1.3.é.md", "Draft"),
            ],
            "sm",
            "2026-11-22T00:00:00Z",
        );
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["1.2.b.md", "gone.md", "1.1.a.md", "1.3.é.md"]);
        assert_eq!(report.updated, ["1.2.b.md"]);
        assert_eq!(report.orphaned, ["gone.md"]);
        assert_eq!(entries[0].signatures[0].agent, "sm");
        assert_eq!(entries[0].status, "Approved");
    }

    #[test]
    fn schema_is_enforced() {
        for bad in [
            r#"{}"#,
            r#"[{"name":"x"}]"#,
            r#"[{"name":"x","status":"Draft","extra":1}]"#,
            r#"[{"name":"","status":"x"}]"#,
            r#"[{"name":"x","status":"y","signatures":[{"agent":"a"}]}]"#,
        ] {
            assert!(parse(Path::new("s.json"), bad).is_err(), "{bad}");
        }
        assert!(parse(Path::new("s.json"), "[]").unwrap().is_empty());
    }
}
