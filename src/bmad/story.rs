//! Story files of every era, read for their status, dependencies, tasks and review:
//! v6 (`Status: x` and its bold and joined forms, see [`super::status_field`]), v4
//! (`## Status` heading) and v6.11 specs (`spec-<key>.md`, status in the frontmatter, the
//! lifecycle draft → ready-for-dev → in-progress → in-review → done, plus blocked).
//!
//! A status change rewrites the status value only, in the file's own words, and appends a
//! signed Change Log entry; a v6.11 spec gets none, because its only change log (`## Spec
//! Change Log`) carries constraints bmad-build-auto obeys when it re-derives code.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::change_log::{append_change_log, ChangeEntry};
use super::status::{legal_transition, Status};
use super::status_field::Form;
pub(super) use super::story_match::number_in;
pub use super::story_match::{is_story_name, stem_key};
use super::write::write_unless_changed;
use super::yaml_lines::{names, scalar, value_of};
use super::{Error, Finding, Result};

/// How the file writes its status, and so which words a change writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `Status: ready-for-dev` (or bold): v6 words.
    V6,
    /// `## Status` then the value, `## Status: Draft`, or a capitalised `Status: Approved`:
    /// v4 words.
    V4,
    /// Frontmatter `status: 'in-review'` (v6.11 specs): the spec lifecycle's words.
    Frontmatter,
}

/// A review finding written into the story: `[AI-Review][Severity]` (v6.0–6.2) or
/// `[Review][Patch|Defer|Decision]` (v6.3+), read by [`super::analysis::review::finding`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FollowUp {
    /// Checked?
    pub done: bool,
    /// High, Med, Low, Critical…, or Patch, Defer, Decision.
    pub severity: String,
    /// What to do.
    pub text: String,
    /// `file:line`, if given.
    pub location: Option<String>,
    /// 1-based line in the story.
    pub line: usize,
}

/// A story file, read.
#[derive(Clone, Debug, Serialize)]
pub struct Story {
    /// The file.
    pub path: PathBuf,
    /// The sprint-status key it matches by name (`1-2-account-management`), if its name is one.
    pub key: Option<String>,
    /// Epic and story number (`(1, "2")`), from the name or the title.
    pub number: Option<(u32, String)>,
    /// `# Story 1.2: <title>`.
    pub title: Option<String>,
    /// The status, normalised.
    pub status: Option<Status>,
    /// The status as written.
    pub raw_status: Option<String>,
    /// 1-based line of the status value.
    pub status_line: usize,
    /// v6 or v4.
    pub format: Format,
    /// `depends_on` from the frontmatter.
    pub depends_on: Vec<String>,
    /// `touches` from the frontmatter: paths (or prefixes) the story expects to change.
    pub touches: Vec<String>,
    /// It says it changes no behaviour: `refactor: true` (or `kind:` or `type: refactor`).
    pub refactor: bool,
    /// `baseline_commit` from the frontmatter.
    pub baseline_commit: Option<String>,
    /// `baseline_revision` from a v6.11 spec's frontmatter: HEAD when implementation began.
    pub baseline_revision: Option<String>,
    /// `review_loop_iteration` from a v6.11 spec.
    pub review_loop_iteration: Option<u32>,
    /// `followup_review_recommended` from a v6.11 spec.
    pub followup_review_recommended: Option<bool>,
    /// How many findings the spec's `deferred:` list holds.
    pub deferred: usize,
    /// The `Blocking condition:` bmad-build-auto wrote when it halted, if any.
    pub blocking_condition: Option<String>,
    /// Whether the status follows the v6.11 spec lifecycle (`in-review`, `draft`): a
    /// `spec-*.md`, a stories-mode artifact, or a file already using those words.
    pub spec_lifecycle: bool,
    /// Checked and total task checkboxes (nested ones included).
    pub tasks: (usize, usize),
    /// `## Senior Developer Review (AI)` outcome, if reviewed.
    pub review_outcome: Option<String>,
    /// Review findings written into the story (`[AI-Review][…]`, `[Review][…]`).
    pub follow_ups: Vec<FollowUp>,
    /// Problems that did not stop reading (malformed frontmatter, no status).
    pub findings: Vec<Finding>,
    #[serde(skip)]
    pub(super) text: String,
    #[serde(skip)]
    status_range: Option<Range<usize>>,
    #[serde(skip)]
    fingerprint: [u8; 32],
}

