//! `git bmad template render`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::bmad::workflow::template;
use crate::cli::error::{exit, CommandError};
use crate::cli::Context;
use crate::fs::write_atomically;

/// BMAD templates: `{{var}}`, `{{#if}}`, `{{#each}}`.
#[derive(Debug, Args)]
pub struct TemplateArgs {
    /// What to do
    #[command(subcommand)]
    pub action: TemplateAction,
}

/// The `template` subcommands.
#[derive(Debug, Subcommand)]
pub enum TemplateAction {
    /// Fill a template from a YAML file of variables; text outside placeholders is kept byte
    /// for byte. An undefined variable is an error naming its line
    Render {
        /// The template (markdown with {{placeholders}})
        template: PathBuf,
        /// The variables, a YAML mapping
        #[arg(long, value_name = "FILE")]
        vars: PathBuf,
        /// Leave undefined variables as written and list them (on stderr) instead of failing
        #[arg(long)]
        allow_missing: bool,
        /// Write here (atomically) instead of stdout
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// Run `template`.
pub fn cmd_template(ctx: &Context, args: &TemplateArgs) -> Result<u8, CommandError> {
    let TemplateAction::Render {
        template: path,
        vars,
        allow_missing,
        output,
    } = &args.action;
    let read = |p: &PathBuf| {
        let p = ctx.cwd.join(p);
        std::fs::read_to_string(&p)
            .map_err(|e| CommandError::failed(format!("could not read {}: {e}", p.display())))
    };
    let text = read(path)?;
    let values: crate::config::yaml::Data =
        crate::config::yaml::from_str(&read(vars)?).map_err(|e| {
            CommandError::usage(format!(
                "{}: the variables are not YAML: {e}",
                vars.display()
            ))
        })?;
    let rendered = template::render(&text, &values, *allow_missing).map_err(|e| {
        let err = CommandError::failed(format!("{}:{}: {}", path.display(), e.line, e.message));
        if e.message.contains("is not defined") {
            err.hinted(
                "define it in the --vars file, or pass --allow-missing to leave it as written",
            )
        } else {
            err
        }
    })?;
    if ctx.ui.json() {
        ctx.ui.print_json(&rendered);
    } else if let Some(out) = output {
        let out = ctx.cwd.join(out);
        write_atomically(&out, rendered.text.as_bytes(), None)
            .map_err(|e| CommandError::failed(format!("could not write {}: {e}", out.display())))?;
    } else {
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(rendered.text.as_bytes())
            .and_then(|_| stdout.flush())
            .map_err(|e| CommandError::failed(format!("could not write the output: {e}")))?;
    }
    for (name, line) in &rendered.missing {
        eprintln!(
            "{}:{line}: `{name}` is not defined: left as written",
            path.display()
        );
    }
    Ok(exit::OK)
}
