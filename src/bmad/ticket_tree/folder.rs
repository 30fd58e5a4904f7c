//! One folder of a ticket tree: its `tickets.toml` entries in build order, joined to their
//! leaf files by `id`, then leaf files no entry lists; then the plans, each setting the
//! status of the one ticket its `ticket:` names.

use std::path::{Path, PathBuf};

use super::frontmatter::{self, Value};
use super::{name_of, read, After, Id, Ticket, TicketTree, BREAKDOWN, LEAF_TYPES, STATUSES};

impl TicketTree {
    /// One folder's tickets (`table`: its `tickets.toml`, parsed): its entries in build
    /// order, joined to their leaf files, then leaf files no entry lists; plans then set the
    /// status of the tickets they name.
    pub(super) fn load_folder(&mut self, folder: &Path, table: Option<toml::Table>) {
        let name = name_of(folder);
        let path = folder.join(BREAKDOWN);
        let first = self.tickets.len();
        if let Some(table) = table {
            for row in tables(&table, "entry") {
                let kind = row.get("type").and_then(|t| t.as_str()).unwrap_or_default();
                let Some(id) = Id::of_toml(row.get("id")) else {
                    self.problem(&path, "error", "an [[entry]] has no `id`; skipped".into());
                    continue;
                };
                if !LEAF_TYPES.contains(&kind) {
                    self.problem(
                        &path,
                        "error",
                        format!("entry {id}: type `{kind}` is not story, spike or bug; skipped"),
                    );
                    continue;
                }
                let text = |k: &str| row.get(k).map(toml_text).unwrap_or_default();
                let flag = |k: &str| text(k).eq_ignore_ascii_case("true");
                let raw_after = match row.get("after") {
                    Some(toml::Value::Array(items)) => items.iter().map(after_of_toml).collect(),
                    _ => Vec::new(),
                };
                self.tickets.push(Ticket {
                    folder: name.clone(),
                    id: Some(id),
                    kind: kind.to_owned(),
                    title: text("title"),
                    hitl: flag("hitl"),
                    risk: text("risk"),
                    plan_checkpoint: flag("plan_checkpoint"),
                    done_checkpoint: flag("done_checkpoint"),
                    unknown: text("unknown"),
                    v6_key: text("v6_key"),
                    raw_after,
                    ..Default::default()
                });
            }
        }
        let mut plans = Vec::new();
        let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.retain(|p| p.extension().is_some_and(|e| e == "md") && p.is_file());
        files.sort();
        for file in files {
            let Some(text) = read(&file) else { continue };
            let fields = frontmatter::fields(&text);
            let get = |k: &str| frontmatter::get(&fields, k).cloned();
            let kind = get("type").map(|t| t.text()).unwrap_or_default();
            if !LEAF_TYPES.contains(&kind.as_str()) {
                if let Some(ticket) = get("ticket") {
                    plans.push((name_of(&file), ticket, fields.clone()));
                }
                continue;
            }
            self.join_leaf(first, &name, &file, &text, kind, &get);
        }
        for (plan, ticket, fields) in plans {
            self.join_plan(first, folder, &plan, &ticket, &fields);
        }
    }

    /// A leaf file joins the entry with its `id`; its fields replace the entry's.
    fn join_leaf(
        &mut self,
        first: usize,
        folder: &str,
        file: &Path,
        text: &str,
        kind: String,
        get: &dyn Fn(&str) -> Option<Value>,
    ) {
        let id = Id::of_frontmatter(get("id").as_ref());
        let at = id
            .as_ref()
            .and_then(|id| {
                self.tickets[first..]
                    .iter()
                    .position(|t| t.id.as_ref() == Some(id))
            })
            .map(|i| i + first);
        let status = get("status").map(|s| s.text()).unwrap_or_default();
        let status = if status.is_empty() || STATUSES.contains(&status.as_str()) {
            status
        } else {
            self.problem(
                file,
                "warning",
                format!("status `{status}` is no v7 status; the ticket reads as blocked"),
            );
            "blocked".to_owned()
        };
        let index = at.unwrap_or_else(|| {
            self.tickets.push(Ticket {
                folder: folder.to_owned(),
                id: id.clone(),
                kind: kind.clone(),
                ..Default::default()
            });
            self.tickets.len() - 1
        });
        let t = &mut self.tickets[index];
        t.leaf = Some(name_of(file));
        t.kind = kind;
        if let Some(title) = get("title").map(|v| v.text()).filter(|v| !v.is_empty()) {
            t.title = title;
        }
        t.status = status;
        t.hitl = get("hitl").is_some_and(|v| v.flag());
        if let Some(risk) = get("risk") {
            t.risk = risk.text();
        }
        t.blocked_at = get("blocked_at").map(|v| v.text()).unwrap_or_default();
        t.blocked_reason = get("blocked_reason").map(|v| v.text()).unwrap_or_default();
        t.unknown = unknown_lines(text);
        t.raw_after = match get("after") {
            Some(Value::List(items)) => items.iter().map(after_of_frontmatter).collect(),
            _ => Vec::new(),
        };
    }

