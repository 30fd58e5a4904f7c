//! BMAD workflows and templates end to end: our fixtures in the real formats
//! (fixtures/bmad/workflows/, a project with a `_bmad/` install), and BMAD's own files from the
//! shared corpus when it is there.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{copy_dir, read, write, TestEnv};

/// A repository holding the workflow fixtures, committed.
fn project(env: &TestEnv) -> PathBuf {
    let repo = env.repo("wf");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/bmad/workflows");
    copy_dir(&src, &repo);
    env.git(&repo, &["add", "-A"]);
    env.git(&repo, &["commit", "-q", "-m", "bmad install"]);
    repo
}

fn show(env: &TestEnv, dir: &Path, file: &str) -> Value {
    env.bmad(dir, &["workflow", "show", file, "--json"])
        .success()
        .json()
}

#[test]
fn workflow_yaml_resolves_in_bmad_order_and_its_instructions_parse_tag_by_tag() {
    let env = TestEnv::new();
    let repo = project(&env);
    let root = std::fs::canonicalize(&repo).unwrap();
    let wf = show(&env, &repo, "_bmad/bmm/workflows/demo-story/workflow.yaml");
    let var = |name: &str| -> String {
        wf["config"]["variables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("no variable {name}"))["value"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let r = root.display();
    // {config_source}:key, with the config's own {output_folder} chain.
    assert_eq!(var("user_name"), "Ada");
    assert_eq!(
        var("sprint_status"),
        format!("{r}/_bmad-output/implementation-artifacts/sprint-status.yaml")
    );
    // {bmad_folder} and {project-root}, {installed_path}.
    assert_eq!(var("config_source"), format!("{r}/_bmad/bmm/config.yaml"));
    assert_eq!(
        var("instructions"),
        format!("{r}/_bmad/bmm/workflows/demo-story/instructions.xml")
    );
    // Runtime placeholders stay and are listed; system-generated is a date.
    assert_eq!(
        var("default_output_file"),
        format!("{r}/_bmad-output/implementation-artifacts/{{{{story_key}}}}.md")
    );
    assert_eq!(
        wf["config"]["runtime_variables"],
        serde_json::json!(["story_key"])
    );
    assert_eq!(var("date").len(), 10);
    // Unknown fields are kept.
    assert_eq!(var("custom_knob"), "kept-as-is");
    assert_eq!(wf["config"]["template"]["kind"], "file");
    assert_eq!(wf["config"]["standalone"], true);
    assert_eq!(
        wf["config"]["input_file_patterns"][0]["fields"][1][1],
        format!("{r}/_bmad-output/planning-artifacts/*prd*.md")
    );

    let i = &wf["instructions"];
    let steps: Vec<&str> = i["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["n"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        ["1", "0.5", "2b", "13a", "FINAL"],
        "document order, labels as written"
    );
    assert_eq!(i["steps"][1]["optional"], "true");
    assert_eq!(i["steps"][2]["elicit"], true);
    assert_eq!(i["steps"][3]["repeat"], "until-approved");
    assert_eq!(
        i["counts"],
        serde_json::json!({
            "action": 5, "anchor": 1, "ask": 1, "check": 2, "critical": 2, "for-each": 1,
            "goto": 2, "if": 2, "invoke-protocol": 1, "invoke-task": 1, "invoke-workflow": 1,
            "mystery-tag": 1, "output": 2, "step": 5, "substep": 1, "template-output": 2,
            "workflow": 1
        }),
        "the fenced step 99 is not counted"
    );
    assert_eq!(i["attribute_counts"]["action@if"], 1);
    assert_eq!(i["attribute_counts"]["if@response"], 2);
    assert_eq!(
        i["template_outputs"],
        serde_json::json!(["story_title", "tasks"])
    );
    assert_eq!(i["invocations"][1]["halt"], true);
    // The unknown tag is kept and warned about; status is a template variable nothing sets.
    let messages: Vec<String> = wf["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{}:{}: {}",
                d["file"].as_str().unwrap(),
                d["line"],
                d["message"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        messages,
        [
            "_bmad/bmm/workflows/demo-story/instructions.xml:39: unknown tag <mystery-tag> (1 time(s)): kept as written",
            "_bmad/bmm/workflows/demo-story/template.md:3: template variable `{{status}}` is never set: no <template-output>, workflow variable or instruction mentions it",
        ]
    );
    // Lint passes (warnings only), in text.
    let lint = env
        .bmad(
            &repo,
            &[
                "workflow",
                "lint",
                "_bmad/bmm/workflows/demo-story/workflow.yaml",
            ],
        )
        .success();
    assert!(
        lint.stdout.contains("1 file(s): 0 error(s), 2 warning(s)"),
        "{}",
        lint.stdout
    );
}

#[test]
fn preflight_derives_the_config_keys_a_workflow_reads() {
    let env = TestEnv::new();
    let repo = project(&env);
    let wf = "_bmad/bmm/workflows/demo-story/workflow.yaml";
    let ready = env
        .bmad(&repo, &["analyze", "preflight", "--workflow", wf, "--json"])
        .success()
        .json();
    assert_eq!(ready["overall_status"], "READY");
    // The config loses a key the workflow reads: FAILED, naming it and where to set it.
    let config = read(&repo, "_bmad/bmm/config.yaml").replace("user_name: Ada\n", "");
    write(&repo, "_bmad/bmm/config.yaml", &config);
    let failed = env
        .bmad(&repo, &["analyze", "preflight", "--workflow", wf, "--json"])
        .code(1)
        .json();
    assert_eq!(failed["missing"], serde_json::json!(["user_name"]));
    assert_eq!(
        failed["checks"][0]["remediation"],
        "set user_name in _bmad/bmm/config.yaml"
    );
}

#[test]
fn step_files_chain_and_a_resumed_workflow_knows_its_next_step() {
    let env = TestEnv::new();
    let repo = project(&env);
    let out = env
        .bmad(
            &repo,
            &[
                "workflow",
                "show",
                "_bmad/bmm/workflows/epics/workflow.md",
                "--output-doc",
                "docs/epics-output.md",
                "--json",
            ],
        )
        .success()
        .json();
    let chain = &out["chain"];
    let names: Vec<&str> = chain["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "step-01-init",
            "step-02-design",
            "step-03-final",
            "step-01b-continue"
        ]
    );
    assert_eq!(chain["steps"][2]["terminal"], true);
    assert_eq!(chain["steps"][0]["links"][1]["via"], "altStepFile");
    assert_eq!(
        out["resume"],
        serde_json::json!({"completed": ["step-01-init", "step-02-design"], "next": "step-03-final", "unknown": []})
    );
    // BMAD's sloppy frontmatter loads, each with a warning and its line.
    let warnings: Vec<String> = out["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{}:{} {}",
                d["file"].as_str().unwrap(),
                d["line"],
                d["message"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        warnings,
        [
            "_bmad/bmm/workflows/epics/steps/step-01-init.md:9 duplicate key `template`: the last value is used",
            "_bmad/bmm/workflows/epics/steps/step-02-design.md:4 tab in indentation: read as two spaces",
        ],
        "step-03's empty frontmatter is BMAD's own way to write no fields: no warning"
    );
    assert!(chain["steps"][2]["file"]
        .as_str()
        .unwrap()
        .ends_with("step-03-final.md"));
    assert_eq!(
        chain["steps"][2]["links"],
        serde_json::json!([]),
        "an empty frontmatter with no prose link is the chain's end"
    );
    // A broken link and invalid YAML are errors with file:line:col; a loop is named.
    write(
        &repo,
        "_bmad/bmm/workflows/epics/steps/step-03-final.md",
        "---\nnextStepFile: './step-02-design.md'\nskipToStepFile: './step-09-missing.md'\n---\n",
    );
    write(
        &repo,
        "_bmad/bmm/workflows/epics/steps/step-01b-continue.md",
        "---\nname: [unclosed\n---\n",
    );
    let lint = env
        .bmad(
            &repo,
            &["workflow", "lint", "_bmad/bmm/workflows/epics/workflow.md"],
        )
        .code(1);
    assert!(
        lint.stdout.contains("_bmad/bmm/workflows/epics/steps/step-03-final.md:3:17: error: skipToStepFile _bmad/bmm/workflows/epics/steps/step-09-missing.md does not exist"),
        "{}",
        lint.stdout
    );
    assert!(
        lint.stdout
            .contains("step-01b-continue.md:3:1: error: the frontmatter is not valid YAML"),
        "{}",
        lint.stdout
    );
    let show = env
        .bmad(
            &repo,
            &["workflow", "show", "_bmad/bmm/workflows/epics/workflow.md"],
        )
        .success();
    assert!(
        show.stdout.contains("loop: _bmad/bmm/workflows/epics/steps/step-03-final.md → _bmad/bmm/workflows/epics/steps/step-02-design.md"),
        "{}",
        show.stdout
    );
}

#[test]
fn a_skill_with_an_inlined_workflow_parses_like_instructions() {
    let env = TestEnv::new();
    let repo = project(&env);
    let out = show(&env, &repo, ".claude/skills/bmad-demo/SKILL.md");
    assert_eq!(out["format"], "embedded");
    assert_eq!(out["name"], "bmad-demo");
    let steps = out["instructions"]["steps"].as_array().unwrap();
    assert_eq!(
        steps.len(),
        2,
        "the fenced example before <workflow> is not a step"
    );
    assert_eq!(steps[0]["line"], 20, "lines count from the top of the file");
    assert_eq!(out["instructions"]["counts"]["action"], 3);
}

#[test]
fn lint_finds_escaping_outputs_missing_references_and_broken_jumps() {
    let env = TestEnv::new();
    let repo = project(&env);
    let dir = "_bmad/bmm/workflows/bad";
    write(&repo, &format!("{dir}/workflow.yaml"), "name: bad\nconfig_source: \"{project-root}/_bmad/bmm/config.yaml\"\nlost: \"{config_source}:no_such_key\"\ninstalled_path: \"{project-root}/_bmad/bmm/workflows/bad\"\ninstructions: \"{installed_path}/instructions.md\"\ndefault_output_file: \"{project-root}/../outside.md\"\nnotes_output_file: \"~/notes.md\"\ntemplate: \"https://example.com/t.md\"\n");
    write(&repo, &format!("{dir}/instructions.md"), "# Bad\n\n<workflow>\n<step n=\"1\" goal=\"Load\">\n<goto step=\"7\">Nowhere</goto>\n</step>\n<step n=\"1\" goal=\"Again\">\n<goto anchor=\"missing\" />\n<invoke-workflow path=\"{installed_path}/../nope/workflow.yaml\" />\n</step>\n</workflow>\n");
    let lint = env
        .bmad(
            &repo,
            &[
                "workflow",
                "lint",
                &format!("{dir}/workflow.yaml"),
                "--json",
            ],
        )
        .code(1)
        .json();
    let found: Vec<String> = lint["files"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{}:{}:{}: {}",
                d["file"].as_str().unwrap(),
                d["line"],
                d["col"],
                d["message"].as_str().unwrap()
            )
        })
        .collect();
    let expect = [
        "_bmad/bmm/workflows/bad/workflow.yaml:3:7: `lost`: `{config_source}:no_such_key`: _bmad/bmm/config.yaml has no `no_such_key`",
        "_bmad/bmm/workflows/bad/workflow.yaml:8:11: `template` is a URL (https://example.com/t.md): only local files are allowed",
        "_bmad/bmm/workflows/bad/workflow.yaml:6:22: output path `default_output_file`",
        "_bmad/bmm/workflows/bad/workflow.yaml:7:20: output path `notes_output_file` (~/notes.md) would leave the project: it starts with `~` (a home directory)",
        "_bmad/bmm/workflows/bad/instructions.md:7:1: step 1 is numbered twice (first on line 4)",
        "_bmad/bmm/workflows/bad/instructions.md:5:1: goto step=\"7\" goes to no step",
        "_bmad/bmm/workflows/bad/instructions.md:8:1: goto anchor=\"missing\" goes to no <anchor id=\"missing\">",
        "_bmad/bmm/workflows/bad/instructions.md:9:1: invoke-workflow {installed_path}/../nope/workflow.yaml does not resolve to a file",
    ];
    for e in expect {
        assert!(
            found.iter().any(|f| f.starts_with(e)),
            "missing {e:?} in {found:#?}"
        );
    }
    assert!(
        found
            .iter()
            .any(|f| f.contains("step 1 is unreachable: step 1 always jumps away")),
        "{found:#?}"
    );
    assert_eq!(lint["errors"], 8, "{found:#?}");
    assert_eq!(lint["warnings"], 1, "{found:#?}");
    // A cycle is reported where it is, and its paths are not checked again; a field written
    // twice is one variable with the last value.
    write(&repo, "cycle/workflow.yaml", "name: x\nname: y\nconfig_source: \"{project-root}/_bmad/bmm/config.yaml\"\ninstructions: \"{installed_path}/i.xml\"\ninstalled_path: \"{a}\"\na: \"{installed_path}\"\n");
    let cycle = env
        .bmad(&repo, &["workflow", "lint", "cycle/workflow.yaml"])
        .code(1);
    assert!(
        cycle.stdout.contains("cycle/workflow.yaml:5:17: error: `installed_path`: variables refer to each other: installed_path → a → installed_path"),
        "{}",
        cycle.stdout
    );
    assert!(!cycle.stdout.contains("does not exist"), "{}", cycle.stdout);
    let shown = show(&env, &repo, "cycle/workflow.yaml");
    let names: Vec<&str> = shown["config"]["variables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "name",
            "config_source",
            "instructions",
            "installed_path",
            "a"
        ]
    );
    assert_eq!(shown["name"], "y");
    // A workflow.yaml that is not YAML: error with its position.
    write(
        &repo,
        "broken/workflow.yaml",
        "name: x\ninstructions: [unclosed\n",
    );
    let lint = env
        .bmad(&repo, &["workflow", "lint", "broken/workflow.yaml"])
        .code(1);
    assert!(
        lint.stdout
            .contains("broken/workflow.yaml:3:1: error: not valid YAML"),
        "{}",
        lint.stdout
    );
    // Not a workflow at all: a clear failure.
    write(&repo, "notes.txt", "hello\n");
    let run = env.bmad(&repo, &["workflow", "show", "notes.txt"]).code(2);
    assert!(
        run.stderr.contains("is not a BMAD workflow file"),
        "{}",
        run.stderr
    );
}

