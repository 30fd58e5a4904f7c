//! BMAD's XML-like tags inside markdown, read leniently into a tree.
//!
//! Instruction files are not well-formed XML: tags sit in markdown, `<output>` holds emoji
//! and Handlebars, `<goto step="6">` sometimes closes and sometimes does not, and a `<` may
//! just be a less-than sign. So this is not an XML parser: a tag is recognised only where its
//! grammar matches (`<name attr="…">`, `</name>`, `<name …/>`), everything else is text;
//! tags in fenced code blocks, inline code spans and HTML comments are text too; a closing
//! tag closes the nearest open element of its name (the ones it skips are closed with it,
//! with a warning); a stray closing tag is a warning, never an error. Nothing panics and
//! nothing is dropped.

use serde::Serialize;

/// An element.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Element {
    /// The tag name, as written.
    pub name: String,
    /// Attributes in order, values unescaped of their quotes only.
    pub attrs: Vec<(String, String)>,
    /// 1-based line of `<`.
    pub line: usize,
    /// 1-based column of `<`.
    pub col: usize,
    /// Child elements, in order.
    pub children: Vec<Element>,
    /// The element's own text (its children's left out), trimmed, lines joined by `\n`.
    pub text: String,
    /// `<name/>`.
    pub self_closing: bool,
}

impl Element {
    /// An attribute's value.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// This element and every descendant, depth first, in document order.
    pub fn walk<'a>(&'a self, out: &mut Vec<&'a Element>) {
        out.push(self);
        for c in &self.children {
            c.walk(out);
        }
    }
}

/// Something the reader noticed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// What.
    pub message: String,
    /// The file cannot be read as written (tags nested too deep), not just odd.
    pub error: bool,
}

/// Tags that are complete without a closing tag when one never comes.
const VOID: &[&str] = &["goto", "anchor", "invoke-protocol", "invoke-task", "param"];

/// The deepest nesting of tags read. BMAD's own files nest under ten levels; every consumer
/// of the tree recurses, so a hostile file nested fifty thousand deep would overflow the
/// stack. Deeper tags are an error, and are skipped with the closing tags that match them.
pub const MAX_NESTING: usize = 100;

/// The longest tag read (attributes may wrap onto following lines); a `<` whose tag does
/// not end within this is text. It also bounds the work done per `<`.
const MAX_TAG_LEN: usize = 4096;

