//! The story file reader's unit tests.

use super::*;

const V6: &str = "---\nbaseline_commit: abc123\ndepends_on: [1-1-login]\n---\n# Story 1.2: Account Management\n\nStatus: ready-for-dev\n\n## Story\n\nAs a user,\nI want x.\n\n## Tasks / Subtasks\n\n- [x] Task 1 (AC: #1)\n  - [x] Subtask 1.1\n  - [ ] Subtask 1.2\n- [ ] Task 2\n  - [ ] [AI-Review][High] Null check missing [src/a.rs:42]\n\n```md\nStatus: not-this\n- [ ] not a task\n```\n\n## Senior Developer Review (AI)\n\n**Outcome:** Changes Requested\n\n## Change Log\n\n| Date | Version | Description | Author |\n|---|---|---|---|\n| 2026-01-01 | 0.1 | Drafted | SM |\n\n## Dev Agent Record\n\n### Status: Ready for Review\n";

fn parse(name: &str, text: &str) -> Story {
    Story::parse(Path::new(name), text.to_owned())
}

#[test]
fn v6_story() {
    let s = parse("1-2-account-management.md", V6);
    assert_eq!(s.key.as_deref(), Some("1-2-account-management"));
    assert_eq!(s.number, Some((1, "2".into())));
    assert_eq!(s.title.as_deref(), Some("Account Management"));
    assert_eq!(s.status, Some(Status::ReadyForDev));
    assert_eq!(s.status_line, 7);
    assert_eq!(s.depends_on, ["1-1-login"]);
    assert_eq!(s.baseline_commit.as_deref(), Some("abc123"));
    assert_eq!(s.tasks, (2, 4));
    assert_eq!(s.review_outcome.as_deref(), Some("Changes Requested"));
    assert_eq!(s.follow_ups[0].severity, "High");
    assert_eq!(s.follow_ups[0].location.as_deref(), Some("src/a.rs:42"));
    assert!(s.findings.is_empty(), "{:?}", s.findings);
}

#[test]
fn a_status_in_a_yaml_block_under_metadata_is_read_and_written_there() {
    let text = "# Story 2.3: Cart\n\n## Metadata\n\n```yaml\nepic: 2\nstatus: review # by dev\n```\n\n## Notes\n\n```yaml\nstatus: not-this\n```\n";
    let s = parse("2-3-cart.md", text);
    assert_eq!(s.status, Some(Status::Review));
    assert_eq!(s.status_line, 7);
    let now = crate::time::Timestamp::from_secs(0);
    let written = s.with_status(&Status::Done, "dev", &now, false).unwrap();
    assert!(
        written.contains("```yaml\nepic: 2\nstatus: done # by dev\n```"),
        "{written}"
    );
    assert!(written.contains("status: not-this"));
}

#[test]
fn set_status_changes_the_value_and_appends_to_the_change_log() {
    let s = parse("1-2-account-management.md", V6);
    let now = crate::time::Timestamp::from_secs(1_795_000_000);
    let text = s
        .with_status(&Status::InProgress, "dev-agent", &now, false)
        .unwrap();
    let old: Vec<&str> = V6.lines().collect();
    let new: Vec<&str> = text.lines().collect();
    assert_eq!(new.len(), old.len() + 1);
    assert_eq!(new[6], "Status: in-progress");
    let row = new
        .iter()
        .position(|l| l.starts_with("| 2026-11-"))
        .unwrap();
    assert_eq!(new[row - 1], "| 2026-01-01 | 0.1 | Drafted | SM |");
    assert!(
        new[row].contains("| Status: ready-for-dev → in-progress | dev-agent |"),
        "{}",
        new[row]
    );
    // Everything else is byte for byte the same.
    let mut without: Vec<&str> = new.clone();
    without.remove(row);
    let diffs: Vec<usize> = (0..old.len()).filter(|i| old[*i] != without[*i]).collect();
    assert_eq!(diffs, [6]);
    assert!(
        s.with_status(&Status::Done, "x", &now, false).is_err(),
        "skips review"
    );
}

#[test]
fn v4_story_keeps_v4_words_and_gets_a_change_log() {
    let text = "# Story 1.1: Title\n\n## Status\n\nApproved\n\n## Story\n\nx\n\n## QA Results\n";
    let s = parse("1.1.title.md", text);
    assert_eq!(
        (s.format, s.status.clone()),
        (Format::V4, Some(Status::ReadyForDev))
    );
    assert_eq!(s.number, Some((1, "1".into())));
    assert_eq!(s.key, None);
    let now = crate::time::Timestamp::from_secs(0);
    let out = s
        .with_status(&Status::InProgress, "dev", &now, false)
        .unwrap();
    assert!(out.contains("## Status\n\nInProgress\n"));
    assert!(out.ends_with("## QA Results\n\n## Change Log\n\n- 1970-01-01T00:00:00Z Status: Approved → InProgress (by dev)\n"), "{out}");
}

#[test]
fn malformed_frontmatter_is_a_finding_with_its_line() {
    let s = parse(
        "2-1-x.md",
        "---\nok: 1\nbad: [unclosed\n---\nStatus: backlog\n",
    );
    assert_eq!(s.status, Some(Status::Backlog));
    assert_eq!(s.findings[0].severity, crate::diagnostic::Severity::Error);
    assert!(s.findings[0].line >= 2, "{:?}", s.findings);
}

#[test]
fn names() {
    for ok in [
        "1-2-x.md",
        "1.1.title.md",
        "story-1.2.md",
        "5.0.6-x.md",
        "7b-3-x.md",
        "1.1.x.md",
    ] {
        assert!(is_story_name(ok), "{ok}");
    }
    for no in [
        "README.md",
        "epics.md",
        "sprint-status.yaml",
        "1.md",
        "notes-1-2.md",
    ] {
        assert!(!is_story_name(no), "{no}");
    }
    assert_eq!(number_in("5.0.6-x"), Some((5, "0.6".into())));
    assert_eq!(number_in("story-1.2"), Some((1, "2".into())));
}

#[test]
fn no_panic_on_odd_input() {
    for text in [
        "",
        "---",
        "---\n",
        "---\n---\n",
        "## Status\n",
        "Status:",
        "Status: \n## Change Log",
        "# Story",
        "- [ ] [AI-Review][",
        "```\nStatus: x",
    ] {
        let s = parse("1-1-x.md", text);
        let _ = s.with_status(
            &Status::Done,
            "x",
            &crate::time::Timestamp::from_secs(0),
            true,
        );
    }
}
