//! Markdown frontmatter, read as tolerantly as BMAD's own files need.
//!
//! Real files have duplicate keys (`epicsTemplate` twice in create-epics-and-stories),
//! tab indentation, and empty `---\n---` blocks; each loads with a warning. Text that is
//! not YAML at all is an error with its line and column in the file.

use super::Diagnostic;
use crate::config::yaml::{self, Node};

/// A document split into frontmatter and body.
#[derive(Clone, Debug, Default)]
pub struct Document<'a> {
    /// Top-level keys with their values, the last of duplicates winning, in first-seen order.
    pub fields: Vec<(String, Node)>,
    /// Whether there was a frontmatter block.
    pub present: bool,
    /// The body (everything after the closing `---`).
    pub body: &'a str,
    /// The body's first line in the file.
    pub body_line: usize,
}

impl Document<'_> {
    /// A field.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// A scalar field's text.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Node::as_str)
    }
}

/// Split `text` and read its frontmatter; findings go to `diagnostics`.
pub fn read<'a>(text: &'a str, file: &str, diagnostics: &mut Vec<Diagnostic>) -> Document<'a> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first = text.lines().next().unwrap_or("");
    if first.trim_end() != "---" {
        return Document {
            body: text,
            body_line: 1,
            ..Default::default()
        };
    }
    let open_len = text.find('\n').map_or(text.len(), |i| i + 1);
    let mut offset = open_len;
    let mut close = None;
    for (i, line) in text[open_len..].split_inclusive('\n').enumerate() {
        if line.trim_end() == "---" {
            close = Some((offset, offset + line.len(), i));
            break;
        }
        offset += line.len();
    }
    let Some((yaml_end, body_start, yaml_lines)) = close else {
        diagnostics.push(Diagnostic::error(
            file,
            1,
            1,
            "the frontmatter opened here is never closed with `---`".into(),
        ));
        return Document {
            body: text,
            body_line: 1,
            ..Default::default()
        };
    };
    let body = &text[body_start..];
    let body_line = yaml_lines + 3;
    let raw = &text[open_len..yaml_end];
    let mut doc = Document {
        present: true,
        body,
        body_line,
        ..Default::default()
    };
    // `---\n---` is how BMAD's own step files (v6.2 quick-dev, HEAD bmad-build) say "no
    // fields": not worth a warning.
    if raw.trim().is_empty() {
        return doc;
    }
    // YAML forbids tabs in indentation; BMAD users write them anyway.
    let mut yaml_text = String::with_capacity(raw.len());
    for (i, line) in raw.split_inclusive('\n').enumerate() {
        let indent: String = line
            .chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .collect();
        if indent.contains('\t') {
            diagnostics.push(Diagnostic::warning(
                file,
                i + 2,
                1,
                "tab in indentation: read as two spaces".into(),
            ));
            yaml_text.push_str(&indent.replace('\t', "  "));
            yaml_text.push_str(&line[indent.len()..]);
        } else {
            yaml_text.push_str(line);
        }
    }
    match yaml::parse(&yaml_text) {
        Ok(Some(node)) => match node.as_map() {
            Some(entries) => {
                for (k, v) in entries {
                    let key = k.as_str().unwrap_or_default().to_owned();
                    let mut v = v.clone();
                    shift(&mut v, 1);
                    if let Some(slot) = doc.fields.iter_mut().find(|(name, _)| *name == key) {
                        diagnostics.push(Diagnostic::warning(
                            file,
                            k.line + 1,
                            k.col,
                            format!("duplicate key `{key}`: the last value is used"),
                        ));
                        slot.1 = v;
                    } else {
                        doc.fields.push((key, v));
                    }
                }
            }
            None => diagnostics.push(Diagnostic::error(
                file,
                2,
                1,
                format!(
                    "the frontmatter is a {}, not a mapping of keys",
                    node.kind()
                ),
            )),
        },
        Ok(None) => {}
        Err(e) => diagnostics.push(Diagnostic::error(
            file,
            e.line + 1,
            e.col,
            format!("the frontmatter is not valid YAML: {}", e.message),
        )),
    }
    doc
}

/// Move a node's positions down by `lines` (the frontmatter starts on line 2).
fn shift(node: &mut Node, lines: usize) {
    node.line += lines;
    match &mut node.value {
        yaml::Value::Seq(items) => items.iter_mut().for_each(|n| shift(n, lines)),
        yaml::Value::Map(entries) => entries.iter_mut().for_each(|(k, v)| {
            shift(k, lines);
            shift(v, lines);
        }),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_tabs_and_empty_load_with_warnings() {
        let mut d = Vec::new();
        let doc = read(
            "---\nname: a\nlist:\n\t- x\nname: b\n---\n# Body\n",
            "s.md",
            &mut d,
        );
        assert_eq!(doc.str("name"), Some("b"));
        assert_eq!(
            doc.get("list").and_then(Node::as_seq).map(|s| s.len()),
            Some(1)
        );
        assert_eq!(doc.body, "# Body\n");
        assert_eq!(doc.body_line, 7);
        let messages: Vec<String> = d.iter().map(|x| x.to_string()).collect();
        assert_eq!(
            messages,
            [
                "s.md:4:1: warning: tab in indentation: read as two spaces",
                "s.md:5:1: warning: duplicate key `name`: the last value is used"
            ]
        );
        let mut d = Vec::new();
        let doc = read("---\n---\nbody\n", "e.md", &mut d);
        assert!(doc.present && doc.fields.is_empty());
        assert!(d.is_empty(), "BMAD's own files write it: {d:?}");
    }

    #[test]
    fn invalid_yaml_is_an_error_with_its_line() {
        let mut d = Vec::new();
        read("---\nname: a\nbad: [unclosed\n---\n", "x.md", &mut d);
        assert_eq!(d[0].severity, super::super::Severity::Error);
        assert!(d[0].line >= 3, "{}", d[0]);
        let mut d = Vec::new();
        let doc = read("no frontmatter\n", "y.md", &mut d);
        assert!(!doc.present && d.is_empty());
    }
}
