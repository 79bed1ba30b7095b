//! The command a wrapper runs: `sudo apt-get`, `env VAR=x curl`, `nice
//! git`, `timeout 30 curl`, `stdbuf -oL make`, `python3 -m pip`. A preset
//! is chosen by the file name of the command that does the work, so the
//! wrappers' own options are read (as each documents them) to find where
//! that command starts. A wrapper whose command cannot be found (`env -S
//! STRING`, `python3 -c CODE`, `sudo -l`) is said, not guessed.
//!
//! Versioned names are read too: `pip3.11` is `pip`, when no preset claims
//! `pip3.11` itself (see [`unversioned`]).

use std::ffi::{OsStr, OsString};
use std::path::Path;

/// Where the working command of an argv starts, and how it was reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// `argv[start]` is the command; `via` names the steps that led to it,
    /// outermost first (`sudo`, `timeout`, `python3 -m`), empty for a plain
    /// command. For `python3 -m pip`, `argv[start]` is the word `pip`.
    Command { start: usize, via: Vec<String> },
    /// The wrappers seen, and why the command they run is not known.
    Hidden { via: Vec<String>, why: String },
}

/// How one wrapper's options read.
struct Grammar {
    /// Short options that take a value (`-u USER`, or `-uUSER`).
    short_valued: &'static str,
    /// Long options that take a value in the next word when written without
    /// `=` (`--user USER`).
    long_valued: &'static [&'static str],
    /// Options after which there is no command to find, and why.
    hiding: &'static [(&'static str, &'static str)],
    /// `NAME=VALUE` words may come before the command (env, sudo).
    assignments: bool,
    /// Positional words before the command (timeout's DURATION, flock's
    /// FILE).
    positionals: usize,
}

/// The wrappers known, by file name.
fn grammar(name: &str) -> Option<Grammar> {
    let g = |short_valued, long_valued, hiding, assignments, positionals| Grammar {
        short_valued,
        long_valued,
        hiding,
        assignments,
        positionals,
    };
    Some(match name {
        // sudo(8): -C num, -D dir, -g group, -p prompt, -R dir, -r role,
        // -T timeout, -t type, -U user, -u user.
        "sudo" => g(
            "CDgpRrTtUu",
            &[
                "close-from",
                "chdir",
                "group",
                "host",
                "prompt",
                "chroot",
                "role",
                "command-timeout",
                "type",
                "other-user",
                "user",
            ],
            &[
                ("-e", "sudo -e edits files"),
                ("--edit", "sudo --edit edits files"),
                ("-l", "sudo -l lists privileges"),
                ("--list", "sudo --list lists privileges"),
                ("-v", "sudo -v only validates"),
                ("--validate", "sudo --validate only validates"),
            ],
            true,
            0,
        ),
        // doas(1): -C config, -u user.
        "doas" => g("Cu", &[], &[], false, 0),
        // env(1): -u NAME, -C DIR; -S splits a string into the command.
        "env" => g(
            "uC",
            &["unset", "chdir"],
            &[
                ("-S", "env -S hides the command in a string"),
                (
                    "--split-string",
                    "env --split-string hides the command in a string",
                ),
            ],
            true,
            0,
        ),
        // nice(1): -n N, --adjustment=N (and the old -N).
        "nice" => g("n", &["adjustment"], &[], false, 0),
        // ionice(1): -c class, -n level, -p/-P/-u ids (then no command).
        "ionice" => g(
            "cnpPu",
            &["class", "classdata", "pid", "pgid", "uid"],
            &[
                ("-p", "ionice -p changes running processes"),
                ("-P", "ionice -P changes running processes"),
                ("-u", "ionice -u changes running processes"),
            ],
            false,
            0,
        ),
        "nohup" | "setsid" | "chronic" => g("", &[], &[], false, 0),
        // timeout(1): -s SIGNAL, -k DURATION, then DURATION, then the command.
        "timeout" => g("sk", &["signal", "kill-after"], &[], false, 1),
        // stdbuf(1): -i MODE, -o MODE, -e MODE.
        "stdbuf" => g("ioe", &["input", "output", "error"], &[], false, 0),
        // flock(1): -w SECONDS, -E CODE, then FILE, then the command; -c
        // hides it in a shell command line.
        "flock" => g(
            "wE",
            &["timeout", "conflict-exit-code"],
            &[
                ("-c", "flock -c hides the command in a shell command line"),
                (
                    "--command",
                    "flock --command hides the command in a shell command line",
                ),
            ],
            false,
            1,
        ),
        // GNU time(1): -f FORMAT, -o FILE.
        "time" => g("fo", &["format", "output"], &[], false, 0),
        _ => return None,
    })
}

