//! v7's ticket tree (BMAD's main, unreleased), which replaces the sprint status and epics:
//! `{output_folder}/{active_initiative}` holds `tickets.toml` listing the epics (`[[epic]]`,
//! in build order); each epic folder `epic-<slug>/` holds its own `tickets.toml` listing its
//! tickets (`[[entry]]`: `id`, `type`, `title`, `after`, `hitl`, `risk`, checkpoints), the
//! leaf files `<type>-<slug>.md` once pulled, and the builds' plan files, whose frontmatter
//! `ticket:` joins them to a ticket and whose `status` is the ticket's.
//!
//! Read by the rules of BMAD's `tickets.py` (`_bmad/method/scripts/tickets.py`), leniently as
//! everywhere here: a malformed file or an `after` that names nothing is a problem reported
//! for what it concerns, never a project that does not load.

mod folder;
mod frontmatter;
mod mark;
pub use mark::Marked;
mod stories;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use self::folder::tables;
use self::frontmatter::Value;
use super::status::Status;

/// A ticket tree's file listing its children.
pub const BREAKDOWN: &str = "tickets.toml";
/// v7's ticket statuses (`tickets.py` STATUSES).
pub const STATUSES: &[&str] = &[
    "draft",
    "ready-for-dev",
    "in-progress",
    "in-review",
    "built",
    "done",
    "blocked",
    "dropped",
];
const LEAF_TYPES: &[&str] = &["story", "spike", "bug"];

/// An entry's id: a number, or letters and digits (`6a`); `6` and `"6"` are one id.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Id {
    /// Digits.
    Number(u64),
    /// Letters and digits.
    Name(String),
}

impl Id {
    fn from_text(text: &str) -> Option<Id> {
        let ok = !text.is_empty()
            && text.chars().all(|c| c.is_ascii_alphanumeric())
            && text != "true"
            && text != "false";
        if !ok {
            return None;
        }
        Some(match text.parse::<u64>() {
            Ok(n) if text.chars().all(|c| c.is_ascii_digit()) => Id::Number(n),
            _ => Id::Name(text.to_owned()),
        })
    }

    fn of_toml(value: Option<&toml::Value>) -> Option<Id> {
        match value? {
            toml::Value::Integer(n) => u64::try_from(*n).ok().map(Id::Number),
            toml::Value::String(s) => Id::from_text(s),
            _ => None,
        }
    }

    fn of_frontmatter(value: Option<&Value>) -> Option<Id> {
        match value? {
            Value::Number(n) => u64::try_from(*n).ok().map(Id::Number),
            Value::Text(s) => Id::from_text(s),
            _ => None,
        }
    }
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::Name(s) => f.write_str(s),
        }
    }
}

/// A prerequisite as written: a bare number is a sibling's id; anything else is text.
#[derive(Clone, Debug)]
enum After {
    Sibling(u64),
    Text(String),
}

/// An epic of the initiative.
#[derive(Clone, Debug)]
pub struct Epic {
    /// Its folder's name, `epic-<slug>`.
    pub slug: String,
    /// Its id in the initiative's `tickets.toml` (entries elsewhere name its tickets `<id>.<n>`).
    pub id: Option<Id>,
    /// Its epic file says `status: done`.
    pub done: bool,
    /// Epics it waits for (its epic file's `after`), until each is done.
    gates: Vec<String>,
}

/// One ticket.
#[derive(Clone, Debug, Default)]
pub struct Ticket {
    /// The folder it is in.
    pub folder: String,
    /// Its id (none for a leaf file with no `id`).
    pub id: Option<Id>,
    /// story, spike or bug.
    pub kind: String,
    /// Its title.
    pub title: String,
    /// Its leaf file's name, once pulled.
    pub leaf: Option<String>,
    /// Its plan file's name, once a build or `mark` wrote one.
    pub plan: Option<String>,
    /// Other plan files naming it: never guessed between.
    pub extra_plans: Vec<String>,
    /// Its status word ("" when no build has started).
    pub status: String,
    /// `hitl`: a person takes part.
    pub hitl: bool,
    /// `risk` (low, medium, high).
    pub risk: String,
    /// A person reviews the plan before work starts.
    pub plan_checkpoint: bool,
    /// Work pauses after this ticket until a person says continue.
    pub done_checkpoint: bool,
    /// When it was blocked, and why.
    pub blocked_at: String,
    /// Why it is blocked.
    pub blocked_reason: String,
    /// A question to settle before it starts.
    pub unknown: String,
    /// The v6 story key `bmad migrate method` moved it from (`2-1-cart`), if any.
    pub v6_key: String,
    raw_after: Vec<After>,
    /// Prerequisites, as ticket keys (`<folder>/<id>`), or epic folders (wait for done).
    after: Vec<String>,
}

impl Ticket {
    /// Its key in the tree: `<folder>/<id>`, or `<folder>/<file>` for a leaf with no id.
    fn key(&self) -> String {
        match (&self.id, &self.leaf) {
            (Some(id), _) => format!("{}/{id}", self.folder),
            (None, Some(file)) => format!("{}/{file}", self.folder),
            (None, None) => self.folder.clone(),
        }
    }