#[test]
fn templates_render_exactly_and_undefined_variables_name_their_line() {
    let env = TestEnv::new();
    let repo = project(&env);
    let out = env
        .bmad(
            &repo,
            &[
                "template",
                "render",
                "templates/story.md",
                "--vars",
                "templates/vars.yaml",
            ],
        )
        .success();
    assert_eq!(
        out.stdout,
        read(&repo, "templates/story.expected.md"),
        "golden file, byte for byte"
    );
    env.bmad(
        &repo,
        &[
            "template",
            "render",
            "templates/story.md",
            "--vars",
            "templates/vars.yaml",
            "-o",
            "out/story.md",
        ],
    )
    .success();
    assert_eq!(
        read(&repo, "out/story.md"),
        read(&repo, "templates/story.expected.md")
    );
    write(
        &repo,
        "templates/partial.yaml",
        "story: {key: 1-2}\nstatus: done\n",
    );
    let fail = env
        .bmad(
            &repo,
            &[
                "template",
                "render",
                "templates/story.md",
                "--vars",
                "templates/partial.yaml",
            ],
        )
        .code(1);
    assert!(
        fail.stderr
            .contains("templates/story.md:1: `story.title` is not defined"),
        "{}",
        fail.stderr
    );
    let lenient = env
        .bmad(
            &repo,
            &[
                "template",
                "render",
                "templates/story.md",
                "--vars",
                "templates/partial.yaml",
                "--allow-missing",
            ],
        )
        .success();
    assert!(
        lenient.stdout.starts_with("# Story 1-2: {{story.title}}\n"),
        "{}",
        lenient.stdout
    );
    assert!(
        lenient
            .stderr
            .contains("templates/story.md:4: `owner.name` is not defined: left as written"),
        "{}",
        lenient.stderr
    );
}

