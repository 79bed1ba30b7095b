//! A command word that is a slip, refused before anything runs (125) with
//! what was meant, rather than run and reported "command not found" (127):
//!
//! - a bare number (ASCII digits) where the command goes: `retry 3 curl x`,
//!   as retry shell functions take their count: did you mean
//!   `retry -n 3 -- curl x`?
//! - a unit word right after a duration flag's value: `retry --max-time 2
//!   minutes -- true` makes `minutes` the command: quote it,
//!   `--max-time '2 minutes'`. A unit word is one that, after the value,
//!   makes a duration retry reads (`minutes`, `min`, `s`, `ms`, `hours`,
//!   `days`, ..., and `30m` after `1h`), so the hint never suggests a
//!   value that would be refused for its syntax.
//!
//! Only a word that is the command by position, not by `--`: after `--`
//! the command is taken as written (`retry -- 3` runs `3`). And only when
//! no program of that name is on PATH (the one retry's own search would
//! run): a `3` or a `minutes` that exists is run.

use std::ffi::{OsStr, OsString};
use std::fmt;

use clap::CommandFactory;

use super::words::{self, Kind};
use super::{Cli, Env};
use crate::values;

/// A command word that is a slip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Slip {
    /// `retry 3 curl x`: the number, and the line meant.
    NumberAsCommand { number: String, meant: String },
    /// `--max-time 2 minutes`: the flag as typed, its value, the unit word
    /// and the duration written without a space when it can be (`2m`).
    UnitAsCommand {
        flag: String,
        value: String,
        unit: String,
        compact: Option<String>,
    },
}

impl fmt::Display for Slip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Slip::NumberAsCommand { number, meant } => write!(
                f,
                "'{number}' is where the command goes, and no program {number} is on PATH: \
                 did you mean {meant}? (-n N: at most N attempts, the first included)"
            ),
            Slip::UnitAsCommand {
                flag,
                value,
                unit,
                compact,
            } => {
                write!(
                    f,
                    "{flag} {value} {unit}: '{unit}' would run as the command, and no program \
                     {unit} is on PATH: quote it: {flag} '{value} {unit}'"
                )?;
                match compact {
                    Some(compact) => write!(f, " (or {flag} {compact})"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// The slip in `cli`'s command word, if it is one; `env` gives the PATH.
pub(crate) fn command_slip(cli: &Cli, env: Env<'_>) -> Option<Slip> {
    let first = cli.command.first()?.to_str()?;
    // Cheap tests first: a run of `curl` costs no PATH search here.
    let number = !first.is_empty() && first.bytes().all(|b| b.is_ascii_digit());
    let unit_like = !cli.before_command.is_empty()
        && first.len() <= 16
        && first
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.')
        && (values::parse_duration(first).is_ok()
            || values::parse_duration(&format!("1 {first}")).is_ok());
    if !number && !unit_like {
        return None;
    }
    if crate::sys::spawn::found_on_path(OsStr::new(first), env("PATH").as_deref()) {
        return None;
    }
    let mut command = super::natural::with_natural_names(Cli::command());
    command.build();
    let items = words::read(&command, &cli.before_command);
    match items.last().map(|item| &item.kind) {
        // After `--` the command is as written; before the end, something
        // clap read otherwise (nothing to say then).
        Some(Kind::Separator | Kind::Command | Kind::Unknown { .. }) => None,
        Some(Kind::Known { arg, flag, value }) if !number => {
            let value = value.as_deref()?;
            if !words::takes_duration(arg) {
                return None;
            }
            let duration = values::parse_duration(&format!("{value} {first}")).ok()?;
            let compact = humantime::format_duration(duration).to_string();
            Some(Slip::UnitAsCommand {
                flag: flag.clone(),
                value: value.to_string(),
                unit: first.to_string(),
                compact: (!compact.contains(' ')).then_some(compact),
            })
        }
        _ if number => {
            let counted = items.iter().any(|item| {
                matches!(&item.kind, Kind::Known { arg, .. }
                    if ["attempts", "tries", "times"].contains(&arg.get_id().as_str()))
            });
            Some(Slip::NumberAsCommand {
                number: first.to_string(),
                meant: meant(&cli.before_command, first, &cli.command[1..], counted),
            })
        }
        _ => None,
    }
}

/// `retry OPTIONS -n NUMBER -- REST`, shell-quoted (`-n` left out when a
/// count is given already; `COMMAND` when there is none).
fn meant(options: &[OsString], number: &str, rest: &[OsString], counted: bool) -> String {
    let mut line: Vec<OsString> = vec!["retry".into()];
    line.extend(options.iter().cloned());
    if !counted {
        line.extend(["-n".into(), number.into()]);
    }
    line.push("--".into());
    let rest = match rest.first() {
        Some(word) if word == "--" => &rest[1..],
        _ => rest,
    };
    let mut shown = crate::text::shell_command(&line);
    if rest.is_empty() {
        shown.push_str(" COMMAND");
    } else {
        shown.push(' ');
        shown.push_str(&crate::text::shell_command(rest));
    }
    crate::text::sanitize_line(&shown, 300)
}

#[cfg(test)]
mod tests;
