//! The rule catalogue: every rule the hooks and the agent guard enforce, with its id (as
//! journaled and printed in brackets), why it exists, and what to do instead.
//!
//! Checks refer to a rule here and add only what they found (which ref, which command), so a
//! rule's advice is the same wherever it fires, and adding a rule is one entry plus its check.

use serde::Serialize;

/// A rule's id: `force-push`, `secret`, … Only this file makes one, so every id is one of
/// the catalogue's; it is journaled, printed and serialised as its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct RuleId(&'static str);

impl RuleId {
    /// The id as text.
    pub const fn as_str(self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl AsRef<str> for RuleId {
    fn as_ref(&self) -> &str {
        self.0
    }
}

/// One rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// Short id: `force-push`, `secret`, …
    pub id: RuleId,
    /// Why the rule exists.
    pub why: &'static str,
    /// The safe alternative, told to whoever was refused.
    pub instead: &'static str,
}

/// A refused ref update or commit: the rule, what it concerned, why, and what to do instead.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// The rule's id.
    pub rule: RuleId,
    /// The ref concerned (`*` for the whole push, `HEAD` for a commit, a file for a secret).
    pub refname: String,
    /// What is wrong.
    pub reason: String,
    /// The safe alternative.
    pub instead: &'static str,
}

/// Why the agent guard blocks a command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Block {
    /// The rule's id.
    pub rule: RuleId,
    /// What the command would do.
    pub reason: String,
    /// What to do instead.
    pub instead: &'static str,
}

impl Rule {
    /// A refusal of `refname` under this rule.
    pub fn refuse(&self, refname: impl Into<String>, reason: impl Into<String>) -> Refusal {
        Refusal {
            rule: self.id,
            refname: refname.into(),
            reason: reason.into(),
            instead: self.instead,
        }
    }

    /// A guard block under this rule.
    pub fn block(&self, reason: impl Into<String>) -> Block {
        Block {
            rule: self.id,
            reason: reason.into(),
            instead: self.instead,
        }
    }
}

const OPEN_PR: &str = "push your work to a feature branch (git push origin HEAD:refs/heads/<feature>) and open a pull request; a human merges";
const ON_THE_SESSION_BRANCH: &str =
    "work on the session branch; protected branches change through pull requests";
const KEEP_HOOKS: &str = "run the command without bypassing the hooks and fix what they report";

