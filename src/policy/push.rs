//! The pre-push check: the algorithm of the research note (`git-hooks-notes.md` §1).
//!
//! What the hook sees: one stdin line per ref, `<local-ref> <local-oid> <remote-ref>
//! <remote-oid>`, refspecs already resolved to full names. An unforced non-fast-forward never
//! reaches the hook (git drops it), so a non-fast-forward line here was forced (`-f`, `+ref`,
//! a passing lease, `--mirror`) or its remote commit is missing locally; both are refused.
//! Whenever ancestry cannot be decided (shallow clone, odd objects) the push is refused:
//! fail closed.

use serde::Serialize;

pub use super::rules::Refusal;
use super::rules::{self, Rule};
use super::secrets::{self, Confidence, Finding, Options};
use super::Error;
use crate::git::{ObjectId, PatchStream, Repo};

/// One line of pre-push input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushLine {
    /// The local ref (or `(delete)`, or an expression such as `HEAD`).
    pub local_ref: String,
    /// The commit pushed, zeros for a deletion.
    pub local_oid: String,
    /// The full name of the remote ref.
    pub remote_ref: String,
    /// What the remote has now, zeros for a new ref.
    pub remote_oid: String,
}

/// Everything the check found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PushReport {
    /// Refused updates; any refusal fails the whole push.
    pub refusals: Vec<Refusal>,
    /// Low-confidence secret findings in outgoing commits (warnings only).
    pub warnings: Vec<Finding>,
}

/// Parse the hook's stdin, splitting each line from the right (a local ref may hold spaces).
pub fn parse_lines(stdin: &str) -> Vec<PushLine> {
    stdin
        .lines()
        .filter_map(|line| {
            let mut parts = line.rsplitn(4, ' ');
            let remote_oid = parts.next()?.to_owned();
            let remote_ref = parts.next()?.to_owned();
            let local_oid = parts.next()?.to_owned();
            let local_ref = parts.next()?.to_owned();
            Some(PushLine {
                local_ref,
                local_oid,
                remote_ref,
                remote_oid,
            })
        })
        .collect()
}

fn is_zero(oid: &str) -> bool {
    !oid.is_empty() && oid.bytes().all(|b| b == b'0')
}

/// The secret scans of outgoing commits, started before the other checks so that git
/// produces the patches on the second core while we decide (see [`start_scans`]).
pub struct Scans {
    children: Vec<(usize, PatchStream)>,
}

/// At most this many commits are scanned per pushed ref: a remote that has none of the
/// history (a new fork, a URL) must not make the push read all of it.
pub const MAX_SCANNED_COMMITS: usize = 1000;

/// Start `git log -p` for the commits each non-deleting line would send: those no
/// remote-tracking ref of any remote has (the history of a fork is upstream's too), nor any
/// commit this push's other lines say the remote has. The remote's commit may not even
/// exist here (then the push is refused and the scan killed).
pub fn start_scans(repo: &Repo, lines: &[PushLine]) -> Scans {
    let max_count = format!("--max-count={MAX_SCANNED_COMMITS}");
    // Only commits here can be excluded (`--not <missing>` fails the whole log).
    let remote_has: Vec<&str> = lines
        .iter()
        .map(|l| l.remote_oid.as_str())
        .filter(|oid| {
            ObjectId::from_hex(oid.as_bytes()).is_ok_and(|id| !is_zero(oid) && repo.has_object(id))
        })
        .collect();
    let mut children = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if is_zero(&line.local_oid) {
            continue;
        }
        let mut revs: Vec<&str> = vec![&max_count, &line.local_oid, "--not", "--remotes"];
        revs.extend(remote_has.iter().copied());
        if let Ok(stream) = repo.start_log_patch(&revs) {
            children.push((i, stream));
        }
    }
    Scans { children }
}

impl Scans {
    /// The patch for line `i`, if its scan was started and succeeded.
    fn take(&mut self, i: usize) -> Option<Result<String, Error>> {
        let at = self.children.iter().position(|(line, _)| *line == i)?;
        let (_, stream) = self.children.swap_remove(at);
        Some(
            stream
                .finish()
                .map(|patch| String::from_utf8_lossy(&patch).into_owned())
                .map_err(Error::Git),
        )
    }
}

/// Check a push to `remote`; `argv` is the `git push` command line when known. `bound`:
/// whether the ref rules bind this push (a session's or an agent's, or policy scope
/// `everywhere`); the secret scan binds every push.
pub fn check(
    repo: &Repo,
    remote: &str,
    lines: &[PushLine],
    argv: Option<&[String]>,
    protected: &[String],
    bound: bool,
    mut scans: Scans,
) -> Result<PushReport, Error> {
    let mut report = PushReport::default();
    let mut refuse = |rule: &Rule, refname: &str, reason: String| {
        report.refusals.push(rule.refuse(refname, reason))
    };
    let outgoing = if bound {
        check_refs(repo, remote, lines, argv, protected, &mut refuse)?
    } else {
        (0..lines.len())
            .filter(|i| !is_zero(&lines[*i].local_oid))
            .collect()
    };
    scan_outgoing(repo, lines, &outgoing, &mut scans, &mut report)?;
    Ok(report)
}

