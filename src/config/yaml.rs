//! YAML, bounded: every document git-bmad reads goes through here.
//!
//! Two readers share one bound. [`from_str`] deserializes into serde types (serde_norway, the
//! maintained fork of the deprecated serde_yaml, which says where the first error is);
//! [`parse`] builds a tree whose nodes carry their positions, for validators that report
//! *every* violation with its `file:line:col` (anchors and aliases are not expanded there: a
//! playbook has no use for them, and an alias is reported where it is used).
//!
//! The bound: a document nested deeper than [`MAX_DEPTH`] is refused at the line where it
//! goes too deep, before any parser builds anything. Without it, 30,000 nested `- ` overflow
//! the stack and 100,000 nested `{a: ` keep a parser busy for seconds, and config files are
//! read by every hook.

use std::fmt;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

pub use serde_norway::{Mapping, Value as Data};

/// How deeply collections may nest. Real configs, playbooks and BMAD files stay under 10.
pub const MAX_DEPTH: usize = 64;

/// A document that cannot be deserialized, and where, when the parser knows.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", location.map(|(l, c)| format!("{l}:{c}: ")).unwrap_or_default())]
pub struct DeError {
    /// 1-based line and column.
    pub location: Option<(usize, usize)>,
    /// What is wrong (without the location).
    pub message: String,
}

impl From<SyntaxError> for DeError {
    fn from(e: SyntaxError) -> Self {
        DeError {
            location: Some((e.line, e.col)),
            message: e.message,
        }
    }
}

/// Deserialize a document into `T`, within the nesting bound.
pub fn from_str<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, DeError> {
    check_depth(text)?;
    serde_norway::from_str(text).map_err(|e| {
        let location = e.location().map(|l| (l.line(), l.column()));
        let text = e.to_string();
        // serde_norway puts the location at the end of its message; we put it in front.
        let message = match text.rsplit_once(" at line ") {
            Some((message, _)) if location.is_some() => message.to_owned(),
            _ => text,
        };
        DeError { location, message }
    })
}

/// Serialize a value back to YAML text (for messages that quote a value).
pub fn to_string(value: &Data) -> String {
    serde_norway::to_string(value).unwrap_or_default()
}

/// Refuse a document nested deeper than [`MAX_DEPTH`], stopping at the first event past it.
pub fn check_depth(text: &str) -> Result<(), SyntaxError> {
    let mut parser = Parser::new_from_str(text);
    let mut depth = 0usize;
    loop {
        let (event, mark) = parser.next_token().map_err(scan_error)?;
        match event {
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(too_deep(&mark));
                }
            }
            Event::SequenceEnd | Event::MappingEnd => depth = depth.saturating_sub(1),
            Event::StreamEnd => return Ok(()),
            _ => {}
        }
    }
}

fn scan_error(e: yaml_rust2::ScanError) -> SyntaxError {
    SyntaxError {
        line: e.marker().line(),
        col: e.marker().col() + 1,
        message: e.info().to_owned(),
    }
}

fn too_deep(mark: &Marker) -> SyntaxError {
    SyntaxError {
        line: mark.line(),
        col: mark.col() + 1,
        message: format!(
            "collections are nested more than {MAX_DEPTH} deep here; no git-bmad or BMAD file needs that, so the file is refused rather than read"
        ),
    }
}

/// One node of a YAML document.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// What it holds.
    pub value: Value,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
}

/// The value of a node.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `~`, `null` or nothing.
    Null,
    /// Any other scalar, as written (quoted or not); numbers and booleans stay text.
    Scalar(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in document order; keys are nodes so their positions are known.
    Map(Vec<(Node, Node)>),
    /// An alias (`*name`), not expanded.
    Alias,
}

/// A document that is not YAML.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{col}: {message}")]
pub struct SyntaxError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// What the parser said.
    pub message: String,
}

impl Node {
    /// The text of a scalar.
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Scalar(s) => Some(s),
            _ => None,
        }
    }

    /// The entries of a mapping.
    pub fn as_map(&self) -> Option<&[(Node, Node)]> {
        match &self.value {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// The items of a sequence.
    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(items) => Some(items),
            _ => None,
        }
    }

    /// The value under `key` in a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v)
    }

    /// What kind of node this is, for messages ("a mapping", "a list", …).
    pub fn kind(&self) -> &'static str {
        match self.value {
            Value::Null => "empty",
            Value::Scalar(_) => "a scalar",
            Value::Seq(_) => "a list",
            Value::Map(_) => "a mapping",
            Value::Alias => "an alias",
        }
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            Value::Scalar(s) => write!(f, "{s:?}"),
            _ => f.write_str(self.kind()),
        }
    }
}

