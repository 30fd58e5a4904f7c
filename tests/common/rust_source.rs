//! A reader of Rust source for the architecture tests: which modules of the crate a file
//! names, with `crate::`, `super::` and `self::` paths made absolute (grouped, nested, over
//! several lines, inside inline modules), reading code only (not comments or strings).

use std::path::{Path, PathBuf};

/// Every Rust file under `dir`: its path inside `dir` and its text.
pub fn sources_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path.strip_prefix(dir).unwrap().to_owned(), text));
            }
        }
    }
    out.sort();
    out
}

/// Every Rust file of this project's `src/`, as [`sources_under`] gives them.
pub fn project_sources() -> Vec<(PathBuf, String)> {
    sources_under(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// A file's code without its unit tests (which may reach anywhere).
pub fn without_unit_tests(text: &str) -> &str {
    text.split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or_default()
}

/// The module a file of `src/` is, as crate-relative names: `git/watch/mod.rs` is
/// `git::watch`, `git/watch/daemon.rs` is `git::watch::daemon`, `lib.rs` is the root.
pub fn module_of(rel: &Path) -> Vec<String> {
    let mut names: Vec<String> = rel
        .components()
        .map(|c| {
            c.as_os_str()
                .to_string_lossy()
                .trim_end_matches(".rs")
                .to_owned()
        })
        .collect();
    if matches!(
        names.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        names.pop();
    }
    names
}

/// The code of `text` with comments, string and char literals blanked (lines kept), so that
/// a path is only ever read from code.
pub fn code_only(text: &str) -> String {
    let bytes: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let next = bytes.get(i + 1).copied();
        let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
        if c == '/' && next == Some('/') {
            while i < bytes.len() && bytes[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < bytes.len() {
                if bytes[i] == '/' && bytes.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if bytes[i] == '*' && bytes.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, bytes[i]);
                    i += 1;
                }
            }
        } else if c == 'r' && matches!(next, Some('"' | '#')) && starts_literal(&bytes[..i]) {
            // A raw string: r"…" or r#"…"#, closed by a quote and as many hashes.
            let hashes = bytes[i + 1..].iter().take_while(|c| **c == '#').count();
            if bytes.get(i + 1 + hashes) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let mut j = i + 2 + hashes;
            while j < bytes.len() && !bytes[j..].starts_with(&close) {
                j += 1;
            }
            let end = (j + close.len()).min(bytes.len());
            for &c in &bytes[i..end] {
                blank(&mut out, c);
            }
            i = end;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < bytes.len() && bytes[i] != '"' {
                if bytes[i] == '\\' {
                    blank(&mut out, bytes[i]);
                    i += 1;
                }
                if i < bytes.len() {
                    blank(&mut out, bytes[i]);
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A char literal ('{', '\'', '\u{1F600}'); a lifetime has no closing quote.
            let end = if next == Some('\\') {
                bytes[i + 2..]
                    .iter()
                    .position(|c| *c == '\'')
                    .map(|p| i + 2 + p)
            } else if bytes.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    for _ in i..=end {
                        out.push(' ');
                    }
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Whether a literal's prefix letter after `before` starts the literal (`r"`, `br"`), rather
/// than ending a name (`for"`: never code, but `tr#` could be a raw identifier's end).
fn starts_literal(before: &[char]) -> bool {
    let word = |c: &char| c.is_alphanumeric() || *c == '_';
    match before {
        [.., p, 'b'] => !word(p),
        [.., 'b'] => true,
        [.., p] => !word(p),
        [] => true,
    }
}

/// Every path into the crate that the file of module `module` names, made absolute (crate-
/// relative names), with its line: `crate::a::b`, `super::x`, `self::y`, grouped (`use
/// super::{a::{b, c}, d}` names `a::b`, `a::c`, `d`), split over lines or inline, inside
/// inline `mod m { … }` blocks too.
pub fn named_paths(module: &[String], text: &str) -> Vec<(usize, Vec<String>)> {
    let code: Vec<char> = code_only(text).chars().collect();
    let mut out = Vec::new();
    // Inline modules: (name, the brace depth inside them).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let (mut depth, mut line, mut i) = (0usize, 1usize, 0usize);
    let word_at = |i: usize| -> String {
        code[i..]
            .iter()
            .take_while(|c| c.is_alphanumeric() || **c == '_')
            .collect()
    };
    let mut pending_mod: Option<String> = None;
    while i < code.len() {
        let c = code[i];
        let boundary =
            i == 0 || !(code[i - 1].is_alphanumeric() || code[i - 1] == '_' || code[i - 1] == ':');
        if c == '\n' {
            line += 1;
        } else if c == '{' {
            depth += 1;
            if let Some(name) = pending_mod.take() {
                inline.push((name, depth));
            }
        } else if c == '}' {
            if inline.last().is_some_and(|(_, d)| *d == depth) {
                inline.pop();
            }
            depth = depth.saturating_sub(1);
        } else if c == ';' {
            pending_mod = None;
        } else if boundary && c.is_alphabetic() {
            let word = word_at(i);
            let after = i + word.len();
            if word == "mod" {
                let mut j = after;
                while code.get(j).is_some_and(|c| c.is_whitespace()) {
                    j += 1;
                }
                pending_mod = Some(word_at(j)).filter(|n| !n.is_empty());
            } else if matches!(word.as_str(), "crate" | "super" | "self")
                && code[after..].starts_with(&[':', ':'])
            {
                let mut here: Vec<String> = module.to_vec();
                here.extend(inline.iter().map(|(n, _)| n.clone()));
                let (paths, end) = path_tree(&code, i, Vec::new(), &here, true);
                // Each path on the line its own name is written on.
                for (at, path) in paths {
                    let below = code[i..at].iter().filter(|c| **c == '\n').count();
                    out.push((line + below, path));
                }
                line += code[i..end].iter().filter(|c| **c == '\n').count();
                i = end;
                continue;
            }
            i = after;
            continue;
        }
        i += 1;
    }
    out
}

/// The absolute paths one path expression at `code[at..]` names, each with where its own
/// part is written, and where the expression ends: `prefix`
/// is what the path goes on from (a group's items go on from the group's path); at the root,
/// `crate`, `self` and `super` start it from the crate or from `here`, the module it is
/// written in.
fn path_tree(
    code: &[char],
    at: usize,
    mut prefix: Vec<String>,
    here: &[String],
    root: bool,
) -> (Vec<(usize, Vec<String>)>, usize) {
    let mut i = at;
    let mut first = root;
    loop {
        let word: String = code[i..]
            .iter()
            .take_while(|c| c.is_alphanumeric() || **c == '_')
            .collect();
        match (first, word.as_str()) {
            (_, "") => return (vec![(at, prefix)], i),
            (true, "crate") => prefix.clear(),
            (true, "self") => prefix = here.to_vec(),
            (true, "super") => {
                prefix = here.to_vec();
                prefix.pop();
            }
            (false, "super") => {
                prefix.pop();
            }
            (false, "self") => {}
            _ => prefix.push(word.clone()),
        }
        first = false;
        i += word.len();
        if !code[i..].starts_with(&[':', ':']) {
            return (vec![(at, prefix)], i);
        }
        i += 2;
        match code.get(i) {
            Some('*') => return (vec![(at, prefix)], i + 1),
            Some('{') => {}
            _ => continue,
        }
        // A group: each item goes on from this prefix, up to its `,` or the closing brace.
        let mut paths = Vec::new();
        i += 1;
        loop {
            while code.get(i).is_some_and(|c| c.is_whitespace() || *c == ',') {
                i += 1;
            }
            match code.get(i) {
                None => return (paths, i),
                Some('}') => return (paths, i + 1),
                _ => {}
            }
            let (mut inner, end) = path_tree(code, i, prefix.clone(), here, false);
            paths.append(&mut inner);
            i = end.max(i + 1);
            // What follows an item (`as name`) up to its separator.
            while let Some(&c) = code.get(i) {
                if c == ',' || c == '}' {
                    break;
                }
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(module: &str, text: &str) -> Vec<String> {
        let module: Vec<String> = module.split("::").map(str::to_owned).collect();
        named_paths(&module, text)
            .into_iter()
            .map(|(_, p)| p.join("::"))
            .collect()
    }

    #[test]
    fn super_in_a_folders_front_door_is_the_folder_above() {
        // `git/watch/mod.rs` is `git::watch`: its `super::repo` is the sibling `git::repo`
        // (the circle the old reader missed read it as `git::watch::repo`).
        let module = module_of(Path::new("git/watch/mod.rs"));
        assert_eq!(module, ["git", "watch"]);
        let found: Vec<String> = named_paths(&module, "use super::repo::Repo;\n")
            .into_iter()
            .map(|(_, p)| p.join("::"))
            .collect();
        assert_eq!(found, ["git::repo::Repo"]);
        assert_eq!(
            names("git::watch::daemon", "use super::super::repo::Repo;"),
            ["git::repo::Repo"]
        );
    }

    #[test]
    fn groups_nest_and_span_lines() {
        let text = "use crate::{\n    git::{self, Repo},\n    session::Event as E,\n};\nlet x = crate::runner::invoke();\n";
        assert_eq!(
            names("epic::run", text),
            ["git", "git::Repo", "session::Event", "runner::invoke"]
        );
        let lines: Vec<usize> = named_paths(&["epic".into()], text)
            .into_iter()
            .map(|(l, _)| l)
            .collect();
        assert_eq!(lines, [2, 2, 3, 5]);
    }

    #[test]
    fn comments_strings_and_chars_are_not_code() {
        let text = "// crate::cli\n/* crate::epic */ let s = \"crate::report\";\nlet r = r#\"super::x \"# ; let c = '{';\nuse self::y;\n";
        assert_eq!(names("git::repo", text), ["git::repo::y"]);
    }

    #[test]
    fn inline_modules_move_self_and_super() {
        let text = "mod inner {\n    use super::a;\n    use self::b;\n}\nuse super::c;\n";
        assert_eq!(
            names("git::repo", text),
            ["git::repo::a", "git::repo::inner::b", "git::c"]
        );
    }
}

/// A top-level item of a file (a function, type, impl block, constant, macro invocation…):
/// the name it is known by (an impl block's: its type's), and its lines, 1-based, inclusive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub name: String,
    pub first: usize,
    pub last: usize,
    /// The names its code uses.
    pub uses: std::collections::BTreeSet<String>,
    /// Other names it is known by: what a macro invocation declares (`words! { pub enum
    /// Autonomy … }` is known as `Autonomy` too).
    pub declares: std::collections::BTreeSet<String>,
}

/// The top-level items of `text` (code only: comments and strings do not count), unit tests
/// left out.
pub fn items(text: &str) -> Vec<Item> {
    let code = code_only(without_unit_tests(text));
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let Some(name) = item_name(line) else {
            i += 1;
            continue;
        };
        // Its end: the brace that closes what it opens, or the `;` that ends it.
        let (mut depth, mut opened, mut j) = (0i32, false, i);
        'lines: while j < lines.len() {
            for c in lines[j].chars() {
                match c {
                    '{' | '(' | '[' => {
                        depth += 1;
                        opened |= c == '{';
                    }
                    '}' | ')' | ']' => depth -= 1,
                    ';' if depth == 0 => break 'lines,
                    _ => {}
                }
            }
            if opened && depth <= 0 {
                break;
            }
            j += 1;
        }
        let last = j.min(lines.len() - 1);
        let body = lines[i..=last].join("\n");
        let uses = words(&body).into_iter().filter(|w| *w != name).collect();
        let declares = if name.ends_with('!') {
            declared_in(&body)
        } else {
            Default::default()
        };
        out.push(Item {
            name,
            first: i + 1,
            last: last + 1,
            uses,
            declares,
        });
        i = last + 1;
    }
    out
}

/// The names of the items declared in a macro invocation's body.
fn declared_in(body: &str) -> std::collections::BTreeSet<String> {
    let tokens: Vec<&str> = body.split_whitespace().collect();
    tokens
        .windows(2)
        .filter(|w| ["enum", "struct", "fn", "const", "static", "type", "trait"].contains(&w[0]))
        .map(|w| {
            w[1].chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|n| !n.is_empty())
        .collect()
}

/// The names a text uses.
fn words(text: &str) -> std::collections::BTreeSet<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| {
            w.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
        })
        .map(str::to_owned)
        .collect()
}

/// The name a top-level line starts an item with, if it does: `pub(crate) fn x` is `x`,
/// `impl<T> Trait for Type<T>` is `Type`, `kinds! {` is `kinds!`.
fn item_name(line: &str) -> Option<String> {
    if line.starts_with(char::is_whitespace) || line.starts_with('#') || line.is_empty() {
        return None;
    }
    let mut rest = line;
    for prefix in ["pub(crate) ", "pub(super) ", "pub "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    // `const fn`, `async fn`, `unsafe fn`: a function, not a constant.
    for prefix in ["const ", "async ", "unsafe "] {
        if let Some(after) = rest.strip_prefix(prefix) {
            if after.starts_with("fn ") || after.starts_with("unsafe ") {
                rest = after;
            }
        }
    }
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    if let Some(after) = rest.strip_prefix("impl") {
        // Skip the generics, then take the type after `for`, else the first type.
        let after = if after.starts_with('<') {
            let mut depth = 0;
            let end = after
                .char_indices()
                .find(|(_, c)| {
                    match c {
                        '<' => depth += 1,
                        '>' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .map_or(after.len(), |(i, _)| i + 1);
            &after[end..]
        } else {
            after
        };
        let target = after.split(" for ").last().unwrap_or(after).trim_start();
        let path = target.split(['<', ' ', '{']).next().unwrap_or(target);
        return Some(path.rsplit("::").next().unwrap_or(path).to_owned()).filter(|n| !n.is_empty());
    }
    for keyword in [
        "fn ", "struct ", "enum ", "const ", "static ", "type ", "trait ", "mod ", "union ",
    ] {
        if let Some(after) = rest.strip_prefix(keyword) {
            let name = ident(after.trim_start_matches("mut "));
            return (!name.is_empty()).then_some(name);
        }
    }
    if let Some(after) = rest.strip_prefix("macro_rules! ") {
        return Some(format!("{}!", ident(after)));
    }
    // A macro invocation at the top level: `kinds! {`.
    let name = ident(rest);
    let after = &rest[name.len()..];
    (!name.is_empty() && after.starts_with('!')).then(|| format!("{name}!"))
}

/// The groups of `items` that name no item of another group, each as the items it holds.
pub fn unconnected_groups(items: &[Item]) -> Vec<Vec<&Item>> {
    let mut parent: Vec<usize> = (0..items.len()).collect();
    fn root(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    for a in 0..items.len() {
        for b in 0..items.len() {
            let bare = items[b].name.trim_end_matches('!');
            let named = items[a].uses.contains(bare)
                || items[b].declares.iter().any(|d| items[a].uses.contains(d));
            if a != b && (items[a].name == items[b].name || named) {
                let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
                parent[ra] = rb;
            }
        }
    }
    let mut groups: std::collections::BTreeMap<usize, Vec<&Item>> = Default::default();
    for (i, item) in items.iter().enumerate() {
        let r = root(&mut parent, i);
        groups.entry(r).or_default().push(item);
    }
    groups.into_values().collect()
}

#[cfg(test)]
mod item_tests {
    use super::*;

    #[test]
    fn items_and_what_connects_them() {
        let text = "//! doc\nuse x::y;\n\npub struct Repo {\n    a: u8,\n}\n\nimpl<T> From<T> for Repo {\n    fn from(_: T) -> Repo { todo!() }\n}\n\npub(crate) fn open() -> Repo {\n    let s = \"fn lone() {\";\n    Repo { a: 1 }\n}\n\nfn lone() {}\n\nkinds! {\n    \"x\" => X(Repo),\n}\n\nconst N: usize = 3;\n\nwords! {\n    pub enum Autonomy { Auto = \"auto\", }\n}\n\nfn level() -> Autonomy { todo!() }\n";
        let found = items(text);
        let names: Vec<&str> = found.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(
            names,
            ["Repo", "Repo", "open", "lone", "kinds!", "N", "words!", "level"]
        );
        assert_eq!((found[2].first, found[2].last), (12, 15));
        let groups: Vec<Vec<&str>> = unconnected_groups(&found)
            .into_iter()
            .map(|g| g.iter().map(|i| i.name.as_str()).collect())
            .collect();
        assert_eq!(groups.len(), 4, "{groups:?}");
        assert!(groups.contains(&vec!["Repo", "Repo", "open", "kinds!"]));
        // What a macro invocation declares connects it to what uses it.
        assert!(groups.contains(&vec!["words!", "level"]));
    }
}