impl Story {
    /// Read a story file.
    pub fn load(path: &Path) -> Result<Story> {
        let bytes = std::fs::read(path).map_err(|e| Error::io("could not read", path, e))?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Ok(Self::parse(path, text))
    }

    /// Parse a story's text; never fails: what cannot be read is a finding.
    pub fn parse(path: &Path, text: String) -> Story {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stem = stem_key(&name).to_owned();
        let key = matches!(
            super::sprint::classify(&stem),
            super::sprint::KeyKind::Story { .. }
        )
        .then(|| stem.clone());
        let mut story = Story {
            path: path.to_path_buf(),
            key,
            number: number_in(&stem),
            title: None,
            status: None,
            raw_status: None,
            status_line: 0,
            format: Format::V6,
            depends_on: Vec::new(),
            touches: Vec::new(),
            refactor: false,
            baseline_commit: None,
            baseline_revision: None,
            review_loop_iteration: None,
            followup_review_recommended: None,
            deferred: 0,
            blocking_condition: None,
            spec_lifecycle: name.starts_with("spec-"),
            tasks: (0, 0),
            review_outcome: None,
            follow_ups: Vec::new(),
            findings: Vec::new(),
            fingerprint: Sha256::digest(text.as_bytes()).into(),
            status_range: None,
            text: String::new(),
        };
        let body_start = story.frontmatter(&text);
        story.scan(&text, body_start);
        super::prose_dependencies::add_from_body(&text[body_start..], &mut story.depends_on);
        if story.status.is_none() {
            story.findings.push(Finding::line_warning(0,
                "no status: no frontmatter `status:`, `Status:` line (plain or bold) or `## Status` section".into(),
            ));
        }
        story.text = text;
        story
    }

    /// Whether the file says it is a story: it has a status or a `# Story` title. Reports
    /// kept beside stories under story-like names (`3-1-security-scan-report.md`) say neither.
    pub fn says_it_is_a_story(&self) -> bool {
        self.status.is_some() || self.title.is_some()
    }

    /// Read the `---` frontmatter; returns where the body starts.
    fn frontmatter(&mut self, text: &str) -> usize {
        let Some(rest) = text
            .strip_prefix("---\n")
            .or_else(|| text.strip_prefix("---\r\n"))
        else {
            return 0;
        };
        let open = text.len() - rest.len();
        let Some(close) = rest.find("\n---").map(|i| open + i + 1) else {
            self.findings.push(Finding::line_error(
                1,
                "frontmatter opened with --- is never closed".into(),
            ));
            return 0;
        };
        let yaml = &text[open..close];
        let body_start = text[close..]
            .find('\n')
            .map_or(text.len(), |i| close + i + 1);
        match crate::config::yaml::from_str::<crate::config::yaml::Data>(yaml) {
            Ok(value) => {
                let depends = value
                    .get("depends_on")
                    .or_else(|| value.get("dependencies"));
                self.depends_on = names(depends);
                self.touches = names(value.get("touches"));
                let word = |k: &str| value.get(k).and_then(scalar).unwrap_or_default();
                self.refactor = word("refactor") == "true"
                    || [word("kind"), word("type")].iter().any(|w| w == "refactor");
                self.baseline_commit = value.get("baseline_commit").and_then(scalar);
                self.baseline_revision = value.get("baseline_revision").and_then(scalar);
                // v6.11 specs carry their title here; a `# Story` heading still wins.
                self.title = value
                    .get("title")
                    .and_then(scalar)
                    .filter(|t| !t.is_empty());
                self.review_loop_iteration = value
                    .get("review_loop_iteration")
                    .and_then(scalar)
                    .and_then(|n| n.parse().ok());
                self.followup_review_recommended = value
                    .get("followup_review_recommended")
                    .and_then(|v| v.as_bool());
                // bmad-build's spec template, whatever the file's name.
                let spec_fields = ["review_loop_iteration", "followup_review_recommended"];
                self.spec_lifecycle |= spec_fields.iter().any(|k| value.get(k).is_some());
                self.deferred = value
                    .get("deferred")
                    .and_then(|v| v.as_sequence())
                    .map_or(0, |items| items.len());
                if value.get("status").and_then(scalar).is_some() {
                    self.frontmatter_status(text, open, close);
                }
            }
            Err(e) => {
                let line = 1 + e.location.map_or(1, |l| l.0);
                self.findings.push(Finding::line_error(
                    line,
                    format!(
                        "malformed frontmatter: {}",
                        e.to_string().split(" at line").next().unwrap_or_default()
                    ),
                ));
            }
        }
        body_start
    }

