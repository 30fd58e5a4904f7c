//! Menus at the end of an agent's output: whether there
//! is one, what its options are, which to choose and how sure that choice is.
//!
//! Detection is a score in points: structural markers (`[C]`, `(y/n/edit)`, numbered options
//! under a prompt) +30, the menu at the end of the output +20, two or more options +20;
//! detected at 70. Menus inside fenced code, blockquotes or "Example:" blocks are not menus.
//! The selection confidence is a separate percentage: ≥ 80 answers by itself, 50–79 asks
//! with a recommendation, < 50 asks without one.

use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;

use super::confidence::{action, Action};

mod tracker;

pub use tracker::{
    HistoryEntry, RateLimit, Tracker, HISTORY_LIMIT, MAX_DEPTH, MIN_SPACING_MS, PAUSE_AFTER,
};

/// Points for each part of the detection score, and the threshold.
pub const STRUCTURE_POINTS: u32 = 30;
/// The menu is the last thing in the output.
pub const POSITION_POINTS: u32 = 20;
/// Two or more options.
pub const COUNT_POINTS: u32 = 20;
/// Detected at this score.
pub const DETECTED_AT: u32 = 70;
/// How many trailing lines after a menu still count as "at the end" (a prompt line).
const TAIL_LINES: usize = 2;

/// Party-mode exit words (v6.0 `exit_triggers`, alpha.3's additions), matched literally:
/// `*exit` includes its asterisk.
pub const PARTY_EXIT_WORDS: &[&str] = &[
    "*exit",
    "goodbye",
    "end party",
    "quit",
    "end party mode",
    "stop party mode",
];

/// Whether a reply ends party mode.
pub fn is_party_exit(reply: &str) -> bool {
    let reply = reply.trim().to_lowercase();
    PARTY_EXIT_WORDS.contains(&reply.as_str())
}

/// One option.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MenuOption {
    /// What to type: `C`, `y`, `2`.
    pub key: String,
    /// What it does: `Continue`.
    pub label: String,
}

/// The detection score with its parts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Score {
    /// +30 for brackets, a slash list in parentheses, or numbered options under a prompt.
    pub structure: u32,
    /// +20 when nothing but a prompt line follows the menu.
    pub position: u32,
    /// +20 for two or more options.
    pub options: u32,
    /// The sum.
    pub total: u32,
}

/// What the analysis found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Analysis {
    /// A menu at the end of the output.
    pub detected: bool,
    /// The detection score.
    pub score: Score,
    /// The options of the last menu-like block.
    pub options: Vec<MenuOption>,
    /// 1-based line where that block starts.
    pub line: usize,
    /// Why menu-like text was not counted (`code_block`, `blockquote`, `example`).
    pub guard: Option<&'static str>,
    /// The recommended option, if any.
    pub recommended: Option<MenuOption>,
    /// How sure the recommendation is, 0–100.
    pub confidence_score: u32,
    /// Why that option (or none).
    pub selection_reason: String,
    /// auto (≥ 80), ask-with-hint (50–79), ask (< 50).
    pub action: Action,
}

