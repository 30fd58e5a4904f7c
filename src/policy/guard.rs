//! The agent guard: judge a shell command an agent is about to run, before it runs.
//!
//! Claude Code's PreToolUse hook sends the tool call as JSON on stdin; exit 2 blocks it and
//! stderr tells the agent why. The command is normalised first, so spelling does not get
//! around the rules: quotes and escapes, `VAR=x` and `env …` prefixes, `sh -c` / `bash -c` /
//! `eval` scripts, `&&` `||` `;` `|` chains and `$( … )`, `git -C dir` and `git -c k=v`.
//! Out of scope, and said so: git aliases, scripts in files, and anything obfuscated further
//! (base64, variables holding commands). The git hooks stay the second line behind this one.

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
    if depth > 4 {
        return Some(rules::TOO_NESTED.block("the command nests shells too deeply to judge"));
    }
    for words in split_commands(script) {
        if let Some(block) = check_simple(&words, protected, depth) {
            return Some(block);
        }
    }
    None
}

/// One simple command (already split into words).
fn check_simple(words: &[String], protected: &[String], depth: usize) -> Option<Block> {
    let mut i = 0;
    // Leading assignments and wrappers.
    loop {
        let word = words.get(i)?;
        if let Some((name, value)) = assignment(word) {
            if let Some(b) = check_env(name, value) {
                return Some(b);
            }
            i += 1;
            continue;
        }
        match base(word) {
            "env" => {
                i += 1;
                while let Some(w) = words.get(i) {
                    if w == "-u" || w == "--unset" || w == "-C" || w == "--chdir" {
                        i += 2;
                    } else if w.starts_with('-') {
                        i += 1;
                    } else {
                        break;
                    }
                }
            }
            "command" | "exec" | "nohup" | "time" | "sudo" | "nice" | "timeout" | "xargs" => {
                i += 1;
                // timeout's duration, nice's -n value
                while words.get(i).is_some_and(|w| {
                    w.starts_with('-')
                        || w.chars()
                            .all(|c| c.is_ascii_digit() || c == '.' || c == 's')
                }) {
                    i += 1;
                }
            }
            "export" => {
                for w in &words[i + 1..] {
                    if let Some((name, value)) = assignment(w) {
                        if let Some(b) = check_env(name, value) {
                            return Some(b);
                        }
                    }
                }
                return None;
            }
            _ => break,
        }
    }
    let program = base(&words[i]);
    let args = &words[i + 1..];
    match program {
        "sh" | "bash" | "zsh" | "dash" | "ksh" => {
            let c = args.iter().position(|a| {
                a == "-c" || (a.starts_with('-') && !a.starts_with("--") && a.contains('c'))
            })?;
            check_script(args.get(c + 1)?, protected, depth + 1)
        }
        "eval" => check_script(&args.join(" "), protected, depth + 1),
        "git" => check_git(args, protected),
        "gh" => check_gh(args),
        _ => None,
    }
}

fn check_env(name: &str, value: &str) -> Option<Block> {
    let off = matches!(value, "0" | "false" | "off" | "no" | "");
    let bypass = (name == "HUSKY" && off)
        || name == "HUSKY_SKIP_HOOKS"
        || name == "SKIP_HOOKS"
        || name == "GIT_BMAD_SKIP"
        || name == "LEFTHOOK" && off;
    bypass.then(|| rules::HOOK_BYPASS.block(format!("{name}={value} switches the git hooks off")))
}