/// The file name of `word`, as text.
fn file_name(word: &OsStr) -> Option<&str> {
    Path::new(word).file_name().and_then(OsStr::to_str)
}

/// `python`, `python3`, `python3.11`: interpreters whose `-m MODULE` runs
/// a tool (`python3 -m pip`).
fn is_python(name: &str) -> bool {
    name.strip_prefix("python")
        .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
}

/// The command an argv runs, looking through wrappers. `claimed(name)`
/// says whether a preset claims a file name: a claimed wrapper (a user
/// preset for `sudo`) is the command itself.
pub(crate) fn target(argv: &[OsString], claimed: &dyn Fn(&str) -> bool) -> Target {
    let mut start = 0;
    let mut via = Vec::new();
    loop {
        let Some(name) = argv.get(start).and_then(|w| file_name(w)) else {
            return Target::Command { start, via };
        };
        if claimed(name) || claimed(unversioned(name)) {
            return Target::Command { start, via };
        }
        let step = if is_python(name) {
            python_module(&argv[start + 1..])
                .map(|found| found.map(|at| (at, format!("{name} -m"))))
        } else if let Some(grammar) = grammar(name) {
            wrapped_start(&grammar, &argv[start + 1..])
                .map(|found| found.map(|at| (at, name.to_string())))
        } else {
            return Target::Command { start, via };
        };
        match step {
            Ok(Some((at, how))) => {
                via.push(how);
                start += 1 + at;
            }
            // A wrapper with nothing after it: it is the command.
            Ok(None) => return Target::Command { start, via },
            Err(Hides(why)) => {
                via.push(name.to_string());
                return Target::Hidden {
                    via,
                    why: why.to_string(),
                };
            }
        }
    }
}

/// Why the command a wrapper runs cannot be known, in the words of the
/// wrapper's own documentation (`env -S hides the command in a string`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Hides(&'static str);

/// The index in `args` (a wrapper's arguments) of the command it runs;
/// `Ok(None)` when there is none; `Err` when it cannot be known.
fn wrapped_start(grammar: &Grammar, args: &[OsString]) -> Result<Option<usize>, Hides> {
    let mut at = 0;
    let mut positionals = grammar.positionals;
    while let Some(word) = args.get(at) {
        let text = word.to_string_lossy();
        if let Some((_, why)) = grammar.hiding.iter().find(|(option, _)| {
            text == *option || (option.starts_with("--") && text.starts_with(&format!("{option}=")))
        }) {
            return Err(Hides(why));
        }
        if text == "--" {
            at += 1;
            break;
        }
        // `env -` is `env -i`; no wrapper runs a command named `-`.
        if text == "-" {
            at += 1;
            continue;
        }
        if let Some(long) = text.strip_prefix("--") {
            let valued = grammar.long_valued.contains(&long);
            at += if valued { 2 } else { 1 };
            continue;
        }
        if let Some(bundle) = text.strip_prefix('-').filter(|b| !b.is_empty()) {
            // Letters up to the first that takes a value (which takes the
            // rest of the word, or the next word) are options of their own.
            let mut words = 1;
            for (index, c) in bundle.char_indices() {
                if let Some((_, why)) = grammar
                    .hiding
                    .iter()
                    .find(|(option, _)| option.len() == 2 && option[1..].starts_with(c))
                {
                    return Err(Hides(why));
                }
                if grammar.short_valued.contains(c) {
                    if index + c.len_utf8() == bundle.len() {
                        words = 2;
                    }
                    break;
                }
            }
            at += words;
            continue;
        }
        if grammar.assignments && text.contains('=') && !text.starts_with('=') {
            at += 1;
            continue;
        }
        if positionals > 0 {
            positionals -= 1;
            at += 1;
            continue;
        }
        return Ok(Some(at));
    }
    // Past `--`: skip the positionals still owed.
    let at = at + positionals;
    Ok((at < args.len()).then_some(at))
}

