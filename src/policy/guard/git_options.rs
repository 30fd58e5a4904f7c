//! git's own options, read as git reads them: `git config` writes, settings given with
//! `-c`, and `git push`'s options and refspecs.

use super::{is_protected, long, rules, short_flags, Block};

/// `git config …`: refuse writes of settings that move the hooks or change what a push
/// sends; reads pass.
pub(super) fn check_git_config(rest: &[String]) -> Option<Block> {
    const WITH_VALUE: &[&str] = &[
        "-f",
        "--file",
        "--blob",
        "--type",
        "--default",
        "--comment",
        "--value",
        "--url",
    ];
    let mut words = Vec::new();
    let mut writes = false;
    let mut i = 0;
    while let Some(a) = rest.get(i) {
        if WITH_VALUE.contains(&a.as_str()) {
            i += 2;
            continue;
        }
        if a.starts_with('-') {
            writes |= [
                "add",
                "replace-all",
                "unset",
                "unset-all",
                "rename-section",
                "remove-section",
            ]
            .iter()
            .any(|o| long(a, o));
        } else {
            words.push(a.as_str());
        }
        i += 1;
    }
    // git 2.46's subcommands: `git config set|unset|get|list …`.
    if let Some(verb) = words.first().copied() {
        if matches!(verb, "set" | "unset" | "rename-section" | "remove-section") {
            writes = true;
            words.remove(0);
        } else if matches!(verb, "get" | "list" | "edit") {
            return None;
        }
    }
    let key = words.first()?;
    if !(writes || words.len() > 1) {
        return None;
    }
    check_config(key)
}

/// A setting given to git (`key=value`, or a key alone): refused if it moves the hooks or
/// changes what a push sends.
pub(super) fn check_config(kv: &str) -> Option<Block> {
    let key = kv.split('=').next().unwrap_or(kv).to_ascii_lowercase();
    if key == "core.hookspath" {
        return Some(rules::HOOK_BYPASS.block(format!("setting {kv} runs git without the hooks")));
    }
    if key.starts_with("remote.") && key.ends_with(".mirror") {
        return Some(rules::MIRROR.block(format!("{kv} makes every push a mirror push")));
    }
    if key.starts_with("remote.") && key.ends_with(".push") {
        return Some(rules::UNDECIDABLE.block(format!(
            "{kv} changes what every push sends; push refs by name instead"
        )));
    }
    None
}

pub(super) fn check_push(args: &[String], protected: &[String]) -> Option<Block> {
    let mut positional = Vec::new();
    let mut delete = false;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let a = a.as_str();
        i += 1;
        if a == "--" {
            positional.extend(args[i..].iter().map(String::as_str));
            break;
        }
        if !a.starts_with('-') {
            positional.push(a);
            continue;
        }
        if ["force", "force-with-lease", "force-if-includes"]
            .iter()
            .any(|o| long(a, o))
            || (!a.starts_with("--") && short_flags(a).contains('f'))
        {
            return Some(force());
        }
        if long(a, "mirror") {
            return Some(
                rules::MIRROR.block("`git push --mirror` overwrites and deletes every remote ref"),
            );
        }
        if long(a, "no-verify") {
            return Some(
                rules::HOOK_BYPASS.block("`git push --no-verify` skips the pre-push checks"),
            );
        }
        if long(a, "prune") {
            return Some(rules::PROTECTED_BRANCH.block(
                "`git push --prune` deletes every remote branch without a local counterpart",
            ));
        }
        if long(a, "delete") || (!a.starts_with("--") && short_flags(a).contains('d')) {
            delete = true;
        }
        let option = if long(a, "push-option") || a.starts_with("-o") {
            match a.split_once('=') {
                Some((_, value)) => Some(value.to_owned()),
                None if a.len() > 2 && a.starts_with("-o") => Some(a[2..].to_owned()),
                None => {
                    i += 1;
                    args.get(i - 1).cloned()
                }
            }
        } else if long(a, "repo") || long(a, "receive-pack") || long(a, "exec") {
            if !a.contains('=') {
                i += 1;
            }
            None
        } else {
            None
        };
        if option
            .is_some_and(|o| o.contains("merge_when_pipeline_succeeds") || o.contains("auto_merge"))
        {
            return Some(
                rules::AUTO_MERGE.block("a push option asks the server to merge automatically"),
            );
        }
    }
    // The first positional is the remote; the rest are refspecs.
    for spec in positional.iter().skip(1) {
        if spec.starts_with('+') {
            return Some(force());
        }
        let dst = spec.rsplit(':').next().unwrap_or(spec);
        let hits =
            |dst: &str| is_protected(dst, protected) || glob_covers_protected(dst, protected);
        if hits(dst) || (spec.starts_with(':') && hits(&spec[1..])) {
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

/// Whether a refspec pattern (`refs/heads/*`) could name a protected ref.
fn glob_covers_protected(dst: &str, protected: &[String]) -> bool {
    let Some((before, _)) = dst.split_once('*') else {
        return false;
    };
    let full = if before.starts_with("refs/") {
        before.to_owned()
    } else {
        format!("refs/heads/{before}")
    };
    protected.iter().any(|p| p.starts_with(&full))
}

fn force() -> Block {
    rules::FORCE_PUSH.block("a force push rewrites published history")
}