/// The ref rules of a push; the lines whose commits leave (for the secret scan).
fn check_refs(
    repo: &Repo,
    remote: &str,
    lines: &[PushLine],
    argv: Option<&[String]>,
    protected: &[String],
    refuse: &mut dyn FnMut(&Rule, &str, String),
) -> Result<Vec<usize>, Error> {
    // `git -c remote.<name>.mirror=true push` reaches us through the environment, which
    // the git we ask inherits.
    let mirror_config = repo
        .effective_config_bool(&format!("remote.{remote}.mirror"))?
        .unwrap_or(false);
    // git takes any unique prefix of a long option: `--mirro`.
    let mirror_flag = argv.is_some_and(|a| {
        a.iter()
            .take_while(|x| *x != "--")
            .any(|x| super::guard::long(x, "mirror"))
    });
    if mirror_config || mirror_flag {
        refuse(&rules::MIRROR, "*", rules::MIRROR.why.into());
    }
    if argv.is_some_and(asks_for_auto_merge) {
        refuse(
            &rules::AUTO_MERGE,
            "*",
            "a push option asks the server to merge automatically; no agent merges its own work"
                .into(),
        );
    }
    let is_protected = |r: &str| super::is_protected(r, protected);
    let mut outgoing: Vec<usize> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let r = line.remote_ref.as_str();
        if is_zero(&line.local_oid) {
            if is_protected(r) {
                refuse(
                    &rules::DELETE_PROTECTED,
                    r,
                    format!("{r} is protected and cannot be deleted"),
                );
            } else if r.starts_with("refs/heads/") && !is_zero(&line.remote_oid) {
                // Deleted, the branch could be pushed again with other history: what it
                // held is kept, and a push that creates it again must contain it.
                if let Err(e) = remember_deleted(repo, remote, r, &line.remote_oid) {
                    refuse(
                        &rules::ANCESTRY_UNKNOWN,
                        r,
                        format!("cannot keep what the remote's {r} held before deleting it ({e}); refusing to be safe"),
                    );
                }
            } else if r.starts_with("refs/tags/") {
                // Deleted, a published tag could come back pointing elsewhere.
                refuse(
                    &rules::TAG_REWRITE,
                    r,
                    format!(
                        "tag {r} is published; deleting it lets it be recreated at another commit"
                    ),
                );
            }
            continue;
        }
        if is_protected(r) {
            refuse(
                &rules::PUSH_TO_PROTECTED,
                r,
                format!("{r} is protected: it changes only through reviewed pull requests"),
            );
            continue;
        }
        if is_zero(&line.remote_oid) {
            // A branch pushed again after a deletion: what it held must still be in it.
            if let Some(before) = deleted_before(repo, remote, r)? {
                match ancestry(repo, &before.to_string(), &line.local_oid)? {
                    Ancestry::FastForward => {}
                    _ => {
                        refuse(
                            &rules::FORCE_PUSH,
                            r,
                            format!("the remote's {r} was deleted at {} and is pushed again without it: this is a force push in two steps that would discard remote commits", short(&before.to_string())),
                        );
                        continue;
                    }
                }
            }
            outgoing.push(i);
            continue;
        }
        if r.starts_with("refs/tags/") {
            refuse(&rules::TAG_REWRITE, r, format!("tag {r} already exists on the remote with another value; published tags are never moved"));
            continue;
        }
        match ancestry(repo, &line.remote_oid, &line.local_oid)? {
            Ancestry::FastForward => outgoing.push(i),
            Ancestry::RemoteMissing => refuse(
                &rules::REMOTE_AHEAD,
                r,
                format!("the remote's {r} is at {}, a commit this repository does not have: pushing would overwrite it", short(&line.remote_oid)),
            ),
            Ancestry::NotAncestor => refuse(
                &rules::FORCE_PUSH,
                r,
                format!("the remote's {} is not contained in what you push: this is a force push that would discard remote commits", short(&line.remote_oid)),
            ),
            Ancestry::Unknown(why) => refuse(
                &rules::ANCESTRY_UNKNOWN,
                r,
                format!("cannot tell whether this push is a fast-forward ({why}); refusing to be safe"),
            ),
        }
    }
    Ok(outgoing)
}

/// Where what a deleted remote branch held is kept: one ref per remote and branch.
fn deleted_ref(remote: &str, refname: &str) -> String {
    let remote: String = remote
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("refs/bmad/pushed-away/{remote}/{refname}")
}

