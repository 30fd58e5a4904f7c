//! `git bmad analyze preflight`.

use std::path::{Path, PathBuf};

use super::read;
use crate::bmad::analysis::preflight;
use crate::bmad::layout::Layout;
use crate::cli::error::{exit, CommandError};
use crate::cli::Context;

/// The keys a workflow needs, added to those asked for; then the checks.
pub(super) fn run(
    ctx: &Context,
    config: Option<&Path>,
    workflow: Option<&Path>,
    keys: &[String],
    inputs: &[String],
    commands: &[String],
) -> Result<u8, CommandError> {
    let mut keys = keys.to_vec();
    let mut config = config.map(Path::to_path_buf);
    if let Some(w) = workflow {
        let (needed, source) = workflow_requirements(ctx, w)?;
        for k in needed {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        config = config.or(source);
    }
    check(ctx, config.as_deref(), &keys, inputs, commands)
}

/// The config keys a workflow.yaml reads with `{config_source}:key`, and its config file.
fn workflow_requirements(
    ctx: &Context,
    file: &Path,
) -> Result<(Vec<String>, Option<PathBuf>), CommandError> {
    let path = ctx.cwd.join(file);
    let root = ctx
        .repo()
        .map(|r| r.workdir().to_path_buf())
        .unwrap_or_else(|_| ctx.cwd.clone());
    let mut env = crate::bmad::workflow::Env::new(&root);
    env.lenient_config = true;
    let wf = crate::bmad::workflow::load(&path, &env)?;
    let Some(config) = wf.config else {
        return Err(CommandError::usage(format!(
            "{} is not a workflow.yaml; --workflow reads the config keys a workflow.yaml uses",
            file.display()
        )));
    };
    let source = config
        .var("config_source")
        .map(PathBuf::from)
        .filter(|p| p.is_file());
    Ok((config.config_source_keys(), source))
}

fn check(
    ctx: &Context,
    config: Option<&Path>,
    keys: &[String],
    inputs: &[String],
    commands: &[String],
) -> Result<u8, CommandError> {
    let ui = &ctx.ui;
    if keys.is_empty() && inputs.is_empty() && commands.is_empty() {
        return Err(CommandError::usage(
            "nothing to check: give --workflow, --key, --input or --command",
        ));
    }
    let layout = Layout::discover(&ctx.cwd);
    let file = match config {
        Some(c) => Some(ctx.cwd.join(c)),
        None => layout.config_file.clone(),
    };
    let values = match &file {
        Some(f) => {
            let text = read(ctx, f)?;
            preflight::config_values(&text)
                .map_err(|e| CommandError::failed(format!("{}: {e}", f.display())))?
        }
        None => crate::config::yaml::Mapping::new(),
    };
    let req = preflight::Requirements {
        config_keys: keys.to_vec(),
        inputs: inputs.to_vec(),
        commands: commands.to_vec(),
    };
    let path_dirs: Vec<PathBuf> = crate::env::Var::Path
        .os()
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    let cfg = preflight::Config {
        file: file.as_deref().map(|f| layout.shown(f)),
        values: &values,
    };
    let p = preflight::run(&ctx.cwd, &cfg, &req, &path_dirs);
    if ui.json() {
        ui.print_json(&p);
    } else {
        let word = |v: serde_json::Value| v.as_str().map(str::to_owned).unwrap_or_default();
        ui.line(format!(
            "{} ({}% of checks passed)",
            word(serde_json::json!(p.overall_status)),
            p.checks_passed_percent
        ));
        for c in &p.checks {
            ui.line(format!(
                "  {:<16} {}",
                c.check,
                word(serde_json::json!(c.status))
            ));
            for f in &c.validated_files {
                ui.line(format!("    found {f}"));
            }
            if !c.missing.is_empty() {
                ui.line(format!("    missing: {}", c.missing.join(", ")));
            }
            if let Some(r) = &c.remediation {
                ui.line(format!("    fix: {r}"));
            }
        }
    }
    Ok(match p.overall_status {
        preflight::Overall::Ready => exit::OK,
        preflight::Overall::Failed => exit::FAILED,
    })
}
