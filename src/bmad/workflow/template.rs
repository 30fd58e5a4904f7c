//! BMAD templates: markdown with `{{placeholders}}`.
//!
//! `{{var}}`, dotted paths `{{user.name}}`, `{{#if x}}…{{else}}…{{/if}}`, `{{#each list}}`
//! with `{{this}}`, `{{this.field}}` and `{{@index}}`, nested. Everything outside a
//! placeholder is copied byte for byte. As in Handlebars, a block tag alone on its line
//! (`{{#if x}}`, `{{else}}`, `{{/each}}`) takes its line with it, so blocks do not leave
//! blank lines behind. A variable nothing defines is an error naming its line, or, when
//! allowed, is left as written and listed.

use crate::config::yaml::Data as Value;
use serde::Serialize;

/// A template that cannot be rendered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct Error {
    /// 1-based line of the placeholder.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// A rendered template.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Rendered {
    /// The text.
    pub text: String,
    /// Variables left as written (with `allow_missing`): (name, line).
    pub missing: Vec<(String, usize)>,
}

#[derive(Clone, Debug, PartialEq)]
enum Part {
    Text(String),
    Var {
        path: String,
        raw: String,
        line: usize,
    },
    If {
        path: String,
        then: Vec<Part>,
        otherwise: Vec<Part>,
        line: usize,
    },
    Each {
        path: String,
        body: Vec<Part>,
        line: usize,
    },
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Text(String),
    Var(String, String, usize),
    Open(&'static str, String, usize),
    Else(usize),
    Close(&'static str, usize),
}

/// The variables a template uses at top level (not inside `#each`, where names may be the
/// item's), for lint: every `{{name}}` and `{{#if name}}` / `{{#each name}}` path head.
pub fn variables(template: &str) -> Result<Vec<(String, usize)>, Error> {
    fn walk(parts: &[Part], in_each: bool, out: &mut Vec<(String, usize)>) {
        for p in parts {
            match p {
                Part::Text(_) => {}
                Part::Var { path, line, .. } => {
                    if !in_each && !path.starts_with('@') && !path.starts_with("this") {
                        out.push((head(path).to_owned(), *line));
                    }
                }
                Part::If {
                    path,
                    then,
                    otherwise,
                    line,
                } => {
                    if !in_each {
                        out.push((head(path).to_owned(), *line));
                    }
                    walk(then, in_each, out);
                    walk(otherwise, in_each, out);
                }
                Part::Each { path, body, line } => {
                    if !in_each {
                        out.push((head(path).to_owned(), *line));
                    }
                    walk(body, true, out);
                }
            }
        }
    }
    let parts = parse(template)?;
    let mut out = Vec::new();
    walk(&parts, false, &mut out);
    let mut unique: Vec<(String, usize)> = Vec::new();
    for (name, line) in out {
        if !unique.iter().any(|(n, _)| *n == name) {
            unique.push((name, line));
        }
    }
    Ok(unique)
}

fn head(path: &str) -> &str {
    path.split('.').next().unwrap_or(path)
}

/// Render `template` with `vars` (a mapping).
pub fn render(template: &str, vars: &Value, allow_missing: bool) -> Result<Rendered, Error> {
    let parts = parse(template)?;
    let mut out = Rendered {
        text: String::with_capacity(template.len()),
        missing: Vec::new(),
    };
    let mut scopes: Vec<(Value, usize)> = Vec::new();
    emit(&parts, vars, &mut scopes, allow_missing, &mut out)?;
    Ok(out)
}

fn emit(
    parts: &[Part],
    root: &Value,
    scopes: &mut Vec<(Value, usize)>,
    allow_missing: bool,
    out: &mut Rendered,
) -> Result<(), Error> {
    for part in parts {
        match part {
            Part::Text(t) => out.text.push_str(t),
            Part::Var { path, .. } if path == "@index" && !scopes.is_empty() => {
                let index = scopes.last().map_or(0, |s| s.1);
                out.text.push_str(&index.to_string());
            }
            Part::Var { path, raw, line } => match lookup(path, root, scopes) {
                Some(v) => out.text.push_str(&text_of(v, path, *line)?),
                None if allow_missing => {
                    out.text.push_str(raw);
                    out.missing.push((path.clone(), *line));
                }
                None => {
                    return Err(Error {
                        line: *line,
                        message: format!("`{path}` is not defined"),
                    })
                }
            },
            Part::If {
                path,
                then,
                otherwise,
                ..
            } => {
                let branch = if lookup(path, root, scopes).is_some_and(truthy) {
                    then
                } else {
                    otherwise
                };
                emit(branch, root, scopes, allow_missing, out)?;
            }
            Part::Each { path, body, line } => {
                let items: Vec<Value> = match lookup(path, root, scopes) {
                    Some(Value::Sequence(items)) => items.clone(),
                    Some(Value::Mapping(m)) => m.values().cloned().collect(),
                    Some(Value::Null) | None if allow_missing => Vec::new(),
                    Some(Value::Null) => Vec::new(),
                    None => {
                        return Err(Error {
                            line: *line,
                            message: format!("`{path}` is not defined (used by #each)"),
                        })
                    }
                    Some(_) => {
                        return Err(Error {
                            line: *line,
                            message: format!("`{path}` is not a list (used by #each)"),
                        })
                    }
                };
                for (i, item) in items.into_iter().enumerate() {
                    scopes.push((item, i));
                    let r = emit(body, root, scopes, allow_missing, out);
                    scopes.pop();
                    r?;
                }
            }
        }
    }
    Ok(())
}

fn lookup<'a>(path: &str, root: &'a Value, scopes: &'a [(Value, usize)]) -> Option<&'a Value> {
    if path == "@index" {
        return None;
    }
    let mut segments = path.split('.');
    let first = segments.next()?;
    let mut value = if first == "this" {
        &scopes.last()?.0
    } else {
        // The innermost item that has the key, then the root.
        scopes
            .iter()
            .rev()
            .find_map(|(item, _)| item.get(first))
            .or_else(|| root.get(first))?
    };
    for s in segments {
        value = value.get(s)?;
    }
    Some(value)
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::String(s) => !s.is_empty(),
        Value::Sequence(s) => !s.is_empty(),
        Value::Mapping(m) => !m.is_empty(),
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::Tagged(t) => truthy(&t.value),
    }
}

fn text_of(v: &Value, path: &str, line: usize) -> Result<String, Error> {
    Ok(match v {
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Tagged(t) => return text_of(&t.value, path, line),
        Value::Sequence(_) | Value::Mapping(_) => {
            return Err(Error {
                line,
                message: format!(
                    "`{path}` is a list or mapping, not text; use {{{{#each {path}}}}}"
                ),
            })
        }
    })
}

fn parse(template: &str) -> Result<Vec<Part>, Error> {
    let tokens = tokenize(template);
    let mut pos = 0;
    let parts = build(&tokens, &mut pos, None, 0)?;
    Ok(parts)
}

/// The deepest nesting of `{{#if}}`/`{{#each}}` blocks read: real templates nest a few levels;
/// building and rendering recurse, so thirty thousand levels would overflow the stack.
const MAX_NESTING: usize = 100;

/// Blocks, from tokens; `closing` is the block being filled, `depth` how many enclose it.
fn build(
    tokens: &[Token],
    pos: &mut usize,
    closing: Option<(&str, usize)>,
    depth: usize,
) -> Result<Vec<Part>, Error> {
    let mut parts = Vec::new();
    while *pos < tokens.len() {
        let t = tokens[*pos].clone();
        *pos += 1;
        match t {
            Token::Text(s) => parts.push(Part::Text(s)),
            Token::Var(path, raw, line) => parts.push(Part::Var { path, raw, line }),
            Token::Open(kind, path, line) => {
                if depth >= MAX_NESTING {
                    return Err(Error {
                        line,
                        message: format!(
                            "blocks nest deeper than {MAX_NESTING} levels here ({{{{#{kind}}}}})"
                        ),
                    });
                }
                let body = build(tokens, pos, Some((kind, line)), depth + 1)?;
                if kind == "if" {
                    let (then, otherwise) = match body
                        .iter()
                        .position(|p| matches!(p, Part::Text(t) if t == ELSE))
                    {
                        Some(i) => (body[..i].to_vec(), body[i + 1..].to_vec()),
                        None => (body, Vec::new()),
                    };
                    parts.push(Part::If {
                        path,
                        then,
                        otherwise,
                        line,
                    });
                } else {
                    parts.push(Part::Each { path, body, line });
                }
            }
            Token::Else(line) => match closing {
                Some(("if", _)) => parts.push(Part::Text(ELSE.into())),
                _ => {
                    return Err(Error {
                        line,
                        message: "{{else}} outside an {{#if}} block".into(),
                    })
                }
            },
            Token::Close(kind, line) => match closing {
                Some((open, _)) if open == kind => return Ok(parts),
                Some((open, open_line)) => {
                    return Err(Error {
                        line,
                        message: format!(
                            "{{{{/{kind}}}}} closes the {{{{#{open}}}}} opened on line {open_line}"
                        ),
                    })
                }
                None => {
                    return Err(Error {
                        line,
                        message: format!("{{{{/{kind}}}}} closes nothing"),
                    })
                }
            },
        }
    }
    match closing {
        Some((open, line)) => Err(Error {
            line,
            message: format!("{{{{#{open}}}}} is never closed with {{{{/{open}}}}}"),
        }),
        None => Ok(parts),
    }
}

/// A marker no template text can contain (it holds a NUL), splitting then/else.
const ELSE: &str = "\0else\0";

fn tokenize(template: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut text = String::new();
    let mut rest = template;
    let mut line = 1;
    // Whether `rest` starts a line.
    let mut at_line_start = true;
    while let Some(open) = rest.find("{{") {
        let Some(len) = rest[open + 2..].find("}}") else {
            break;
        };
        let inner = &rest[open + 2..open + 2 + len];
        let raw = &rest[open..open + 4 + len];
        let before = &rest[..open];
        let tag_line = line + before.matches('\n').count();
        let token = classify(inner.trim(), raw, tag_line);
        let Some(token) = token else {
            // Not a placeholder (`{{ weird stuff }}`): text, as written.
            text.push_str(&rest[..open + 2]);
            line += rest[..open + 2].matches('\n').count();
            rest = &rest[open + 2..];
            at_line_start = false;
            continue;
        };
        let after = &rest[open + 4 + len..];
        let block = !matches!(token, Token::Var(..));
        // A block tag alone on its line takes the line with it.
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let lead_blank = before[line_start..].chars().all(|c| c == ' ' || c == '\t')
            && (line_start > 0 || at_line_start);
        let trail_end = after.find('\n');
        let trail_blank = after[..trail_end.unwrap_or(after.len())]
            .chars()
            .all(|c| c == ' ' || c == '\t' || c == '\r');
        if block && lead_blank && trail_blank {
            text.push_str(&before[..line_start]);
            push_text(&mut tokens, &mut text);
            tokens.push(token);
            let skip = trail_end.map_or(after.len(), |e| e + 1);
            line = tag_line + usize::from(trail_end.is_some());
            at_line_start = trail_end.is_some();
            rest = &after[skip..];
        } else {
            text.push_str(before);
            push_text(&mut tokens, &mut text);
            tokens.push(token);
            line = tag_line + raw.matches('\n').count();
            at_line_start = false;
            rest = after;
        }
    }
    text.push_str(rest);
    push_text(&mut tokens, &mut text);
    tokens
}

fn push_text(tokens: &mut Vec<Token>, text: &mut String) {
    if !text.is_empty() {
        tokens.push(Token::Text(std::mem::take(text)));
    }
}

fn classify(inner: &str, raw: &str, line: usize) -> Option<Token> {
    let is_path = |p: &str| {
        !p.is_empty()
            && p.split('.').all(|s| {
                !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '@')
            })
    };
    if let Some(p) = inner.strip_prefix("#if ") {
        return is_path(p.trim()).then(|| Token::Open("if", p.trim().to_owned(), line));
    }
    if let Some(p) = inner.strip_prefix("#each ") {
        return is_path(p.trim()).then(|| Token::Open("each", p.trim().to_owned(), line));
    }
    match inner {
        "else" => Some(Token::Else(line)),
        "/if" => Some(Token::Close("if", line)),
        "/each" => Some(Token::Close("each", line)),
        "@index" => Some(Token::Var("@index".into(), raw.to_owned(), line)),
        p if is_path(p) => Some(Token::Var(p.to_owned(), raw.to_owned(), line)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::testing::random_strings;

    fn vars(yaml: &str) -> Value {
        crate::config::yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn placeholders_blocks_and_exact_bytes() {
        let t = "# Story {{story.key}}\r\n\nStatus: {{status}}  \n{{#if review}}\nReviewed by {{review.by}}.\n{{else}}\nNot reviewed.\n{{/if}}\n## Tasks\n{{#each tasks}}\n- [{{#if this.done}}x{{else}} {{/if}}] {{@index}}: {{this.title}}\n{{/each}}\nunicode ✓ {{ name }}\n{ { not a placeholder } }\n";
        let v = vars("story: {key: 1-2-auth}\nstatus: ready-for-dev\nreview: null\nname: Ada\ntasks:\n  - {title: Build, done: true}\n  - {title: Test, done: false}\n");
        let r = render(t, &v, false).unwrap();
        assert_eq!(
            r.text,
            "# Story 1-2-auth\r\n\nStatus: ready-for-dev  \nNot reviewed.\n## Tasks\n- [x] 0: Build\n- [ ] 1: Test\nunicode ✓ Ada\n{ { not a placeholder } }\n"
        );
    }

    #[test]
    fn undefined_is_an_error_with_its_line_or_listed() {
        let t = "a\nb {{missing}}\n{{#each gone}}x{{/each}}\n";
        let e = render(t, &vars("{}"), false).unwrap_err();
        assert_eq!(e.to_string(), "line 2: `missing` is not defined");
        let r = render(t, &vars("{}"), true).unwrap();
        assert_eq!(r.text, "a\nb {{missing}}\n\n");
        assert_eq!(r.missing, [("missing".to_owned(), 2)]);
        let e = render("{{#if a}}\nx\n", &vars("a: 1"), false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 1: {{#if}} is never closed with {{/if}}"
        );
        let e = render("x\n{{/each}}\n", &vars("{}"), false).unwrap_err();
        assert_eq!(e.line, 2);
    }

    #[test]
    fn nested_each_sees_outer_names() {
        let t = "{{#each epics}}{{title}}:{{#each stories}} {{this}}@{{@index}}{{/each}};{{/each}}";
        let v = vars("epics:\n  - {title: E1, stories: [a, b]}\n  - {title: E2, stories: [c]}\n");
        assert_eq!(render(t, &v, false).unwrap().text, "E1: a@0 b@1;E2: c@0;");
        assert_eq!(
            variables("{{a}} {{#each epics}}{{title}}{{/each}} {{#if b.c}}{{/if}}").unwrap(),
            [
                ("a".to_owned(), 1),
                ("epics".to_owned(), 1),
                ("b".to_owned(), 1)
            ]
        );
    }

    #[test]
    fn blocks_nested_beyond_the_bound_are_an_error_at_their_line() {
        let deep = format!(
            "{}x{}",
            "{{#if a}}\n".repeat(30_000),
            "{{/if}}".repeat(30_000)
        );
        let e = render(&deep, &vars("a: 1"), false).unwrap_err();
        assert_eq!(e.line, MAX_NESTING + 1);
        assert!(e.message.contains("nest deeper"), "{}", e.message);
        let fine = format!("{}x{}", "{{#if a}}".repeat(50), "{{/if}}".repeat(50));
        assert_eq!(render(&fine, &vars("a: 1"), false).unwrap().text, "x");
    }

    #[test]
    fn never_panics() {
        let v = vars("x: [1]\nthis: 2\n");
        for (i, s) in random_strings("{}#/ifeachls@.thx\né", 11, 5000, 50)
            .iter()
            .enumerate()
        {
            let _ = render(s, &v, i % 2 == 0);
        }
    }
}
