//! The playbook each story of an epic runs, per BMAD era: generated with the review rounds
//! unrolled (`when: {findings: review-N}` runs a round only while MUST-FIX findings remain),
//! and overridable by a file of the same name in `.bmad/playbooks/`.
//!
//! - v7: `bmad-build-auto ticket <ref>` (plan → implement → its own review → `built` in the
//!   ticket's plan), then `bmad-code-review` in a fresh context, fixed by `bmad-build-auto`
//!   again (re-dispatched on a built ticket it follows up the review). `done` is git-bmad's
//!   to write, after its own verification.
//! - v6.11+: `bmad-build-auto` (clarify → spec → implement → its own review → terminal status
//!   in the spec frontmatter), then `bmad-code-review` in a fresh context, fixed by
//!   `bmad-build-auto` again (it reads the review's findings from the spec).
//! - v6.0–v6.10: `create-story` when the story file is missing → `dev-story` →
//!   `code-review` → `dev-story` for the follow-ups (its "review continuation").
//! - v4: the SM drafts when the story file is missing → QA approves the draft or
//!   returns findings, which the SM revises (at most 3 revision cycles, then a gate) → the
//!   Dev implements → QA reviews → the Dev fixes. A story already approved starts at the
//!   Dev.

use serde::Serialize;

use crate::supervisor::Source;

/// Rounds when the configuration names none.
pub const DEFAULT_ROUNDS: u32 = 3;
/// Rounds never exceed this, whatever is asked for: five dev–QA cycles that did not converge
/// will not converge on a sixth.
pub const MAX_ROUNDS: u32 = 5;
/// Reviewers per round at most: one per emphasis in [`EMPHASES`].
pub const MAX_REVIEWERS: u32 = 4;
/// What each of several reviewers of a round looks at first, so they do not all see the
/// same thing.
const EMPHASES: [&str; 4] = [
    "correctness and edge cases",
    "security and failure modes",
    "tests and verification gaps",
    "maintainability and architecture",
];
/// v4: the SM revises a draft QA returned at most this often before a human decides (seed
/// 001 story 3.1: "max 3 revision cycles before escalation").
pub const DRAFT_REVISIONS: u32 = 3;

/// A BMAD era, as far as the pipeline differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Era {
    /// v7: the ticket tree (`tickets.toml`, plans), `bmad-build-auto ticket <ref>`.
    #[serde(rename = "v7")]
    V7,
    /// v6.11 and later: `bmad-build-auto`, `spec-<key>.md` with frontmatter status.
    #[serde(rename = "v6.11")]
    V611,
    /// v6.0–v6.10: `create-story`, `dev-story`, `code-review`.
    #[serde(rename = "v6")]
    V6,
    /// v4: `.bmad-core`, SM / Dev / QA agents.
    #[serde(rename = "v4")]
    V4,
}

impl Era {
    /// `v6.11`, `v6`, `v4`.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::V7 => "v7",
            Era::V611 => "v6.11",
            Era::V6 => "v6",
            Era::V4 => "v4",
        }
    }

    /// The era a word names.
    pub fn parse(word: &str) -> Option<Era> {
        match word.trim_start_matches('v') {
            "7" => Some(Era::V7),
            "6.11" | "611" => Some(Era::V611),
            "6" => Some(Era::V6),
            "4" => Some(Era::V4),
            _ => None,
        }
    }

    /// The built-in playbook's name.
    pub fn playbook_name(self) -> &'static str {
        match self {
            Era::V7 => "bmad-ticket-build",
            Era::V611 => "bmad-story-build",
            Era::V6 => "bmad-story-dev",
            Era::V4 => "bmad-story-v4",
        }
    }
}

/// What a pipeline's playbook needs to know about its story.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// The era.
    pub era: Era,
    /// The story file exists (else v6 creates it, v4's SM drafts it).
    pub has_file: bool,
    /// The story is past its draft (v4: Approved or later), so QA need not approve it.
    pub approved: bool,
    /// Review→fix rounds (capped at [`MAX_ROUNDS`]).
    pub rounds: u32,
    /// Reviewers per round (capped at [`MAX_REVIEWERS`]); more than one run in parallel.
    pub reviewers: u32,
}