/// v4's team workflows (`.bmad-core/workflows/*.yaml`) are walked by its orchestrator agent,
/// not the v6 engine: they are linted by their own rules, not asked for `instructions`.
#[test]
fn a_v4_team_workflow_is_linted_by_its_own_rules() {
    let env = TestEnv::new();
    let dir = env.root().join("v4");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/bmad/v4"),
        &dir,
    );
    let file = ".bmad-core/workflows/greenfield-service.yaml";
    let v = show(&env, &dir, file);
    assert_eq!(v["format"], "team-workflow");
    assert_eq!(v["name"], "Greenfield Service/API Development");
    env.bmad(&dir, &["workflow", "lint", file]).success();
    write(
        &dir,
        "broken.yaml",
        "workflow:\n  name: x\n  sequence:\n    - notes: only\n",
    );
    let run = env.bmad(&dir, &["workflow", "lint", "broken.yaml"]).code(1);
    assert!(run.stdout.contains("no `id`"), "{}", run.stdout);
    assert!(run.stdout.contains("names no `agent`"), "{}", run.stdout);
    assert!(!run.stdout.contains("instructions"), "{}", run.stdout);
}

/// `instructions: ./instructions.xml` and `template: template.md` are beside the workflow
/// file (BMAD's loader reads them so), wherever git-bmad runs from.
#[test]
fn relative_instructions_and_template_are_read_beside_the_workflow() {
    let env = TestEnv::new();
    let repo = project(&env);
    let from = repo.join("_bmad/bmm/workflows/demo-story");
    let to = repo.join("_bmad/bmm/workflows/relative-story");
    std::fs::create_dir_all(&to).unwrap();
    copy_dir(&from, &to);
    let yaml = read(&to, "workflow.yaml")
        .replace(
            "\"{installed_path}/instructions.xml\"",
            "./instructions.xml",
        )
        .replace("\"{installed_path}/template.md\"", "template.md")
        .replace("\"{installed_path}/checklist.md\"", "./checklist.md");
    assert!(yaml.contains("instructions: ./instructions.xml"), "{yaml}");
    write(&to, "workflow.yaml", &yaml);
    for dir in [repo.clone(), repo.join("_bmad")] {
        let file = to.join("workflow.yaml");
        let wf = show(&env, &dir, file.to_str().unwrap());
        assert_eq!(
            wf["instructions_file"], "_bmad/bmm/workflows/relative-story/instructions.xml",
            "{wf:#}"
        );
        let problems: Vec<&Value> = wf["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| {
                d["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("does not exist")
            })
            .collect();
        assert!(problems.is_empty(), "{problems:#?}");
    }
}