/// Rewriting published history.
pub const FORCE_PUSH: Rule = Rule {
    id: RuleId("force-push"),
    why: "a forced update discards commits others may have built on",
    instead: "fetch, then rebase or merge onto the remote branch and push again without force; to publish rewritten history, push it under a new branch name",
};
/// The remote has commits this repository does not.
pub const REMOTE_AHEAD: Rule = Rule {
    id: RuleId("remote-ahead"),
    instead: FORCE_PUSH.instead,
    why: "pushing over a remote commit this repository does not have would discard it",
};
/// Fast-forward or not cannot be told (shallow or partial history).
pub const ANCESTRY_UNKNOWN: Rule = Rule {
    id: RuleId("ancestry-unknown"),
    why: "a push that might be forced is refused rather than guessed at (fail closed)",
    instead: "fetch the full history (git fetch --unshallow) and push again",
};
/// Pushing to a protected branch.
pub const PUSH_TO_PROTECTED: Rule = Rule {
    id: RuleId("push-to-protected"),
    why: "protected branches change only through reviewed pull requests",
    instead: OPEN_PR,
};
/// Deleting a protected branch.
pub const DELETE_PROTECTED: Rule = Rule {
    id: RuleId("delete-protected"),
    why: "a protected branch is never deleted by an agent or a session",
    instead: OPEN_PR,
};
/// Moving a protected branch locally from a session worktree.
pub const MOVE_PROTECTED: Rule = Rule {
    id: RuleId("move-protected"),
    why: "a session works on its own branch; moving main locally is a push waiting to happen",
    instead: ON_THE_SESSION_BRANCH,
};
/// Turning a protected branch into a symbolic ref.
pub const PROTECTED_SYMREF: Rule = Rule {
    id: RuleId("protected-symref"),
    why: "a symbolic ref would let another branch's moves move the protected one",
    instead: ON_THE_SESSION_BRANCH,
};
/// A command that would move, delete or push to a protected branch (the guard).
pub const PROTECTED_BRANCH: Rule = Rule {
    id: RuleId("protected-branch"),
    why: "protected branches change only through reviewed pull requests",
    instead: OPEN_PR,
};
/// `git push --mirror` or a mirror remote.
pub const MIRROR: Rule = Rule {
    id: RuleId("mirror"),
    why: "a mirror push overwrites and deletes every remote ref to match this repository",
    instead: OPEN_PR,
};
/// Push options that make the server merge.
pub const AUTO_MERGE: Rule = Rule {
    id: RuleId("auto-merge"),
    why: "no agent merges its own work",
    instead: OPEN_PR,
};
/// Merging a pull request from an agent.
pub const MERGE: Rule = Rule {
    id: RuleId("merge"),
    why: "agents do not merge pull requests; a human reviews and merges",
    instead: "leave the pull request for a human to review and merge",
};
/// Moving a published tag.
pub const TAG_REWRITE: Rule = Rule {
    id: RuleId("tag-rewrite"),
    why: "published tags are never moved: others have fetched them",
    instead: "create a new tag with a new name",
};
/// Switching the hooks off (`--no-verify` on the command line, `core.hooksPath`, `HUSKY=0`).
pub const HOOK_BYPASS: Rule = Rule {
    id: RuleId("hook-bypass"),
    why: "the hooks are the checks; a command that skips them skips the policy",
    instead: KEEP_HOOKS,
};
/// A commit in a session worktree that skipped pre-commit.
pub const NO_VERIFY: Rule = Rule {
    id: RuleId("no-verify"),
    why: "in a session worktree every commit goes through the secret scan",
    instead: "commit again without --no-verify, and fix what the hooks report",
};
/// A credential in a commit or a push.
pub const SECRET: Rule = Rule {
    id: RuleId("secret"),
    why: "a credential that reaches a commit reaches every clone and every remote",
    instead: "take the secret out (unstage it, or rewrite the unpushed commits that hold it), keep credentials out of the repository, and rotate it",
};
/// A git command in a session worktree writing git-bmad's own refs (journal, checkpoints).
pub const BMAD_STATE: Rule = Rule {
    id: RuleId("bmad-state"),
    why: "the journal and checkpoints are git-bmad's record of what happened; a step that writes them could forge its own \"done\"",
    instead: "leave refs/bmad/* and refs/notes/bmad/* to git-bmad; add a note of your own with `git bmad journal append <kind>`",
};
/// The journal holds an event git-bmad did not write (found by its hash chain).
pub const JOURNAL_FORGED: Rule = Rule {
    id: RuleId("journal-forged"),
    why: "an event git-bmad did not write could claim a step done or a gate answered",
    instead:
        "git-bmad ignores it; a human checks the session (`git bmad doctor`) and answers the gate",
};
/// A journal or checkpoints ref no longer holds what git-bmad last wrote to it.
pub const RECORD_MOVED: Rule = Rule {
    id: RuleId("record-moved"),
    why: "a journal or checkpoints ref moved by something other than git-bmad can erase events or claim work",
    instead: "git-bmad parks the run; a human puts the record back (`git bmad doctor` gives the command) or accepts it at the gate",
};
/// A story changed what git-bmad judges it with: its base's test configuration, CI
/// configuration, or a file the test command runs.
pub const JUDGE_CHANGED: Rule = Rule {
    id: RuleId("judge-changed"),
    why: "a story that changes the tests' rules would be judged by rules of its own making",
    instead: "change the test set-up on the base (its own commit, reviewed), or let a human accept it at the story's judge gate",
};
/// A story deleted or emptied test files.
pub const TESTS_REMOVED: Rule = Rule {
    id: RuleId("tests-removed"),
    why: "a suite made smaller passes without the work being right",
    instead: "keep the tests; a human accepts a removal at the story's judge gate",
};
/// A story's new tests all pass on its base, without its code.
pub const TESTS_PASS_ON_BASE: Rule = Rule {
    id: RuleId("tests-pass-on-base"),
    why: "a test that passes without the story's code is no evidence of its work",
    instead: "write tests that fail until the story's behaviour exists, or say `refactor: true` in the story's frontmatter; a human accepts them at the story's judge gate",
};
/// A story changed files outside its declared `touches`, or files another story declares.
pub const OUT_OF_SCOPE: Rule = Rule {
    id: RuleId("out-of-scope"),
    why: "work outside a story's declared scope collides with the stories that own it and escapes their review",
    instead: "stay inside the story's touches, or widen them in the story file; a human accepts it at the story's judge gate",
};
/// A step deleted, unlinked or replaced its session's worktree (or its `.git` file).
pub const WORKTREE_DAMAGED: Rule = Rule {
    id: RuleId("worktree-damaged"),
    why: "a worktree git no longer tracks can neither be checkpointed nor checked, so nothing in it is evidence",
    instead: "leave the worktree's .git file and directory alone; `git bmad doctor` names the repair",
};
/// A step changed what an agent CLI reads its grants from (`.claude/`, `opencode.json`);
/// git-bmad put it back.
pub const AGENT_SETTINGS: Rule = Rule {
    id: RuleId("agent-settings"),
    why: "agent CLIs read their permission rules, hooks and tools from these files in the worktree: an agent that writes them grants itself, or the next step's agent, what the policy refused",
    instead: "leave the agents' settings to the user; git-bmad put them back as they were before the step",
};
/// A contained step wrote where its walls keep nothing: a branch not its own, its
/// worktree's HEAD; the write was dropped.
pub const OUTSIDE_WALLS: Rule = Rule {
    id: RuleId("outside-walls"),
    why: "a contained step may change its worktree and its own branch; anything else it wrote was dropped, and trying is a sign of an agent working against its limits",
    instead: "commit on the session branch only; git-bmad pushes and journals for the step",
};
/// A command the guard cannot read to the end.
pub const TOO_NESTED: Rule = Rule {
    id: RuleId("too-nested"),
    why: "a command nested too deeply to judge is refused rather than guessed at",
    instead: "run the git command directly",
};
/// A command whose effect the guard cannot read.
pub const UNDECIDABLE: Rule = Rule {
    id: RuleId("undecidable"),
    why: "a command whose effect depends on what only running it reveals (a variable where git's subcommand or options go, a script piped into a shell) is refused rather than guessed at",
    instead: "spell the command out: literal program, subcommand and options",
};

