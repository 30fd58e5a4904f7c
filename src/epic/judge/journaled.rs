//! What the judge asks, in the story's own journal: each finding a policy violation, once
//! per rule, paths and commit, so the record says what the agents did whatever a human
//! answers; and read back where the story did not run (a story on a runner), so the
//! epic's judge gate asks there what the judge asked on the runner.

use super::{judges_diff, Concern};
use crate::epic::Error;
use crate::policy::rules::JUDGE_CHANGED;
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
    for (rule, paths) in &concern.findings {
        let subject = subject(paths, head);
        if journal.violations(rule).contains(&subject.as_str()) {
            continue;
        }
        session::record(
            repo,
            session,
            NewEvent::violation(
                HOOK,
                rule,
                subject,
                format!(
                    "the story's branch {}; a human decides at the epic's judge gate",
                    concern.summary()
                ),
            )
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
    for rule in super::RULES {
        let mut paths: Vec<String> = Vec::new();
        for said in journal.violations(rule.id) {
            let Some(named) = said.strip_suffix(at.as_str()) else {
                continue;
            };
            for path in named.split(", ") {
                if !paths.iter().any(|p| p == path) {
                    paths.push(path.to_owned());
                }
            }
        }
        if !paths.is_empty() {
            concern.findings.push((rule.id, paths));
        }
    }
    if concern.findings.is_empty() {
        return Ok(None);
    }
    if let Some((_, judges)) = concern
        .findings
        .iter()
        .find(|(r, _)| *r == JUDGE_CHANGED.id)
    {
        let judges: Vec<&str> = judges.iter().map(String::as_str).collect();
        concern.diff = judges_diff(repo, base, head, &judges)?;
    }
    Ok(Some(concern))
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