fn check_git(args: &[String], protected: &[String]) -> Option<Block> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path" => i += 2,
            "-c" => {
                if let Some(b) = args.get(i + 1).and_then(|kv| check_config(kv)) {
                    return Some(b);
                }
                i += 2;
            }
            a if a.starts_with("--git-dir=")
                || a.starts_with("--work-tree=")
                || a.starts_with("-C") =>
            {
                i += 1
            }
            a if a.starts_with('-') => i += 1,
            _ => break,
        }
    }
    let sub = args.get(i)?.as_str();
    let rest = &args[i + 1..];
    match sub {
        "push" => check_push(rest, protected),
        "commit" | "merge" | "am" | "rebase" | "cherry-pick" | "revert" => {
            let no_verify = rest.iter().take_while(|a| *a != "--").any(|a| {
                a == "--no-verify"
                    || (sub == "commit"
                        && a.starts_with('-')
                        && !a.starts_with("--")
                        && short_flags(a).contains('n'))
            });
            no_verify.then(|| {
                rules::HOOK_BYPASS.block(format!(
                    "`git {sub}` with --no-verify skips the commit checks"
                ))
            })
        }
        "config" => {
            let key = rest.iter().find(|a| !a.starts_with('-'))?;
            key.eq_ignore_ascii_case("core.hooksPath").then(|| {
                rules::HOOK_BYPASS.block("changing core.hooksPath moves the hooks out of the way")
            })
        }
        "branch" => {
            let destructive = rest.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "-D" | "-d"
                        | "--delete"
                        | "-f"
                        | "--force"
                        | "-m"
                        | "-M"
                        | "--move"
                        | "-c"
                        | "-C"
                )
            });
            let target = rest
                .iter()
                .filter(|a| !a.starts_with('-'))
                .find(|a| is_protected(a, protected))?;
            destructive.then(|| {
                rules::PROTECTED_BRANCH.block(format!(
                    "`git branch` would move or delete the protected branch {target}"
                ))
            })
        }
        "update-ref" => {
            let target = rest
                .iter()
                .filter(|a| !a.starts_with('-'))
                .find(|a| is_protected(a, protected))?;
            Some(rules::PROTECTED_BRANCH.block(format!(
                "`git update-ref` would rewrite the protected branch {target}"
            )))
        }
        _ => None,
    }
}

fn check_config(kv: &str) -> Option<Block> {
    let key = kv.split('=').next().unwrap_or(kv);
    key.eq_ignore_ascii_case("core.hooksPath")
        .then(|| rules::HOOK_BYPASS.block(format!("`-c {kv}` runs git without the hooks")))
}

fn check_push(args: &[String], protected: &[String]) -> Option<Block> {
    let mut positional = Vec::new();
    let mut delete = false;
    for a in args {
        match a.as_str() {
            "-f" | "--force" | "--force-if-includes" => return Some(force()),
            "--mirror" => {
                return Some(
                    rules::MIRROR
                        .block("`git push --mirror` overwrites and deletes every remote ref"),
                )
            }
            "--no-verify" => {
                return Some(
                    rules::HOOK_BYPASS.block("`git push --no-verify` skips the pre-push checks"),
                )
            }
            "-d" | "--delete" => delete = true,
            a if a.starts_with("--force-with-lease") => return Some(force()),
            a if a.starts_with("-o") || a.starts_with("--push-option") => {
                if a.contains("merge_when_pipeline_succeeds") || a.contains("auto_merge") {
                    return Some(
                        rules::AUTO_MERGE
                            .block("a push option asks the server to merge automatically"),
                    );
                }
            }
            a if a.starts_with('-') && !a.starts_with("--") && short_flags(a).contains('f') => {
                return Some(force())
            }
            a if a.starts_with('-') => {}
            _ => positional.push(a.as_str()),
        }
    }
    // The first positional is the remote; the rest are refspecs.
    for spec in positional.iter().skip(1) {
        if spec.starts_with('+') {
            return Some(force());
        }
        let dst = spec.rsplit(':').next().unwrap_or(spec);
        if is_protected(dst, protected)
            || (spec.starts_with(':') && is_protected(&spec[1..], protected))
        {
            let what = if delete || spec.starts_with(':') {
                "delete"
            } else {
                "push to"
            };
            return Some(
                rules::PROTECTED_BRANCH
                    .block(format!("this would {what} the protected branch {dst}")),
            );
        }
    }
    None
}