/// Read `text` (whose first line is `first_line`) into top-level elements.
pub fn read(text: &str, first_line: usize) -> (Vec<Element>, Vec<Note>) {
    let mut reader = Reader {
        stack: vec![root()],
        notes: Vec::new(),
        too_deep: 0,
    };
    let bytes = text.as_bytes();
    let mut line = first_line;
    let mut line_start = 0;
    let mut i = 0;
    let mut text_start = 0;
    let mut at_line_start = true;
    while i < bytes.len() {
        if at_line_start {
            at_line_start = false;
            line_start = i;
            // A fenced code block: text up to its closing fence.
            let rest = text[i..].trim_start_matches([' ', '\t']);
            if rest.starts_with("```") || rest.starts_with("~~~") {
                let marker = &rest[..3];
                reader.text(&text[text_start..i]);
                let mut j = i + text[i..].find('\n').map_or(text.len() - i, |n| n + 1);
                line += 1;
                while j < text.len() {
                    let l_end = text[j..].find('\n').map_or(text.len(), |n| j + n + 1);
                    let closing = text[j..l_end].trim_start().starts_with(marker);
                    j = l_end;
                    line += 1;
                    if closing {
                        break;
                    }
                }
                i = j;
                text_start = i;
                at_line_start = true;
                continue;
            }
        }
        match bytes[i] {
            b'\n' => {
                line += 1;
                i += 1;
                at_line_start = true;
            }
            b'`' => {
                // An inline code span: up to the next backtick on this line.
                let line_end = text[i + 1..].find('\n').map_or(text.len(), |n| i + 1 + n);
                match text[i + 1..line_end].find('`') {
                    Some(end) => i += end + 2,
                    None => i += 1,
                }
            }
            b'<' if text[i..].starts_with("<!--") => {
                reader.text(&text[text_start..i]);
                let end = text[i..].find("-->").map_or(text.len(), |e| i + e + 3);
                line += text[i..end].matches('\n').count();
                if text[i..end].contains('\n') {
                    line_start = i + text[i..end].rfind('\n').map_or(0, |n| n + 1);
                }
                i = end;
                text_start = i;
            }
            b'<' => {
                let mut window_end = (i + MAX_TAG_LEN).min(text.len());
                while !text.is_char_boundary(window_end) {
                    window_end -= 1;
                }
                match parse_tag(&text[i..window_end]) {
                    Some(tag) => {
                        reader.text(&text[text_start..i]);
                        let col = text[line_start..i].chars().count() + 1;
                        let consumed = &text[i..i + tag.len];
                        let newlines = consumed.matches('\n').count();
                        let len = tag.len;
                        reader.tag(tag, line, col);
                        if newlines > 0 {
                            line += newlines;
                            line_start = i + consumed.rfind('\n').map_or(0, |n| n + 1);
                        }
                        i += len;
                        text_start = i;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    reader.text(&text[text_start..]);
    while reader.stack.len() > 1 {
        reader.close_top(Some("the file ends"));
    }
    let root = reader.stack.pop().unwrap_or_else(root);
    (root.children, reader.notes)
}

fn root() -> Element {
    Element {
        name: String::new(),
        attrs: Vec::new(),
        line: 0,
        col: 0,
        children: Vec::new(),
        text: String::new(),
        self_closing: false,
    }
}

struct Reader {
    stack: Vec<Element>,
    notes: Vec<Note>,
    /// Opening tags skipped for being nested deeper than [`MAX_NESTING`], still open.
    too_deep: usize,
}

impl Reader {
    fn text(&mut self, text: &str) {
        let Some(top) = self.stack.last_mut() else {
            return;
        };
        for t in text.lines().map(str::trim).filter(|t| !t.is_empty()) {
            if !top.text.is_empty() {
                top.text.push('\n');
            }
            top.text.push_str(t);
        }
    }

    fn tag(&mut self, tag: Tag, line: usize, col: usize) {
        if tag.closing && self.too_deep > 0 {
            self.too_deep -= 1;
            return;
        }
        if !tag.closing && !tag.self_closing && self.stack.len() > MAX_NESTING {
            if self.too_deep == 0 && !self.notes.iter().any(|n| n.error) {
                self.notes.push(Note {
                    line,
                    col,
                    message: format!(
                        "tags nest deeper than {MAX_NESTING} levels here: <{}> and the tags inside it are skipped",
                        tag.name
                    ),
                    error: true,
                });
            }
            self.too_deep += 1;
            return;
        }
        if tag.closing {
            match self.stack.iter().rposition(|e| e.name == tag.name) {
                Some(at) if at > 0 => {
                    while self.stack.len() > at + 1 {
                        self.close_top(Some("an enclosing tag closes"));
                    }
                    self.close_top(None);
                }
                _ => self.notes.push(Note {
                    line,
                    col,
                    message: format!("</{}> closes nothing that is open; ignored", tag.name),
                    error: false,
                }),
            }
            return;
        }
        let element = Element {
            name: tag.name,
            attrs: tag.attrs,
            line,
            col,
            children: Vec::new(),
            text: String::new(),
            self_closing: tag.self_closing,
        };
        if tag.self_closing {
            if let Some(top) = self.stack.last_mut() {
                top.children.push(element);
            }
        } else {
            self.stack.push(element);
        }
    }

    /// Close the innermost open element: by its own closing tag (`None`), or implicitly,
    /// saying where it ended.
    fn close_top(&mut self, implicitly: Option<&str>) {
        let Some(element) = self.stack.pop() else {
            return;
        };
        if let Some(why) = implicitly.filter(|_| !VOID.contains(&element.name.as_str())) {
            self.notes.push(Note {
                line: element.line,
                col: element.col,
                message: format!("<{}> is never closed; it ends where {why}", element.name),
                error: false,
            });
        }
        match self.stack.last_mut() {
            Some(parent) => parent.children.push(element),
            None => self.stack.push(element),
        }
    }
}

#[derive(Clone, Debug)]
struct Tag {
    name: String,
    attrs: Vec<(String, String)>,
    closing: bool,
    self_closing: bool,
    /// Bytes consumed.
    len: usize,
}

/// A tag at the start of `s`, if `s` starts with one.
fn parse_tag(s: &str) -> Option<Tag> {
    let b = s.as_bytes();
    let mut i = 1;
    let closing = b.get(i) == Some(&b'/');
    if closing {
        i += 1;
    }
    let name_start = i;
    if !b.get(i)?.is_ascii_alphabetic() {
        return None;
    }
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'-' || b[i] == b'_') {
        i += 1;
    }
    let name = s[name_start..i].to_owned();
    let mut attrs = Vec::new();
    loop {
        let ws = i;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        match b.get(i)? {
            b'>' => {
                return Some(Tag {
                    name,
                    attrs,
                    closing,
                    self_closing: false,
                    len: i + 1,
                })
            }
            b'/' if b.get(i + 1) == Some(&b'>') && !closing => {
                return Some(Tag {
                    name,
                    attrs,
                    closing,
                    self_closing: true,
                    len: i + 2,
                })
            }
            c if c.is_ascii_alphabetic() && !closing && i > ws => {
                let key_start = i;
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'-' | b'_' | b':'))
                {
                    i += 1;
                }
                let key = s[key_start..i].to_owned();
                while i < b.len() && b[i] == b' ' {
                    i += 1;
                }
                if b.get(i) != Some(&b'=') {
                    // A bare attribute (`<step n="1" optional>`).
                    attrs.push((key, String::new()));
                    continue;
                }
                i += 1;
                while i < b.len() && b[i] == b' ' {
                    i += 1;
                }
                let quote = *b.get(i)?;
                if quote != b'"' && quote != b'\'' {
                    return None;
                }
                let value_start = i + 1;
                let end = s[value_start..].find(quote as char)? + value_start;
                attrs.push((key, s[value_start..end].to_owned()));
                i = end + 1;
            }
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::testing::random_strings;

    #[test]
    fn tags_text_and_traps() {
        let text = "# Title\n<workflow>\n<step n=\"1\" goal=\"Load\" optional>\n  <action if=\"a > b\">Do it</action>\n  <goto step=\"2\">Next</goto>\n  <anchor id=\"x\" />\n  a < b and `<action>` in code\n</step>\n```xml\n<step n=\"9\">fenced</step>\n```\n<!-- <step n=\"8\"> -->\n</workflow>\n";
        let (elements, notes) = read(text, 1);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(elements.len(), 1);
        let wf = &elements[0];
        assert_eq!(wf.name, "workflow");
        assert_eq!(
            wf.children.len(),
            1,
            "the fenced and commented steps are text"
        );
        let step = &wf.children[0];
        assert_eq!(
            (step.attr("n"), step.attr("optional"), step.line, step.col),
            (Some("1"), Some(""), 3, 1)
        );
        let names: Vec<&str> = step.children.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["action", "goto", "anchor"]);
        assert_eq!(step.children[0].attr("if"), Some("a > b"));
        assert_eq!(step.children[1].text, "Next");
        assert!(step.text.contains("a < b"));
    }

    #[test]
    fn unclosed_and_stray_tags_are_notes() {
        let (elements, notes) = read(
            "<step n=\"1\">\n<goto step=\"2\">\n<action>x\n</step>\n</check>\n",
            1,
        );
        assert_eq!(elements[0].children.len(), 1);
        let messages: Vec<&str> = notes.iter().map(|n| n.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "<action> is never closed; it ends where an enclosing tag closes",
                "</check> closes nothing that is open; ignored"
            ]
        );
    }

    #[test]
    fn tags_nested_beyond_the_bound_are_one_error_and_the_rest_reads_on() {
        let deep = format!(
            "<workflow>\n{}x{}\n<step n=\"2\">after</step>\n</workflow>\n",
            "<check>".repeat(50_000),
            "</check>".repeat(50_000)
        );
        let (elements, notes) = read(&deep, 1);
        let errors: Vec<_> = notes.iter().filter(|n| n.error).collect();
        assert_eq!(errors.len(), 1, "{notes:?}");
        assert_eq!(errors[0].line, 2);
        assert!(
            notes.iter().all(|n| n.error),
            "no note per skipped tag: {}",
            notes.len()
        );
        let workflow = &elements[0];
        assert_eq!(workflow.children.len(), 2);
        assert_eq!(workflow.children[1].attr("n"), Some("2"));
    }

    #[test]
    fn never_panics() {
        for s in random_strings("<>/=\"' \n`-!abstepn1é", 42, 3000, 60) {
            let _ = read(&s, 1);
        }
    }
}
