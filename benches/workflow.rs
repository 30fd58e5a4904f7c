//! The workflow model's speed (issue: parse + resolve + lint of a 200-step instruction file
//! under 5 ms; a whole BMAD install of about 300 files under 100 ms). Baselines: reading the
//! same bytes and counting `<step` in them, the least any loader must do.
//! Run: cargo bench --bench workflow

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
mod common;

use std::time::Duration;

use git_bmad::bmad::workflow::{self, Env};

const SAMPLES: usize = 51;

fn time(f: impl FnMut()) -> Duration {
    common::median_time(SAMPLES, f)
}

fn write(root: &Path, rel: &str, text: &str) -> PathBuf {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(&p, text).expect("write");
    p
}

fn instructions(steps: usize) -> String {
    let mut s = String::from("<workflow>\n  <critical>Follow every step in order</critical>\n");
    for n in 1..=steps {
        s.push_str(&format!(
            "  <step n=\"{n}\" goal=\"Do part {n} of the story\">\n    <action>Read {{sprint_status}} for part {n}</action>\n    <check if=\"part {n} is done\">\n      <action>Skip to the next part</action>\n      <goto step=\"{next}\">Do part {next}</goto>\n    </check>\n    <action if=\"tests fail\">Fix them</action>\n    <ask>Continue [c] or Edit [e]?</ask>\n    <template-output>part_{n}</template-output>\n    <output>Part {n} of {{{{story_key}}}} done</output>\n  </step>\n",
            next = (n % steps) + 1
        ));
    }
    s.push_str("</workflow>\n");
    s
}

fn workflow_yaml(name: &str) -> String {
    format!("name: {name}\ndescription: 'bench'\nconfig_source: \"{{project-root}}/_bmad/bmm/config.yaml\"\nuser_name: \"{{config_source}}:user_name\"\nimplementation_artifacts: \"{{config_source}}:implementation_artifacts\"\nsprint_status: \"{{implementation_artifacts}}/sprint-status.yaml\"\ndate: system-generated\ninstalled_path: \"{{project-root}}/_bmad/bmm/workflows/{name}\"\ninstructions: \"{{installed_path}}/instructions.xml\"\ntemplate: \"{{installed_path}}/template.md\"\nvalidation: \"{{installed_path}}/checklist.md\"\ndefault_output_file: \"{{implementation_artifacts}}/{{{{story_key}}}}.md\"\n")
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(
        root,
        "_bmad/bmm/config.yaml",
        "user_name: Ada\noutput_folder: \"{project-root}/_bmad-output\"\nimplementation_artifacts: \"{output_folder}/impl\"\n",
    );
    let env = Env::new(root);

    // One 200-step instruction file behind a workflow.yaml.
    let big = write(
        root,
        "_bmad/bmm/workflows/big/workflow.yaml",
        &workflow_yaml("big"),
    );
    write(
        root,
        "_bmad/bmm/workflows/big/instructions.xml",
        &instructions(200),
    );
    write(
        root,
        "_bmad/bmm/workflows/big/template.md",
        "# {{part_1}}\n",
    );
    write(root, "_bmad/bmm/workflows/big/checklist.md", "- [ ] done\n");
    let wf = workflow::load(&big, &env).expect("load");
    assert_eq!(wf.instructions.as_ref().map(|i| i.steps.len()), Some(200));
    assert!(!wf.has_errors(), "{:?}", wf.diagnostics);
    let ours_one = time(|| {
        let wf = workflow::load(&big, &env).expect("load");
        assert_eq!(wf.instructions.map(|i| i.steps.len()), Some(200));
    });
    let big_instructions = root.join("_bmad/bmm/workflows/big/instructions.xml");
    let base_one = time(|| {
        let text = std::fs::read_to_string(&big_instructions).expect("read");
        assert_eq!(text.matches("<step ").count(), 200);
    });

    // A whole install: 30 workflow.yaml workflows (4 files each) and 20 step-file workflows
    // (workflow.md + 8 steps each) — 300 files.
    let mut entries = Vec::new();
    let mut files = Vec::new();
    for w in 0..30 {
        let name = format!("wf{w}");
        let base = format!("_bmad/bmm/workflows/{name}");
        entries.push(write(
            root,
            &format!("{base}/workflow.yaml"),
            &workflow_yaml(&name),
        ));
        files.push(entries.last().cloned().expect("entry"));
        files.push(write(
            root,
            &format!("{base}/instructions.xml"),
            &instructions(20),
        ));
        files.push(write(
            root,
            &format!("{base}/template.md"),
            "# {{part_1}}\n{{#each items}}- {{this}}\n{{/each}}\n",
        ));
        files.push(write(root, &format!("{base}/checklist.md"), "- [ ] done\n"));
    }
    for w in 0..20 {
        let base = format!("_bmad/bmm/workflows/steps{w}");
        entries.push(write(
            root,
            &format!("{base}/workflow.md"),
            "---\nname: steps\ndescription: 'bench'\n---\n\n# Steps\n\nRead fully and follow: `./steps/step-01-s.md`\n",
        ));
        files.push(entries.last().cloned().expect("entry"));
        for s in 1..=8 {
            let next = if s < 8 {
                format!("nextStepFile: './step-{:02}-s.md'\n", s + 1)
            } else {
                String::new()
            };
            files.push(write(
                root,
                &format!("{base}/steps/step-{s:02}-s.md"),
                &format!("---\nname: 'step-{s:02}-s'\nworkflow_path: '{{project-root}}/{base}'\n{next}outputFile: '{{planning_artifacts}}/out.md'\n---\n\n# Step {s}\n\n**Select an Option:** [A] Advanced Elicitation [P] Party Mode [C] Continue\n"),
            ));
        }
    }
    assert_eq!(files.len(), 300);
    let ours_all = time(|| {
        for e in &entries {
            let wf = workflow::load(e, &env).expect("load");
            assert!(!wf.has_errors(), "{}: {:?}", wf.file, wf.diagnostics);
        }
    });
    let base_all = time(|| {
        let mut steps = 0;
        for f in &files {
            steps += std::fs::read_to_string(f)
                .expect("read")
                .matches("<step ")
                .count();
        }
        assert_eq!(steps, 600);
    });

    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "200-step instructions: load + resolve + lint  median {:.2} ms   (goal < 5 ms)",
        ms(ours_one)
    );
    println!(
        "  read + count <step (baseline)               median {:.2} ms   ratio {:.1}",
        ms(base_one),
        ms(ours_one) / ms(base_one)
    );
    println!(
        "install of {} files ({} workflows): load all  median {:.2} ms   (goal < 100 ms)",
        files.len(),
        entries.len(),
        ms(ours_all)
    );
    println!(
        "  read every file (baseline)                  median {:.2} ms   ratio {:.1}",
        ms(base_all),
        ms(ours_all) / ms(base_all)
    );
}