/// Options found on one line.
fn options_in(line: &str) -> Vec<MenuOption> {
    static BRACKET: OnceLock<Regex> = OnceLock::new();
    static SLASHES: OnceLock<Regex> = OnceLock::new();
    let bracket = BRACKET.get_or_init(|| Regex::new(r"\[([A-Za-z0-9]{1,3})\]").expect("bracket"));
    let slashes =
        SLASHES.get_or_init(|| Regex::new(r"\(([A-Za-z]+(?:/[A-Za-z]+)+)\)").expect("slashes"));
    let matches: Vec<regex::Match> = bracket.find_iter(line).collect();
    if !matches.is_empty() {
        let mut out = Vec::new();
        for (i, m) in matches.iter().enumerate() {
            let key = line[m.start() + 1..m.end() - 1].to_owned();
            let after_end = matches.get(i + 1).map_or(line.len(), |n| n.start());
            let after = clean(&line[m.end()..after_end]);
            let label =
                if after.is_empty() || after.to_lowercase().starts_with("or ") || after == "or" {
                    // `Continue [c] or Edit [e]?`: the label comes first.
                    let before_start = if i == 0 { 0 } else { matches[i - 1].end() };
                    clean(
                        line[before_start..m.start()]
                            .trim_start_matches([' '])
                            .trim_start_matches("or "),
                    )
                } else {
                    // `[A] Advanced Elicitation - …`: keep the name, not the explanation.
                    after
                        .split(" - ")
                        .next()
                        .unwrap_or(&after)
                        .trim()
                        .to_owned()
                };
            out.push(MenuOption { key, label });
        }
        return out;
    }
    if let Some(c) = slashes.captures(line) {
        return c[1]
            .split('/')
            .map(|k| MenuOption {
                key: k.to_owned(),
                label: match k.to_ascii_lowercase().as_str() {
                    "y" | "yes" => "Yes".into(),
                    "n" | "no" => "No".into(),
                    other => capitalise(other),
                },
            })
            .collect();
    }
    Vec::new()
}

fn clean(text: &str) -> String {
    let text = text.replace("**", "");
    let text = text.trim().trim_matches(|c: char| {
        matches!(c, '|' | ',' | ';' | ':' | '?' | '-' | '—' | '–' | '*' | '`')
    });
    text.trim().to_owned()
}

fn capitalise(word: &str) -> String {
    let mut c = word.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

fn numbered(line: &str) -> Option<MenuOption> {
    static NUM: OnceLock<Regex> = OnceLock::new();
    let re = NUM.get_or_init(|| Regex::new(r"^\s*(\d{1,2})[.)]\s+(\S.*)$").expect("numbered"));
    let c = re.captures(line)?;
    Some(MenuOption {
        key: c[1].to_owned(),
        label: clean(&c[2]),
    })
}

fn is_prompt(line: &str) -> bool {
    let l = line.to_lowercase();
    l.contains('?')
        || ["select", "choose", "pick", "option", "enter", "reply with"]
            .iter()
            .any(|w| l.contains(w))
}

/// A line and whether it is live text (not in a code block, blockquote or example).
struct Line<'a> {
    text: &'a str,
    guard: Option<&'static str>,
}

fn classify(output: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut fence = false;
    let mut example = false;
    for text in output.lines() {
        let trimmed = text.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = !fence;
            out.push(Line {
                text,
                guard: Some("code_block"),
            });
            continue;
        }
        if trimmed.is_empty() {
            example = false;
        } else if trimmed
            .to_lowercase()
            .trim_start_matches(['*', '_'])
            .starts_with("example:")
        {
            example = true;
        }
        let guard = if fence {
            Some("code_block")
        } else if trimmed.starts_with('>') {
            Some("blockquote")
        } else if example {
            Some("example")
        } else {
            None
        };
        out.push(Line { text, guard });
    }
    out
}

