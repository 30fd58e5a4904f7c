//! The policy for the server: what client-side hooks cannot enforce (`git push --no-verify`,
//! another git client, a hook removed) only the server can. Three forms of the same rules:
//!
//! - a `pre-receive` hook for a server you run (a bare repository): POSIX `sh` and git, no
//!   git-bmad needed there; secrets through `grep -P` with the scanner's own patterns;
//! - GitHub repository rulesets (`POST /repos/{owner}/{repo}/rulesets`, one per element);
//! - GitLab protected branches and tags, and the push rule that stops secrets.

use serde_json::{json, Value};

use crate::text::shell_quote;

use super::secrets;

/// At most this many new commits per pushed ref are read for secrets by the server hook.
pub const MAX_SCANNED_COMMITS: usize = super::push::MAX_SCANNED_COMMITS;

/// A `pre-receive` hook refusing non-fast-forward updates of any branch, any update or
/// deletion of the `protected` branches (full names; created when the server has none
/// yet), moving or deleting a tag, and new commits whose added lines hold a
/// high-confidence secret.
pub fn pre_receive(protected: &[String]) -> String {
    let protected = shell_quote(&protected.join(" "));
    let placeholders: Vec<String> = secrets::placeholder_words()
        .iter()
        .map(|w| format!("-e {}", shell_quote(w)))
        .collect();
    let placeholders = placeholders.join(" ");
    let mut checks = String::new();
    for (id, pattern) in secrets::server_rules() {
        // `-z`: the added lines are one record, so a key block spanning lines matches;
        // `(?m)` keeps `^`/`$` per line.
        checks.push_str(&format!(
            "  hit=$(grep -aPzo -- {} \"$added\" 2>/dev/null | tr '\\000' '\\n' | grep -viF {placeholders} | head -n 1)\n  [ -z \"$hit\" ] || echo {}\n",
            shell_quote(&format!("(?m){pattern}")),
            shell_quote(id),
        ));
    }
    format!(
        r#"#!/bin/sh
# git-bmad server policy: a pre-receive hook, written by `git bmad policy export --pre-receive`.
# Install it as hooks/pre-receive of the repository on the server (chmod +x); it needs sh,
# git and GNU grep (-P), not git-bmad.
#
# It refuses what the client-side hooks refuse, for every pusher and client, and also when
# the pusher skipped their hooks (`git push --no-verify`):
#   - a non-fast-forward update of any branch (a force push);
#   - an update or deletion of a protected branch (creating one the server lacks is allowed);
#   - moving or deleting a tag;
#   - any rewrite or deletion of git-bmad's state (refs/bmad/*, refs/notes/bmad/*: they only
#     ever fast-forward);
#   - a high-confidence secret in what a push adds: new commits' added lines (merges as a
#     combined diff) and messages, annotated tags, blobs and trees pushed as refs (at most
#     MAX_COMMITS commits per ref).
PROTECTED={protected}
# `refuse`: protected branches change only through the hosting service's reviewed merges.
# `fast-forward`: people may fast-forward them by pushing (a server without pull requests).
PROTECTED_UPDATES=refuse
MAX_COMMITS={MAX_SCANNED_COMMITS}

zero=$(git hash-object --stdin </dev/null | tr '0-9a-f' '0')
status=0
refuse() {{ printf 'git-bmad policy: refused [%s] %s: %s\n' "$1" "$2" "$3" >&2; status=1; }}
lower() {{ printf '%s' "$1" | tr 'A-Z' 'a-z'; }}
is_protected() {{
  for p in $PROTECTED; do [ "$(lower "$p")" = "$(lower "$1")" ] && return 0; done
  return 1
}}
secrets() {{
{checks}}}
if ! printf 'x\n' | grep -qP 'x' 2>/dev/null; then
  echo "git-bmad policy: this server's grep has no -P, so pushed commits cannot be checked for secrets; nothing is accepted until GNU grep is installed" >&2
  exit 1
fi
added=$(mktemp) || exit 1
trap 'rm -f "$added"' EXIT
while read -r old new ref; do
  case "$ref" in
    refs/tags/*)
      [ "$old" = "$zero" ] || refuse tag-rewrite "$ref" "published tags are never moved or deleted"
      ;;
    refs/heads/*)
      if [ "$new" = "$zero" ]; then
        is_protected "$ref" && refuse delete-protected "$ref" "protected branches are never deleted"
      elif [ "$old" != "$zero" ] && ! git merge-base --is-ancestor "$old" "$new" 2>/dev/null; then
        refuse force-push "$ref" "not a fast-forward: it would discard commits the server has"
      elif [ "$old" != "$zero" ] && is_protected "$ref" && [ "$PROTECTED_UPDATES" != fast-forward ]; then
        refuse push-to-protected "$ref" "protected: it changes only through reviewed merges"
      fi
      ;;
    refs/bmad/*|refs/notes/bmad/*)
      if [ "$new" = "$zero" ]; then
        refuse bmad-state "$ref" "git-bmad's journals and checkpoints are never deleted"
      elif [ "$old" != "$zero" ] && ! git merge-base --is-ancestor "$old" "$new" 2>/dev/null; then
        refuse bmad-state "$ref" "git-bmad's journals and checkpoints only ever fast-forward"
      fi
      ;;
  esac
  [ "$new" = "$zero" ] && continue
  case "$(git cat-file -t "$new" 2>/dev/null)" in
    blob) git cat-file blob "$new" > "$added" ;;
    tree)
      git ls-tree -r "$new" | awk '$2 == "blob" {{ print $3 }}' | head -n 1000 |
        while read -r blob; do git cat-file blob "$blob"; done > "$added"
      ;;
    *)
      {{
        git log -p --cc -U0 --text --no-color --no-ext-diff --no-textconv --no-renames \
          --format='commit %H' --max-count="$MAX_COMMITS" "$new" --not --all -- 2>/dev/null |
          sed -n -e '/^+++ /d' -e 's/^+//p'
        git log --format=%B --max-count="$MAX_COMMITS" "$new" --not --all 2>/dev/null
        [ "$(git cat-file -t "$new")" = tag ] && git cat-file tag "$new"
      }} > "$added"
      ;;
  esac
  found=$(secrets | sort -u | tr '\n' ' ')
  [ -z "$found" ] || refuse secret "$ref" "the pushed commits add a secret ($found); remove it from history and rotate it"
done
exit $status
"#
    )
}

/// GitHub repository rulesets: the protected branches (no deletion, no force push, changes
/// through reviewed pull requests) and every tag (no update, no deletion, no force push).
pub fn github_rulesets(protected: &[String]) -> Value {
    json!([
        {
            "name": "git-bmad: protected branches",
            "target": "branch",
            "enforcement": "active",
            "conditions": {"ref_name": {"include": protected, "exclude": []}},
            "rules": [
                {"type": "deletion"},
                {"type": "non_fast_forward"},
                {"type": "pull_request", "parameters": {
                    "required_approving_review_count": 1,
                    "dismiss_stale_reviews_on_push": true,
                    "require_code_owner_review": false,
                    "require_last_push_approval": true,
                    "required_review_thread_resolution": false
                }}
            ],
            "bypass_actors": []
        },
        {
            "name": "git-bmad: published tags",
            "target": "tag",
            "enforcement": "active",
            "conditions": {"ref_name": {"include": ["~ALL"], "exclude": []}},
            "rules": [
                {"type": "update"},
                {"type": "deletion"},
                {"type": "non_fast_forward"}
            ],
            "bypass_actors": []
        }
    ])
}

/// GitLab: protected branches nobody pushes to directly (maintainers merge, no force push),
/// every tag protected, and the push rule that rejects secrets and tag deletion (the
/// `/projects/:id/protected_branches`, `/protected_tags` and `/push_rule` endpoints).
pub fn gitlab(protected: &[String]) -> Value {
    let branches: Vec<Value> = protected
        .iter()
        .map(|r| {
            json!({
                "name": r.strip_prefix("refs/heads/").unwrap_or(r),
                "push_access_level": 0,
                "merge_access_level": 40,
                "allow_force_push": false
            })
        })
        .collect();
    json!({
        "protected_branches": branches,
        "protected_tags": [{"name": "*", "create_access_level": 40}],
        "push_rule": {"prevent_secrets": true, "deny_delete_tag": true}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every exported pattern is one PCRE accepts (grep exits 2 on a bad pattern).
    #[test]
    fn every_exported_secret_pattern_compiles_for_grep_p() {
        let script = pre_receive(&["refs/heads/main".to_owned(), "refs/heads/rel".to_owned()]);
        assert!(script.contains("PROTECTED='refs/heads/main refs/heads/rel'\n"));
        assert!(script.contains("echo private-key"));
        let has_grep_p = std::process::Command::new("grep")
            .args(["-qP", "x", "/dev/null"])
            .status()
            .is_ok_and(|s| s.code() == Some(1));
        if !has_grep_p {
            eprintln!("grep -P is not available here; the server hook refuses pushes there");
            return;
        }
        for (id, pattern) in secrets::server_rules() {
            let status = std::process::Command::new("grep")
                .args(["-aPzq", "--", &format!("(?m){pattern}"), "/dev/null"])
                .status()
                .expect("run grep");
            assert_eq!(status.code(), Some(1), "{id}: grep -P rejects {pattern}");
        }
    }
}
