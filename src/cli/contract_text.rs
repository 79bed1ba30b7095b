//! The contract's tables (`crate::contract`: exit statuses, environment,
//! warning kinds) in the forms users read them: `--help`'s epilogue, plain
//! sentences for the man page (`generate` lays them out), and the guide's
//! generated blocks, which `retry --generate markdown` rewrites in place
//! (`scripts/generate`) and a test compares with the tables.
//!
//! A generated block is the text between a line `<!-- generated: NAME -->`
//! and the next line `<!-- /generated -->`; NAME is one of [`BLOCKS`].

use std::fmt;

use crate::contract::{ENVIRONMENT, EXIT_STATUSES, Variable, WARNING_KINDS, Whom};

/// The names of the generated Markdown blocks.
pub(crate) const BLOCKS: [&str; 3] = ["exit-statuses", "environment", "warning-kinds"];

const START: &str = "<!-- generated: ";
const END: &str = "<!-- /generated -->";

/// The width `--help`'s epilogue is wrapped to (clap re-wraps it only on a
/// narrower terminal).
const WIDTH: usize = 76;

/// A contract text without its Markdown: backticks dropped.
pub(crate) fn plain(text: &str) -> String {
    text.replace('`', "")
}

/// A contract text as a sentence of the man page: plain, capitalised, and
/// ending with a period.
pub(crate) fn sentence(text: &str) -> String {
    let text = plain(text);
    let mut chars = text.chars();
    let first = chars.next().map(|c| c.to_uppercase().to_string());
    format!("{}{}.", first.unwrap_or_default(), chars.as_str())
}

/// What the man page says of a variable: who is given it and what it
/// holds, and what retry does when it finds it.
pub(crate) fn variable_sentences(variable: &Variable) -> String {
    let mut parts = Vec::new();
    if let Some((whom, value)) = variable.given {
        parts.push(sentence(&format!("given to {}: {value}", whom.words())));
    }
    if let Some(read) = variable.read {
        parts.push(sentence(&format!("read by retry: {read}")));
    }
    parts.join(" ")
}

/// `text` wrapped to [`WIDTH`], every line after the first indented by
/// `indent` spaces (the first is the caller's to start).
fn wrap(text: &str, first_width: usize, indent: usize) -> String {
    let mut out = String::new();
    let mut line_len = 0;
    let mut width = first_width;
    for word in text.split_whitespace() {
        if line_len > 0 && line_len + 1 + word.len() > width {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            line_len = 0;
            width = WIDTH - indent;
        }
        if line_len > 0 {
            out.push(' ');
            line_len += 1;
        }
        out.push_str(word);
        line_len += word.len();
    }
    out
}

/// `a, b and c`.
fn listed(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The names of a row: `XDG_STATE_HOME, HOME` is two.
fn names(variable: &Variable) -> impl Iterator<Item = &'static str> {
    variable.name.split(", ")
}

/// `--help`'s epilogue: the exit statuses and the environment, from the
/// contract; the examples after them are the caller's.
pub(crate) fn help_epilogue() -> String {
    let mut text = String::from("Exit status:\n");
    let column = EXIT_STATUSES
        .iter()
        .filter(|s| s.brief.is_some())
        .map(|s| s.code.len())
        .max()
        .unwrap_or(0)
        + 4;
    for status in EXIT_STATUSES {
        let Some(brief) = status.brief else { continue };
        let lead = format!("  {:<width$}", status.code, width = column - 2);
        text.push_str(&lead);
        text.push_str(&wrap(&plain(brief), WIDTH - column, column));
        text.push('\n');
    }
    let given = |whom: &[Whom]| -> Vec<String> {
        ENVIRONMENT
            .iter()
            .filter(|v| v.given.is_some_and(|(w, _)| whom.contains(&w)))
            .map(|v| match v.brief {
                Some(brief) => format!("{} ({})", v.name, plain(brief)),
                None => v.name.to_string(),
            })
            .collect()
    };
    let read: Vec<String> = ENVIRONMENT
        .iter()
        .filter(|v| v.read.is_some())
        .flat_map(names)
        .map(String::from)
        .collect();
    let environment = format!(
        "Environment: the command gets {}; --on-give-up gets {}; retry itself reads {} (see ENVIRONMENT in the man page).",
        listed(&given(&[
            Whom::Command,
            Whom::CommandAndOnRetry,
            Whom::CommandAndHooks
        ])),
        listed(&given(&[Whom::OnGiveUp])),
        listed(&read),
    );
    text.push('\n');
    text.push_str(&wrap(&environment, WIDTH, 0));
    text
}