/// Analyse an agent's output.
pub fn analyze(output: &str, default_choice: &str) -> Analysis {
    let lines = classify(output);
    // The last non-empty line: a menu must end there, or be followed only by a prompt.
    let last = lines.iter().rposition(|l| !l.text.trim().is_empty());
    let mut block: Vec<(usize, Vec<MenuOption>)> = Vec::new();
    let mut guard = None;
    let mut structure = false;
    for (i, line) in lines.iter().enumerate() {
        let opts = options_in(line.text);
        let numbered_opt = numbered(line.text);
        if opts.is_empty() && numbered_opt.is_none() {
            continue;
        }
        if let Some(g) = line.guard {
            guard = Some(g);
            continue;
        }
        guard = None;
        // A new block starts unless this line follows the previous option line closely.
        let continues = block.last().is_some_and(|(j, _)| i - j <= 2);
        if !continues {
            block.clear();
            structure = false;
        }
        if !opts.is_empty() {
            structure = true;
            block.push((i, opts));
        } else if let Some(opt) = numbered_opt {
            block.push((i, vec![opt]));
        }
    }
    let options: Vec<MenuOption> = block.iter().flat_map(|(_, o)| o.clone()).collect();
    let start = block.first().map(|(i, _)| *i);
    let end = block.last().map(|(i, _)| *i);
    // Numbered lists are menus only under or above a prompt.
    if !structure && !block.is_empty() {
        let near = |i: usize| {
            lines
                .get(i)
                .is_some_and(|l| l.guard.is_none() && is_prompt(l.text))
        };
        let (s, e) = (start.unwrap_or(0), end.unwrap_or(0));
        structure =
            (s > 0 && (near(s - 1) || (s > 1 && near(s - 2)))) || near(e + 1) || near(e + 2);
    }
    let at_end = match (end, last) {
        (Some(e), Some(l)) => {
            l >= e
                && lines[e + 1..=l]
                    .iter()
                    .filter(|x| !x.text.trim().is_empty())
                    .count()
                    <= TAIL_LINES
        }
        _ => false,
    };
    let score = Score {
        structure: if structure { STRUCTURE_POINTS } else { 0 },
        position: if at_end && !options.is_empty() {
            POSITION_POINTS
        } else {
            0
        },
        options: if options.len() >= 2 { COUNT_POINTS } else { 0 },
        total: 0,
    };
    let score = Score {
        total: score.structure + score.position + score.options,
        ..score
    };
    let detected = score.total >= DETECTED_AT;
    let (recommended, confidence_score, selection_reason) = if detected {
        select(&options, output, default_choice)
    } else {
        (None, 0, "no menu at the end of the output".to_owned())
    };
    Analysis {
        detected,
        score,
        line: start.map_or(0, |s| s + 1),
        options: if detected { options } else { Vec::new() },
        guard: if detected || !block.is_empty() {
            None
        } else {
            guard
        },
        recommended,
        action: if detected {
            action(confidence_score as f64)
        } else {
            Action::Ask
        },
        confidence_score,
        selection_reason,
    }
}