/// Every rule, for `--help`, documentation and tests.
pub const CATALOGUE: &[Rule] = &[
    FORCE_PUSH,
    REMOTE_AHEAD,
    ANCESTRY_UNKNOWN,
    PUSH_TO_PROTECTED,
    DELETE_PROTECTED,
    MOVE_PROTECTED,
    PROTECTED_SYMREF,
    PROTECTED_BRANCH,
    MIRROR,
    AUTO_MERGE,
    MERGE,
    TAG_REWRITE,
    HOOK_BYPASS,
    NO_VERIFY,
    SECRET,
    BMAD_STATE,
    JOURNAL_FORGED,
    RECORD_MOVED,
    JUDGE_CHANGED,
    TESTS_REMOVED,
    TESTS_PASS_ON_BASE,
    OUT_OF_SCOPE,
    WORKTREE_DAMAGED,
    AGENT_SETTINGS,
    OUTSIDE_WALLS,
    TOO_NESTED,
    UNDECIDABLE,
];

#[cfg(test)]
mod tests {
    use super::CATALOGUE;

    #[test]
    fn ids_are_unique_and_every_rule_says_why_and_what_instead() {
        let mut ids: Vec<&str> = CATALOGUE.iter().map(|r| r.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), CATALOGUE.len());
        for rule in CATALOGUE {
            assert!(!rule.why.is_empty() && !rule.instead.is_empty(), "{rule:?}");
        }
    }
}
