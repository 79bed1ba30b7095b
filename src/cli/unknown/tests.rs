//! The hints for flags clap refused: peers' names mapped to retry's, one
//! dash for two, and clap's similar-name tip kept for near typos only.

use clap::CommandFactory;

use super::*;
use crate::cli::Cli;

/// The usage error of `retry ARGS`, as rendered (it must be one).
fn refused(args: &[&str]) -> String {
    let words = std::iter::once("retry")
        .chain(args.iter().copied())
        .map(OsString::from);
    match Cli::parse_from_os(words) {
        Ok(_) => panic!("{args:?} was accepted"),
        Err(err) => err.render().to_string(),
    }
}

/// The definition the parse uses.
fn command() -> Command {
    let mut command = crate::cli::natural::with_natural_names(Cli::command());
    command.build();
    command
}

#[test]
#[allow(clippy::too_many_lines, reason = "a table of peers' flags")]
fn peers_flags_are_answered_with_retrys() {
    for (args, said) in [
        (
            &["--max-tries", "3", "x"][..],
            "unknown flag --max-tries 3: retry's is --attempts 3 (-n 3), the first attempt included",
        ),
        (
            &["--max-tries=0", "x"],
            "unknown flag --max-tries 0: retry's is --attempts unlimited (-n unlimited)\n",
        ),
        (
            &["--count", "4", "x"],
            "unknown flag --count 4: retry's is --attempts 4 (-n 4)",
        ),
        (
            &["-a", "3", "x"],
            "unknown flag -a 3: retry's is --attempts 3 (-n 3)",
        ),
        (
            &["-va3", "x"],
            "unknown flag -a 3: retry's is --attempts 3 (-n 3)",
        ),
        (
            &["-attempts=3", "x"],
            "unknown flag -attempts 3: retry's long flags take two dashes: --attempts 3",
        ),
        (
            &["--forever", "x"],
            "unknown flag --forever: retry's is --attempts unlimited (-n unlimited)",
        ),
        (
            &["--interval", "5", "x"],
            "unknown flag --interval 5: retry's is --delay 5 (-d 5), the first sleep's ceiling",
        ),
        (
            &["--sleep=2", "x"],
            "the same sleep every time is -d 2 -m 1 -j none\n",
        ),
        (
            &["--wait", "1m", "x"],
            "the same sleep every time is -d 1m -m 1 -j none -c 1m\n",
        ),
        (
            &["-sleep", "5s", "x"],
            "unknown flag -sleep 5s: retry's is --delay 5s (-d 5s)",
        ),
        (
            &["--retry-delay", "5", "x"],
            "unknown flag --retry-delay 5: retry's is --delay 5 (-d 5)",
        ),
        (
            &["--min-duration", "10ms", "x"],
            "unknown flag --min-duration 10ms: retry's is --delay 10ms (-d 10ms)",
        ),
        (
            &["--min-timeout", "1000", "x"],
            "unknown flag --min-timeout 1000: retry's is --delay 1000ms (-d 1000ms)",
        ),
        (
            &["--max-duration", "1m", "x"],
            "unknown flag --max-duration 1m: retry's is --cap 1m (-c 1m), the longest sleep",
        ),
        (
            &["--factor", "3", "x"],
            "unknown flag --factor 3: retry's is --multiplier 3 (-m 3)",
        ),
        (
            &["--backoff", "x"],
            "unknown flag --backoff: retry always backs off exponentially",
        ),
        (
            &["--retry-max-time", "60", "x"],
            "unknown flag --retry-max-time 60: retry's is --max-time 60 (-t 60)",
        ),
        (
            &["-task-time", "10s", "x"],
            "unknown flag -task-time 10s: retry's is --timeout 10s (-T 10s)",
        ),
        (
            &["--retry-on", "75", "x"],
            "unknown flag --retry-on 75: retry's is --retry-on-exit 75",
        ),
        (
            &["--retry-on", "error", "x"],
            "unknown flag --retry-on: retry's are --retry-on-exit CODES and --retry-on-output REGEX",
        ),
        (
            &["--stagger", "5s", "x"],
            "unknown flag --stagger 5s: retry's is --splay 5s",
        ),
        (
            &["--until", "fail", "x"],
            "unknown flag --until fail: retry's is --until-failure",
        ),
        (
            &["--until=0,3", "x"],
            "unknown flag --until 0,3: retry's is --success-on-exit 0,3",
        ),
        (
            &["-u", "success", "x"],
            "unknown flag -u success: retry stops at the first success already",
        ),
        (
            &["--while", "success", "x"],
            "unknown flag --while success: retry's is --until-failure",
        ),
        (
            &["-consecutive", "3", "x"],
            "unknown flag -consecutive 3: retry's is --successes 3",
        ),
        (
            &["-invert", "x"],
            "unknown flag -invert: retry's is --until-failure",
        ),
        (
            &["--retry-all-errors", "x"],
            "unknown flag --retry-all-errors: retry retries every failure",
        ),
        (
            &["-max-time", "1m", "x"],
            "unknown flag -max-time 1m: retry's long flags take two dashes: --max-time 1m",
        ),
        (
            &["-quiet", "x"],
            "unknown flag -quiet: retry's long flags take two dashes: --quiet\n",
        ),
        // A value that does not read as the peer's is the command's word.
        (
            &["--sleep", "curl", "x"],
            "unknown flag --sleep: retry's is --delay DURATION (-d DURATION)",
        ),
        // After flags of retry's, before any other unknown one.
        (
            &["-d", "1s", "--max-tries", "3", "x"],
            "unknown flag --max-tries 3:",
        ),
    ] {
        let text = refused(args);
        assert!(text.starts_with("error: unknown flag "), "{args:?}: {text}");
        assert!(text.contains(said), "{args:?}: {text}");
        assert!(!text.contains("similar argument"), "{args:?}: {text}");
    }
}

