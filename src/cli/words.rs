//! Retry's part of a command line read word by word, with the clap
//! definition that parses it: which word is a flag and which its value,
//! where `--` or the command's first word ends it, and the first word that
//! is no flag of retry's. The parse itself is clap's; this reading serves
//! the hints about a line clap refused (`unknown`) or took otherwise than
//! its writer meant (`slips`), which need the words as they were typed.

use std::ffi::OsString;

use clap::{Arg, Command};

/// One flag, separator or stop of a command line, at `index` in its words.
#[derive(Debug)]
pub(super) struct Item<'c> {
    /// Where its (first) word is.
    pub(super) index: usize,
    /// That word, as typed (lossy for a word that is not UTF-8).
    pub(super) word: String,
    pub(super) kind: Kind<'c>,
}

#[derive(Debug)]
pub(super) enum Kind<'c> {
    /// A flag of retry's, spelled `flag` (`--max-time`, `-t`), with its
    /// value when it takes one: attached (`--max-time=2`, `-t2`) or the
    /// next word.
    Known {
        arg: &'c Arg,
        flag: String,
        value: Option<String>,
    },
    /// No flag of retry's: `--name` (long), or `c` in a cluster of short
    /// flags, with what follows it in the word (`-a3`: `a`, `3`).
    Unknown { short: Option<(char, String)> },
    /// `--`: what follows is the command.
    Separator,
    /// The command's first word.
    Command,
}

/// The items of `words` (argv without the program), up to and including
/// the first `--`, command word or unknown flag.
pub(super) fn read<'c>(command: &'c Command, words: &[OsString]) -> Vec<Item<'c>> {
    let mut items = Vec::new();
    let mut index = 0;
    while let Some(word) = words.get(index) {
        let text = word.to_string_lossy().into_owned();
        let next = |at: usize| words.get(at + 1).map(|w| w.to_string_lossy().into_owned());
        let start = index;
        let item = |kind| Item {
            index: start,
            word: text.clone(),
            kind,
        };
        if text == "--" {
            items.push(item(Kind::Separator));
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (long, None),
            };
            let Some(arg) = by_long(command, name) else {
                items.push(item(Kind::Unknown { short: None }));
                break;
            };
            let value = if !takes_value(arg) {
                None
            } else if attached.is_some() {
                attached
            } else {
                index += 1;
                next(start)
            };
            items.push(item(Kind::Known {
                arg,
                flag: format!("--{name}"),
                value,
            }));
        } else if let Some(cluster) = text.strip_prefix('-').filter(|c| !c.is_empty()) {
            let mut stop = false;
            for (at, c) in cluster.char_indices() {
                let rest = &cluster[at + c.len_utf8()..];
                let Some(arg) = by_short(command, c) else {
                    items.push(item(Kind::Unknown {
                        short: Some((c, rest.to_string())),
                    }));
                    stop = true;
                    break;
                };
                if !takes_value(arg) {
                    items.push(item(Kind::Known {
                        arg,
                        flag: format!("-{c}"),
                        value: None,
                    }));
                    continue;
                }
                let value = if rest.is_empty() {
                    index += 1;
                    next(start)
                } else {
                    Some(rest.strip_prefix('=').unwrap_or(rest).to_string())
                };
                items.push(item(Kind::Known {
                    arg,
                    flag: format!("-{c}"),
                    value,
                }));
                break;
            }
            if stop {
                break;
            }
        } else {
            items.push(item(Kind::Command));
            break;
        }
        index += 1;
    }
    items
}

/// The argument of a long name or alias, hidden ones included.
pub(super) fn by_long<'c>(command: &'c Command, name: &str) -> Option<&'c Arg> {
    if name == "help" || name == "version" {
        return command
            .get_arguments()
            .find(|arg| arg.get_long() == Some(name));
    }
    command.get_arguments().find(|arg| {
        arg.get_long() == Some(name)
            || arg
                .get_all_aliases()
                .is_some_and(|aliases| aliases.contains(&name))
    })
}

