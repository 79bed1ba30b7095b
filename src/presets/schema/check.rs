//! The checks of a presets document: every preset, name, command, rule,
//! pattern and `means` template, with every problem named on its line.

use std::collections::BTreeMap;
use std::ops::Range;

use toml::Spanned;

use super::problems::{Checker, FileErrors};
use super::{
    Document, ExitRuleDef, ExitTable, Kind, Origin, OutputRuleDef, OutputTable, Preset,
    PresetTable, RESERVED, Strictness,
};
use crate::policy::rules::{Piece, template_pieces};
use crate::presets::error::NameError;

/// Parse and check one presets document. `file` names it in messages.
pub(crate) fn parse(
    text: &str,
    file: &str,
    origin: &Origin,
    strictness: Strictness,
) -> Result<Vec<Preset>, FileErrors> {
    let mut checker = Checker {
        text,
        problems: Vec::new(),
    };
    let document: Document = match toml::from_str(text) {
        Ok(document) => document,
        Err(err) => {
            let span = err.span().unwrap_or(0..0);
            checker.add(&span, err.message().trim().replace('\n', " "));
            return Err(FileErrors {
                file: file.to_string(),
                problems: checker.problems,
            });
        }
    };
    let mut presets = Vec::new();
    let mut claimed: BTreeMap<String, String> = BTreeMap::new();
    for (name, table) in document.preset {
        let span = name.span();
        let name = name.into_inner();
        let table_span = table.span();
        if let Some(preset) =
            check_preset(&mut checker, &name, &span, table.into_inner(), strictness)
        {
            for command in &preset.commands {
                if let Some(other) = claimed.insert(command.clone(), name.clone()) {
                    checker.add(
                        &table_span,
                        format!("preset {name}: command '{command}' is also claimed by preset {other} of this file"),
                    );
                }
            }
            presets.push((
                span.start,
                Preset {
                    origin: origin.clone(),
                    ..preset
                },
            ));
        }
    }
    if checker.problems.is_empty() {
        // In the order of the file, not of the names.
        presets.sort_by_key(|(start, _)| *start);
        Ok(presets.into_iter().map(|(_, preset)| preset).collect())
    } else {
        checker.problems.sort_by_key(|(line, _)| *line);
        Err(FileErrors {
            file: file.to_string(),
            problems: checker.problems,
        })
    }
}

/// A preset name: lower-case letters, digits, `.`, `_` and `-`, not reserved.
pub(crate) fn check_name(name: &str) -> Result<(), NameError> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c));
    if !first_ok || !rest_ok || name.len() > 64 {
        return Err(NameError::Malformed(crate::text::sanitize_line(name, 64)));
    }
    if RESERVED.contains(&name) {
        return Err(NameError::Reserved(name.to_string()));
    }
    Ok(())
}

/// The longest description or `means`, in characters: a few times the
/// longest built-in one, and short enough that no message built on it is
/// a flood.
const MOST_TEXT: usize = 500;

/// A character that could move the cursor, end a line or start an escape
/// sequence in a terminal or a log: no part of a message of retry's.
fn unprintable(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')
}

fn one_line(checker: &mut Checker<'_>, what: &str, value: &Spanned<String>) -> Option<String> {
    let text = value.get_ref();
    if text.trim().is_empty() || text.contains('\n') || text.contains('\r') {
        checker.add(&value.span(), format!("{what} must be one non-empty line"));
        return None;
    }
    if let Some(c) = text.chars().find(|&c| unprintable(c)) {
        checker.add(
            &value.span(),
            format!(
                "{what} holds a control character ({}): it reaches retry's messages, which must stay one plain line",
                c.escape_unicode()
            ),
        );
        return None;
    }
    if text.chars().count() > MOST_TEXT {
        checker.add(
            &value.span(),
            format!("{what} is longer than {MOST_TEXT} characters"),
        );
        return None;
    }
    Some(text.clone())
}

/// A preset's commands: file names, each once.
fn check_commands(
    checker: &mut Checker<'_>,
    name: &str,
    commands_table: Spanned<Vec<Spanned<String>>>,
) -> Vec<String> {
    let mut commands = Vec::new();
    for command in commands_table.into_inner() {
        let text = command.get_ref();
        if text.is_empty() || text.contains('/') || text.chars().any(char::is_whitespace) {
            checker.add(
                &command.span(),
                format!(
                    "preset {name}: command '{}' must be a file name (no '/', no spaces)",
                    crate::text::sanitize_line(text, 64)
                ),
            );
        } else if commands.contains(text) {
            checker.add(
                &command.span(),
                format!("preset {name}: command '{text}' is listed twice"),
            );
        } else {
            commands.push(text.clone());
        }
    }
    commands
}