/// Parse the first document of `text`; `None` for an empty document.
pub fn parse(text: &str) -> Result<Option<Node>, SyntaxError> {
    let mut builder = Builder::default();
    let mut parser = Parser::new_from_str(text);
    loop {
        let (event, mark) = parser.next_token().map_err(scan_error)?;
        match event {
            Event::StreamEnd | Event::DocumentEnd => return Ok(builder.root),
            Event::SequenceStart(..) | Event::MappingStart(..)
                if builder.stack.len() >= MAX_DEPTH =>
            {
                return Err(too_deep(&mark));
            }
            event => builder.on_event(event, mark),
        }
    }
}

/// Turns the event stream into a tree.
#[derive(Default)]
struct Builder {
    /// Open collections: the node being filled, and for a mapping a key waiting for its value.
    stack: Vec<(Node, Option<Node>)>,
    root: Option<Node>,
}

impl Builder {
    fn push_value(&mut self, node: Node) {
        match self.stack.last_mut() {
            None => {
                if self.root.is_none() {
                    self.root = Some(node);
                }
            }
            Some((parent, pending_key)) => match &mut parent.value {
                Value::Seq(items) => items.push(node),
                Value::Map(entries) => match pending_key.take() {
                    Some(key) => entries.push((key, node)),
                    None => *pending_key = Some(node),
                },
                _ => {}
            },
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, event: Event, mark: Marker) {
        let at = |value| Node {
            value,
            line: mark.line(),
            col: mark.col() + 1,
        };
        match event {
            Event::Scalar(text, style, _, tag) => {
                let null = style == TScalarStyle::Plain
                    && tag.is_none()
                    && matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL");
                self.push_value(at(if null {
                    Value::Null
                } else {
                    Value::Scalar(text)
                }));
            }
            Event::SequenceStart(..) => self.stack.push((at(Value::Seq(Vec::new())), None)),
            Event::MappingStart(..) => self.stack.push((at(Value::Map(Vec::new())), None)),
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((mut node, _)) = self.stack.pop() {
                    // yaml-rust2 marks a block mapping after its first key; the key is where
                    // a reader looks for it.
                    if let Some((key, _)) = node.as_map().and_then(|m| m.first()) {
                        if (key.line, key.col) < (node.line, node.col) {
                            (node.line, node.col) = (key.line, key.col);
                        }
                    }
                    self.push_value(node);
                }
            }
            Event::Alias(_) => self.push_value(at(Value::Alias)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_of_every_node() {
        let text = "name: x\nsteps:\n  - id: plan\n    command: \"/a\"\n  - id: b\n";
        let root = parse(text).unwrap().unwrap();
        assert_eq!((root.line, root.col), (1, 1));
        let steps = root.get("steps").unwrap().as_seq().unwrap();
        let second = &steps[1];
        assert_eq!(second.get("id").unwrap().as_str(), Some("b"));
        assert_eq!((second.line, second.col), (5, 5));
        let command = steps[0].get("command").unwrap();
        assert_eq!(
            (command.line, command.col, command.as_str()),
            (4, 14, Some("/a"))
        );
        let (key, _) = &steps[0].as_map().unwrap()[1];
        assert_eq!((key.line, key.col), (4, 5));
    }

    #[test]
    fn nulls_and_errors() {
        let root = parse("a:\nb: ~\nc: 'null'\n").unwrap().unwrap();
        assert_eq!(root.get("a").unwrap().value, Value::Null);
        assert_eq!(root.get("b").unwrap().value, Value::Null);
        assert_eq!(root.get("c").unwrap().as_str(), Some("null"));
        assert_eq!(parse("").unwrap(), None);
        let e = parse("a: [1, 2\nb: 3\n").unwrap_err();
        assert!(e.line >= 1 && !e.message.is_empty(), "{e}");
        // Arbitrary bytes never panic.
        for text in ["- [", "{a: b", ":", "\t- x", "a: *nope", "- ? - x"] {
            let _ = parse(text);
        }
    }

    #[test]
    fn depth_is_bounded_for_both_readers() {
        let deep_block = format!("steps:\n{}x\n", "- ".repeat(30_000));
        let e = parse(&deep_block).unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.contains("nested more than 64"), "{e}");
        let deep_flow = "{a: ".repeat(100_000);
        let e = from_str::<Data>(&deep_flow).unwrap_err();
        assert_eq!(e.location.map(|l| l.0), Some(1), "{e}");
        // 64 levels are fine.
        let ok = format!("{}x{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(from_str::<Data>(&ok).is_ok());
        assert!(parse(&ok).is_ok());
    }
}