fn force() -> Block {
    rules::FORCE_PUSH.block("a force push rewrites published history")
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

/// Split a shell script into simple commands of unquoted words. `$( … )` and backquoted
/// commands become commands of their own.
fn split_commands(script: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = script.chars().peekable();
    let end_word = |word: &mut String, in_word: &mut bool, words: &mut Vec<String>| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    word.push(d);
                }
            }
            '"' => {
                in_word = true;
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' => {
                            if let Some(e) = chars.next() {
                                word.push(e);
                            }
                        }
                        _ => word.push(d),
                    }
                }
            }
            '\\' => {
                if let Some(d) = chars.next() {
                    if d != '\n' {
                        word.push(d);
                        in_word = true;
                    }
                }
            }
            ';' | '&' | '|' | '\n' | '(' | ')' | '`' => {
                end_word(&mut word, &mut in_word, &mut words);
                if !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            '$' if chars.peek() == Some(&'(') => {
                end_word(&mut word, &mut in_word, &mut words);
                if !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            '#' if !in_word => {
                // A comment runs to the end of the line.
                for d in chars.by_ref() {
                    if d == '\n' {
                        break;
                    }
                }
                if !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            c if c.is_whitespace() => end_word(&mut word, &mut in_word, &mut words),
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    end_word(&mut word, &mut in_word, &mut words);
    if !words.is_empty() {
        commands.push(words);
    }
    commands
}

#[cfg(test)]
mod tests {
    use super::*;

    fn protected() -> Vec<String> {
        vec![
            "refs/heads/main".into(),
            "refs/heads/master".into(),
            "refs/heads/release".into(),
        ]
    }

    #[test]
    fn blocks_what_it_must() {
        let cases = [
            ("git push -f origin feat", "force-push"),
            ("git push --force origin feat", "force-push"),
            ("git push origin +feat", "force-push"),
            ("git push --force-with-lease origin feat", "force-push"),
            (
                "git push --force-with-lease=feat:abc origin feat",
                "force-push",
            ),
            ("git push --force-if-includes origin feat", "force-push"),
            ("git push -uf origin feat", "force-push"),
            ("git push origin HEAD:main", "protected-branch"),
            ("git push origin main", "protected-branch"),
            ("git push origin feat:refs/heads/master", "protected-branch"),
            ("git push origin :main", "protected-branch"),
            ("git push origin --delete release", "protected-branch"),
            ("git push --mirror origin", "mirror"),
            ("git push --no-verify origin feat", "hook-bypass"),
            ("git commit --no-verify -m 'wip'", "hook-bypass"),
            ("git commit -n -m wip", "hook-bypass"),
            ("git commit -anm wip", "hook-bypass"),
            ("git merge --no-verify topic", "hook-bypass"),
            ("git -c core.hooksPath=/dev/null commit -m x", "hook-bypass"),
            ("git config core.hooksPath /tmp/none", "hook-bypass"),
            ("HUSKY=0 git commit -m x", "hook-bypass"),
            ("export HUSKY=0; git commit -m x", "hook-bypass"),
            ("env HUSKY=0 git commit -m x", "hook-bypass"),
            ("gh pr merge 12 --squash", "merge"),
            ("gh api -X PUT repos/o/r/pulls/12/merge", "merge"),
            ("git branch -D main", "protected-branch"),
            ("git branch -f master HEAD~3", "protected-branch"),
            ("git update-ref refs/heads/main HEAD", "protected-branch"),
            ("cd /repo && git add -A && git push -f", "force-push"),
            ("npm test; git push origin HEAD:main", "protected-branch"),
            ("sh -c 'git push --force origin feat'", "force-push"),
            ("bash -lc \"git commit --no-verify -m x\"", "hook-bypass"),
            ("eval git push -f origin feat", "force-push"),
            ("echo $(git push -f) done", "force-push"),
            ("git -C ../other push -f origin feat", "force-push"),
            ("\"git\" 'push' \"--force\"", "force-push"),
            ("/usr/bin/git push origin +HEAD:feat", "force-push"),
            ("timeout 60 git push -f", "force-push"),
        ];
        for (cmd, rule) in cases {
            let block =
                check_command(cmd, &protected()).unwrap_or_else(|| panic!("not blocked: {cmd}"));
            assert_eq!(block.rule, rule, "{cmd}");
        }
    }

    #[test]
    fn allows_everyday_work() {
        let cases = [
            "git push origin feat",
            "git push -u origin HEAD:refs/heads/bmad/x",
            "git push origin refs/notes/bmad/*",
            "git commit -m 'fix: handle -n flag parsing'",
            "git commit -am 'use --no-verify in docs'",
            "git merge --no-ff topic",
            "git branch -D old-feature",
            "git branch feature main",
            "git log --oneline main..HEAD",
            "git checkout main",
            "git pull --rebase origin main",
            "git fetch origin main",
            "git config user.name Agent",
            "git diff main",
            "cargo test && git status",
            "echo 'git push -f' > notes.txt",
            "grep -rn 'push --force' docs/",
            "HUSKY=1 git commit -m x",
            "gh pr create --fill",
            "gh pr view 12",
            "ls -la # git push -f",
            "git show main:README.md",
            "git rebase main",
            "git reset --hard HEAD~1",
            "git stash",
        ];
        for cmd in cases {
            assert_eq!(check_command(cmd, &protected()), None, "{cmd}");
        }
    }
}
