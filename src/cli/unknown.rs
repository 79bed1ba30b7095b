//! A command line clap refused, said in retry's terms: a flag another
//! retry tool has (`--max-tries`, `--sleep`, `-a`, Go's `-attempts`) is
//! answered with retry's own (`unknown flag --max-tries 3: retry's is
//! --attempts 3 (-n 3) ...`), and a long name of retry's typed with one
//! dash (`-max-time`) with its two. Both replace clap's message, whose
//! similar-name tip sends these names astray (`--max-tries` to
//! `--max-time`, `--forever` to `--foreground`, `--interval` to
//! `--jitter`, `--retry-on` to a hidden refused name).
//!
//! For any other unknown flag clap's message stands, but its tip is kept
//! only for a near typo: a flag `--help` shows, at most two edits away
//! (a transposition is one) and no more than a third of the name typed
//! (`--atempts`, `--verbos`, `--quite`). Cargo draws the line at three
//! edits for its commands; ripgrep lists every flag sharing enough
//! three-letter pieces with the one typed. Both are for names of one
//! program's own; here most unknown flags are another tool's word, for
//! which a name that merely looks alike is a wrong answer, not a hint.

use std::ffi::OsString;

use clap::Command;
use clap::error::{ContextKind, ContextValue, ErrorKind};

use super::peers::{self, Meaning};
use super::words::{self, Kind};

/// `err` as retry tells it: a peer's flag or a one-dash long name named
/// with retry's flag, or clap's message with only a near typo's tip.
/// `args` is argv, the program first.
pub(super) fn explained(err: clap::Error, command: &mut Command, args: &[OsString]) -> clap::Error {
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        return err;
    }
    if let Some(message) = hint(command, args.get(1..).unwrap_or_default()) {
        return command.error(ErrorKind::UnknownArgument, message);
    }
    if err.kind() == ErrorKind::UnknownArgument {
        return only_a_near_typo(err, command);
    }
    err
}

/// The hint for the first flag of `words` that is a peer's or a one-dash
/// long name, if one comes before the command and any other unknown flag.
fn hint(command: &Command, words: &[OsString]) -> Option<String> {
    let next = |index: usize| {
        words
            .get(index + 1)
            .map(|w| w.to_string_lossy().into_owned())
    };
    for item in words::read(command, words) {
        // Go's flags: one dash, a long name (read by clap as short ones).
        if let Some(body) = item.word.strip_prefix('-').filter(|b| !b.starts_with('-')) {
            let (name, attached) = split_value(body);
            // Three letters at least: `-on` is `-o n` (a file named n).
            if name.len() > 2 {
                if let Some(meaning) = peers::long(name) {
                    let value = attached.or_else(|| next(item.index));
                    return Some(said(&format!("-{name}"), meaning, value.as_deref()));
                }
                if let Some(arg) = words::by_long(command, name) {
                    let value = if words::takes_value(arg) {
                        attached.or_else(|| next(item.index))
                    } else {
                        None
                    };
                    let value = value.map_or_else(String::new, |value| {
                        let word = crate::text::shell_word(value.as_ref());
                        format!(" {}", crate::text::sanitize_line(&word, 40))
                    });
                    return Some(format!(
                        "unknown flag -{name}{value}: retry's long flags take two dashes: \
                         --{name}{value}"
                    ));
                }
            }
        }
        match item.kind {
            Kind::Known { .. } => {}
            Kind::Separator | Kind::Command => return None,
            Kind::Unknown { short: None } => {
                let (name, attached) = split_value(&item.word[2..]);
                let meaning = peers::long(name)?;
                let value = attached.or_else(|| next(item.index));
                return Some(said(&format!("--{name}"), meaning, value.as_deref()));
            }
            Kind::Unknown {
                short: Some((c, rest)),
            } => {
                let meaning = peers::short(c)?;
                let value = if rest.is_empty() {
                    next(item.index)
                } else {
                    Some(rest.strip_prefix('=').unwrap_or(&rest).to_string())
                };
                return Some(said(&format!("-{c}"), meaning, value.as_deref()));
            }
        }
    }
    None
}

/// `name=value` apart.
fn split_value(text: &str) -> (&str, Option<String>) {
    match text.split_once('=') {
        Some((name, value)) => (name, Some(value.to_string())),
        None => (text, None),
    }
}

/// `unknown flag FLAG [VALUE]: retry's is ...`; the value is named only
/// when it reads as the peer's flag takes it (else it is more likely the
/// command's first word).
fn said(flag: &str, meaning: Meaning, value: Option<&str>) -> String {
    let carried = meaning.carried(value);
    let shown = match (&carried, value) {
        (Some(_), Some(value)) => format!(" {}", crate::text::sanitize_line(value, 40)),
        _ => String::new(),
    };
    format!(
        "unknown flag {flag}{shown}: {}",
        meaning.hint(carried.as_deref())
    )
}

/// `err` (an unknown argument) with clap's similar-name tip replaced by a
/// near typo's, or none.
fn only_a_near_typo(mut err: clap::Error, command: &Command) -> clap::Error {
    err.remove(ContextKind::SuggestedArg);
    let typed = match err.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(typed)) => typed.clone(),
        _ => return err,
    };
    if let Some(name) = typed.strip_prefix("--") {
        let name = name.split_once('=').map_or(name, |(name, _)| name);
        if let Some(near) = near_typo(name, words::visible_long_names(command)) {
            err.insert(
                ContextKind::SuggestedArg,
                ContextValue::String(format!("--{near}")),
            );
        }
    }
    err
}

/// The closest of `names` to `typed` when it is a near typo of it: at
/// most two edits, and at most one for every three letters typed.
fn near_typo<'a>(typed: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let length = typed.chars().count();
    names
        .map(|name| (edits(typed, name), name))
        .filter(|&(distance, _)| distance <= 2 && distance * 3 <= length)
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, name)| name)
}

/// The optimal string alignment distance: insertions, deletions,
/// substitutions and transpositions of neighbours, one edit each.
fn edits(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![vec![0; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    rows[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests;