/// A preset's exit rules: their means, sources and codes (0 is no
/// failure; a code is in one rule at most).
fn check_exit_rules(
    checker: &mut Checker<'_>,
    name: &str,
    rules: Vec<Spanned<ExitTable>>,
    strictness: Strictness,
) -> Vec<ExitRuleDef> {
    let mut exit = Vec::new();
    let mut seen = [None::<usize>; 256];
    for (index, rule) in rules.into_iter().enumerate() {
        let rule_span = rule.span();
        let rule = rule.into_inner();
        let at = format!("preset {name}: exit rule {}", index + 1);
        let means = one_line(checker, &format!("{at}: means"), &rule.means);
        if let Some(means) = &means
            && has_placeholder(means)
        {
            checker.add(&rule.means.span(), format!("{at}: means of an exit rule has no capture groups to quote (write {{{{ and }}}} for braces)"));
        }
        let source = check_source(checker, &at, rule.source, strictness, &rule_span);
        let codes = match crate::values::parse_codes(rule.codes.get_ref()) {
            Ok(codes) => codes,
            Err(problem) => {
                checker.add(
                    &rule.codes.span(),
                    format!("{at}: codes '{}': {problem}", rule.codes.get_ref()),
                );
                continue;
            }
        };
        if codes.contains(0) {
            checker.add(
                &rule.codes.span(),
                format!("{at}: 0 is success, not a failure"),
            );
        }
        for code in 1..=255u8 {
            if codes.contains(i32::from(code)) {
                if let Some(other) = seen[usize::from(code)] {
                    checker.add(
                        &rule.codes.span(),
                        format!("{at}: code {code} is already in exit rule {}", other + 1),
                    );
                }
                seen[usize::from(code)] = Some(index);
            }
        }
        if let Some(means) = means {
            exit.push(ExitRuleDef {
                kind: rule.kind,
                codes_text: rule.codes.get_ref().clone(),
                codes,
                means,
                source,
            });
        }
    }
    exit
}

/// A preset's output rules: their means, sources and patterns (a user
/// file's patterns parsed now, and `{N}` checked against their groups).
fn check_output_rules(
    checker: &mut Checker<'_>,
    name: &str,
    rules: Vec<Spanned<OutputTable>>,
    strictness: Strictness,
) -> Vec<OutputRuleDef> {
    let mut output = Vec::new();
    for (index, rule) in rules.into_iter().enumerate() {
        let rule_span = rule.span();
        let rule = rule.into_inner();
        let at = format!("preset {name}: output rule {}", index + 1);
        let means = one_line(checker, &format!("{at}: means"), &rule.means);
        let source = check_source(checker, &at, rule.source, strictness, &rule_span);
        let pattern = rule.pattern.get_ref().clone();
        let groups = if strictness == Strictness::User {
            match parse_pattern(&pattern) {
                Ok(hir) => {
                    if hir.properties().minimum_len() == Some(0) {
                        checker.add(
                            &rule.pattern.span(),
                            format!("{at}: pattern '{pattern}' matches an empty line"),
                        );
                    }
                    Some(hir.properties().explicit_captures_len())
                }
                Err(problem) => {
                    checker.add(
                        &rule.pattern.span(),
                        format!(
                            "{at}: pattern does not compile: {}",
                            problem.to_string().replace('\n', " ")
                        ),
                    );
                    None
                }
            }
        } else {
            None
        };
        if let Some(means) = &means
            && let Err(problem) = check_template(means, groups)
        {
            checker.add(&rule.means.span(), format!("{at}: means: {problem}"));
        }
        if pattern.is_empty() {
            checker.add(&rule.pattern.span(), format!("{at}: pattern is empty"));
        }
        if let Some(means) = means {
            output.push(OutputRuleDef {
                kind: rule.kind,
                pattern,
                means,
                source,
                line: checker.line_of(&rule.pattern.span()),
            });
        }
    }
    output
}