/// Choose an option: the configured default (normally Continue) when the menu offers it.
fn select(
    options: &[MenuOption],
    output: &str,
    default_choice: &str,
) -> (Option<MenuOption>, u32, String) {
    let want = default_choice.to_lowercase();
    let label_is =
        |o: &MenuOption, word: &str| o.label.to_lowercase().split_whitespace().next() == Some(word);
    if let Some(o) = options.iter().find(|o| label_is(o, &want)) {
        return (
            Some(o.clone()),
            90,
            format!("`{}` is the configured default ({default_choice})", o.label),
        );
    }
    if let Some(o) = options.iter().find(|o| {
        want.chars()
            .next()
            .is_some_and(|c| o.key.eq_ignore_ascii_case(&c.to_string()))
            && o.label.is_empty()
    }) {
        return (
            Some(o.clone()),
            80,
            format!(
                "key [{}] stands for the configured default ({default_choice})",
                o.key
            ),
        );
    }
    // `(y/n/edit)` after a "Continue…?" question: yes continues.
    let asks_to_continue = output
        .to_lowercase()
        .lines()
        .rev()
        .take(3)
        .any(|l| l.contains(&want));
    if let Some(o) = options.iter().find(|o| label_is(o, "yes")) {
        if asks_to_continue {
            return (
                Some(o.clone()),
                85,
                format!("the question asks to {default_choice}; `{}` does", o.key),
            );
        }
        return (
            Some(o.clone()),
            60,
            "a yes/no question; yes keeps the workflow going".into(),
        );
    }
    if let Some(o) = options
        .iter()
        .find(|o| label_is(o, "complete") || label_is(o, "done") || label_is(o, "proceed"))
    {
        return (
            Some(o.clone()),
            70,
            format!(
                "`{}` moves the workflow forward; no `{default_choice}` is offered",
                o.label
            ),
        );
    }
    (
        None,
        30,
        format!("no option matches the default ({default_choice}); a human chooses"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Analysis {
        analyze(text, "continue")
    }

    #[test]
    fn every_real_bmad_form() {
        let cases: &[(&str, &[&str], Option<&str>)] = &[
            ("Section drafted.\n\n**Select an Option:** [A] Advanced Elicitation [P] Party Mode [C] Continue\n", &["A", "P", "C"], Some("C")),
            ("Done.\n\n[A] Advanced Elicitation - deeper questions\n[P] Party Mode - other agents\n[C] Continue - next step\n", &["A", "P", "C"], Some("C")),
            ("Template output saved.\n\n[a] Advanced Elicitation, [c] Continue, [p] Party-Mode, [y] YOLO the rest of this document only\n", &["a", "c", "p", "y"], Some("c")),
            ("Review the section above.\nContinue [c] or Edit [e]?\n", &["c", "e"], Some("c")),
            ("Continue to next step? (y/n/edit)\n", &["y", "n", "edit"], Some("y")),
            ("All epics written.\n\n[C] Complete Workflow\n[X] Exit\n", &["C", "X"], Some("C")),
            ("The agents have spoken.\n\n[E] Exit Party Mode\n[C] Continue discussion\n", &["E", "C"], Some("C")),
        ];
        for (text, keys, pick) in cases {
            let a = run(text);
            assert!(a.detected, "{text:?}: {a:?}");
            assert_eq!(a.score.total, 70);
            let got: Vec<&str> = a.options.iter().map(|o| o.key.as_str()).collect();
            assert_eq!(&got, keys, "{text:?}");
            assert_eq!(
                a.recommended.as_ref().map(|o| o.key.as_str()),
                *pick,
                "{text:?}"
            );
            assert!(a.confidence_score >= 70 && !a.selection_reason.is_empty());
        }
        let a = run("Continue [c] or Edit [e]?\n");
        assert_eq!(a.options[1].label, "Edit");
        assert_eq!(a.action, Action::Auto);
    }

    #[test]
    fn guards_against_false_positives() {
        let menu = "[A] Advanced [P] Party [C] Continue";
        let fenced = format!("Here is the format:\n```\n{menu}\n```\n");
        assert_eq!(
            (run(&fenced).detected, run(&fenced).guard),
            (false, Some("code_block"))
        );
        let quoted = format!("The engine says:\n> {menu}\n");
        assert_eq!(
            (run(&quoted).detected, run(&quoted).guard),
            (false, Some("blockquote"))
        );
        let example = format!("Example:\n{menu}\n");
        assert_eq!(
            (run(&example).detected, run(&example).guard),
            (false, Some("example"))
        );
        // A menu early in the output is not at the end: 50 points, not detected.
        let early = format!("{menu}\n\nThen I wrote the code.\nIt compiles.\nTests pass.\nDone.\n");
        let a = run(&early);
        assert_eq!((a.detected, a.score.total), (false, 50));
        // A numbered summary is not a menu; numbered options under a prompt are.
        assert!(!run("Changes:\n1. Added tests\n2. Fixed bug\n").detected);
        let a = run("Which approach should I take?\n1. Refactor first\n2. Patch now\n");
        assert!(
            a.detected && a.recommended.is_none() && a.action == Action::Ask,
            "{a:?}"
        );
        assert!(!run("").detected);
    }

    #[test]
    fn party_exit_words_match_literally() {
        assert!(is_party_exit("*exit"));
        assert!(is_party_exit(" Goodbye "));
        assert!(!is_party_exit("exit"), "the asterisk is part of the word");
        assert!(!is_party_exit("goodbye everyone"));
    }

    #[test]
    fn no_panic_and_fast_on_large_output() {
        for text in [
            "[",
            "[]",
            "[A",
            "(y/)",
            "1.",
            "```",
            "> [A] x",
            "Example:\n",
            "[A][B][C]",
            "Continue [c] or",
            "é[é] [é]",
        ] {
            let _ = run(text);
        }
        let mut big = "word ".repeat(14_000);
        big.push_str("\n[A] Advanced [P] Party [C] Continue\n");
        assert!(big.len() > 64 * 1024);
        assert!(run(&big).detected);
    }
}