/// The stage names a story goes through, for `epic plan`.
pub fn stages(shape: Shape) -> Vec<String> {
    let mut out = Vec::new();
    for (id, _) in steps_before_review(shape) {
        if id == "dev" && needs_approval(shape) {
            out.push(format!(
                "QA approves the draft (SM revises, up to {DRAFT_REVISIONS} times)"
            ));
        }
        out.push(id.to_owned());
    }
    let rounds = shape.rounds.clamp(1, MAX_ROUNDS);
    match shape.reviewers.clamp(1, MAX_REVIEWERS) {
        1 => out.push(format!("review (→ fix, up to {rounds} rounds)")),
        n => out.push(format!(
            "review by {n} reviewers in parallel (→ fix, up to {rounds} rounds)"
        )),
    }
    out
}

/// The steps before the first review: (id, command).
fn steps_before_review(shape: Shape) -> Vec<(&'static str, &'static str)> {
    match shape.era {
        Era::V7 => vec![("build", "/bmad-build-auto ticket {args}")],
        Era::V611 => vec![("build", "/bmad-build-auto {args}")],
        Era::V6 if shape.has_file => vec![("dev", "/bmad-dev-story {args}")],
        Era::V6 => vec![
            ("create", "/bmad-create-story {args}"),
            ("dev", "/bmad-dev-story {args}"),
        ],
        Era::V4 if shape.has_file => vec![("dev", V4_DEV)],
        Era::V4 => vec![("draft", V4_DRAFT), ("dev", V4_DEV)],
    }
}

/// v4: the draft goes to QA before the Dev sees it.
fn needs_approval(shape: Shape) -> bool {
    shape.era == Era::V4 && !shape.approved
}

const V4_DRAFT: &str = "As the BMad Scrum Master (.bmad-core/agents/sm.md), run *draft for story {args}: write the story file from the epic, with its tasks and acceptance criteria following a TDD approach, set its status to Draft, and sign the change (agent and time) in the story's Change Log.";
const V4_APPROVE: &str = "As the BMad QA agent (.bmad-core/agents/qa.md), review the draft of story {args}: it must follow a TDD approach with comprehensive test cases, and every acceptance criterion must be testable. If it passes, set its status to Approved and end with `Outcome: Approve`; otherwise keep it Draft, write your findings as [High]/[Med]/[Low] items and end with `Outcome: Changes Requested`. Sign your change (agent and time) in the story's Change Log.";
const V4_REVISE: &str = "As the BMad Scrum Master (.bmad-core/agents/sm.md), review QA's findings on story {args} and revise the story so that it follows a TDD approach with comprehensive test cases in its acceptance criteria. Keep its status Draft and sign your change (agent and time) in the story's Change Log.\n\n{findings}";
const V4_DEV: &str = "As the BMad Developer (.bmad-core/agents/dev.md), run *develop-story for story {args}: implement every task, run the tests, and set the story's status to Ready for Review.";
const V4_REVIEW: &str = "As the BMad QA agent (.bmad-core/agents/qa.md), run *review for story {args}: review the implementation, write your findings as [High]/[Med]/[Low] items, and end with `Outcome: Approve` or `Outcome: Changes Requested`.";
const V4_FIX: &str = "As the BMad Developer (.bmad-core/agents/dev.md), fix the QA findings of story {args}, run the tests, and set the story's status to Ready for Review.\n\n{findings}";

/// The review and fix commands of an era.
fn review_and_fix(era: Era) -> (&'static str, &'static str) {
    match era {
        Era::V7 => (
            "/bmad-code-review ticket {args}",
            "/bmad-build-auto ticket {args}",
        ),
        Era::V611 => ("/bmad-code-review {args}", "/bmad-build-auto {args}"),
        Era::V6 => ("/bmad-code-review {args}", "/bmad-dev-story {args}"),
        Era::V4 => (V4_REVIEW, V4_FIX),
    }
}

