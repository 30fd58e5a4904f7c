//! A ticket tree's tickets as the stories every command reads, and its problems as `check`
//! reports them.

use std::collections::HashMap;
use std::path::Path;

use super::{status_of, Id, Ticket, TicketTree};
use crate::bmad::status::Status;
use crate::bmad::view::{Problem, StoryView};

impl TicketTree {
    /// The reference `tickets.py` prints for a ticket (`<epic id>.<id>`; an id in the folder
    /// read; else its file), which `find` and `mark` resolve.
    pub fn reference(&self, t: &Ticket) -> String {
        let epic_id = self
            .epics
            .iter()
            .find(|e| e.slug == t.folder)
            .and_then(|e| e.id.as_ref());
        match (&t.id, epic_id, &t.leaf) {
            (Some(id), Some(epic), _) => format!("{epic}.{id}"),
            (Some(id), None, _) => id.to_string(),
            (None, _, Some(file)) => file.clone(),
            (None, _, None) => t.folder.clone(),
        }
    }

    /// The tickets as stories: key = reference, status from the plan, prerequisites as
    /// references. A ticket held by what only a person can settle is blocked, with why: its
    /// plan says blocked; or, before it starts (as `tickets.py next` holds it), an epic it
    /// waits for is not done, or an open question stands.
    pub fn views(&self, shown: &dyn Fn(&Path) -> String) -> Vec<StoryView> {
        let reference: HashMap<String, String> = self
            .tickets
            .iter()
            .map(|t| (t.key(), self.reference(t)))
            .collect();
        self.tickets
            .iter()
            .map(|t| {
                let epic_open = |slug: &str| self.epics.iter().any(|e| e.slug == slug && !e.done);
                let gates = self
                    .epics
                    .iter()
                    .find(|e| e.slug == t.folder)
                    .map(|e| e.gates.clone())
                    .unwrap_or_default();
                let waiting_epics: Vec<&String> = t
                    .after
                    .iter()
                    .chain(&gates)
                    .filter(|a| epic_open(a))
                    .collect();
                let condition = if t.status == "blocked" || !t.blocked_at.is_empty() {
                    Some(match t.blocked_reason.as_str() {
                        "" => "its plan says blocked, with no reason".to_owned(),
                        why => why.to_owned(),
                    })
                } else if !waiting_epics.is_empty() && matches!(t.state(), "planned" | "backlog") {
                    let names: Vec<&str> = waiting_epics.iter().map(|s| s.as_str()).collect();
                    Some(format!(
                        "waits for {} to be done (a person closes an epic)",
                        names.join(", ")
                    ))
                } else if !t.unknown.is_empty() && matches!(t.state(), "planned" | "backlog") {
                    Some(format!("an open question: {}", t.unknown))
                } else {
                    None
                };
                let status = if condition.is_some() {
                    Status::Blocked
                } else {
                    status_of(&t.status)
                };
                let folder = self.folder_path(&t.folder);
                let file = t
                    .plan
                    .as_ref()
                    .or(t.leaf.as_ref())
                    .map(|f| shown(&folder.join(f)));
                let mut ambiguous: Vec<String> = Vec::new();
                if !t.extra_plans.is_empty() {
                    ambiguous = t
                        .plan
                        .iter()
                        .chain(&t.extra_plans)
                        .map(|p| shown(&folder.join(p)))
                        .collect();
                }
                StoryView {
                    key: self.reference(t),
                    title: (!t.title.is_empty()).then(|| t.title.clone()),
                    status,
                    raw_status: if t.status.is_empty() {
                        t.state().to_owned()
                    } else {
                        t.status.clone()
                    },
                    epic: self
                        .epics
                        .iter()
                        .find(|e| e.slug == t.folder)
                        .and_then(|e| match e.id {
                            Some(Id::Number(n)) => u32::try_from(n).ok(),
                            _ => None,
                        }),
                    file,
                    file_status: None,
                    depends_on: t
                        .after
                        .iter()
                        .filter(|a| !self.epics.iter().any(|e| &e.slug == *a))
                        .map(|a| reference.get(a).cloned().unwrap_or_else(|| a.clone()))
                        .collect(),
                    touches: Vec::new(),
                    refactor: false,
                    sprint_line: None,
                    blocking_condition: condition,
                    ambiguous,
                    recognised: true,
                    spec_lifecycle: false,
                    v7_ticket: true,
                }
            })
            .collect()
    }

    /// The problems, as `check` reports them.
    pub fn reported(&self, shown: &dyn Fn(&Path) -> String) -> Vec<Problem> {
        self.problems
            .iter()
            .map(|(path, severity, message)| Problem {
                severity,
                file: shown(path),
                line: 0,
                message: message.clone(),
            })
            .collect()
    }

    /// The ticket a story key (its reference) names.
    /// The ticket a story key names: its reference, or the v6 key it was migrated from, so
    /// a key from before `bmad migrate method` (a journal, a script) still finds it.
    pub fn ticket(&self, reference: &str) -> Option<&Ticket> {
        let by_reference = self.tickets.iter().find(|t| self.reference(t) == reference);
        by_reference.or_else(|| {
            let mut migrated = self
                .tickets
                .iter()
                .filter(|t| !t.v6_key.is_empty() && t.v6_key == reference);
            match (migrated.next(), migrated.next()) {
                (Some(t), None) => Some(t),
                _ => None,
            }
        })
    }
}