    /// `tickets.py`'s state: planned (nothing written), backlog, in-progress, review, done
    /// or dropped.
    pub fn state(&self) -> &'static str {
        match self.status.as_str() {
            "" if self.leaf.is_none() && self.plan.is_none() => "planned",
            "" | "draft" | "ready-for-dev" => "backlog",
            "in-progress" | "blocked" => "in-progress",
            "in-review" | "built" => "review",
            "done" => "done",
            _ => "dropped",
        }
    }
}

/// A ticket tree, read.
#[derive(Clone, Debug, Default)]
pub struct TicketTree {
    /// The folder read (the initiative).
    pub folder: PathBuf,
    /// Its epics, in build order.
    pub epics: Vec<Epic>,
    /// Every ticket, in build order.
    pub tickets: Vec<Ticket>,
    /// What was wrong, by file: (path, severity, message).
    pub problems: Vec<(PathBuf, &'static str, String)>,
}

/// The active initiative's folder, as `tickets.py` finds it: `[core] active_initiative` and
/// `output_folder` from the BMad config (`_bmad/config.toml`, then `_bmad/custom/config.toml`
/// and `_bmad/custom/config.user.toml`, later layers winning). With no initiative set, the one
/// folder under the output folder that holds a `tickets.toml` (its own, or its epics'), if
/// there is exactly one.
pub fn discover(root: &Path) -> Option<PathBuf> {
    let bmad = root.join("_bmad");
    if !bmad.join("config.toml").is_file() {
        return None;
    }
    let mut core: HashMap<String, String> = HashMap::new();
    for layer in [
        "config.toml",
        "custom/config.toml",
        "custom/config.user.toml",
    ] {
        let Ok(text) = std::fs::read_to_string(bmad.join(layer)) else {
            continue;
        };
        let Ok(table) = text.trim_start_matches('\u{feff}').parse::<toml::Table>() else {
            continue;
        };
        if let Some(toml::Value::Table(section)) = table.get("core") {
            for (k, v) in section {
                if let toml::Value::String(s) = v {
                    core.insert(k.clone(), s.clone());
                }
            }
        }
    }
    let output = core
        .get("output_folder")
        .map(|o| o.replace("{project-root}", &root.to_string_lossy()))
        .unwrap_or_else(|| "_bmad-output".to_owned());
    let output = root.join(output);
    if let Some(name) = core
        .get("active_initiative")
        .map(|n| n.trim())
        .filter(|n| !n.is_empty())
    {
        let folder = output.join(name);
        return folder.is_dir().then_some(folder);
    }
    // Only a ticket tree's own file says so: a v6 project may keep `epic-1/` folders of
    // stories under its output folder too.
    let holding_epics: Vec<PathBuf> = std::fs::read_dir(&output)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_dir()
                && (p.join(BREAKDOWN).is_file()
                    || epic_folders(p).iter().any(|e| e.join(BREAKDOWN).is_file()))
        })
        .collect();
    match holding_epics.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// `epic-*` folders under `folder` holding their epic file or a `tickets.toml`, by name.
fn epic_folders(folder: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            name.starts_with("epic-")
                && p.is_dir()
                && (p.join(format!("{name}.md")).is_file() || p.join(BREAKDOWN).is_file())
        })
        .collect();
    out.sort();
    out
}

fn name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|t| frontmatter::normalised(&t))
}

impl TicketTree {
    /// Read the initiative (or epic) folder `folder`.
    pub fn load(folder: &Path) -> TicketTree {
        let mut tree = TicketTree {
            folder: folder.to_path_buf(),
            ..Default::default()
        };
        // The initiative's own file lists its epics and may hold entries: read once.
        let own = tree.breakdown(folder);
        let listed = own
            .as_ref()
            .map(|t| tree.epic_rows(folder, t))
            .unwrap_or_default();
        let mut folders = epic_folders(folder);
        let position = |p: &PathBuf| {
            let name = name_of(p);
            listed
                .iter()
                .position(|e| e.slug == name)
                .unwrap_or(listed.len())
        };
        folders.sort_by_key(|p| (position(p), name_of(p)));
        for path in &folders {
            let slug = name_of(path);
            let file = read(&path.join(format!("{slug}.md"))).unwrap_or_default();
            let fields = frontmatter::fields(&file);
            let get = |k: &str| frontmatter::get(&fields, k);
            let gates = match get("after") {
                Some(Value::List(items)) => items.iter().map(Value::text).collect(),
                _ => Vec::new(),
            };
            tree.epics.push(Epic {
                id: listed
                    .iter()
                    .find(|e| e.slug == slug)
                    .and_then(|e| e.id.clone()),
                done: get("status").is_some_and(|s| s.text() == "done"),
                slug,
                gates,
            });
        }
        for path in &folders {
            let table = tree.breakdown(path);
            tree.load_folder(path, table);
        }
        tree.load_folder(folder, own);
        tree.resolve();
        tree
    }

    fn problem(&mut self, path: &Path, severity: &'static str, message: String) {
        self.problems.push((path.to_path_buf(), severity, message));
    }