    /// Find the top-level `status:` line of the frontmatter `text[open..close]`.
    fn frontmatter_status(&mut self, text: &str, open: usize, close: usize) {
        let mut offset = open;
        for line in text[open..close].split_inclusive('\n') {
            let start = offset;
            offset += line.len();
            let body = line.trim_end_matches(['\n', '\r']);
            if !body.starts_with("status:") {
                continue;
            }
            if let Some(value) = value_of(body, "status") {
                let raw = &body[value.clone()];
                let line_no = text[..start].matches('\n').count() + 1;
                self.set_found(
                    raw,
                    line_no,
                    start + value.start..start + value.end,
                    Format::Frontmatter,
                );
                self.spec_lifecycle |= matches!(raw, "in-review" | "draft");
            }
            return;
        }
    }

    fn scan(&mut self, text: &str, body_start: usize) {
        static TITLE: OnceLock<Regex> = OnceLock::new();
        let title = TITLE.get_or_init(|| {
            Regex::new(r"^#\s+Story\s+([0-9][0-9A-Za-z.\-]*)\s*[:.\-–—]?\s*(.*)$").expect("title")
        });
        let mut offset = body_start;
        let mut in_fence = false;
        let mut section = String::new();
        let mut v4_status_next = false;
        let mut tasks_any = (0usize, 0usize);
        let mut tasks_section = (0usize, 0usize);
        let mut saw_tasks_section = false;
        let mut saw_story_title = false;
        let first_line = text[..body_start].matches('\n').count();
        for (i, line) in text[body_start..].split_inclusive('\n').enumerate() {
            let n = first_line + i + 1;
            let start = offset;
            offset += line.len();
            let body = line.trim_end_matches(['\n', '\r']);
            if body.trim_start().starts_with("```") {
                in_fence = !in_fence;
                continue;
            }
            if in_fence {
                // Some projects keep the status in a yaml block under `## Metadata`.
                let metadata = section == "metadata" && self.status.is_none();
                if let Some(r) = metadata.then(|| value_of(body, "status")).flatten() {
                    let (value, at) = (&body[r.clone()], start + r.start..start + r.end);
                    self.set_found(value, n, at, Format::V6);
                }
                continue;
            }
            if v4_status_next && !body.trim().is_empty() {
                v4_status_next = false;
                if self.status.is_none() && !body.starts_with('#') {
                    if let Some(r) = super::status_field::unwrap_emphasis(body, 0..body.len()) {
                        self.set_found(
                            &body[r.clone()],
                            n,
                            start + r.start..start + r.end,
                            Format::V4,
                        );
                    }
                }
            }
            if let Some(rest) = body.strip_prefix("Blocking condition:") {
                let condition = rest.trim();
                if !condition.is_empty() && !condition.eq_ignore_ascii_case("none") {
                    self.blocking_condition = Some(condition.to_owned());
                }
            }
            if self.status.is_none() {
                if let Some((r, form)) = super::status_field::find(body) {
                    let value = &body[r.clone()];
                    let format = match form {
                        Form::Heading => Format::V4,
                        // A capitalised word is v4's vocabulary (`Status: Approved`).
                        Form::Field if value.starts_with(|c: char| c.is_uppercase()) => Format::V4,
                        Form::Field => Format::V6,
                    };
                    self.set_found(value, n, start + r.start..start + r.end, format);
                    if form == Form::Field {
                        continue;
                    }
                }
            }
            if let Some(heading) = body.strip_prefix("## ") {
                section = heading.trim().to_ascii_lowercase();
                if section == "status" {
                    v4_status_next = true;
                }
                if section.starts_with("tasks") {
                    saw_tasks_section = true;
                }
                continue;
            }
            if !saw_story_title {
                if let Some(c) = title.captures(body) {
                    saw_story_title = true;
                    self.title = Some(c[2].trim().to_owned())
                        .filter(|t| !t.is_empty())
                        .or(self.title.take());
                    if self.number.is_none() {
                        self.number = number_in(&c[1]);
                    }
                    continue;
                }
            }
            // A review appended to an earlier one: the last verdict holds.
            if section.starts_with("senior developer review") {
                let plain = body.replace("**", "");
                if let Some(rest) = plain
                    .trim_start_matches(['-', '*', ' '])
                    .strip_prefix("Outcome:")
                {
                    self.review_outcome = Some(rest.trim().to_owned()).filter(|o| !o.is_empty());
                }
            }
            if let Some(f) = super::analysis::review::finding(body) {
                self.follow_ups.push(FollowUp {
                    done: f.done,
                    severity: f.severity,
                    text: f.text,
                    location: f.location,
                    line: n,
                });
                continue;
            }
            let (done, total) = super::speckit::task_progress(body);
            tasks_any = (tasks_any.0 + done, tasks_any.1 + total);
            if section.starts_with("tasks") {
                tasks_section = (tasks_section.0 + done, tasks_section.1 + total);
            }
        }
        self.tasks = if saw_tasks_section {
            tasks_section
        } else {
            tasks_any
        };
    }

