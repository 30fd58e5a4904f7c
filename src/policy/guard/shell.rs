//! Shell commands as a shell reads them: the simple commands a script runs, wherever they
//! sit (lists, pipelines, `{ …; }`, subshells, `if`/`for`/`while`/`case`, function bodies,
//! `$( … )` and backquotes, process substitutions, here-documents fed to a shell).
//!
//! Parsing is brush-parser's (the parser of the brush shell): hand-written splitting missed
//! every construct it did not know, and a missed construct is a bypass. Each word is
//! unquoted as the shell would; a word whose value depends on the environment (a variable,
//! a substitution, arithmetic) is kept as [`UNKNOWN`] plus its source text, so the judge can
//! refuse what it cannot read rather than guess.

use brush_parser::ast;
use brush_parser::word::{WordPiece, WordPieceWithSource};

/// The first character of a word whose value is only known when the command runs.
pub const UNKNOWN: char = '\u{0}';

/// How deep substitutions and `sh -c` scripts may nest before the guard gives up.
pub const MAX_DEPTH: usize = 4;

/// How deep brackets and compound commands may nest before the parser is not asked: it
/// recurses through them, and input nested past reason would overflow its stack.
const MAX_NESTING: usize = 100;

/// A bound on how deep `script` nests: brackets, and the keywords that open and close
/// compound commands, counted as plain text (quotes ignored, so it errs on the deep side).
fn nesting(script: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let words = script.split(|c: char| c.is_whitespace() || ";&|".contains(c));
    for word in words {
        let opens = matches!(word, "if" | "while" | "until" | "for" | "case" | "select");
        let closes = matches!(word, "fi" | "done" | "esac");
        for c in word.chars() {
            match c {
                '(' | '{' => depth += 1,
                ')' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            deepest = deepest.max(depth);
        }
        if opens {
            depth += 1;
        } else if closes {
            depth = depth.saturating_sub(1);
        }
        deepest = deepest.max(depth);
    }
    deepest
}

/// One simple command a script would run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    /// Assignments before the command (`NAME=value`), unquoted.
    pub assignments: Vec<(String, String)>,
    /// The command name and its arguments, unquoted; see [`UNKNOWN`].
    pub words: Vec<String>,
    /// A script fed to it on standard input by a here-document or here-string.
    pub stdin_script: Option<String>,
    /// Whether another command's output is piped into it.
    pub piped: bool,
    /// How many substitutions or scripts deep it sits.
    pub depth: usize,
}

/// Why a script could not be read.
#[derive(Debug)]
pub enum Unreadable {
    /// Not valid shell.
    Syntax(String),
    /// Nested deeper than [`MAX_DEPTH`].
    TooDeep,
}

/// Every simple command of `script`, at nesting `depth`.
pub fn simple_commands(script: &str, depth: usize) -> Result<Vec<SimpleCommand>, Unreadable> {
    if depth > MAX_DEPTH || nesting(script) > MAX_NESTING {
        return Err(Unreadable::TooDeep);
    }
    let options = brush_parser::ParserOptions::default();
    let tokens =
        brush_parser::tokenize_str(script).map_err(|e| Unreadable::Syntax(e.to_string()))?;
    let program = brush_parser::parse_tokens(&tokens, &options)
        .map_err(|e| Unreadable::Syntax(e.to_string()))?;
    let mut walk = Walk {
        out: Vec::new(),
        depth,
        options,
    };
    for list in &program.complete_commands {
        walk.list(list)?;
    }
    Ok(walk.out)
}

struct Walk {
    out: Vec<SimpleCommand>,
    depth: usize,
    options: brush_parser::ParserOptions,
}

