//! BMAD's YAML read as text: where a `key: value` line's value sits (so a change rewrites
//! those bytes only), keys written twice (invalid YAML that real sprint-status files
//! contain), and values read the lenient way real frontmatter needs.

use std::ops::Range;

/// `key: value  # comment` → the key (unquoted) and the value's byte range in `line`
/// (inside quotes), `None` for a key with nothing after the colon.
pub(super) fn split_entry(line: &str) -> Option<(String, Option<Range<usize>>)> {
    let (key, rest_at) = if let Some(q) = line.chars().next().filter(|c| *c == '"' || *c == '\'') {
        let close = line[1..].find(q)? + 1;
        let after = &line[close + 1..];
        if !after.trim_start().starts_with(':') {
            return None;
        }
        (line[1..close].to_owned(), close + 1 + after.find(':')? + 1)
    } else {
        let colon = line
            .find(": ")
            .or_else(|| line.strip_suffix(':').map(|s| s.len()))?;
        (line[..colon].trim_end().to_owned(), colon + 1)
    };
    let rest = &line[rest_at..];
    let lead = rest.len() - rest.trim_start().len();
    let value_start = rest_at + lead;
    let value = &line[value_start..];
    if value.is_empty() || value.starts_with('#') {
        return Some((key, None));
    }
    let range = match value.chars().next() {
        Some(q @ ('"' | '\'')) => {
            let close = value[1..].find(q)? + 1;
            value_start + 1..value_start + close
        }
        _ => {
            let end = value.find(" #").unwrap_or(value.len());
            value_start..value_start + value[..end].trim_end().len()
        }
    };
    Some((key, Some(range)))
}

/// Where the value of a `key: value` line is in `line`, indented or not.
pub(super) fn value_of(line: &str, key: &str) -> Option<Range<usize>> {
    let lead = line.len() - line.trim_start().len();
    match split_entry(&line[lead..])? {
        (found, Some(r)) if found == key => Some(lead + r.start..lead + r.end),
        _ => None,
    }
}

/// The text with every repeated key's line in a mapping blanked (line numbers kept), and
/// the repeats: key, line, line of the first.
pub(super) fn without_repeated_keys(text: &str) -> (String, Vec<(String, usize, usize)>) {
    let mut out = String::with_capacity(text.len());
    // Keys are unique per mapping: a mapping is named by the line that opened it (the
    // nearest line above with less indentation, or the list item's dash).
    let mut seen: std::collections::HashMap<(usize, String), usize> = Default::default();
    let mut parents: Vec<(usize, usize)> = Vec::new();
    let mut repeated = Vec::new();
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let body = line.trim_end_matches(['\n', '\r']);
        let mut trimmed = body.trim_start();
        let mut indent = body.len() - trimmed.len();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            out.push_str(line);
            continue;
        }
        while parents.last().is_some_and(|(i, _)| *i >= indent) {
            parents.pop();
        }
        if let Some(item) = trimmed.strip_prefix("- ") {
            // A list item opens a mapping of its own.
            parents.push((indent, n));
            indent += 2;
            trimmed = item.trim_start();
        }
        let scope = parents.last().map_or(usize::MAX, |(_, l)| *l);
        if let Some((key, _)) = split_entry(trimmed) {
            if let Some(first) = seen.get(&(scope, key.clone())) {
                repeated.push((key, n + 1, *first));
                out.push_str(&line[body.len()..]);
                continue;
            }
            seen.insert((scope, key), n + 1);
        }
        parents.push((indent, n));
        out.push_str(line);
    }
    (out, repeated)
}

/// A list of names, or one comma-separated scalar.
pub(super) fn names(v: Option<&crate::config::yaml::Data>) -> Vec<String> {
    match v {
        Some(crate::config::yaml::Data::Sequence(items)) => {
            items.iter().filter_map(scalar).collect()
        }
        Some(other) => scalar(other)
            .map(|s| {
                s.split(',')
                    .map(|p| p.trim().to_owned())
                    .filter(|p| !p.is_empty())
                    .collect()
            })
            .unwrap_or_default(),
        None => Vec::new(),
    }
}

