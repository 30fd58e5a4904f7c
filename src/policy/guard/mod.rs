//! The agent guard: judge a shell command an agent is about to run, before it runs.
//!
//! Claude Code's PreToolUse hook sends the tool call as JSON on stdin; exit 2 blocks it and
//! stderr tells the agent why. The command is read as a shell reads it ([`shell`]: lists,
//! pipelines, compound commands, functions, substitutions, here-documents), and git's
//! options as git reads them (unique-prefix abbreviations, `-c`, `--config-env` and
//! `GIT_CONFIG_*` settings). What the guard cannot read — a variable where the program, a
//! git subcommand or an option goes, a script piped into a shell — is refused with a reason,
//! not allowed. Out of scope, and said so: git aliases defined earlier and scripts in
//! files. The git hooks stay the second line behind this one.

mod git_options;
mod shell;

use git_options::{check_config, check_git_config, check_push};

use super::is_protected;
use super::rules;
pub use super::rules::Block;

/// A shell tool call, as an agent CLI's pre-tool hook sends it (JSON on stdin).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCall {
    /// The command line the agent wants to run.
    pub command: String,
    /// Where it would run, when the call says.
    pub cwd: Option<std::path::PathBuf>,
}

impl ToolCall {
    /// The shell command in a tool call; `None` for other tools (they pass). The tool names
    /// are Claude Code's `Bash`, Codex's `shell` and Gemini CLI's `run_shell_command`.
    pub fn from_json(call: &serde_json::Value) -> Option<ToolCall> {
        let tool = call["tool_name"].as_str().unwrap_or_default();
        if !matches!(tool, "Bash" | "shell" | "run_shell_command") {
            return None;
        }
        Some(ToolCall {
            command: call["tool_input"]["command"].as_str()?.to_owned(),
            cwd: call["cwd"].as_str().map(std::path::PathBuf::from),
        })
    }
}

/// Judge a tool call in `repo` (the protected branches of its config; the defaults outside a
/// repository) and journal a block in the session it happened in.
pub fn judge(repo: Option<&crate::git::Repo>, command: &str) -> Option<Block> {
    let protected = repo
        .and_then(|r| super::protected_refs(r).ok())
        .unwrap_or_else(|| crate::config::Config::default().protected_refs());
    let block = check_command(command, &protected)?;
    if let Some(repo) = repo {
        super::record_violation(repo, "guard", block.rule, command, &block.reason);
    }
    Some(block)
}

/// Judge one shell command line; `protected` holds full ref names.
pub fn check_command(command: &str, protected: &[String]) -> Option<Block> {
    check_script(command, protected, 0)
}

fn check_script(script: &str, protected: &[String], depth: usize) -> Option<Block> {
    let commands = match shell::simple_commands(script, depth) {
        Ok(commands) => commands,
        Err(shell::Unreadable::TooDeep) => {
            return Some(rules::TOO_NESTED.block("the command nests shells too deeply to judge"))
        }
        Err(shell::Unreadable::Syntax(why)) => {
            return Some(rules::UNDECIDABLE.block(format!(
                "the command is not shell the guard can read ({why})"
            )))
        }
    };
    commands.iter().find_map(|c| check_simple(c, protected))
}

/// Programs that run the command after their own options; each with its options that take
/// a value (`-a name`, `-u user`).
const WRAPPERS: &[(&str, &[&str])] = &[
    ("env", &["-u", "--unset", "-C", "--chdir"]),
    ("command", &[]),
    ("builtin", &[]),
    ("exec", &["-a"]),
    ("nohup", &[]),
    ("time", &["-f", "--format", "-o", "--output"]),
    (
        "sudo",
        &["-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U"],
    ),
    ("doas", &["-u", "-C"]),
    ("nice", &["-n", "--adjustment"]),
    ("ionice", &["-c", "-n", "-p", "-P", "-u"]),
    ("timeout", &["-s", "--signal", "-k", "--kill-after"]),
    ("stdbuf", &["-i", "-o", "-e"]),
    ("setsid", &[]),
    ("xargs", &["-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a"]),
];

