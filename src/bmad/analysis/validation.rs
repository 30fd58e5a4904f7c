//! What kind of validation a workflow or checklist uses, and whether an output passed it.
//!
//! Custom patterns in the frontmatter (`validation: {type: custom, success_pattern,
//! failure_pattern}`) take precedence; then verdicts (PASS/FAIL, APPROVED/REJECTED), error
//! counts ("0 errors", "no issues"), checkboxes; else `unknown` with confidence 0.

use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;

/// A detected validation type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Detection {
    /// `custom`, `verdict-based`, `error-based`, `checklist-based` or `unknown`.
    pub validation_type: &'static str,
    /// The patterns that identify success and failure.
    pub patterns: Vec<String>,
    /// Checked and total checkboxes (checklist-based).
    pub checkbox_count: Option<(usize, usize)>,
    /// How sure, 0–100 (0 for unknown).
    pub confidence: u32,
    /// `invalid_pattern` when a custom definition is incomplete.
    pub error: Option<&'static str>,
    /// What is wrong with it.
    pub failures: Vec<String>,
}

/// Detect the validation type of a workflow or checklist text.
pub fn detect(text: &str) -> Detection {
    let mut d = Detection {
        validation_type: "unknown",
        patterns: Vec::new(),
        checkbox_count: None,
        confidence: 0,
        error: None,
        failures: Vec::new(),
    };
    if let Some(custom) = custom_definition(text) {
        match custom {
            Ok((success, failure)) => {
                d.validation_type = "custom";
                d.patterns = vec![success, failure];
                d.confidence = 100;
            }
            Err(failures) => {
                d.error = Some("invalid_pattern");
                d.failures = failures;
            }
        }
        return d;
    }
    static VERDICT: OnceLock<Regex> = OnceLock::new();
    static ERRORS: OnceLock<Regex> = OnceLock::new();
    let verdict = VERDICT.get_or_init(|| {
        Regex::new(r"\b(PASS|FAIL|PASSED|FAILED|APPROVED|REJECTED)\b").expect("verdict")
    });
    let errors = ERRORS.get_or_init(|| {
        Regex::new(r"(?i)\b(0 errors|zero errors|no errors|no issues|0 issues)\b").expect("errors")
    });
    let mut found: Vec<String> = verdict
        .find_iter(text)
        .map(|m| m.as_str().to_owned())
        .collect();
    found.sort();
    found.dedup();
    if !found.is_empty() {
        d.validation_type = "verdict-based";
        d.patterns = found;
        d.confidence = 90;
        return d;
    }
    let mut found: Vec<String> = errors
        .find_iter(text)
        .map(|m| m.as_str().to_lowercase())
        .collect();
    found.sort();
    found.dedup();
    if !found.is_empty() {
        d.validation_type = "error-based";
        d.patterns = found;
        d.confidence = 80;
        return d;
    }
    let (done, total) = crate::bmad::speckit::task_progress(text);
    if total > 0 {
        d.validation_type = "checklist-based";
        d.checkbox_count = Some((done, total));
        d.patterns = vec!["[ ]".into(), "[x]".into()];
        d.confidence = 85;
    }
    d
}

/// The `validation:` block of a `---` frontmatter, if it declares `type: custom`.
fn custom_definition(text: &str) -> Option<Result<(String, String), Vec<String>>> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---")?;
    let yaml: crate::config::yaml::Data = crate::config::yaml::from_str(&rest[..end]).ok()?;
    let v = yaml.get("validation")?;
    if v.get("type").and_then(|t| t.as_str()) != Some("custom") {
        return None;
    }
    let field = |k: &str| {
        v.get(k)
            .and_then(|x| x.as_str())
            .map(str::to_owned)
            .filter(|s| !s.trim().is_empty())
    };
    let (success, failure) = (field("success_pattern"), field("failure_pattern"));
    let mut failures = Vec::new();
    if success.is_none() {
        failures.push("success_pattern is missing or empty".to_owned());
    }
    if failure.is_none() {
        failures.push("failure_pattern is missing or empty".to_owned());
    }
    Some(match (success, failure) {
        (Some(s), Some(f)) => Ok((s, f)),
        _ => Err(failures),
    })
}

/// Whether an output passed: `Some(true)` / `Some(false)`, `None` when it cannot be told.
pub fn passed(detection: &Detection, output: &str) -> Option<bool> {
    match detection.validation_type {
        "custom" => {
            let (success, failure) = (&detection.patterns[0], &detection.patterns[1]);
            if output.contains(failure.as_str()) {
                Some(false)
            } else if output.contains(success.as_str()) {
                Some(true)
            } else {
                None
            }
        }
        "verdict-based" => {
            let last = output
                .split(|c: char| !c.is_ascii_alphabetic())
                .rev()
                .find(|w| {
                    matches!(
                        *w,
                        "PASS" | "PASSED" | "APPROVED" | "FAIL" | "FAILED" | "REJECTED"
                    )
                })?;
            Some(matches!(last, "PASS" | "PASSED" | "APPROVED"))
        }
        "error-based" => {
            let l = output.to_lowercase();
            if [
                "0 errors",
                "zero errors",
                "no errors",
                "no issues",
                "0 issues",
            ]
            .iter()
            .any(|p| l.contains(p))
            {
                Some(true)
            } else if Regex::new(r"\b[1-9]\d* (errors?|issues?)\b")
                .ok()?
                .is_match(&l)
            {
                Some(false)
            } else {
                None
            }
        }
        "checklist-based" => {
            let (done, total) = crate::bmad::speckit::task_progress(output);
            (total > 0).then_some(done == total)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_type_is_detected() {
        let v = detect("Run the gate. Report PASS or FAIL.\n");
        assert_eq!(
            (v.validation_type, v.patterns.clone()),
            ("verdict-based", vec!["FAIL".to_owned(), "PASS".to_owned()])
        );
        assert_eq!(
            detect("Success: 0 errors from the linter").validation_type,
            "error-based"
        );
        let c = detect("- [ ] Story loaded\n- [x] Tests run\n- [ ] Outcome decided\n");
        assert_eq!(
            (c.validation_type, c.checkbox_count),
            ("checklist-based", Some((1, 3)))
        );
        let u = detect("Write a poem.");
        assert_eq!((u.validation_type, u.confidence), ("unknown", 0));
    }

    #[test]
    fn custom_patterns_win_and_are_checked() {
        let text = "---\nvalidation:\n  type: custom\n  success_pattern: \"Quality Gate: PASSED\"\n  failure_pattern: \"Quality Gate: FAILED\"\n---\nReport PASS or FAIL.\n";
        let d = detect(text);
        assert_eq!(d.validation_type, "custom");
        assert_eq!(passed(&d, "... Quality Gate: PASSED"), Some(true));
        assert_eq!(passed(&d, "Quality Gate: FAILED"), Some(false));
        let bad = detect("---\nvalidation:\n  type: custom\n  success_pattern: ok\n---\n");
        assert_eq!(
            (bad.error, bad.failures.clone()),
            (
                Some("invalid_pattern"),
                vec!["failure_pattern is missing or empty".to_owned()]
            )
        );
    }

    #[test]
    fn outputs_are_judged() {
        let v = detect("PASS/FAIL");
        assert_eq!(passed(&v, "checks...\nVerdict: FAIL\n"), Some(false));
        assert_eq!(passed(&v, "APPROVED"), Some(true));
        let e = detect("0 errors");
        assert_eq!(passed(&e, "lint: 3 errors"), Some(false));
        assert_eq!(passed(&e, "no issues found"), Some(true));
    }
}