/// For python's arguments: the index of the module `-m` names.
fn python_module(args: &[OsString]) -> Result<Option<usize>, Hides> {
    let mut at = 0;
    while let Some(word) = args.get(at) {
        let text = word.to_string_lossy();
        let Some(bundle) = text
            .strip_prefix('-')
            .filter(|b| !b.is_empty() && !b.starts_with('-'))
        else {
            // A script, `-`, or a long option (`--version`): no module.
            return Ok(None);
        };
        for (index, c) in bundle.char_indices() {
            let rest = &bundle[index + c.len_utf8()..];
            match c {
                'c' => return Err(Hides("python -c runs code given on the command line")),
                // `-m pip`, or `-mpip` (the module inside the word: no
                // argv index of its own, so no preset).
                'm' if rest.is_empty() => return Ok((at + 1 < args.len()).then_some(at + 1)),
                'm' => return Ok(None),
                'W' | 'X' => {
                    if rest.is_empty() {
                        at += 1;
                    }
                    break;
                }
                _ => {}
            }
        }
        at += 1;
    }
    Ok(None)
}

/// `pip3.11` read as `pip`, `python3.12` as `python`: a name without its
/// trailing version (digits and dots). The name itself when it has none or
/// is nothing but one.
pub(crate) fn unversioned(name: &str) -> &str {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    if base.is_empty() || base == name {
        name
    } else {
        base
    }
}