/// One simple command, as the shell would run it.
fn check_simple(command: &shell::SimpleCommand, protected: &[String]) -> Option<Block> {
    for (name, value) in &command.assignments {
        if let Some(b) = check_env(name, value) {
            return Some(b);
        }
    }
    let words = &command.words;
    let depth = command.depth;
    let mut i = 0;
    // Wrappers and `export`.
    loop {
        let word = words.get(i)?;
        let program = base(word);
        if program == "export" || program == "declare" || program == "typeset" {
            return words[i + 1..].iter().find_map(|w| {
                let (name, value) = assignment(w)?;
                check_env(name, value)
            });
        }
        let Some((_, with_value)) = WRAPPERS.iter().find(|(w, _)| *w == program) else {
            break;
        };
        i += 1;
        while let Some(w) = words.get(i) {
            if program == "env" {
                if let Some((name, value)) = assignment(w) {
                    if let Some(b) = check_env(name, value) {
                        return Some(b);
                    }
                    i += 1;
                    continue;
                }
                if matches!(w.as_str(), "-S" | "--split-string")
                    || source(w).starts_with("--split-string=")
                    || source(w).starts_with("-S")
                {
                    if unknown(w) {
                        return Some(rules::UNDECIDABLE.block(format!(
                            "`env {}` runs a command only known when it runs",
                            source(w)
                        )));
                    }
                    let script = w
                        .strip_prefix("--split-string=")
                        .or_else(|| w.strip_prefix("-S").filter(|attached| !attached.is_empty()))
                        .or_else(|| words.get(i + 1).map(String::as_str))?;
                    if unknown(script) {
                        return Some(rules::UNDECIDABLE.block(format!(
                            "`env -S {}` runs a command only known when it runs",
                            source(script)
                        )));
                    }
                    return check_script(script, protected, depth + 1);
                }
            }
            if with_value.contains(&w.as_str()) {
                i += 2;
            } else if w.starts_with('-')
                || (matches!(program, "timeout" | "nice")
                    && w.chars().all(|c| c.is_ascii_digit() || ".smhd".contains(c)))
            {
                i += 1;
            } else {
                break;
            }
        }
    }
    let name = words.get(i)?;
    let args = &words[i + 1..];
    if unknown(name) {
        // `$GIT push …`: which program runs is only known then.
        let gitish = args.iter().any(|a| GIT_WORDS.contains(&a.as_str()));
        return gitish.then(|| {
            rules::UNDECIDABLE.block(format!(
                "`{}` runs a program named by a variable or substitution, with git-like arguments",
                source(name)
            ))
        });
    }
    match base(name) {
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "ash" | "mksh" | "busybox" => {
            let c = args.iter().position(|a| {
                a == "-c" || (a.starts_with('-') && !a.starts_with("--") && a.contains('c'))
            });
            match c {
                Some(c) => {
                    let script = args.get(c + 1)?;
                    if unknown(script) {
                        return Some(rules::UNDECIDABLE.block(format!(
                            "`{} -c {}` runs a script only known when it runs",
                            base(name),
                            source(script)
                        )));
                    }
                    check_script(script, protected, depth + 1)
                }
                None => match &command.stdin_script {
                    Some(script) => check_script(script, protected, depth + 1),
                    None if command.piped && !args.iter().any(|a| !a.starts_with('-')) => {
                        Some(rules::UNDECIDABLE.block(format!(
                            "a script piped into `{}` is not visible to the guard",
                            base(name)
                        )))
                    }
                    // A script file: out of the guard's sight (the hooks still apply).
                    None => None,
                },
            }
        }
        "eval" => {
            if let Some(word) = args.iter().find(|a| unknown(a)) {
                return Some(rules::UNDECIDABLE.block(format!(
                    "`eval` of {} runs a command only known when it runs",
                    source(word)
                )));
            }
            check_script(&args.join(" "), protected, depth + 1)
        }
        "find" => {
            // `find … -exec cmd … ;`
            let start = args
                .iter()
                .position(|a| matches!(a.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir"))?;
            let inner: Vec<String> = args[start + 1..]
                .iter()
                .take_while(|a| !matches!(a.as_str(), ";" | "+"))
                .cloned()
                .collect();
            check_simple(
                &shell::SimpleCommand {
                    words: inner,
                    depth,
                    ..Default::default()
                },
                protected,
            )
        }
        "git" => check_git(args, protected),
        "gh" => check_gh(args),
        _ => None,
    }
}

/// Arguments that make a command of an unknown program look like git.
const GIT_WORDS: &[&str] = &[
    "push",
    "commit",
    "merge",
    "update-ref",
    "branch",
    "config",
    "checkout",
    "switch",
    "fetch",
    "replace",
    "tag",
    "symbolic-ref",
    "pull",
    "rebase",
];

/// Whether a word's value is only known when the command runs (see [`shell::UNKNOWN`]).
fn unknown(word: &str) -> bool {
    word.starts_with(shell::UNKNOWN)
}

/// A word as written, for messages.
fn source(word: &str) -> &str {
    word.strip_prefix(shell::UNKNOWN).unwrap_or(word)
}

/// Whether `arg` is the long option `--name` (or `--name=…`), or a prefix of it git
/// accepts: git takes any unambiguous prefix, and refuses an ambiguous one anyway.
/// Whether `arg` is the long option `--name`, or an abbreviation git accepts for it (a
/// unique prefix: callers check the options a prefix could also mean).
pub(crate) fn long(arg: &str, name: &str) -> bool {
    let Some(given) = arg.strip_prefix("--") else {
        return false;
    };
    let given = given.split('=').next().unwrap_or(given);
    given.len() >= 2 && name.starts_with(given)
}

fn check_env(name: &str, value: &str) -> Option<Block> {
    let off = matches!(value, "0" | "false" | "off" | "no" | "");
    let bypass = (name == "HUSKY" && off)
        || name == "HUSKY_SKIP_HOOKS"
        || name == "SKIP_HOOKS"
        || name == "GIT_BMAD_SKIP"
        || name == "LEFTHOOK" && off;
    if bypass {
        return Some(
            rules::HOOK_BYPASS.block(format!("{name}={value} switches the git hooks off")),
        );
    }
    // git reads settings from these as if passed with `-c`.
    if name.starts_with("GIT_CONFIG_KEY_") {
        return check_config(value);
    }
    if name == "GIT_CONFIG_PARAMETERS" {
        let lower = value.to_ascii_lowercase();
        if lower.contains("core.hookspath") || lower.contains(".mirror") || lower.contains(".push")
        {
            return Some(rules::HOOK_BYPASS.block(format!(
                "{name} passes git settings that move the hooks or change what a push sends"
            )));
        }
    }
    if matches!(
        name,
        "GIT_CONFIG_GLOBAL" | "GIT_CONFIG_SYSTEM" | "GIT_CONFIG"
    ) {
        return Some(rules::UNDECIDABLE.block(format!(
            "{name}={value} points git at a config file the guard cannot read (it could move the hooks)"
        )));
    }
    None
}

/// What `git <args>` would do that an agent may not: walks git's global options, then
/// judges the subcommand.
///
/// Why this function is long: one arm per git option or subcommand that can push, rewrite
/// a protected branch, skip hooks or repoint the config; the list is the rule, and read in
/// one place no subcommand is judged twice or forgotten.
fn check_git(args: &[String], protected: &[String]) -> Option<Block> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if unknown(a) {
            return Some(rules::UNDECIDABLE.block(format!(
                "git's option or subcommand {} is only known when the command runs",
                source(a)
            )));
        }
        match a.as_str() {
            "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path"
            | "--super-prefix" | "--list-cmds" => i += 2,
            "-c" => {
                if let Some(b) = args.get(i + 1).and_then(|kv| check_config(kv)) {
                    return Some(b);
                }
                i += 2;
            }
            "--config-env" => {
                if let Some(b) = args.get(i + 1).and_then(|kv| check_config(kv)) {
                    return Some(b);
                }
                i += 2;
            }
            a if a.starts_with("--config-env=") => {
                if let Some(b) = check_config(&a["--config-env=".len()..]) {
                    return Some(b);
                }
                i += 1;
            }
            a if a.starts_with('-') => i += 1,
            _ => break,
        }
    }
    let sub = args.get(i)?.as_str();
    let rest = &args[i + 1..];
    let options: Vec<&str> = rest
        .iter()
        .take_while(|a| *a != "--")
        .filter(|a| a.starts_with('-'))
        .map(String::as_str)
        .collect();
    let has = |name: &str| options.iter().any(|a| long(a, name));
    let short = |letter: char| {
        options
            .iter()
            .any(|a| !a.starts_with("--") && short_flags(a).contains(letter))
    };
    let positional = || {
        rest.iter()
            .filter(|a| !a.starts_with('-'))
            .map(String::as_str)
            .collect::<Vec<_>>()
    };
    let undecidable = |what: &str| {
        rest.iter().find(|a| unknown(a)).map(|a| {
            rules::UNDECIDABLE.block(format!(
                "`git {sub}` with {} ({what}) is only known when it runs",
                source(a)
            ))
        })
    };
    match sub {
        "push" => {
            check_push(rest, protected).or_else(|| undecidable("a push's options and refspecs"))
        }
        "commit" | "merge" | "am" | "rebase" | "cherry-pick" | "revert" | "pull" => {
            if has("no-verify") || (sub == "commit" && short('n')) {
                return Some(rules::HOOK_BYPASS.block(format!(
                    "`git {sub}` with --no-verify skips the commit checks"
                )));
            }
            // A message may come from a variable; an option may not.
            rest.iter()
                .enumerate()
                .find(|(n, a)| {
                    unknown(a)
                        && !n
                            .checked_sub(1)
                            .and_then(|p| rest.get(p))
                            .is_some_and(|prev| {
                                matches!(
                                    prev.as_str(),
                                    "-m" | "--message"
                                        | "-F"
                                        | "--file"
                                        | "--author"
                                        | "--date"
                                        | "-C"
                                        | "-c"
                                        | "--reuse-message"
                                        | "--reedit-message"
                                        | "-S"
                                        | "--gpg-sign"
                                        | "--fixup"
                                        | "--squash"
                                )
                            })
                        && !source(a).starts_with("-m")
                })
                .map(|(_, a)| {
                    rules::UNDECIDABLE.block(format!(
                        "`git {sub}` with {} is only known when it runs (it could be --no-verify)",
                        source(a)
                    ))
                })
        }
        "config" => check_git_config(rest),
        "branch" => {
            let destructive = ["delete", "force", "move", "copy"].iter().any(|o| has(o))
                || "dDfmMcC".chars().any(short);
            let target = positional()
                .into_iter()
                .find(|a| is_protected(a, protected))?;
            destructive.then(|| {
                rules::PROTECTED_BRANCH.block(format!(
                    "`git branch` would move or delete the protected branch {target}"
                ))
            })
        }
        "checkout" | "switch" => {
            let resets = short('B') || short('C') || has("force-create");
            let target = positional()
                .into_iter()
                .find(|a| is_protected(a, protected))?;
            resets.then(|| {
                rules::PROTECTED_BRANCH.block(format!(
                    "`git {sub}` would reset the protected branch {target}"
                ))
            })
        }
        "fetch" => {
            if let Some(b) = undecidable("a fetch's refspecs") {
                return Some(b);
            }
            positional().into_iter().skip(1).find_map(|spec| {
                let (_, dst) = spec.trim_start_matches('+').split_once(':')?;
                is_protected(dst, protected).then(|| {
                    rules::PROTECTED_BRANCH.block(format!(
                        "`git fetch` into {dst} would move the protected branch"
                    ))
                })
            })
        }
        "update-ref" | "symbolic-ref" => {
            if let Some(b) = undecidable("the ref it writes") {
                return Some(b);
            }
            if has("stdin") {
                return Some(rules::UNDECIDABLE.block(
                    "`git update-ref --stdin` reads the refs it writes from input the guard cannot see",
                ));
            }
            let target = positional()
                .into_iter()
                .find(|a| is_protected(a, protected))?;
            Some(rules::PROTECTED_BRANCH.block(format!(
                "`git {sub}` would rewrite the protected branch {target}"
            )))
        }
        "replace" => Some(
            rules::PROTECTED_BRANCH
                .block("`git replace` changes what every branch shows, protected ones included"),
        ),
        "tag" => (has("force") || has("delete") || short('f') || short('d'))
            .then(|| rules::TAG_REWRITE.block("`git tag -f`/`-d` rewrites or deletes a tag")),
        _ => None,
    }
}

fn check_gh(args: &[String]) -> Option<Block> {
    let words: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let merges = matches!(words.as_slice(), ["pr", "merge", ..])
        || (words.first() == Some(&"api") && args.iter().any(|a| a.contains("/merge")));
    merges.then(|| rules::MERGE.block("agents do not merge pull requests"))
}

/// The letters of a short-option cluster, up to the first one that takes a value.
fn short_flags(arg: &str) -> String {
    arg.trim_start_matches('-')
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect()
}

fn base(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

fn assignment(word: &str) -> Option<(&str, &str)> {
    let (name, value) = word.split_once('=')?;
    (!name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit()))
    .then_some((name, value))
}

#[cfg(test)]
mod cases;
