//! Reading typed fields out of YAML nodes, each failure a [`Diagnostic`] at the node's place.

use std::time::Duration;

use super::{parse_duration, vocabulary, Diagnostic, Severity, Trigger};
use crate::config::yaml::{Node, Value};

/// Collects every violation; readers return `None` (or a default) and carry on, so one pass
/// reports them all.
#[derive(Default)]
pub(super) struct Parser {
    pub diagnostics: Vec<Diagnostic>,
}

impl Parser {
    pub fn error_at(&mut self, line: usize, col: usize, field: &str, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic::at_field(
            Severity::Error,
            line,
            col,
            field,
            message,
        ));
    }

    pub fn error(&mut self, node: &Node, field: &str, message: impl Into<String>) {
        self.error_at(node.line, node.col, field, message);
    }

    pub fn warn(&mut self, node: &Node, field: &str, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic::at_field(
            Severity::Warning,
            node.line,
            node.col,
            field.to_owned(),
            message.into(),
        ));
    }

    /// The entries of a mapping, reporting unknown keys; `None` if it is not a mapping.
    pub fn map<'a>(
        &mut self,
        node: &'a Node,
        field: &str,
        allowed: &[&str],
    ) -> Option<&'a [(Node, Node)]> {
        let Some(entries) = node.as_map() else {
            self.error(
                node,
                field,
                format!("expected a mapping, found {}", node.kind()),
            );
            return None;
        };
        let mut seen: Vec<&str> = Vec::new();
        for (key, _) in entries {
            let name = key.as_str().unwrap_or_default();
            let path = join(field, name);
            if !allowed.contains(&name) {
                self.error(
                    key,
                    &path,
                    format!("unknown field; allowed: {}", allowed.join(", ")),
                );
            } else if seen.contains(&name) {
                self.error(key, &path, "given twice");
            }
            seen.push(name);
        }
        Some(entries)
    }

    pub fn string(&mut self, node: &Node, field: &str) -> Option<String> {
        match node.as_str() {
            Some(s) if !s.trim().is_empty() => Some(s.to_owned()),
            _ => {
                self.error(node, field, format!("expected text, found {}", node.kind()));
                None
            }
        }
    }

    pub fn word<T>(
        &mut self,
        node: &Node,
        field: &str,
        allowed: &[&str],
        parse: fn(&str) -> Option<T>,
    ) -> Option<T> {
        let text = self.string(node, field)?;
        let value = parse(&text);
        if value.is_none() {
            self.error(
                node,
                field,
                format!(
                    "{text:?} is not allowed; allowed values: {}",
                    allowed.join(", ")
                ),
            );
        }
        value
    }

    pub fn duration(&mut self, node: &Node, field: &str) -> Option<Duration> {
        let text = self.string(node, field)?;
        let value = parse_duration(&text);
        if value.is_none() {
            self.error(
                node,
                field,
                format!("{text:?} is not a duration; write e.g. 90s, 30m, 2h or 1h30m"),
            );
        }
        value
    }

    pub fn triggers(&mut self, node: &Node, field: &str) -> Vec<Trigger> {
        let Some(items) = self.list(node, field) else {
            return Vec::new();
        };
        items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| {
                self.word(
                    item,
                    &format!("{field}[{i}]"),
                    vocabulary::TRIGGER,
                    Trigger::parse,
                )
            })
            .collect()
    }

    pub fn list<'a>(&mut self, node: &'a Node, field: &str) -> Option<&'a [Node]> {
        match &node.value {
            Value::Seq(items) => Some(items),
            Value::Null => Some(&[]),
            _ => {
                self.error(
                    node,
                    field,
                    format!("expected a list, found {}", node.kind()),
                );
                None
            }
        }
    }
}

/// A field's path below its parent: `steps[2].autonomy`.
pub(super) fn join(field: &str, name: &str) -> String {
    if field == "(top)" {
        name.to_owned()
    } else {
        format!("{field}.{name}")
    }
}