/// How a target was reached, for `-v` and `--explain`: `apt-get, run by
/// sudo`; `pip, run as python3 -m pip`.
pub(crate) fn described(argv: &[OsString], start: usize, via: &[String]) -> String {
    let name = argv
        .get(start)
        .map(|w| {
            Path::new(w)
                .file_name()
                .unwrap_or(w)
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_default();
    let mut text = name.clone();
    for step in via {
        if step.ends_with(" -m") {
            text.push_str(&format!(", run as {step} {name}"));
        } else {
            text.push_str(&format!(", run by {step}"));
        }
    }
    text
}

/// Why no preset applies to a wrapped command (`sudo ls`, `env -S ...`),
/// for `-v` and `--explain`; `None` for a plain command.
pub(crate) fn why_none(command: &[OsString]) -> Option<String> {
    match target(command, &|_| false) {
        Target::Command { via, .. } if via.is_empty() => None,
        Target::Command { start, via } => Some(format!(
            "no preset: the command is {}, and no preset claims it",
            described(command, start, &via)
        )),
        Target::Hidden { via, why } => Some(format!(
            "no preset: {why}, so the command {} runs is not known (--preset NAME names one)",
            via.join(" and ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    fn target_of(words: &[&str]) -> Target {
        target(&argv(words), &|name| {
            ["curl", "git", "apt-get", "pip", "pip3", "wget"].contains(&name)
        })
    }

    fn found(words: &[&str]) -> (String, Vec<String>) {
        match target_of(words) {
            Target::Command { start, via } => (words[start].to_string(), via),
            Target::Hidden { why, .. } => panic!("{words:?}: hidden ({why})"),
        }
    }

    #[test]
    fn wrappers_options_are_read_to_find_the_command() {
        let cases: &[(&[&str], &str, &[&str])] = &[
            (&["sudo", "apt-get", "install", "x"], "apt-get", &["sudo"]),
            (
                &["sudo", "-u", "deploy", "-E", "git", "pull"],
                "git",
                &["sudo"],
            ),
            (
                &["sudo", "-udeploy", "HOME=/x", "git", "pull"],
                "git",
                &["sudo"],
            ),
            (&["sudo", "--user", "deploy", "--", "git"], "git", &["sudo"]),
            (
                &["/usr/bin/env", "-i", "A=1", "B=2", "curl", "-f", "u"],
                "curl",
                &["env"],
            ),
            (
                &["env", "-u", "LANG", "--chdir=/tmp", "curl"],
                "curl",
                &["env"],
            ),
            (&["nice", "-n", "10", "git", "fetch"], "git", &["nice"]),
            (&["nice", "git", "fetch"], "git", &["nice"]),
            (&["nice", "-10", "git"], "git", &["nice"]),
            (&["timeout", "30", "curl", "-f", "u"], "curl", &["timeout"]),
            (
                &["timeout", "-k", "5", "-s", "TERM", "30s", "curl"],
                "curl",
                &["timeout"],
            ),
            (
                &["timeout", "--kill-after=5", "30", "curl"],
                "curl",
                &["timeout"],
            ),
            (
                &["stdbuf", "-oL", "-e", "0", "wget", "u"],
                "wget",
                &["stdbuf"],
            ),
            (
                &["flock", "-w", "10", "/tmp/lock", "apt-get", "update"],
                "apt-get",
                &["flock"],
            ),
            (&["ionice", "-c", "3", "git", "gc"], "git", &["ionice"]),
            (
                &["python3", "-m", "pip", "install", "x"],
                "pip",
                &["python3 -m"],
            ),
            (
                &["python3.11", "-I", "-m", "pip", "install"],
                "pip",
                &["python3.11 -m"],
            ),
            (
                &["python", "-X", "utf8", "-Wignore", "-m", "pip"],
                "pip",
                &["python -m"],
            ),
            (
                &["sudo", "env", "A=1", "nice", "timeout", "30", "curl", "u"],
                "curl",
                &["sudo", "env", "nice", "timeout"],
            ),
            (&["pip3.11", "install", "x"], "pip3.11", &[]),
            (&["sudo", "-udevel", "git"], "git", &["sudo"]),
            (&["ls", "-l"], "ls", &[]),
            (&["sudo", "ls"], "ls", &["sudo"]),
        ];
        for (words, command, via) in cases {
            let (got, got_via) = found(words);
            assert_eq!(
                (
                    got.as_str(),
                    got_via.iter().map(String::as_str).collect::<Vec<_>>()
                ),
                (*command, via.to_vec()),
                "{words:?}"
            );
        }
    }

    #[test]
    fn a_wrapper_with_no_command_is_the_command_and_a_hidden_one_is_said() {
        assert_eq!(
            target_of(&["sudo"]),
            Target::Command {
                start: 0,
                via: vec![]
            }
        );
        assert_eq!(
            target_of(&["timeout", "30"]),
            Target::Command {
                start: 0,
                via: vec![]
            }
        );
        assert_eq!(
            target_of(&["python3", "script.py"]),
            Target::Command {
                start: 0,
                via: vec![]
            }
        );
        for words in [
            &["env", "-S", "curl -f u"][..],
            &["env", "-iS", "curl"],
            &["env", "--split-string=curl -f"],
            &["python3", "-c", "import pip"],
            &["sudo", "-l"],
            &["flock", "/tmp/l", "-c", "curl u"],
        ] {
            assert!(
                matches!(target_of(words), Target::Hidden { .. }),
                "{words:?}"
            );
        }
    }

    #[test]
    fn a_python_option_with_a_letter_past_ascii_is_read_not_a_panic() {
        // `-é` (or a byte that is not UTF-8, read as U+FFFD) after python:
        // what follows a letter is cut at the letter's end, not inside it.
        for word in ["-é", "-bé", "-b\u{fffd}"] {
            let (command, via) = found(&["python3", word, "-m", "pip"]);
            assert_eq!((command.as_str(), via), ("pip", vec!["python3 -m".into()]));
        }
        assert_eq!(found(&["python3", "-bém", "pip"]).0, "pip");
    }

    #[test]
    fn a_claimed_wrapper_is_the_command() {
        let argv = argv(&["sudo", "git", "pull"]);
        assert_eq!(
            target(&argv, &|n| n == "sudo"),
            Target::Command {
                start: 0,
                via: vec![]
            }
        );
    }

    #[test]
    fn versions_are_dropped_from_names() {
        assert_eq!(unversioned("pip3.11"), "pip");
        assert_eq!(unversioned("python3.12"), "python");
        assert_eq!(unversioned("pip"), "pip");
        assert_eq!(unversioned("7z"), "7z");
        assert_eq!(unversioned("42"), "42");
    }

    #[test]
    fn a_target_is_described_with_its_wrappers() {
        let words = argv(&["sudo", "timeout", "5", "apt-get"]);
        assert_eq!(
            described(&words, 3, &["sudo".into(), "timeout".into()]),
            "apt-get, run by sudo, run by timeout"
        );
        let words = argv(&["python3", "-m", "pip"]);
        assert_eq!(
            described(&words, 2, &["python3 -m".into()]),
            "pip, run as python3 -m pip"
        );
    }
}