#[test]
fn clap_similar_name_tips_that_mislead_are_gone() {
    // clap's tips were --max-time, --retry (hidden, refused), --foreground,
    // --jitter, --output and --retry.
    for (flag, misled) in [
        ("--max-tries", "'--max-time'"),
        ("--retry-on", "'--retry'"),
        ("--forever", "'--foreground'"),
        ("--interval", "'--jitter'"),
        ("--count", "'--output'"),
        ("--retry-delay", "'--retry'"),
    ] {
        let text = refused(&[flag, "3", "x"]);
        assert!(!text.contains("tip:"), "{flag}: {text}");
        assert!(!text.contains(misled), "{flag}: {text}");
    }
    // An unknown flag that is no peer's and no near typo: no tip of a name.
    for flag in ["--bogus", "--frobnicate", "--retrys", "--forevermore"] {
        let text = refused(&[flag, "x"]);
        assert!(text.starts_with("error: unexpected argument"), "{text}");
        assert!(!text.contains("similar argument"), "{flag}: {text}");
        assert!(text.contains(&format!("use '-- {flag}'")), "{flag}: {text}");
    }
}

#[test]
fn a_near_typo_keeps_its_tip() {
    for (flag, near) in [
        ("--atempts", "--attempts"),
        ("--verbos", "--verbose"),
        ("--quite", "--quiet"),
        ("--max-tim", "--max-time"),
        ("--jiter=full", "--jitter"),
        ("--stop-on-exti", "--stop-on-exit"),
    ] {
        let text = refused(&[flag, "x"]);
        assert!(
            text.contains(&format!("tip: a similar argument exists: '{near}'")),
            "{flag}: {text}"
        );
    }
}

#[test]
fn edits_count_transpositions_once() {
    for (a, b, distance) in [
        ("attempts", "attempts", 0),
        ("atempts", "attempts", 1),
        ("quite", "quiet", 1),
        ("max-tries", "max-time", 3),
        ("forever", "foreground", 6),
        ("", "cap", 3),
    ] {
        assert_eq!(edits(a, b), distance, "{a} {b}");
    }
    let names = ["attempts", "cap", "quiet"];
    assert_eq!(near_typo("atempts", names.into_iter()), Some("attempts"));
    assert_eq!(near_typo("cpa", names.into_iter()), Some("cap"));
    // Two edits in five letters is more than a third.
    assert_eq!(near_typo("qiuto", names.into_iter()), None);
    assert_eq!(near_typo("ca", names.into_iter()), None);
}

#[test]
fn the_peers_table_names_no_flag_of_retrys_and_only_flags_it_has() {
    let command = command();
    let ours: Vec<&str> = words::visible_long_names(&command).collect();
    for &(name, meaning) in peers::LONG {
        assert!(
            words::by_long(&command, name).is_none(),
            "--{name} is retry's own: the table never sees it"
        );
        for value in [None, Some("3")] {
            let hint = meaning.hint(meaning.carried(value).as_deref());
            for word in hint.split([' ', '(', ')', ',', ';', ':']) {
                if let Some(flag) = word.strip_prefix("--") {
                    assert!(ours.contains(&flag), "--{name}: {flag} in {hint}");
                }
            }
        }
    }
    for &(c, _) in peers::SHORT {
        let taken = command
            .get_arguments()
            .any(|arg| arg.get_short() == Some(c));
        assert!(!taken, "-{c} is retry's own");
    }
}

#[test]
fn what_is_not_retrys_part_is_left_alone() {
    // After the command or `--`, a peer's name is the command's.
    for args in [&["curl", "--max-tries", "3"][..], &["--", "--sleep", "5"]] {
        let argv = std::iter::once("retry")
            .chain(args.iter().copied())
            .map(OsString::from);
        assert!(Cli::parse_from_os(argv).is_ok(), "{args:?}");
    }
    // An unknown flag first: clap's message for it.
    let text = refused(&["--bogus", "--max-tries", "3", "x"]);
    assert!(text.contains("'--bogus'"), "{text}");
    // `-on` is `-o n`: no peer's `--on` read into it.
    let text = refused(&["-on", "--bogus", "x"]);
    assert!(!text.contains("unknown flag -on"), "{text}");
}