/// A Markdown table cell: `code` stays, line breaks cannot be.
fn cell(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every name of a row in backticks: `` `XDG_STATE_HOME`, `HOME` ``.
fn code_names(variable: &Variable) -> String {
    names(variable)
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The body of the generated block `name`, each line ending in `\n`.
pub(crate) fn markdown_block(name: &str) -> Option<String> {
    let mut text = String::new();
    match name {
        "exit-statuses" => {
            text.push_str("| status | when |\n|---|---|\n");
            for status in EXIT_STATUSES {
                text.push_str(&format!("| {} | {} |\n", status.code, cell(status.meaning)));
            }
        }
        "environment" => {
            text.push_str("Given to the command and the hooks:\n\n");
            text.push_str("| variable | given to | value |\n|---|---|---|\n");
            for variable in ENVIRONMENT {
                if let Some((whom, value)) = variable.given {
                    text.push_str(&format!(
                        "| {} | {} | {} |\n",
                        code_names(variable),
                        whom.words(),
                        cell(value)
                    ));
                }
            }
            text.push_str("\nRead by retry itself:\n\n");
            text.push_str("| variable | meaning |\n|---|---|\n");
            for variable in ENVIRONMENT {
                if let Some(read) = variable.read {
                    text.push_str(&format!("| {} | {} |\n", code_names(variable), cell(read)));
                }
            }
        }
        "warning-kinds" => {
            text.push_str("| kind | warns that |\n|---|---|\n");
            for warning in WARNING_KINDS {
                text.push_str(&format!(
                    "| `{}` | {} |\n",
                    warning.kind,
                    cell(warning.meaning)
                ));
            }
        }
        _ => return None,
    }
    Some(text)
}

/// A Markdown file whose generated blocks cannot be rewritten.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum BlockError {
    /// `<!-- generated: NAME -->` names no block.
    Unknown { line: usize, name: String },
    /// A block with no end marker after it.
    Unclosed { line: usize, name: String },
}

impl fmt::Display for BlockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockError::Unknown { line, name } => write!(
                f,
                "line {line}: no generated block is named '{name}' (known: {})",
                BLOCKS.join(", ")
            ),
            BlockError::Unclosed { line, name } => write!(
                f,
                "line {line}: the generated block '{name}' has no '{END}' after it"
            ),
        }
    }
}

impl std::error::Error for BlockError {}

/// The name of the block a line starts, if it is a start marker.
fn block_start(line: &str) -> Option<&str> {
    line.trim_end()
        .strip_prefix(START)?
        .strip_suffix("-->")
        .map(str::trim)
}

/// `markdown` with every generated block's body rendered anew, and the
/// names of the blocks it holds, in order.
pub(crate) fn rewrite_blocks(markdown: &str) -> Result<(String, Vec<String>), BlockError> {
    let mut out = String::with_capacity(markdown.len());
    let mut found = Vec::new();
    let mut lines = markdown.split_inclusive('\n').enumerate();
    while let Some((index, line)) = lines.next() {
        out.push_str(line);
        let Some(name) = block_start(line) else {
            continue;
        };
        let body = markdown_block(name).ok_or_else(|| BlockError::Unknown {
            line: index + 1,
            name: name.to_string(),
        })?;
        let closed = lines.by_ref().find(|(_, line)| line.trim_end() == END);
        let Some((_, end)) = closed else {
            return Err(BlockError::Unclosed {
                line: index + 1,
                name: name.to_string(),
            });
        };
        out.push_str(&body);
        out.push_str(end);
        found.push(name.to_string());
    }
    Ok((out, found))
}

#[cfg(test)]
mod tests;