fn check_preset(
    checker: &mut Checker<'_>,
    name: &str,
    span: &Range<usize>,
    table: PresetTable,
    strictness: Strictness,
) -> Option<Preset> {
    let before = checker.problems.len();
    if let Err(problem) = check_name(name) {
        checker.add(span, problem.to_string());
    }
    let description = one_line(
        checker,
        &format!("preset {name}: description"),
        &table.description,
    );
    let commands = check_commands(checker, name, table.commands);
    let exit = check_exit_rules(checker, name, table.exit, strictness);
    let output = check_output_rules(checker, name, table.output, strictness);
    let has_transient_exit = exit.iter().any(|rule| rule.kind.retries());
    if table.other_exit == Some(Kind::Throttled) {
        checker.add(
            span,
            format!("preset {name}: other_exit is \"permanent\" or \"transient\" (\"throttled\" is for rules that know the failure is throttling)"),
        );
    }
    if strictness == Strictness::Builtin && table.other_exit.is_none() {
        checker.add(
            span,
            format!("preset {name}: built-in presets say other_exit explicitly"),
        );
    }
    let other_exit = table.other_exit.unwrap_or(if has_transient_exit {
        Kind::Permanent
    } else {
        Kind::Transient
    });
    if checker.problems.len() > before {
        return None;
    }
    Some(Preset {
        name: name.to_string(),
        origin: Origin::Builtin(""),
        description: description?,
        commands,
        retry_after: table.retry_after,
        other_exit,
        notes: table.notes,
        output,
        exit,
    })
}

fn check_source(
    checker: &mut Checker<'_>,
    at: &str,
    source: Option<Spanned<String>>,
    strictness: Strictness,
    rule_span: &Range<usize>,
) -> Option<String> {
    match source {
        Some(source) if source.get_ref().trim().is_empty() => {
            checker.add(&source.span(), format!("{at}: source is empty"));
            None
        }
        Some(source) => Some(source.into_inner()),
        None => {
            if strictness == Strictness::Builtin {
                checker.add(
                    rule_span,
                    format!("{at}: every built-in rule cites its source"),
                );
            }
            None
        }
    }
}

/// Parse a preset pattern with the regex crate's syntax and flags
/// (`regex::bytes`: no UTF-8 requirement), without compiling it.
fn parse_pattern(pattern: &str) -> Result<regex_syntax::hir::Hir, Box<regex_syntax::Error>> {
    regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(pattern)
        .map_err(Box::new)
}

fn has_placeholder(means: &str) -> bool {
    template_pieces(means).is_ok_and(|pieces| pieces.iter().any(|p| matches!(p, Piece::Group(_))))
        || template_pieces(means).is_err()
}

/// What is wrong with a `means` template.
#[derive(Debug, PartialEq, Eq)]
enum TemplateProblem {
    /// Not a template (a lone brace), in the template reader's words.
    Malformed(String),
    /// `{0}`.
    WholeMatch,
    /// `{n}` of a pattern with fewer groups.
    NoSuchGroup { n: usize, groups: usize },
}

impl std::fmt::Display for TemplateProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TemplateProblem::Malformed(problem) => f.write_str(problem),
            TemplateProblem::WholeMatch => {
                f.write_str("{0} is the whole match; name a group from {1} on")
            }
            TemplateProblem::NoSuchGroup { n, groups } => {
                write!(f, "{{{n}}} but the pattern has {groups} group(s)")
            }
        }
    }
}

