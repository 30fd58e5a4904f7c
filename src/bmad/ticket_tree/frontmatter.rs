//! The frontmatter of v7's leaf and plan files, read and edited as BMAD's `tickets.py` does:
//! a minimal YAML subset (`key: value`, inline lists `[a, b]`, quoted or bare scalars), the
//! block between the first two `---` lines; one line changed in place, the rest of the file
//! (byte-order mark, line endings) kept byte for byte.

/// One frontmatter value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A quoted or bare string.
    Text(String),
    /// A whole number written bare.
    Number(i64),
    /// `true` or `false`, bare.
    Flag(bool),
    /// `[a, b]`.
    List(Vec<Value>),
}

impl Value {
    /// The value as text, as `str()` would show it.
    pub fn text(&self) -> String {
        match self {
            Value::Text(t) => t.clone(),
            Value::Number(n) => n.to_string(),
            Value::Flag(f) => f.to_string(),
            Value::List(items) => items.iter().map(Value::text).collect::<Vec<_>>().join(", "),
        }
    }

    /// `true` written any way (`true`, `"true"`, `True`).
    pub fn flag(&self) -> bool {
        self.text().eq_ignore_ascii_case("true")
    }
}

/// The text without a UTF-8 byte-order mark, with `\n` line endings.
pub fn normalised(text: &str) -> String {
    text.strip_prefix('\u{feff}')
        .unwrap_or(text)
        .replace("\r\n", "\n")
}

/// Where the frontmatter block is in normalised text: the byte range of its lines.
fn block(text: &str) -> Option<std::ops::Range<usize>> {
    let rest = text.strip_prefix("---\n")?;
    let start: usize = 4;
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches('\n') == "---" {
            // The block excludes the newline before the closing line.
            let end = (start + at).saturating_sub(1).max(start);
            return Some(start..end);
        }
        at += line.len();
    }
    None
}

/// The frontmatter's fields, in order. Indented lines and block-list items are skipped, as
/// `tickets.py` does for plans written from the build's template.
pub fn fields(text: &str) -> Vec<(String, Value)> {
    let text = normalised(text);
    let Some(range) = block(&text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in text[range].lines() {
        if line.starts_with([' ', '\t'])
            || line.starts_with("- ")
            || line.trim_start().starts_with('#')
        {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.split("   #").next().unwrap_or_default().trim();
        out.push((key.trim().to_owned(), scalar(strip_comment(value))));
    }
    out
}

/// The value of `key` among `fields` (the first, as `tickets.py` keeps one per key).
pub fn get<'f>(fields: &'f [(String, Value)], key: &str) -> Option<&'f Value> {
    fields.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// A quoted value followed by a ` # comment` loses the comment.
fn strip_comment(value: &str) -> &str {
    let Some(quote) = value.chars().next().filter(|c| *c == '"' || *c == '\'') else {
        return value;
    };
    let mut escaped = false;
    for (i, c) in value.char_indices().skip(1) {
        if quote == '"' && c == '\\' && !escaped {
            escaped = true;
            continue;
        }
        if c == quote && !escaped {
            let rest = value[i + 1..].trim_start();
            if rest.starts_with('#') && value[i + 1..].starts_with(char::is_whitespace) {
                return &value[..=i];
            }
            return value;
        }
        escaped = false;
    }
    value
}

fn scalar(value: &str) -> Value {
    if let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
        let inner = inner.trim();
        if inner.is_empty() {
            return Value::List(Vec::new());
        }
        return Value::List(inner.split(',').map(|v| scalar(v.trim())).collect());
    }
    let quoted = value.len() >= 2
        && (value.starts_with('"') && value.ends_with('"')
            || value.starts_with('\'') && value.ends_with('\''));
    if quoted {
        if value.starts_with('"') {
            if let Ok(text) = serde_json::from_str::<String>(value) {
                return Value::Text(text);
            }
            return Value::Text(value[1..value.len() - 1].to_owned());
        }
        return Value::Text(value[1..value.len() - 1].replace("''", "'"));
    }
    match value {
        "true" => Value::Flag(true),
        "false" => Value::Flag(false),
        _ => match value.parse::<i64>() {
            Ok(n) if !value.starts_with('+') => Value::Number(n),
            _ => Value::Text(value.to_owned()),
        },
    }
}

