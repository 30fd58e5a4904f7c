//! What the judge asks, in the story's own journal: each finding a policy violation, once
//! per rule, paths and commit, so the record says what the agents did whatever a human
//! answers; and read back where the story did not run (a story on a runner), so the
//! epic's judge gate asks there what the judge asked on the runner.

use super::{judges_diff, Concern, Finding};
use crate::epic::Error;
use crate::session::schema::{Body, PolicyViolation};
use crate::session::{self, NewEvent, ObjectId, Repo};

/// Who journals the findings.
const HOOK: &str = "judge";

/// Journal what the judge asks about `head`, the story's branch, in its session.
pub fn report(
    repo: &Repo,
    session: &session::Session,
    concern: &Concern,
    head: ObjectId,
) -> Result<(), Error> {
    let journal = session::read_journal(repo, &session.id)?;
    for (finding, paths) in &concern.findings {
        let rule = finding.rule().id;
        let subject = subject(paths, head);
        if journal.violations(rule).any(|v| v.subject == subject) {
            continue;
        }
        // The paths one by one too: a path may hold ", ", which the subject joins them with.
        let violation = PolicyViolation {
            hook: HOOK.to_owned(),
            rule: rule.to_string(),
            subject,
            reason: format!(
                "the story's branch {}; a human decides at the epic's judge gate",
                concern.summary()
            ),
            paths: paths.clone(),
        };
        session::record(
            repo,
            session,
            NewEvent::new(Body::PolicyViolation(violation))
                .decision(Some(session::Decision::Escalated)),
        )?;
    }
    Ok(())
}

/// What the judge asked about the story's branch from `base` to `head`, as the session's
/// trusted journal says, with the diff of the judge's files it names; `None` when it
/// asked nothing about `head`.
pub fn read(
    repo: &Repo,
    session: &session::Session,
    base: ObjectId,
    head: ObjectId,
) -> Result<Option<Concern>, Error> {
    let journal = session::read_journal(repo, &session.id)?;
    let at = subject(&[], head);
    let mut concern = Concern::default();
    for finding in Finding::ALL {
        let mut paths: Vec<String> = Vec::new();
        for violation in journal.violations(finding.rule().id) {
            for path in paths_at(violation, &at) {
                if !paths.iter().any(|p| p == path) {
                    paths.push(path.to_owned());
                }
            }
        }
        if !paths.is_empty() {
            concern.findings.push((finding, paths));
        }
    }
    if concern.findings.is_empty() {
        return Ok(None);
    }
    if let Some((_, judges)) = concern
        .findings
        .iter()
        .find(|(f, _)| *f == Finding::JudgeChanged)
    {
        let judges: Vec<&str> = judges.iter().map(String::as_str).collect();
        concern.diff = judges_diff(repo, base, head, &judges)?;
    }
    Ok(Some(concern))
}

/// The paths `violation` names, when it is about the commit whose subject ends in `at`.
fn paths_at<'v>(violation: &'v PolicyViolation, at: &str) -> Vec<&'v str> {
    let Some(named) = violation.subject.strip_suffix(at) else {
        return Vec::new();
    };
    if violation.paths.is_empty() {
        // A journal written before the paths were kept one by one names them joined.
        named.split(", ").collect()
    } else {
        violation.paths.iter().map(String::as_str).collect()
    }
}

/// A finding's subject: the paths, at the commit (`src/a.rs, test.sh at 1a2b3c4d5e`).
fn subject(paths: &[String], head: ObjectId) -> String {
    let head = head.to_string();
    format!("{} at {}", paths.join(", "), &head[..10])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_come_back_one_by_one_even_when_one_holds_the_separator() {
        let head = ObjectId::from_hex(b"1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d").unwrap();
        let paths = vec!["docs/a, b.md".to_owned(), "src/c.rs".to_owned()];
        let violation = PolicyViolation {
            subject: subject(&paths, head),
            paths: paths.clone(),
            ..PolicyViolation::default()
        };
        let at = subject(&[], head);
        assert_eq!(paths_at(&violation, &at), ["docs/a, b.md", "src/c.rs"]);
        // Another commit's finding names nothing here.
        let other = ObjectId::from_hex(b"ffffffffff6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d").unwrap();
        assert!(paths_at(&violation, &subject(&[], other)).is_empty());
        // A journal from before the paths were kept reads as it always did.
        let older = PolicyViolation {
            paths: Vec::new(),
            ..violation
        };
        assert_eq!(paths_at(&older, &at), ["docs/a", "b.md", "src/c.rs"]);
    }

    #[test]
    fn a_subject_names_the_paths_at_the_commit_and_ends_in_what_read_looks_for() {
        let head = ObjectId::from_hex(b"1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d").unwrap();
        let paths = vec!["test.sh".to_owned(), "src/a.rs".to_owned()];
        let said = subject(&paths, head);
        assert_eq!(said, "test.sh, src/a.rs at 1a2b3c4d5e");
        assert_eq!(
            said.strip_suffix(&subject(&[], head)),
            Some("test.sh, src/a.rs")
        );
    }
}