/// Check `{N}` against the pattern's `groups` (when known).
fn check_template(means: &str, groups: Option<usize>) -> Result<(), TemplateProblem> {
    for piece in template_pieces(means).map_err(TemplateProblem::Malformed)? {
        if let Piece::Group(n) = piece {
            if n == 0 {
                return Err(TemplateProblem::WholeMatch);
            }
            if let Some(groups) = groups
                && n > groups
            {
                return Err(TemplateProblem::NoSuchGroup { n, groups });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Result<Vec<Preset>, FileErrors> {
        parse(
            text,
            "my.toml",
            &Origin::File("my.toml".into()),
            Strictness::User,
        )
    }

    const GOOD: &str = r#"
[preset.rclone]
description = "rclone: retry temporary errors"
commands = ["rclone"]

[[preset.rclone.exit]]
kind = "transient"
codes = "5"
means = "rclone reported a temporary error"

[[preset.rclone.output]]
kind = "permanent"
pattern = 'directory not found: (\S+)'
means = "no directory {1}"
"#;

    #[test]
    fn a_good_user_file_parses_with_defaults() {
        let presets = user(GOOD).unwrap();
        assert_eq!(presets.len(), 1);
        let preset = &presets[0];
        assert_eq!(preset.name, "rclone");
        assert_eq!(preset.commands, ["rclone"]);
        // A transient exit rule and no other_exit: the rest is permanent.
        assert_eq!(preset.other_exit, Kind::Permanent);
        assert!(preset.exit[0].codes.contains(5));
        assert_eq!(preset.output[0].means, "no directory {1}");
    }

    fn problems(text: &str) -> Vec<(usize, String)> {
        user(text).unwrap_err().problems
    }

    #[test]
    fn texts_that_reach_messages_are_plain_and_short() {
        // Before: an escape sequence or a vertical tab in `means` went raw
        // into retry's text lines (erasing the line, forging another), and
        // a means of 50,000 `{1}` made each failure line megabytes long.
        for bad in [r"\u001b[2K", r"\u000b", r"\u0085", r"\u2028", r"\u007f"] {
            let text = GOOD.replace(
                "means = \"rclone reported a temporary error\"",
                &format!("means = \"rclone{bad}retry: forged\""),
            );
            let found = problems(&text);
            assert_eq!(found[0].0, 9, "{bad}: {found:?}");
            assert!(found[0].1.contains("control character"), "{found:?}");
            let text = GOOD.replace("retry temporary errors", &format!("x{bad}"));
            assert!(problems(&text)[0].1.contains("description holds a control"));
        }
        let long = GOOD.replace("no directory {1}", &"{1}".repeat(200));
        let found = problems(&long);
        assert!(
            found[0].1.contains("longer than 500 characters"),
            "{found:?}"
        );
    }

    #[test]
    fn every_problem_is_named_with_its_line() {
        let bad = GOOD.replace("codes = \"5\"", "codes = \"5,300\"");
        let found = problems(&bad);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, 8);
        assert!(
            found[0].1.contains("exit rule 1: codes '5,300'"),
            "{found:?}"
        );

        let bad = GOOD.replace(
            "means = \"no directory {1}\"",
            "means = \"no directory {2}\"",
        );
        let found = problems(&bad);
        assert_eq!(found[0].0, 14, "{found:?}");
        assert!(
            found[0].1.contains("{2} but the pattern has 1 group(s)"),
            "{found:?}"
        );

        let bad = GOOD.replace("kind = \"permanent\"", "kind = \"fatal\"");
        let found = problems(&bad);
        assert_eq!(found[0].0, 12, "{found:?}");
        assert!(found[0].1.contains("fatal"), "{found:?}");

        let bad = GOOD.replace("commands =", "command =");
        let found = problems(&bad);
        assert!(found[0].1.contains("command"), "{found:?}");

        let bad = GOOD.replace(r"(\S+)'", r"(\S+'");
        let found = problems(&bad);
        assert_eq!(found[0].0, 13, "{found:?}");
        assert!(found[0].1.contains("does not compile"), "{found:?}");

        let found = problems("[preset.x\ndescription = 1\n");
        assert_eq!(found[0].0, 1, "{found:?}");
    }

    #[test]
    fn names_commands_and_codes_are_checked() {
        let bad = GOOD.replace("preset.rclone", "preset.list");
        assert!(problems(&bad).iter().any(|(_, m)| m.contains("reserved")));
        let bad = GOOD.replace("preset.rclone", "preset.RClone");
        assert!(
            problems(&bad)
                .iter()
                .any(|(_, m)| m.contains("not a preset name"))
        );
        let bad = GOOD.replace("[\"rclone\"]", "[\"/usr/bin/rclone\"]");
        assert!(problems(&bad).iter().any(|(_, m)| m.contains("file name")));
        let bad = GOOD.replace("codes = \"5\"", "codes = \"0-5\"");
        assert!(
            problems(&bad)
                .iter()
                .any(|(_, m)| m.contains("0 is success"))
        );
        let twice = format!(
            "{GOOD}\n[[preset.rclone.exit]]\nkind = \"permanent\"\ncodes = \"4-6\"\nmeans = \"x\"\n"
        );
        assert!(
            problems(&twice)
                .iter()
                .any(|(_, m)| m.contains("code 5 is already in exit rule 1"))
        );
        let unknown = GOOD.replace("commands =", "retries = 3\ncommands =");
        assert!(
            problems(&unknown)
                .iter()
                .any(|(_, m)| m.contains("retries"))
        );
    }
}
