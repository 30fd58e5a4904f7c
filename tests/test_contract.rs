//! The contract (`docs/architecture.md`) held to the code: the commands and their flags (from
//! clap), the journal's event kinds (from the schema), the rule ids (from the catalogue), the
//! configuration keys (from the config types), the `git config` keys and the files under
//! `.git` git-bmad reads or writes, and the exit codes. A change to any of these fails here
//! until the contract says it too, in the same change.

use std::collections::BTreeSet;
use std::path::Path;

use git_bmad::cli::error::exit;
use git_bmad::config::Config;
use git_bmad::policy::rules::CATALOGUE;
use git_bmad::session::Body;

use crate::common::rust_source::{project_sources, without_unit_tests};

fn contract() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/architecture.md");
    std::fs::read_to_string(path).unwrap()
}

/// The text of the section whose heading starts with `## <heading>`, up to the next one.
fn section<'a>(doc: &'a str, heading: &str) -> &'a str {
    let start = doc
        .find(&format!("\n## {heading}"))
        .unwrap_or_else(|| panic!("docs/architecture.md has no section `## {heading}`"));
    let rest = &doc[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3);
    &rest[..end]
}

/// The paragraph of `text` that begins with `marker`, up to the blank line after it.
fn paragraph<'a>(text: &'a str, marker: &str) -> &'a str {
    let start = text
        .find(marker)
        .unwrap_or_else(|| panic!("docs/architecture.md has no paragraph `{marker}`"));
    let end = text[start..].find("\n\n").map_or(text.len(), |e| start + e);
    &text[start..end]
}

/// The rows of the first table in `text` after a line starting with `| <first header>`, as
/// cells (the header and the rule line left out).
fn table<'a>(text: &'a str, first_header: &str) -> Vec<Vec<&'a str>> {
    let start = text
        .find(&format!("| {first_header} |"))
        .unwrap_or_else(|| panic!("no table headed `{first_header}`"));
    text[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            // A `|` inside backticks is an alternative (`plan\|run`), not a cell boundary.
            let mut cells = Vec::new();
            let (mut from, mut ticks, bytes) = (1, false, l.as_bytes());
            for (i, b) in bytes.iter().enumerate().skip(1) {
                match b {
                    b'`' => ticks = !ticks,
                    b'|' if !ticks && bytes[i - 1] != b'\\' => {
                        cells.push(l[from..i].trim());
                        from = i + 1;
                    }
                    _ => {}
                }
            }
            cells
        })
        .collect()
}

/// The backticked words of `text` (`a`, `b_c`, `--flag`): code spans, as written.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// `text` without anything in parentheses (nested ones too).
fn outside_parentheses(text: &str) -> String {
    let mut depth = 0usize;
    text.chars()
        .filter(|c| {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth = depth.saturating_sub(1);
                    return false;
                }
                _ => {}
            }
            depth == 0
        })
        .collect()
}

fn long_flags(text: &str) -> BTreeSet<String> {
    let re = regex::Regex::new(r"(^|[^A-Za-z0-9-])(--[a-z][a-z0-9-]*)").unwrap();
    re.captures_iter(text).map(|c| c[2].to_owned()).collect()
}

/// A visible flag: its long name (`--dry-run`) and its short one (`-n`), if any.
type Flag = (String, Option<String>);

/// Every visible command of the clap definition as its words (`["epic", "run"]`), with its
/// visible flags (global ones left out: the contract names them once).
fn commands() -> Vec<(Vec<String>, Vec<Flag>)> {
    fn walk(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<(Vec<String>, Vec<Flag>)>) {
        if !path.is_empty() {
            // The root's global flags are named once, before the table.
            let root_globals = ["directory", "json", "quiet"];
            let flags = cmd
                .get_arguments()
                .filter(|a| !a.is_hide_set())
                .filter(|a| !root_globals.contains(&a.get_id().as_str()))
                .filter_map(|a| Some((a.get_long()?, a.get_short())))
                .filter(|(l, _)| !matches!(*l, "help" | "version"))
                .map(|(l, s)| (format!("--{l}"), s.map(|s| format!("-{s}"))))
                .collect();
            out.push((path.clone(), flags));
        }
        for sub in cmd.get_subcommands() {
            if sub.is_hide_set() || sub.get_name() == "help" {
                continue;
            }
            let mut next = path.clone();
            next.push(sub.get_name().to_owned());
            walk(sub, next, out);
        }
    }
    let mut out = Vec::new();
    // Built, so that a group's global flags (`stories --dir`) show on its subcommands.
    let mut root = git_bmad::cli::command();
    root.build();
    walk(&root, Vec::new(), &mut out);
    out
}

