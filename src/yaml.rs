//! YAML with positions: every node knows its line and column.
//!
//! serde_yaml reports where the *first* error is; a playbook validator must report *every*
//! violation with its `file:line:col`, so it walks a tree whose nodes carry their positions.
//! Built from yaml-rust2's marked parser events; anchors and aliases are not expanded (a
//! playbook has no use for them, and an alias is reported where it is used).

use std::fmt;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

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
    parser.load(&mut builder, false).map_err(|e| SyntaxError {
        line: e.marker().line(),
        col: e.marker().col() + 1,
        message: e.info().to_owned(),
    })?;
    Ok(builder.root)
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
}