    fn set_found(&mut self, value: &str, line: usize, range: Range<usize>, format: Format) {
        self.status = Some(Status::parse_prose(value));
        self.raw_status = Some(value.to_owned());
        self.status_line = line;
        self.status_range = Some(range);
        self.format = format;
    }

    /// The text with the status set and a signed Change Log entry appended.
    pub fn with_status(
        &self,
        to: &Status,
        by: &str,
        now: &crate::time::Timestamp,
        force: bool,
    ) -> Result<String> {
        let (Some(range), Some(from)) = (&self.status_range, &self.status) else {
            return Err(Error::Parse {
                path: self.path.clone(),
                line: 1,
                message: "the story has no status line to change".into(),
            });
        };
        if !force {
            legal_transition(from, to).map_err(|why| Error::IllegalTransition {
                key: self
                    .key
                    .clone()
                    .unwrap_or_else(|| self.path.display().to_string()),
                why,
            })?;
        }
        let word = match self.format {
            // v4 files keep v4 words.
            Format::V4 => to.as_v4_word().to_owned(),
            Format::V6 => to.as_str().to_owned(),
            Format::Frontmatter if self.spec_lifecycle => to.as_spec_word().to_owned(),
            Format::Frontmatter => to.as_str().to_owned(),
        };
        let mut text = self.text.clone();
        text.replace_range(range.clone(), &word);
        if self.format == Format::Frontmatter {
            return Ok(text);
        }
        let entry = ChangeEntry {
            when: now.rfc3339(),
            what: format!(
                "Status: {} → {word}",
                self.raw_status.as_deref().unwrap_or_default()
            ),
            by: by.to_owned(),
        };
        Ok(append_change_log(&text, &entry))
    }

    /// Write a text produced by [`with_status`](Self::with_status), unless the file changed.
    pub fn write(&self, text: &str) -> Result<()> {
        write_unless_changed(&self.path, &self.fingerprint, text)
    }
}

#[cfg(test)]
#[path = "story_tests.rs"]
mod tests;