/// The playbook text for a story of this shape. `test_command` present: every step that
/// changes code must leave the tests passing.
pub fn playbook(shape: Shape) -> String {
    let rounds = shape.rounds.clamp(1, MAX_ROUNDS);
    let name = shape.era.playbook_name();
    let mut y = format!(
        "# git-bmad's {era} story pipeline (`git bmad epic playbook --era {era}` prints it).\n\
         # Copy it to .bmad/playbooks/{name}.yaml to change it; `{{args}}` is the story key.\n\
         name: {name}\n\
         description: one story, implemented, verified and reviewed to convergence ({era})\n\
         limits:\n  max_invocations: {cap}\n  max_run_time: 8h\n\
         defaults:\n  role: dev\n  on_error: gate\n  timeout: 2h\n\
         steps:\n",
        era = shape.era.as_str(),
        // Every reviewer may retry once; the fixes, the draft's revisions, the rest.
        cap = (rounds + 1) * shape.reviewers.clamp(1, MAX_REVIEWERS) * 2
            + rounds
            + 2 * DRAFT_REVISIONS
            + 8,
    );
    for (id, command) in steps_before_review(shape) {
        if id == "dev" && needs_approval(shape) {
            approval_loop(&mut y);
        }
        let post = match id {
            "create" | "draft" => "[]".to_owned(),
            _ => work_done(shape.era),
        };
        y.push_str(&format!(
            "  - id: {id}\n    command: {}\n    postconditions: {post}\n    escalate_on: [postcondition_failure]\n{}",
            quote(command),
            abandon(shape.era, id)
        ));
    }
    let (review, fix) = review_and_fix(shape.era);
    // Each fix is checked by the review after it: `rounds` fixes, `rounds + 1` reviews.
    for round in 1..=rounds + 1 {
        review_round(&mut y, round, review, shape.reviewers);
        if round > rounds {
            break;
        }
        y.push_str(&format!(
            "  - id: fix-{round}\n    description: fix what review {round} found\n    command: {}\n    when: {{findings: review-{round}}}\n    postconditions: {}\n{}",
            quote(fix),
            work_done(shape.era),
            abandon(shape.era, "fix")
        ));
    }
    y.push_str(&format!(
        "  - id: converged\n    description: the review still has MUST-FIX findings after {rounds} fix rounds; continue accepts the story as it is, abort leaves it for a human\n    runner: shell\n    command: \"true\"\n    autonomy: always_gate\n    when: {{findings: review-{last}}}\n",
        last = rounds + 1
    ));
    y
}

/// v4: an implementation with no progress for 2 hours is abandoned and
/// escalated; it may take longer than that while it makes progress.
fn abandon(era: Era, id: &str) -> &'static str {
    match (era, id) {
        (Era::V4, "dev" | "fix") => "    timeout: 8h\n    no_progress: 2h\n",
        _ => "",
    }
}

/// Review round `round`: one reviewer, or a parallel phase of several, each with its own
/// emphasis, each skipped after a second failure (the others' findings stand; a round no
/// reviewer finished goes to a human before its fix).
fn review_round(y: &mut String, round: u32, review: &str, reviewers: u32) {
    let when = |indent: &str| match round {
        1 => String::new(),
        _ => format!("{indent}when: {{findings: review-{}}}\n", round - 1),
    };
    let reviewers = reviewers.clamp(1, MAX_REVIEWERS);
    if reviewers == 1 {
        y.push_str(&format!(
            "  - id: review-{round}\n    description: independent code review, round {round}\n    role: review\n    command: {}\n{}",
            quote(review),
            when("    ")
        ));
        return;
    }
    y.push_str(&format!("  - phase: review-{round}\n    parallel:\n"));
    for (i, emphasis) in EMPHASES.iter().take(reviewers as usize).enumerate() {
        let letter = (b'a' + i as u8) as char;
        let command = match review.strip_suffix("{args}") {
            // A slash command takes the rest of its line as its arguments.
            Some(_) => format!("{review} (focus first on {emphasis})"),
            None => format!("{review}\n\nFocus first on {emphasis}."),
        };
        y.push_str(&format!(
            "      - id: review-{round}-{letter}\n        description: independent code review, round {round}, reviewer {letter} ({emphasis})\n        role: review\n        on_error: skip\n        command: {}\n{}",
            quote(&command),
            when("        ")
        ));
    }
}

/// v4: QA approves the draft or returns findings; the SM revises while findings remain, at
/// most [`DRAFT_REVISIONS`] times; then a human decides.
fn approval_loop(y: &mut String) {
    for round in 1..=DRAFT_REVISIONS + 1 {
        y.push_str(&format!(
            "  - id: approve-{round}\n    description: QA reviews the draft, round {round}\n    role: qa\n    command: {}\n",
            quote(V4_APPROVE)
        ));
        if round > 1 {
            y.push_str(&format!("    when: {{findings: approve-{}}}\n", round - 1));
        }
        if round > DRAFT_REVISIONS {
            break;
        }
        y.push_str(&format!(
            "  - id: revise-{round}\n    description: the SM revises the draft with QA's findings\n    role: sm\n    command: {}\n    when: {{findings: approve-{round}}}\n",
            quote(V4_REVISE)
        ));
    }
    y.push_str(&format!(
        "  - id: draft-converged\n    description: QA still has findings on the draft after {DRAFT_REVISIONS} revisions; continue lets the Dev start on it as it is, abort leaves it for a human\n    runner: shell\n    command: \"true\"\n    autonomy: always_gate\n    when: {{findings: approve-{last}}}\n",
        last = DRAFT_REVISIONS + 1
    ));
}