/// The commands a synopsis cell names: `epic plan\|run <epic>` names `epic plan` and
/// `epic run`; segments are split by `·`. A word after a command with no subcommands is its
/// argument (`ci init github`).
fn synopsis_commands(cell: &str, parents: &BTreeSet<Vec<String>>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for segment in cell.split('·') {
        let segment = segment.trim().trim_matches('`');
        let mut words: Vec<Vec<String>> = vec![Vec::new()];
        for word in segment.split_whitespace() {
            let word = word.trim_matches('`');
            let takes_subcommands = words.iter().all(|w| w.is_empty() || parents.contains(w));
            if !word
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '-' || c == '|' || c == '\\')
                || word.starts_with('-')
                || !takes_subcommands
            {
                break;
            }
            let alternatives: Vec<&str> = word.split("\\|").flat_map(|w| w.split('|')).collect();
            words = words
                .into_iter()
                .flat_map(|prefix| {
                    alternatives.iter().map(move |alt| {
                        let mut p = prefix.clone();
                        p.push((*alt).to_owned());
                        p
                    })
                })
                .collect();
        }
        out.extend(words.into_iter().filter(|w| !w.is_empty()));
    }
    out
}

/// A row of the command table of §6: its commands, the flags its synopsis names, and its
/// whole text.
struct Row {
    commands: Vec<Vec<String>>,
    synopsis: BTreeSet<String>,
    text: String,
}

fn command_rows(commands: &[(Vec<String>, Vec<Flag>)]) -> Vec<Row> {
    let parents: BTreeSet<Vec<String>> = commands
        .iter()
        .filter(|(c, _)| c.len() > 1)
        .map(|(c, _)| c[..c.len() - 1].to_vec())
        .collect();
    let doc = contract();
    table(section(&doc, "6."), "command")
        .into_iter()
        .filter(|row| !row[0].starts_with("hidden"))
        .map(|row| Row {
            commands: synopsis_commands(row[0], &parents),
            synopsis: long_flags(row[0]),
            text: row.join(" "),
        })
        .collect()
}

/// Whether `text` names `flag` by its long or its short name, as a whole word.
fn names_flag(text: &str, (long, short): &Flag) -> bool {
    [Some(long), short.as_ref()].into_iter().flatten().any(|f| {
        let re = regex::Regex::new(&format!(
            r"(^|[^A-Za-z0-9-]){}([^A-Za-z0-9-]|$)",
            regex::escape(f)
        ))
        .unwrap();
        re.is_match(text)
    })
}

