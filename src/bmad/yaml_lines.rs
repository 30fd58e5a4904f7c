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