impl Walk {
    fn list(&mut self, list: &ast::CompoundList) -> Result<(), Unreadable> {
        for ast::CompoundListItem(and_or, _) in &list.0 {
            self.pipeline(&and_or.first)?;
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p)?,
                }
            }
        }
        Ok(())
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline) -> Result<(), Unreadable> {
        for (n, command) in pipeline.seq.iter().enumerate() {
            self.command(command, n > 0)?;
        }
        Ok(())
    }

    fn command(&mut self, command: &ast::Command, piped: bool) -> Result<(), Unreadable> {
        match command {
            ast::Command::Simple(simple) => self.simple(simple, piped),
            ast::Command::Compound(compound, redirects) => {
                self.compound(compound)?;
                for redirect in redirects.iter().flat_map(|r| &r.0) {
                    self.redirect(redirect, &mut None)?;
                }
                Ok(())
            }
            // A function's body is judged where it is defined: whatever calls it runs it.
            ast::Command::Function(function) => {
                self.compound(&function.body.0)?;
                for redirect in function.body.1.iter().flat_map(|r| &r.0) {
                    self.redirect(redirect, &mut None)?;
                }
                Ok(())
            }
            ast::Command::ExtendedTest(test, _) => self.test(&test.expr),
        }
    }

    fn compound(&mut self, compound: &ast::CompoundCommand) -> Result<(), Unreadable> {
        match compound {
            ast::CompoundCommand::BraceGroup(group) => self.list(&group.list),
            ast::CompoundCommand::Subshell(subshell) => self.list(&subshell.list),
            ast::CompoundCommand::ForClause(each) => {
                for word in each.values.iter().flatten() {
                    self.word(&word.value)?;
                }
                self.list(&each.body.list)
            }
            ast::CompoundCommand::ArithmeticForClause(each) => self.list(&each.body.list),
            ast::CompoundCommand::CaseClause(case) => {
                self.word(&case.value.value)?;
                for item in &case.cases {
                    if let Some(list) = &item.cmd {
                        self.list(list)?;
                    }
                }
                Ok(())
            }
            ast::CompoundCommand::IfClause(branch) => {
                self.list(&branch.condition)?;
                self.list(&branch.then)?;
                for other in branch.elses.iter().flatten() {
                    if let Some(condition) = &other.condition {
                        self.list(condition)?;
                    }
                    self.list(&other.body)?;
                }
                Ok(())
            }
            ast::CompoundCommand::WhileClause(ast::WhileOrUntilClauseCommand(c, body, _))
            | ast::CompoundCommand::UntilClause(ast::WhileOrUntilClauseCommand(c, body, _)) => {
                self.list(c)?;
                self.list(&body.list)
            }
            ast::CompoundCommand::Coprocess(co) => self.command(&co.body, false),
            ast::CompoundCommand::Arithmetic(_) => Ok(()),
        }
    }

    fn test(&mut self, expr: &ast::ExtendedTestExpr) -> Result<(), Unreadable> {
        match expr {
            ast::ExtendedTestExpr::And(a, b) | ast::ExtendedTestExpr::Or(a, b) => {
                self.test(a)?;
                self.test(b)
            }
            ast::ExtendedTestExpr::Not(a) | ast::ExtendedTestExpr::Parenthesized(a) => self.test(a),
            ast::ExtendedTestExpr::UnaryTest(_, w) => self.word(&w.value).map(drop),
            ast::ExtendedTestExpr::BinaryTest(_, a, b) => {
                self.word(&a.value)?;
                self.word(&b.value).map(drop)
            }
        }
    }

    fn simple(&mut self, simple: &ast::SimpleCommand, piped: bool) -> Result<(), Unreadable> {
        let mut command = SimpleCommand {
            piped,
            depth: self.depth,
            ..Default::default()
        };
        for item in simple.prefix.iter().flat_map(|p| &p.0) {
            self.item(&mut command, item, true)?;
        }
        if let Some(name) = &simple.word_or_name {
            let word = self.word(&name.value)?;
            command.words.push(word);
        }
        for item in simple.suffix.iter().flat_map(|s| &s.0) {
            self.item(&mut command, item, false)?;
        }
        if !command.words.is_empty() || !command.assignments.is_empty() {
            self.out.push(command);
        }
        Ok(())
    }

    fn item(
        &mut self,
        command: &mut SimpleCommand,
        item: &ast::CommandPrefixOrSuffixItem,
        in_prefix: bool,
    ) -> Result<(), Unreadable> {
        match item {
            ast::CommandPrefixOrSuffixItem::Word(word) => {
                let word = self.word(&word.value)?;
                command.words.push(word);
            }
            ast::CommandPrefixOrSuffixItem::AssignmentWord(assignment, _) => {
                let value = match &assignment.value {
                    ast::AssignmentValue::Scalar(value) => self.word(&value.value)?,
                    ast::AssignmentValue::Array(values) => {
                        for (_, value) in values {
                            self.word(&value.value)?;
                        }
                        String::new()
                    }
                };
                let name = match &assignment.name {
                    ast::AssignmentName::VariableName(name)
                    | ast::AssignmentName::ArrayElementName(name, _) => name.clone(),
                };
                if in_prefix {
                    command.assignments.push((name, value));
                } else {
                    // `export NAME=value`, `declare …`: an argument of the builtin.
                    command.words.push(format!("{name}={value}"));
                }
            }
            ast::CommandPrefixOrSuffixItem::IoRedirect(redirect) => {
                self.redirect(redirect, &mut command.stdin_script)?;
            }
            ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                self.nested_list(&subshell.list)?;
                command.words.push(format!("{UNKNOWN}<(…)"));
            }
        }
        Ok(())
    }

    fn redirect(
        &mut self,
        redirect: &ast::IoRedirect,
        stdin: &mut Option<String>,
    ) -> Result<(), Unreadable> {
        match redirect {
            ast::IoRedirect::File(_, _, target) => match target {
                ast::IoFileRedirectTarget::Filename(w)
                | ast::IoFileRedirectTarget::Duplicate(w) => self.word(&w.value).map(drop),
                ast::IoFileRedirectTarget::ProcessSubstitution(_, subshell) => {
                    self.nested_list(&subshell.list)
                }
                ast::IoFileRedirectTarget::Fd(_) => Ok(()),
            },
            ast::IoRedirect::HereDocument(_, doc) => {
                *stdin = Some(doc.doc.value.clone());
                Ok(())
            }
            ast::IoRedirect::HereString(_, word) => {
                *stdin = Some(self.word(&word.value)?);
                Ok(())
            }
            ast::IoRedirect::OutputAndError(word, _) => self.word(&word.value).map(drop),
        }
    }

    /// Commands of a process substitution: one level deeper.
    fn nested_list(&mut self, list: &ast::CompoundList) -> Result<(), Unreadable> {
        if self.depth + 1 > MAX_DEPTH {
            return Err(Unreadable::TooDeep);
        }
        self.depth += 1;
        let walked = self.list(list);
        self.depth -= 1;
        walked
    }

    /// A word as the shell would pass it on; the commands of its substitutions are walked.
    fn word(&mut self, text: &str) -> Result<String, Unreadable> {
        let pieces = brush_parser::word::parse(text, &self.options)
            .map_err(|e| Unreadable::Syntax(e.to_string()))?;
        let mut value = String::new();
        let mut known = true;
        self.pieces(&pieces, &mut value, &mut known)?;
        Ok(if known {
            value
        } else {
            format!("{UNKNOWN}{text}")
        })
    }

    fn pieces(
        &mut self,
        pieces: &[WordPieceWithSource],
        value: &mut String,
        known: &mut bool,
    ) -> Result<(), Unreadable> {
        for piece in pieces {
            match &piece.piece {
                WordPiece::Text(text)
                | WordPiece::SingleQuotedText(text)
                | WordPiece::AnsiCQuotedText(text) => value.push_str(text),
                WordPiece::EscapeSequence(text) => {
                    value.push_str(text.strip_prefix('\\').unwrap_or(text))
                }
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(inner, value, known)?
                }
                WordPiece::TildeExpansion(_) => value.push('~'),
                WordPiece::CommandSubstitution(script)
                | WordPiece::BackquotedCommandSubstitution(script) => {
                    let inner = simple_commands(script, self.depth + 1)?;
                    self.out.extend(inner);
                    *known = false;
                }
                WordPiece::ParameterExpansion(_) | WordPiece::ArithmeticExpression(_) => {
                    *known = false
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_nested_past_any_reason_is_too_deep_not_a_crash() {
        let shapes = [
            ("(", ")"),
            ("{ ", "; }"),
            ("$(", ")"),
            ("$((", "))"),
            ("if true; then ", "; fi"),
        ];
        for (open, close) in shapes {
            let script = format!("{}echo hi{}", open.repeat(20_000), close.repeat(20_000));
            assert!(
                matches!(simple_commands(&script, 0), Err(Unreadable::TooDeep)),
                "{open}"
            );
        }
    }
}