/// The argument of a short name or alias.
fn by_short(command: &Command, c: char) -> Option<&Arg> {
    command.get_arguments().find(|arg| {
        arg.get_short() == Some(c)
            || arg
                .get_all_short_aliases()
                .is_some_and(|aliases| aliases.contains(&c))
    })
}

/// Whether the flag takes a value (each of retry's takes one at most).
pub(super) fn takes_value(arg: &Arg) -> bool {
    arg.get_action().takes_values()
}

/// The long names `--help` shows, and their visible aliases.
pub(super) fn visible_long_names(command: &Command) -> impl Iterator<Item = &str> {
    command
        .get_arguments()
        .filter(|arg| !arg.is_hide_set())
        .flat_map(|arg| arg.get_long_and_visible_aliases().unwrap_or_default())
}

/// Whether `arg` takes a duration (`--max-time`, `--delay`, ...).
pub(super) fn takes_duration(arg: &Arg) -> bool {
    arg.get_value_names()
        .is_some_and(|names| names.iter().any(|name| name.starts_with("DURATION")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::CommandFactory;

    fn command() -> Command {
        let mut command = super::super::natural::with_natural_names(Cli::command());
        command.build();
        command
    }

    /// Each item as `flag=value`, `?word`, `--` or `CMD word`.
    fn shown(words: &[&str]) -> Vec<String> {
        let command = command();
        let words: Vec<OsString> = words.iter().map(OsString::from).collect();
        read(&command, &words)
            .into_iter()
            .map(|item| match item.kind {
                Kind::Known { flag, value, .. } => match value {
                    Some(value) => format!("{flag}={value}"),
                    None => flag,
                },
                Kind::Unknown { short: None } => format!("?{}", item.word),
                Kind::Unknown {
                    short: Some((c, rest)),
                } => format!("?-{c}[{rest}]"),
                Kind::Separator => "--".to_string(),
                Kind::Command => format!("CMD {}", item.word),
            })
            .collect()
    }

    #[test]
    fn flags_values_and_the_end_of_retrys_part() {
        for (words, expected) in [
            (
                &["-n", "3", "--max-time=2", "curl", "-n"][..],
                &["-n=3", "--max-time=2", "CMD curl"][..],
            ),
            (&["-vt2", "x"], &["-v", "-t=2", "CMD x"]),
            (&["-qt", "2", "--", "x"], &["-q", "-t=2", "--"]),
            (&["-t=5", "--tries", "4"], &["-t=5", "--tries=4"]),
            (&["-d", "-1", "--sleep", "5"], &["-d=-1", "?--sleep"]),
            (&["-va3"], &["-v", "?-a[3]"]),
            (&["--help", "x"], &["--help", "CMD x"]),
            (&["-d"], &["-d"]),
        ] {
            let got = shown(words);
            let got: Vec<&str> = got.iter().map(String::as_str).collect();
            assert_eq!(got, expected, "{words:?}");
        }
    }

    #[test]
    fn every_flag_takes_one_value_at_most() {
        // The reading above assumes it: a flag with more would need more.
        for arg in command().get_arguments() {
            let one = arg
                .get_num_args()
                .is_none_or(|range| range.max_values() <= 1 || arg.is_positional());
            assert!(one, "{:?}", arg.get_id());
        }
    }

    #[test]
    fn duration_flags_are_known_by_their_value_name() {
        let command = command();
        let durations: Vec<&str> = command
            .get_arguments()
            .filter(|arg| takes_duration(arg))
            .filter_map(Arg::get_long)
            .collect();
        for name in [
            "delay",
            "max-time",
            "timeout",
            "cap",
            "splay",
            "hedge-after",
        ] {
            assert!(durations.contains(&name), "{name}: {durations:?}");
        }
        assert!(!durations.contains(&"attempts"));
    }
}