/// The SM's question, with the answer git-bmad reads.
const MORE_STORIES: &str = "As the BMad Scrum Master (.bmad-core/agents/sm.md): every story of epic {args} is done. Are more stories needed to complete the epic? If so, draft them in the stories directory, add them to stories.json in order with your signature, and end with `MORE STORIES: <their file names>`. If not, end with `EPIC COMPLETE`.";

/// Whether the epic has a close-out: v4 always asks the SM; a retrospective when asked.
pub fn close_wanted(era: Era, retro: bool) -> bool {
    era == Era::V4 || retro
}

/// The close-out playbook.
pub fn close_playbook(era: Era, retro: bool) -> Source {
    let mut text = String::from(
        "# git-bmad's epic close-out: the SM's completion signal (v4), the retrospective.\nname: bmad-epic-close\ndescription: an epic closed out once every story is done\nlimits:\n  max_invocations: 6\n  max_run_time: 2h\ndefaults:\n  on_error: gate\n  timeout: 1h\nsteps:\n",
    );
    if era == Era::V4 {
        text.push_str(&format!(
            "  - id: more-stories\n    description: the SM says whether the epic needs more stories\n    role: sm\n    command: {}\n",
            serde_json::to_string(MORE_STORIES).unwrap_or_default()
        ));
    }
    if retro {
        text.push_str("  - id: retrospective\n    description: BMAD's headless retrospective of the epic\n    role: review\n    command: \"/bmad-retrospective -H {args}\"\n    postconditions: [diff_nonempty]\n    escalate_on: [postcondition_failure]\n");
    }
    Source {
        name: "bmad-epic-close".into(),
        origin: "built-in".into(),
        text,
    }
}

/// A YAML double-quoted scalar.
/// The postconditions of a step that implements: it changed more than BMAD's bookkeeping
/// and the story's own file (a status line moved is no work, nor proof of it after a crash),
/// and the tests pass.
fn work_done(era: Era) -> String {
    let own: &[&str] = match era {
        // A plan records the build; a build that wrote only plans built nothing.
        Era::V7 => &["*-plan.md"],
        // A spec is known by its frontmatter, whatever its name.
        Era::V611 => &["*/spec-{args}.md", "*/{args}.md"],
        Era::V6 | Era::V4 => &["*/{args}.md"],
    };
    let named: Vec<String> = crate::bmad::bookkeeping::BOOKKEEPING
        .iter()
        .chain(own)
        .map(|p| quote(p))
        .collect();
    format!("[{{changed_beyond: [{}]}}, tests_pass]", named.join(", "))
}

fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_era_and_shape_is_a_valid_playbook() {
        for era in [Era::V7, Era::V611, Era::V6, Era::V4] {
            for (has_file, reviewers) in [(true, 1), (false, 1), (true, 3), (false, 9)] {
                for rounds in [1, 3, 9] {
                    let text = playbook(Shape {
                        era,
                        has_file,
                        approved: false,
                        rounds,
                        reviewers,
                    });
                    let (p, d) = crate::supervisor::parse_playbook(&text, "x");
                    let p = p.unwrap_or_else(|| panic!("{text}\n{d:#?}"));
                    let reviews = p.steps().filter(|s| s.id.starts_with("review-")).count();
                    let per_round = reviewers.min(MAX_REVIEWERS);
                    assert_eq!(reviews as u32, (rounds.min(MAX_ROUNDS) + 1) * per_round);
                    let parallel = p.phases.iter().filter(|ph| ph.parallel).count() as u32;
                    let expected = if per_round > 1 {
                        rounds.min(MAX_ROUNDS) + 1
                    } else {
                        0
                    };
                    assert_eq!(parallel, expected);
                    let approvals = p.steps().filter(|s| s.id.starts_with("approve-")).count();
                    let expected = if era == Era::V4 {
                        DRAFT_REVISIONS + 1
                    } else {
                        0
                    };
                    assert_eq!(approvals as u32, expected, "{text}");
                    assert_eq!(p.name, era.playbook_name());
                }
            }
        }
    }
}
