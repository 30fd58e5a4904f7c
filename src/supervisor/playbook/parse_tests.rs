//! The playbook parser's tests: every field, every violation with its position.
use super::*;

fn errors(text: &str) -> Vec<String> {
    let (_, diags) = parse(text, "t");
    diags.iter().map(|d| d.render("p.yaml")).collect()
}

#[test]
fn a_full_playbook() {
    let text = r#"
name: demo
limits: { max_invocations: 9, max_run_time: 1h }
defaults:
  on_error: retry_once
  timeout: 10m
steps:
  - id: plan
    command: /speckit.plan
    preconditions: [spec_exists]
    postconditions: [plan_exists, {file_exists: specs/x/plan.md}]
    escalate_on: [postcondition_failure]
  - phase: checks
    parallel:
      - {id: lint, command: "cargo clippy", runner: shell, on_error: gate}
      - {id: test, command: "cargo test", runner: shell, postconditions: [{tests_pass: cargo test}]}
  - id: pr
    command: gh pr create --fill
    runner: shell
    autonomy: always_gate
"#;
    let (playbook, diags) = parse(text, "fallback");
    assert!(diags.is_empty(), "{diags:?}");
    let p = playbook.unwrap();
    assert_eq!(p.name, "demo");
    assert_eq!(p.limits.max_invocations, 9);
    assert_eq!(p.phases.len(), 3);
    assert!(p.phases[1].parallel);
    let plan = p.step("plan").unwrap();
    assert_eq!(plan.on_error, ErrorPolicy::RetryOnce);
    assert_eq!(plan.timeout, Duration::from_secs(600));
    assert_eq!(
        plan.postconditions[1],
        Check::FileExists("specs/x/plan.md".into())
    );
    assert_eq!(p.step("lint").unwrap().on_error, ErrorPolicy::Gate);
    assert_eq!(p.step("pr").unwrap().autonomy, Autonomy::AlwaysGate);
    assert_eq!(p.step("pr").unwrap().line, 17);
}

#[test]
fn every_violation_with_its_position() {
    let text = "steps:\n  - id: a\n    command: /x\n    autonomy: auto_always\n  - id: a\n    comand: /y\n  - id: c\n    command: /z\n    on_error: explode\n    postconditions: [file_exists: ../etc/passwd, made_up]\n";
    let e = errors(text);
    let expect = [
            "p.yaml:4:15: error: steps[0].autonomy: \"auto_always\" is not allowed; allowed values: auto, gate_on_breaking, always_gate, skip",
            "p.yaml:6:5: error: steps[1].comand: unknown field",
            "p.yaml:5:5: error: steps[1].command: missing",
            "p.yaml:9:15: error: steps[2].on_error: \"explode\" is not allowed; allowed values: stop, retry_once, gate",
            "p.yaml:10:35: error: steps[2].postconditions[0]: \"../etc/passwd\" goes up with ..",
            "p.yaml:10:50: error: steps[2].postconditions[1]: \"made_up\" is not an artifact check",
        ];
    for want in expect {
        assert!(
            e.iter().any(|l| l.starts_with(want)),
            "missing {want}\nin {e:#?}"
        );
    }
    assert_eq!(e.len(), expect.len(), "{e:#?}");
}

#[test]
fn empty_and_duplicate() {
    assert!(errors("steps: []\n")[0].contains("steps: empty; a playbook needs at least one step"));
    assert!(errors("")[0].contains("the playbook is empty"));
    assert!(errors("name: x\n")[0].contains("steps: missing"));
    let e = errors("steps:\n  - {id: a, command: x}\n  - {id: a, command: y}\n");
    assert_eq!(
        e,
        ["p.yaml:3:10: error: id: duplicate step id \"a\"; ids must be unique"]
    );
    assert!(errors("steps: [\n")[0].contains("not valid YAML"));
    assert!(errors("- a\n- b\n")[0].contains("expected a mapping, found a list"));
}

#[test]
fn when_reads_an_earlier_step() {
    let text = "steps:\n  - {id: review, command: /r}\n  - {id: fix, command: /f, when: {findings: review}}\n";
    let (p, d) = parse(text, "t");
    assert!(d.is_empty(), "{d:#?}");
    assert_eq!(
        p.unwrap().step("fix").unwrap().when,
        Some(When::Findings("review".into()))
    );
    let later = "steps:\n  - {id: fix, command: /f, when: {findings: review}}\n  - {id: review, command: /r}\n";
    assert_eq!(
            errors(later),
            ["p.yaml:2:1: error: when: step \"fix\" reads the findings of \"review\", which is not a step before its phase"]
        );
    let unknown = errors("steps:\n  - {id: a, command: /f, when: {passed: a}}\n");
    assert!(
        unknown[0].contains("when.passed: unknown field"),
        "{unknown:#?}"
    );
}

#[test]
fn no_panic_on_odd_yaml() {
    for text in [
        "steps: x",
        "steps: [1, [2], {a: b}]",
        "steps:\n  - id: [1]\n    command: {}\n",
        "? [a]\n: b\n",
        "steps:\n  - parallel: x\n",
        "steps:\n  - parallel: [{parallel: []}]\n",
        "steps: *a\n",
    ] {
        let (p, d) = parse(text, "t");
        assert!(p.is_none() && !d.is_empty(), "{text}");
    }
}
