//! The documentation, held to the code: every shell example in `README.md` and `docs/` runs
//! as written, in a world of its own; no concrete command hides in a block that does not
//! run; every link between pages resolves; and the reference pages are what the code says
//! (`BMAD_BLESS=1 cargo test test_docs` writes them anew after a change, for review).

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::common::TestEnv;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `README.md` and every Markdown page under `docs/`, as paths inside the project.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from("README.md")];
    let mut stack = vec![root().join("docs")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path.strip_prefix(root()).unwrap().to_owned());
            }
        }
    }
    out.sort();
    out
}

/// A fenced block of a page: its language, the line its fence opens on, its text.
struct Block {
    lang: String,
    line: usize,
    text: String,
}

fn blocks(page: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (n, line) in page.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(lang)) => {
                open = Some(Block {
                    lang: lang.trim().to_owned(),
                    line: n + 1,
                    text: String::new(),
                })
            }
            (Some(_), Some(_)) => out.extend(open.take()),
            (Some(block), None) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

#[test]
fn every_shell_example_runs_as_written() {
    let mut ran = 0;
    for page in pages() {
        let text = std::fs::read_to_string(root().join(&page)).unwrap();
        let examples: Vec<Block> = blocks(&text)
            .into_iter()
            .filter(|b| b.lang == "sh")
            .collect();
        if examples.is_empty() {
            continue;
        }
        // A page's examples run in order, in one world: a fresh HOME, `git bmad` on PATH,
        // an empty folder to start in.
        let env = TestEnv::new();
        let bin = env.root().join("bin/git-bmad");
        std::os::unix::fs::symlink(crate::common::BIN, &bin).unwrap();
        let start = env.root().join("work");
        std::fs::create_dir_all(&start).unwrap();
        let mut script = String::from("set -eu\n");
        for block in &examples {
            script.push_str(&format!(
                "echo '@@ {}:{}' >&2\n{}",
                page.display(),
                block.line,
                block.text
            ));
            ran += 1;
        }
        let run = env.sh(&start, &script);
        let at = run
            .stderr
            .lines()
            .rfind(|l| l.starts_with("@@ "))
            .unwrap_or("@@ before the first block");
        assert_eq!(
            run.code,
            0,
            "the example at {} failed (exit {})\nstdout:\n{}\nstderr:\n{}",
            &at[3..],
            run.code,
            run.stdout,
            run.stderr
        );
    }
    assert!(ran >= 5, "only {ran} examples ran");
}

#[test]
fn no_concrete_command_hides_in_a_block_that_does_not_run() {
    let mut hidden = Vec::new();
    // The reference pages quote `--help`, which is no example.
    for page in pages()
        .into_iter()
        .filter(|p| !p.starts_with("docs/reference"))
    {
        let text = std::fs::read_to_string(root().join(&page)).unwrap();
        for block in blocks(&text).into_iter().filter(|b| b.lang != "sh") {
            for (n, line) in block.text.lines().enumerate() {
                let command = line.trim_start().trim_start_matches("$ ");
                // A synopsis names what the reader fills in (`<session>`) or chooses from
                // (`[--json]`, `a|b`); anything else is an example, and examples run.
                let synopsis = ['<', '[', '|', '…'].iter().any(|c| command.contains(*c));
                if command.starts_with("git bmad ") && !synopsis {
                    hidden.push(format!(
                        "{}:{}: {command}",
                        page.display(),
                        block.line + n + 1
                    ));
                }
            }
        }
    }
    assert!(
        hidden.is_empty(),
        "concrete commands outside ```sh blocks (put them in one, which runs, or write them \
         as a synopsis):\n{}",
        hidden.join("\n")
    );
}