    /// A plan sets the status fields of the one ticket its `ticket` names.
    fn join_plan(
        &mut self,
        first: usize,
        folder: &Path,
        plan: &str,
        ticket: &Value,
        fields: &[(String, Value)],
    ) {
        let get = |k: &str| {
            frontmatter::get(fields, k)
                .map(Value::text)
                .unwrap_or_default()
        };
        let id = Id::of_frontmatter(Some(ticket));
        let stem = ticket.text();
        let at = self.tickets[first..]
            .iter()
            .position(|t| id.is_some() && t.id == id)
            .or_else(|| {
                self.tickets[first..].iter().position(|t| {
                    !stem.is_empty() && t.leaf.as_deref() == Some(&format!("{stem}.md"))
                })
            })
            .map(|i| i + first);
        let path = folder.join(plan);
        let Some(at) = at else {
            self.problem(
                &path,
                "warning",
                format!("ticket `{stem}` names no entry or leaf file here; skipped"),
            );
            return;
        };
        if self.tickets[at].plan.is_some() {
            self.problem(
                &path,
                "error",
                format!("a second plan for ticket `{stem}`; neither is written"),
            );
            self.tickets[at].extra_plans.push(plan.to_owned());
            return;
        }
        let mut status = get("status");
        let mut reason = get("blocked_reason");
        if !status.is_empty() && !STATUSES.contains(&status.as_str()) {
            self.problem(&path, "warning", format!("status `{status}` is no v7 status; the ticket reads as blocked until the plan is fixed"));
            reason = format!("{plan} has an unknown status `{status}`");
            status = "blocked".to_owned();
        }
        let t = &mut self.tickets[at];
        t.plan = Some(plan.to_owned());
        t.status = status;
        t.blocked_at = get("blocked_at");
        t.blocked_reason = reason;
    }
}

pub(super) fn tables<'t>(table: &'t toml::Table, name: &str) -> Vec<&'t toml::Table> {
    match table.get(name) {
        Some(toml::Value::Array(rows)) => rows.iter().filter_map(|r| r.as_table()).collect(),
        _ => Vec::new(),
    }
}

fn toml_text(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(n) => n.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Datetime(d) => d.to_string(),
        toml::Value::Array(_) | toml::Value::Table(_) => String::new(),
    }
}

fn after_of_toml(value: &toml::Value) -> After {
    match value {
        toml::Value::Integer(n) if *n >= 0 => After::Sibling(*n as u64),
        other => After::Text(toml_text(other)),
    }
}

fn after_of_frontmatter(value: &Value) -> After {
    match value {
        Value::Number(n) if *n >= 0 => After::Sibling(*n as u64),
        other => After::Text(other.text()),
    }
}

/// The `Unknown:` lines of a leaf file's body (HTML comments aside), joined.
fn unknown_lines(text: &str) -> String {
    let body = match text
        .strip_prefix("---\n")
        .and_then(|r| r.split_once("\n---"))
    {
        Some((_, rest)) => rest,
        None => text,
    };
    let mut out = Vec::new();
    let mut in_comment = false;
    for line in body.lines() {
        if line.contains("<!--") {
            in_comment = true;
        }
        if !in_comment {
            let bare = line
                .trim_start()
                .trim_start_matches(['-', '*'])
                .trim_start();
            if let Some(rest) = bare.strip_prefix("Unknown:") {
                if !rest.trim().is_empty() {
                    out.push(rest.trim().to_owned());
                }
            }
        }
        if line.contains("-->") {
            in_comment = false;
        }
    }
    out.join("; ")
}