/// `text` with the frontmatter's `key:` line set to `key: value` (the first such line, or a
/// new last line of the block), keeping the byte-order mark and `\r\n` line endings; `None`
/// when the file has no frontmatter.
pub fn with_value(text: &str, key: &str, value: &str) -> Option<String> {
    let bom = text.starts_with('\u{feff}');
    let crlf = text.contains("\r\n");
    let plain = normalised(text);
    let range = block(&plain)?;
    let lines = &plain[range.clone()];
    let prefix = format!("{key}:");
    let mut replaced = false;
    let mut new_block: Vec<String> = Vec::new();
    for line in lines.split('\n') {
        if !replaced && line.starts_with(&prefix) {
            new_block.push(format!("{key}: {value}"));
            replaced = true;
        } else {
            new_block.push(line.to_owned());
        }
    }
    let mut block_text = new_block.join("\n");
    if !replaced {
        if lines.is_empty() {
            // An empty block: its closing line follows directly.
            block_text = format!("{key}: {value}\n");
        } else {
            block_text.push_str(&format!("\n{key}: {value}"));
        }
    }
    let mut out = format!(
        "{}{}{}",
        &plain[..range.start],
        block_text,
        &plain[range.end..]
    );
    if crlf {
        out = out.replace('\n', "\r\n");
    }
    if bom {
        out.insert(0, '\u{feff}');
    }
    Some(out)
}

/// A double-quoted scalar that [`fields`] reads back exactly (a `   #` would start a comment,
/// and Unicode line separators would split the line: both go in escaped).
pub fn quoted(value: &str) -> String {
    let json = serde_json::to_string(value).unwrap_or_else(|_| "\"\"".to_owned());
    json.replace("   #", "   \\u0023")
        .replace('\u{85}', "\\u0085")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_the_subset_tickets_py_reads() {
        let text = "---\nticket: 6\ntitle: \"Cart: checkout\"   # the title\nstatus: in-review\nafter: [1, \"1.3\"]\nhitl: true\nsteps:\n  - one\n- two\nrisk: 'it''s low'\n---\n# Body\nstatus: done\n";
        let f = fields(text);
        let get = |k: &str| f.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        assert_eq!(get("ticket"), Some(Value::Number(6)));
        assert_eq!(get("title"), Some(Value::Text("Cart: checkout".into())));
        assert_eq!(get("status"), Some(Value::Text("in-review".into())));
        assert_eq!(
            get("after"),
            Some(Value::List(vec![
                Value::Number(1),
                Value::Text("1.3".into())
            ]))
        );
        assert_eq!(get("hitl"), Some(Value::Flag(true)));
        assert_eq!(get("risk"), Some(Value::Text("it's low".into())));
        assert_eq!(get("steps"), Some(Value::Text(String::new())));
        assert_eq!(
            f.iter().filter(|(k, _)| k == "status").count(),
            1,
            "the body is no frontmatter"
        );
        assert!(fields("# no frontmatter\nstatus: done\n").is_empty());
        assert!(
            fields("---\nstatus: done\n").is_empty(),
            "an unclosed block is none"
        );
    }

    #[test]
    fn a_value_is_set_in_place_keeping_everything_else() {
        let text =
            "---\ntitle: \"Cart\"\nticket: 6\nstatus: in-progress\n---\n\n## Plan\nstatus: keep\n";
        let out = with_value(text, "status", "built").unwrap();
        assert_eq!(out, text.replace("status: in-progress", "status: built"));
        // No status line: a new last line of the block.
        let bare = "---\nticket: 6\n---\nbody\n";
        assert_eq!(
            with_value(bare, "status", "done").unwrap(),
            "---\nticket: 6\nstatus: done\n---\nbody\n"
        );
        // A byte-order mark and CRLF line endings stay.
        let windows = "\u{feff}---\r\nticket: 6\r\nstatus: draft\r\n---\r\nbody\r\n";
        assert_eq!(
            with_value(windows, "status", "done").unwrap(),
            "\u{feff}---\r\nticket: 6\r\nstatus: done\r\n---\r\nbody\r\n"
        );
        assert_eq!(with_value("no frontmatter\n", "status", "done"), None);
        // An empty block gets its one line.
        assert_eq!(
            with_value("---\n---\n", "status", "done").unwrap(),
            "---\nstatus: done\n---\n"
        );
    }

    #[test]
    fn quoted_values_read_back_exactly() {
        for value in [
            "Cart: checkout",
            "a   # not a comment",
            "quote \" and \\",
            "line\u{2028}sep",
            "ünï",
        ] {
            let text = format!("---\ntitle: {}\n---\n", quoted(value));
            assert_eq!(
                fields(&text),
                vec![("title".to_owned(), Value::Text(value.to_owned()))],
                "{value:?}"
            );
        }
    }
}