/// Keep `tip`, what the remote's `refname` held as this push deletes it.
fn remember_deleted(repo: &Repo, remote: &str, refname: &str, tip: &str) -> Result<(), Error> {
    let name = deleted_ref(remote, refname);
    let tip = ObjectId::from_hex(tip.as_bytes())
        .map_err(|e| Error::Git(crate::git::Error::Corrupt(format!("{tip:?}: {e}"))))?;
    let now = repo.read_ref(&name)?;
    repo.cas_ref(&name, now, tip, "bmad: a pushed branch deleted")?;
    Ok(())
}

/// What the remote's `refname` held when a push of this repository deleted it, if one did.
fn deleted_before(repo: &Repo, remote: &str, refname: &str) -> Result<Option<ObjectId>, Error> {
    Ok(repo.read_ref(&deleted_ref(remote, refname))?)
}

/// Secrets in the commits that would leave this repository.
fn scan_outgoing(
    repo: &Repo,
    lines: &[PushLine],
    outgoing: &[usize],
    scans: &mut Scans,
    report: &mut PushReport,
) -> Result<(), Error> {
    for &i in outgoing {
        let patch = match scans.take(i) {
            Some(patch) => patch?,
            None => {
                return Err(Error::Git(crate::git::Error::Command {
                    args: "log -p (outgoing commits)".into(),
                    code: None,
                    stderr: "the scan of the outgoing commits could not be started".into(),
                }))
            }
        };
        let mut findings = secrets::scan_patch(&patch, Options::default());
        findings.extend(tag_message_findings(repo, &lines[i].local_oid)?);
        for finding in findings {
            match finding.confidence {
                Confidence::High => report.refusals.push(rules::SECRET.refuse(
                    finding.location(),
                    format!(
                        "{} in commit {}: {}",
                        finding.description,
                        finding.commit.as_deref().map(short).unwrap_or("?"),
                        finding.excerpt
                    ),
                )),
                Confidence::Low => report.warnings.push(finding),
            }
        }
    }
    Ok(())
}

/// Secrets in the message of a pushed annotated tag (`git log` shows only its commit's).
fn tag_message_findings(repo: &Repo, oid: &str) -> Result<Vec<Finding>, Error> {
    let Ok(id) = ObjectId::from_hex(oid.as_bytes()) else {
        return Ok(Vec::new());
    };
    Ok(repo
        .tag_messages(id)?
        .iter()
        .flat_map(|m| secrets::scan_message(m, TAG_MESSAGE, Some(oid), Options::default()))
        .collect())
}

/// The `path` of a finding in a tag's message.
const TAG_MESSAGE: &str = "(tag message)";

fn short(oid: &str) -> &str {
    &oid[..oid.len().min(10)]
}

enum Ancestry {
    FastForward,
    NotAncestor,
    RemoteMissing,
    Unknown(String),
}

/// Is `theirs` an ancestor of `ours`? Decided in-process from local objects only: a
/// partial clone is never sent to the network for the remote's commit.
fn ancestry(repo: &Repo, theirs: &str, ours: &str) -> Result<Ancestry, Error> {
    let (Ok(theirs_id), Ok(ours_id)) = (
        ObjectId::from_hex(theirs.as_bytes()),
        ObjectId::from_hex(ours.as_bytes()),
    ) else {
        return Ok(Ancestry::Unknown(format!(
            "{theirs:?} or {ours:?} is not an object id"
        )));
    };
    if !repo.has_object(theirs_id) {
        return Ok(Ancestry::RemoteMissing);
    }
    Ok(match repo.is_ancestor(theirs_id, ours_id)? {
        Some(true) => Ancestry::FastForward,
        Some(false) => Ancestry::NotAncestor,
        None => Ancestry::Unknown("the history here is shallow or incomplete".into()),
    })
}

/// GitLab's merge-when-pipeline-succeeds and friends, asked for with `-o`/`--push-option`.
fn asks_for_auto_merge(argv: &[String]) -> bool {
    argv.iter().any(|a| {
        let a = a.to_ascii_lowercase();
        a.contains("merge_request.merge_when_pipeline_succeeds")
            || a.contains("merge_request.auto_merge")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_from_the_right() {
        let z = "0".repeat(40);
        let a = "a".repeat(40);
        let lines = parse_lines(&format!(
            "refs/heads/my branch {a} refs/heads/x {z}\n(delete) {z} refs/heads/old {a}\n"
        ));
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].local_ref, "refs/heads/my branch");
        assert!(is_zero(&lines[0].remote_oid));
        assert!(is_zero(&lines[1].local_oid));
        assert!(is_zero(&"0".repeat(64)));
        assert!(!is_zero(""));
    }
}
