//! Command words that are slips: a bare number, a unit word after a
//! duration; refused only when no such program is on PATH and no `--`
//! made the word the command.

use std::path::Path;

use super::*;

fn cli(args: &[&str]) -> Cli {
    Cli::parse_from_os(
        std::iter::once("retry")
            .chain(args.iter().copied())
            .map(OsString::from),
    )
    .unwrap_or_else(|err| panic!("{args:?}: {err}"))
}

/// The slip of `retry ARGS` with PATH set to `path`, as its message.
fn slip(args: &[&str], path: &Path) -> Option<String> {
    let path = path.as_os_str().to_owned();
    let env = move |name: &str| (name == "PATH").then(|| path.clone());
    command_slip(&cli(args), &env).map(|slip| slip.to_string())
}

#[test]
fn a_number_where_the_command_goes_is_told_as_attempts() {
    let empty = tempfile::tempdir().unwrap();
    for (args, meant) in [
        (
            &["3", "curl", "x"][..],
            "did you mean retry -n 3 -- curl x?",
        ),
        (
            &["-d", "1s", "3", "curl", "a b"],
            "did you mean retry -d 1s -n 3 -- curl 'a b'?",
        ),
        (
            &["3", "--", "curl", "-n"],
            "did you mean retry -n 3 -- curl -n?",
        ),
        (&["3"], "did you mean retry -n 3 -- COMMAND?"),
        (
            &["--explain", "3", "curl"],
            "did you mean retry --explain -n 3 -- curl?",
        ),
        // A count given already: only the command is moved.
        (
            &["-n", "5", "3", "curl"],
            "did you mean retry -n 5 -- curl?",
        ),
        (
            &["--max-time", "2", "3", "curl"],
            "did you mean retry --max-time 2 -n 3 -- curl?",
        ),
    ] {
        let said = slip(args, empty.path()).unwrap_or_else(|| panic!("{args:?}"));
        assert!(
            said.starts_with("'3' is where the command goes, and no program 3 is on PATH: "),
            "{said}"
        );
        assert!(said.contains(meant), "{args:?}: {said}");
    }
}

#[test]
fn a_unit_word_after_a_duration_is_told_to_be_quoted() {
    let empty = tempfile::tempdir().unwrap();
    for (args, said) in [
        (
            &["--max-time", "2", "minutes", "--", "true"][..],
            "--max-time 2 minutes: 'minutes' would run as the command, and no program minutes is on PATH: quote it: --max-time '2 minutes' (or --max-time 2m)",
        ),
        (
            &["-t2", "min", "x"],
            "-t 2 min: 'min' would run as the command, and no program min is on PATH: quote it: -t '2 min' (or -t 2m)",
        ),
        (
            &["--delay=1.5", "hours", "x"],
            "--delay 1.5 hours: 'hours' would run as the command, and no program hours is on PATH: quote it: --delay '1.5 hours'",
        ),
        (
            &["--max-time", "1h", "30m"],
            "quote it: --max-time '1h 30m'",
        ),
        (
            &["-q", "--timeout", "500", "ms", "x"],
            "quote it: --timeout '500 ms' (or --timeout 500ms)",
        ),
        (
            &["--splay", "2", "s", "x"],
            "quote it: --splay '2 s' (or --splay 2s)",
        ),
        (
            &["--hedge-after", "2", "sec", "x"],
            "quote it: --hedge-after '2 sec'",
        ),
    ] {
        let got = slip(args, empty.path()).unwrap_or_else(|| panic!("{args:?}"));
        assert!(got.contains(said), "{args:?}: {got}");
    }
}

#[test]
fn a_word_made_the_command_on_purpose_or_a_real_program_runs() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        // `--` says the command is as written.
        &["--", "3", "x"][..],
        &["--max-time", "2", "--", "minutes"],
        // Not a duration flag's value, not a unit, not a number.
        &["-n", "2", "minutes"],
        &["--max-time", "2", "curl"],
        &["--max-time", "2", "fortnights"],
        &["2.5", "x"],
        &["curl", "3"],
    ] {
        assert_eq!(slip(args, dir.path()), None, "{args:?}");
    }
    // A program named so on PATH is run (on Windows, a name with an
    // extension of PATHEXT).
    let suffix = if cfg!(windows) { ".cmd" } else { "" };
    for name in ["3", "minutes"] {
        std::fs::write(dir.path().join(format!("{name}{suffix}")), "#!/bin/sh\n").unwrap();
    }
    assert_eq!(slip(&["3", "x"], dir.path()), None);
    assert_eq!(slip(&["-t", "2", "minutes"], dir.path()), None);
    assert!(slip(&["4", "x"], dir.path()).is_some());
}