pub(super) fn scalar(v: &crate::config::yaml::Data) -> Option<String> {
    match v {
        crate::config::yaml::Data::String(s) => Some(s.clone()),
        crate::config::yaml::Data::Number(n) => Some(n.to_string()),
        crate::config::yaml::Data::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A YAML document read the lenient way BMAD's own workflows read their files (as text, by
/// line): a key written twice keeps its first value, and a `key: value` line that is not
/// strict YAML (BMAD's sprint-planning writes `story_location: {project-root}/…` unquoted,
/// which opens a flow mapping) is read as the text it is.
pub(super) struct Lenient {
    /// The document.
    pub doc: crate::config::yaml::Data,
    /// The keys written twice: `(key, line, first line)`, lines 1-based.
    pub repeated: Vec<(String, usize, usize)>,
    /// The 1-based lines whose value was read as text.
    pub as_text: Vec<usize>,
}

/// Read `text` leniently (see [`Lenient`]); the error of the text as written when no such
/// reading helps.
pub(super) fn lenient_yaml(text: &str) -> Result<Lenient, crate::config::yaml::DeError> {
    use crate::config::yaml::from_str;
    let first_error = match from_str(text) {
        Ok(doc) => {
            return Ok(Lenient {
                doc,
                repeated: Vec::new(),
                as_text: Vec::new(),
            })
        }
        Err(e) => e,
    };
    let (cleaned, repeated) = without_repeated_keys(text);
    if let Ok(doc) = from_str(&cleaned) {
        return Ok(Lenient {
            doc,
            repeated,
            as_text: Vec::new(),
        });
    }
    // Line by line, as BMAD's workflows read it: a value that is no YAML on its own line
    // (where the parser notices it may be lines later) is the text it is.
    let mut as_text = Vec::new();
    let mut lenient = String::with_capacity(cleaned.len());
    for (n, line) in cleaned.split_inclusive('\n').enumerate() {
        match quoted_value(line) {
            Some(quoted) => {
                as_text.push(n + 1);
                lenient.push_str(&quoted);
            }
            None => lenient.push_str(line),
        }
    }
    let doc = from_str(&lenient).map_err(|_| first_error)?;
    Ok(Lenient {
        doc,
        repeated,
        as_text,
    })
}

/// `line` (a `key: value` line, indented or a list item) with its value written as a quoted
/// string, its comment kept, when the value is no YAML of its own: it does not parse, or it
/// parses as a mapping though it is no `{…}` (`title: Foo: bar`). `None` otherwise.
fn quoted_value(line: &str) -> Option<String> {
    let body = line.trim_end_matches(['\n', '\r']);
    let trimmed = body.trim_start();
    let item = trimmed.strip_prefix("- ").unwrap_or(trimmed);
    let offset = body.len() - item.len();
    let range = split_entry(item)?.1?;
    let value = &item[range.clone()];
    if item[..range.start].ends_with(['"', '\'']) {
        return None;
    }
    match crate::config::yaml::from_str::<crate::config::yaml::Data>(value) {
        Ok(crate::config::yaml::Data::Mapping(_)) if !value.starts_with('{') => {}
        Ok(_) => return None,
        Err(_) => {}
    }
    let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
    let (from, to) = (offset + range.start, offset + range.end);
    Some(format!("{}\"{escaped}\"{}", &line[..from], &line[to..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As BMAD's sprint-planning prints it: `{project-root}` unquoted opens a flow mapping.
    #[test]
    fn a_value_bmad_writes_unquoted_is_read_as_text_and_nothing_else_is_forgiven() {
        let text = "project: Demo\nstory_location: {project-root}/out/x # where\n\ndevelopment_status:\n  1-1-a: review\n";
        let read = lenient_yaml(text).unwrap();
        let location = read.doc.get("story_location").and_then(scalar);
        assert_eq!(location.as_deref(), Some("{project-root}/out/x"));
        assert_eq!(read.as_text, [2]);
        assert!(read.repeated.is_empty());
        let entry = read
            .doc
            .get("development_status")
            .and_then(|d| d.get("1-1-a"));
        assert_eq!(entry.and_then(scalar).as_deref(), Some("review"));
        // Where the parser notices it is not where it is: an unclosed `[` on line 2.
        let read = lenient_yaml("development_status:\n  1-1-a: [done\n  1-2-b: review\n").unwrap();
        assert_eq!(read.as_text, [2]);
        let status = read
            .doc
            .get("development_status")
            .and_then(|d| d.get("1-1-a"));
        assert_eq!(status.and_then(scalar).as_deref(), Some("[done"));
        let read = lenient_yaml("title: Cart: checkout\n- x\n");
        assert!(
            read.is_err(),
            "a list after a mapping is no YAML, line by line either"
        );
        let read = lenient_yaml("title: Cart: checkout\nstatus: done\n").unwrap();
        assert_eq!(
            read.doc.get("title").and_then(scalar).as_deref(),
            Some("Cart: checkout")
        );
        // No `key: value` line to read as text: the error stands, as written.
        assert!(lenient_yaml("- {x\n- y\n").is_err());
    }
}