#[test]
fn every_command_and_flag_is_in_the_contract_and_no_other() {
    let commands = commands();
    assert!(commands.len() > 60, "only {} commands", commands.len());
    let rows = command_rows(&commands);
    let doc = contract();
    let surface = section(&doc, "6.");
    // Flags every command may take, named once before the table (`-s/--session`, `--json`).
    let general = &surface[..surface.find("| command |").unwrap()];
    let documented: BTreeSet<Vec<String>> = rows
        .iter()
        .flat_map(|r| r.commands.iter().cloned())
        .collect();
    let real: BTreeSet<Vec<String>> = commands.iter().map(|(c, _)| c.clone()).collect();
    let mut problems = Vec::new();
    for (command, flags) in &commands {
        // A command is documented by its row; one with subcommands by theirs.
        let Some(row) = rows.iter().find(|r| r.commands.contains(command)) else {
            let has_children = commands
                .iter()
                .any(|(c, _)| c.len() > command.len() && c.starts_with(command));
            if !has_children {
                problems.push(format!(
                    "`{}` is not in the command table",
                    command.join(" ")
                ));
            }
            continue;
        };
        for flag in flags {
            if !names_flag(&row.text, flag) && !names_flag(general, flag) {
                problems.push(format!(
                    "`{} {}` is not in its row",
                    command.join(" "),
                    flag.0
                ));
            }
        }
    }
    for command in documented.difference(&real) {
        problems.push(format!(
            "the table names `{}`, which is no command",
            command.join(" ")
        ));
    }
    // Every flag a synopsis names belongs to one of its row's commands.
    for row in &rows {
        for flag in &row.synopsis {
            let known = commands
                .iter()
                .any(|(c, f)| row.commands.contains(c) && f.iter().any(|(l, _)| l == flag));
            if !known {
                problems.push(format!(
                    "the synopsis of `{}` names `{flag}`, which none of its commands takes",
                    row.commands
                        .first()
                        .map(|c| c.join(" "))
                        .unwrap_or_default()
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "docs/architecture.md §6 and the CLI disagree:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_journal_kinds_are_the_schemas() {
    let doc = contract();
    let rows = table(section(&doc, "4."), "written by");
    let mut documented = BTreeSet::new();
    for row in rows.iter().filter(|r| r[0] != "anyone") {
        for span in code_spans(&outside_parentheses(row[1])) {
            documented.insert(span.to_owned());
        }
    }
    // The open row: kinds anyone may write that git-bmad writes too.
    if let Some(anyone) = rows.iter().find(|r| r[0] == "anyone") {
        for span in code_spans(&outside_parentheses(anyone[1])) {
            documented.insert(span.to_owned());
        }
    }
    let schema: BTreeSet<String> = Body::KINDS.iter().map(|k| (*k).to_owned()).collect();
    assert_eq!(
        documented, schema,
        "docs/architecture.md §4 lists other event kinds than src/session/schema.rs"
    );
}

#[test]
fn the_rule_ids_are_the_catalogues() {
    let doc = contract();
    let text = section(&doc, "6.");
    let documented: BTreeSet<&str> = code_spans(paragraph(text, "Rule ids"))
        .into_iter()
        .filter(|s| *s != "rule")
        .collect();
    let catalogue: BTreeSet<&str> = CATALOGUE.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        documented, catalogue,
        "docs/architecture.md §6 lists other rule ids than src/policy/rules.rs"
    );
}

#[test]
fn the_exit_codes_are_the_clis() {
    let doc = contract();
    let text = section(&doc, "6.");
    let line = paragraph(text, "**Exit codes**");
    let documented: BTreeSet<u8> = line
        .split('·')
        .filter_map(|item| {
            item.trim_start_matches("**Exit codes**:")
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect();
    let code: BTreeSet<u8> = exit::ALL.iter().copied().collect();
    assert_eq!(
        documented, code,
        "docs/architecture.md §6 lists other exit codes than src/cli/error.rs"
    );
}

/// Why the config types refuse `yaml`.
fn config_error(yaml: &str) -> String {
    Config::parse(yaml, Path::new("config.yaml"))
        .err()
        .unwrap_or_else(|| panic!("taken: {yaml}"))
        .to_string()
}

/// The fields a section of the config types takes, as serde names them: an unknown key in
/// `yaml` (which puts `zz_unknown` where the list is wanted) is refused with the list. None
/// for a section whose other keys are names of the user's (`runners`: each names a runner).
fn config_fields(yaml: &str) -> Option<BTreeSet<String>> {
    let text = config_error(yaml);
    let expected = text
        .split("expected one of ")
        .nth(1)
        .or_else(|| text.split("expected ").nth(1))?;
    let fields: BTreeSet<String> = code_spans(expected)
        .into_iter()
        .map(str::to_owned)
        .collect();
    (!fields.is_empty()).then_some(fields)
}

#[test]
fn the_config_keys_are_the_config_types() {
    let doc = contract();
    let rows = table(section(&doc, "7."), "section");
    let mut problems = Vec::new();
    let sections = config_fields("version: 1\nzz_unknown: 1\n").expect("the top level's keys");
    let documented_sections: BTreeSet<String> = rows
        .iter()
        .flat_map(|r| code_spans(r[0]))
        .map(str::to_owned)
        .chain(["version".to_owned()])
        .collect();
    if documented_sections != sections {
        problems.push(format!(
            "sections: the contract has {documented_sections:?}, the types {sections:?}"
        ));
    }
    // Each section, and the maps' entries (a runner's settings, a role's agent).
    let nested = [
        (
            "runners",
            "runners:\n  claude:\n    zz_unknown: 1\n",
            "runners.<cli>",
        ),
        (
            "orchestration",
            "orchestration:\n  agents:\n    dev:\n      zz_unknown: 1\n",
            "orchestration.agents.<role>",
        ),
    ];
    let words = regex::Regex::new(r"[a-z_]+").unwrap();
    for row in &rows {
        let name = code_spans(row[0]).first().copied().unwrap_or_default();
        let keys: BTreeSet<String> = code_spans(&outside_parentheses(row[1]))
            .into_iter()
            .map(|k| k.split(['.', ':']).next().unwrap_or(k).to_owned())
            .filter(|k| !k.starts_with('<'))
            .collect();
        match config_fields(&format!("version: 1\n{name}:\n  zz_unknown: 1\n")) {
            Some(fields) if keys != fields => problems.push(format!(
                "`{name}`: the contract has {keys:?}, the types {fields:?}"
            )),
            Some(_) => {}
            None => {
                // Other keys name runners: a documented key is a field when a runner's
                // settings are not what it wants.
                let settings = |key: &str| {
                    config_fields(&format!("version: 1\n{name}:\n  {key}: {{zz: [[1]]}}\n"))
                };
                let runner = settings("zz_unknown");
                assert!(runner.is_some(), "a runner's settings refuse `zz`");
                for key in &keys {
                    if settings(key) == runner {
                        problems.push(format!("`{name}.{key}` is no key of the config types"));
                    }
                }
            }
        }
        for (_, yaml, label) in nested.iter().filter(|(s, _, _)| *s == name) {
            let said: BTreeSet<&str> = words.find_iter(row[1]).map(|m| m.as_str()).collect();
            for field in config_fields(&format!("version: 1\n{yaml}")).unwrap_or_default() {
                if !said.contains(field.as_str()) {
                    problems.push(format!("`{label}.{field}` is not in the `{name}` row"));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "docs/architecture.md §7 and src/config disagree:\n{}",
        problems.join("\n")
    );
}

/// The string literals of `src/` outside unit tests.
fn source_literals() -> String {
    project_sources()
        .iter()
        .map(|(_, text)| without_unit_tests(text))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_git_config_keys_are_the_ones_the_code_reads_and_writes() {
    let doc = contract();
    let rows = table(section(&doc, "7."), "`git config` key (per clone)");
    let documented: BTreeSet<String> = rows
        .iter()
        .flat_map(|r| code_spans(r[0]))
        .filter(|k| k.starts_with("bmad."))
        .map(|k| k.replace("<remote>", "{remote}"))
        .collect();
    let source = source_literals();
    let re = regex::Regex::new(r#""(bmad\.[A-Za-z{}_.]+[A-Za-z])""#).unwrap();
    let used: BTreeSet<String> = re
        .captures_iter(&source)
        .map(|c| c[1].to_owned())
        // `{}` and `{name}` placeholders are one per remote.
        .map(|k| k.replace("{}", "{remote}").replace("{name}", "{remote}"))
        .collect();
    assert_eq!(
        documented, used,
        "docs/architecture.md §7 lists other `bmad.*` git config keys than src/ uses"
    );
}

#[test]
fn every_file_the_contract_puts_under_git_is_named_by_the_code() {
    let doc = contract();
    let rows = table(section(&doc, "3."), "file");
    let source = source_literals();
    let mut missing = Vec::new();
    let mut checked = 0;
    for row in rows.iter().filter(|r| r[1].contains("git dir")) {
        for name in code_spans(row[0]) {
            // The fixed part of a name: `bmad-verified.<pid>` is `bmad-verified.`,
            // `bmad-scratch-*/` is `bmad-scratch-`.
            let fixed = name
                .split(['<', '*'])
                .next()
                .unwrap_or(name)
                .trim_end_matches('/');
            let last = fixed.rsplit('/').find(|p| !p.is_empty()).unwrap_or(fixed);
            if last.len() < 3 {
                continue;
            }
            checked += 1;
            if !source.contains(&format!("\"{last}")) && !source.contains(&format!("\"{fixed}")) {
                missing.push(name.to_owned());
            }
        }
    }
    assert!(checked > 12, "only {checked} files were checked");
    assert!(
        missing.is_empty(),
        "docs/architecture.md §3 names files under .git that no code in src/ names: {missing:?}"
    );
}

#[test]
fn the_variables_git_bmad_reads_are_its_table() {
    let doc = contract();
    let text = section(&doc, "7.");
    let read_here = paragraph(text, "git-bmad reads these of its own environment");
    let documented: BTreeSet<&str> = code_spans(read_here)
        .into_iter()
        .flat_map(|s| s.split('/'))
        .filter(|s| s.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .collect();
    let read: BTreeSet<&str> = git_bmad::env::Var::ALL.iter().map(|v| v.name()).collect();
    assert_eq!(
        documented, read,
        "docs/architecture.md §7 lists other variables than src/env.rs reads"
    );
}