    /// A folder's `tickets.toml`, parsed; a file that is no TOML is a problem.
    fn breakdown(&mut self, folder: &Path) -> Option<toml::Table> {
        let path = folder.join(BREAKDOWN);
        let text = read(&path)?;
        match text.parse::<toml::Table>() {
            Ok(table) => Some(table),
            Err(e) => {
                let first = e.to_string().lines().next().unwrap_or_default().to_owned();
                self.problem(
                    &path,
                    "error",
                    format!("not TOML ({first}); its tickets are not read"),
                );
                None
            }
        }
    }

    /// The `[[epic]]` tables of an initiative's `tickets.toml`.
    fn epic_rows(&mut self, folder: &Path, table: &toml::Table) -> Vec<Epic> {
        let path = folder.join(BREAKDOWN);
        let mut out = Vec::new();
        for row in tables(table, "epic") {
            let slug = row.get("slug").and_then(|s| s.as_str()).unwrap_or_default();
            match Id::of_toml(row.get("id")) {
                Some(id) if !slug.is_empty() => out.push(Epic {
                    slug: slug.to_owned(),
                    id: Some(id),
                    done: false,
                    gates: Vec::new(),
                }),
                _ => self.problem(
                    &path,
                    "error",
                    "an [[epic]] needs an `id` and a `slug`; skipped".into(),
                ),
            }
        }
        out
    }

    /// Each ticket's `after` as keys; one that names nothing is a problem and stays as
    /// written, so the ticket waits on something that does not exist.
    fn resolve(&mut self) {
        let keys: Vec<String> = self.tickets.iter().map(Ticket::key).collect();
        let epic_by_id: HashMap<String, String> = self
            .epics
            .iter()
            .filter_map(|e| e.id.as_ref().map(|id| (id.to_string(), e.slug.clone())))
            .collect();
        let mut problems = Vec::new();
        for i in 0..self.tickets.len() {
            let t = &self.tickets[i];
            let mates = |pred: &dyn Fn(&Ticket) -> bool| {
                self.tickets
                    .iter()
                    .zip(&keys)
                    .find(|(o, _)| o.folder == t.folder && pred(o))
                    .map(|(_, k)| k.clone())
            };
            let mut after = Vec::new();
            for raw in &t.raw_after {
                let key = match raw {
                    After::Sibling(n) => mates(&|o| o.id == Some(Id::Number(*n))),
                    After::Text(text) => {
                        mates(&|o| matches!(&o.id, Some(Id::Name(s)) if s == text))
                            .or_else(|| {
                                mates(&|o| {
                                    o.leaf.as_deref().is_some_and(|f| {
                                        f == text || f.strip_suffix(".md") == Some(text)
                                    })
                                })
                            })
                            .or_else(|| {
                                let (epic, entry) = text.split_once('.')?;
                                let slug = epic_by_id.get(epic)?;
                                let key = format!("{slug}/{}", Id::from_text(entry)?);
                                keys.contains(&key).then_some(key)
                            })
                            .or_else(|| {
                                self.epics
                                    .iter()
                                    .any(|e| &e.slug == text)
                                    .then(|| text.clone())
                            })
                    }
                };
                let shown = match raw {
                    After::Sibling(n) => n.to_string(),
                    After::Text(s) => s.clone(),
                };
                after.push(key.unwrap_or_else(|| {
                    problems.push((
                        t.folder.clone(),
                        format!("{}: after `{shown}` names no ticket or epic", keys[i]),
                    ));
                    shown
                }));
            }
            after.dedup();
            self.tickets[i].after = after;
        }
        for (folder, message) in problems {
            let path = self.folder_path(&folder).join(BREAKDOWN);
            self.problem(&path, "error", message);
        }
    }

    fn folder_path(&self, folder: &str) -> PathBuf {
        if self.epics.iter().any(|e| e.slug == folder) {
            self.folder.join(folder)
        } else {
            self.folder.clone()
        }
    }
}

/// The v7 word as git-bmad's status: `built` (its build finished, and nobody has called it
/// done) waits for a person, as `dropped` (no work) does.
fn status_of(word: &str) -> Status {
    match word {
        "" | "draft" => Status::Backlog,
        other => Status::parse(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_in_the_initiatives_own_file_is_one_problem() {
        let dir = tempfile::tempdir().unwrap();
        let initiative = dir.path().join("initiative-x");
        std::fs::create_dir_all(initiative.join("epic-a")).unwrap();
        std::fs::write(initiative.join(BREAKDOWN), "[[epic]\nid = 1\n").unwrap();
        std::fs::write(
            initiative.join("epic-a").join(BREAKDOWN),
            "[[entry]]\nid = 1\ntype = \"story\"\ntitle = \"A\"\n",
        )
        .unwrap();
        let tree = TicketTree::load(&initiative);
        let faults: Vec<_> = tree
            .problems
            .iter()
            .filter(|p| p.2.contains("not TOML"))
            .collect();
        assert_eq!(faults.len(), 1, "{:?}", tree.problems);
        // The epic's own tickets still load.
        assert_eq!(tree.tickets.len(), 1);
    }
}