/// The anchors mdBook gives a page's headings.
fn anchors(page: &str) -> BTreeSet<String> {
    let mut in_code = false;
    page.lines()
        .filter(|l| {
            if l.trim_start().starts_with("```") {
                in_code = !in_code;
            }
            !in_code && l.starts_with('#')
        })
        .map(|l| {
            l.trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

#[test]
fn every_link_between_pages_resolves() {
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(root().join(&page)).unwrap();
        let dir = root().join(&page).parent().unwrap().to_owned();
        for target in link.captures_iter(&text).map(|c| c[1].to_owned()) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let path = if file.is_empty() {
                root().join(&page)
            } else {
                dir.join(file)
            };
            let Ok(body) = std::fs::read_to_string(&path) else {
                if !path.exists() {
                    broken.push(format!("{}: {target} (no such file)", page.display()));
                }
                continue;
            };
            if !anchor.is_empty() && !anchors(&body).contains(anchor) {
                broken.push(format!("{}: {target} (no such heading)", page.display()));
            }
        }
    }
    assert!(checked > 20, "only {checked} links were checked");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The command reference: every visible command's help, as `git bmad <command> --help`
/// prints it.
fn commands_reference() -> String {
    fn walk(cmd: &mut clap::Command, path: &str, out: &mut String) {
        if !path.is_empty() {
            out.push_str(&format!(
                "\n## git bmad {path}\n\n```text\n{}```\n",
                cmd.render_long_help().to_string().trim_end().to_owned() + "\n"
            ));
        }
        for sub in cmd.get_subcommands_mut() {
            if sub.is_hide_set() || sub.get_name() == "help" {
                continue;
            }
            let name = sub.get_name().to_owned();
            let next = if path.is_empty() {
                name
            } else {
                format!("{path} {name}")
            };
            walk(sub, &next, out);
        }
    }
    let mut root_cmd = git_bmad::cli::command();
    root_cmd.build();
    let mut out = String::from(
        "# Commands\n\nEvery command, as `git bmad <command> --help` prints it. Generated from \
         the command-line definition by `tests/test_docs.rs`; do not edit by hand.\n",
    );
    walk(&mut root_cmd, "", &mut out);
    out
}

/// The rule reference: every rule the hooks and the guard enforce, from the catalogue.
fn rules_reference() -> String {
    let mut out = String::from(
        "# Rules\n\nEvery rule the hooks, the agent guard and the judge enforce, by the id \
         the journal's `policy_violation` and every refusal name. Generated from the rule \
         catalogue by `tests/test_docs.rs`; do not edit by hand.\n\n| rule | why | instead |\n|---|---|---|\n",
    );
    for rule in git_bmad::policy::rules::CATALOGUE {
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            rule.id,
            table_cell(rule.why),
            table_cell(rule.instead)
        ));
    }
    out
}

/// Text as one cell of a Markdown table: `|` escaped, `<name>` shown rather than read as HTML.
fn table_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('<', "&lt;")
}

/// The settings reference: the `.bmad/config.yaml` that `git bmad init` writes, every key
/// with its default and what it does.
fn config_reference() -> String {
    format!(
        "# Configuration file\n\n`git bmad init` writes this `.bmad/config.yaml` (with the test \
         command it detects); every key is shown with its default. Generated from the code by \
         `tests/test_docs.rs`; do not edit by hand. The `git config` keys that override it are \
         in [the architecture](../architecture.md#7-configuration).\n\n```yaml\n{}```\n",
        git_bmad::config::template_for(None)
    )
}

#[test]
fn the_reference_pages_are_what_the_code_says() {
    let pages = [
        ("docs/reference/commands.md", commands_reference()),
        ("docs/reference/rules.md", rules_reference()),
        ("docs/reference/configuration.md", config_reference()),
    ];
    let bless = std::env::var_os("BMAD_BLESS").is_some();
    let mut stale = Vec::new();
    for (page, want) in pages {
        let path = root().join(page);
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        if have != want {
            if bless {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &want).unwrap();
            } else {
                stale.push(page);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "{stale:?} differ from what the code says: run `BMAD_BLESS=1 cargo test test_docs` \
         and review the diff"
    );
}

#[test]
fn the_anchor_reader_names_headings_as_mdbook_does() {
    let page =
        "# 7. Configuration\n```sh\n# not a heading\n```\n## Sessions that travel: a laptop\n";
    assert_eq!(
        anchors(page),
        BTreeSet::from([
            "7-configuration".to_owned(),
            "sessions-that-travel-a-laptop".to_owned()
        ])
    );
}
