//! What a newcomer types and reads: other tools' names for the attempt
//! count, the command line as retry shows it, verdicts that name what
//! decided them, flags that contradict each other, circuits used with other
//! settings, durations as coreutils `timeout` reads them, completion, and
//! the slips answered before anything runs: a number or a unit word where
//! the command goes, other retry tools' flags, and a preset asked for by
//! the command it serves.

use std::process::Stdio;

use crate::util::*;

fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn tries_and_times_count_attempts_like_attempts() {
    for (flag, count) in [("--tries", 2), ("--times", 3), ("--tries=4", 4)] {
        let (flag, value) = match flag.split_once('=') {
            Some((flag, value)) => (flag, value.to_string()),
            None => (flag, count.to_string()),
        };
        let (output, attempts) = counted(&[flag, &value, "-d", "1ms"], "exit 3");
        assert_eq!(
            output.status.code(),
            Some(3),
            "{flag}: {}",
            stderr_of(&output)
        );
        assert_eq!(attempts, count, "{flag} {value}");
    }
    // A bad value names the flag that was typed.
    let (output, attempts) = counted(&["--tries", "0"], "exit 3");
    assert_eq!(output.status.code(), Some(125));
    assert!(
        stderr_of(&output).contains("'--tries <N>'"),
        "{}",
        stderr_of(&output)
    );
    assert_eq!(attempts, 0);
    // One count only.
    let (output, attempts) = counted(&["--times", "2", "-n", "3"], "exit 3");
    assert_eq!(output.status.code(), Some(125));
    assert_eq!(attempts, 0);
}

#[test]
fn retry_counts_are_refused_with_the_attempts_they_mean() {
    for (flag, value, meant) in [
        ("--retries", "3", "-n 4 (--attempts 4)"),
        ("--max-retries", "2", "-n 3 (--attempts 3)"),
        ("--retry", "3", "-n 4 (--attempts 4)"),
        ("--retries", "unlimited", "-n unlimited"),
    ] {
        let (output, attempts) = counted(&[flag, value, "-d", "1ms"], "exit 3");
        let stderr = stderr_of(&output);
        assert_eq!(output.status.code(), Some(125), "{flag}: {stderr}");
        assert_eq!(attempts, 0, "{flag}: nothing runs");
        assert!(stderr.contains(&format!("{flag} {value}: ")), "{stderr}");
        assert!(stderr.contains(meant), "{flag} {value}: {stderr}");
        assert!(stderr.contains("the first one included"), "{stderr}");
        // No tip for a flag of another meaning.
        assert!(
            !stderr.contains("--on-retry") && !stderr.contains("similar"),
            "{stderr}"
        );
    }
    // Hidden: help and completion show -n/--attempts only.
    let help = retry().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for hidden in [
        "--tries",
        "--times",
        "--retries",
        "--max-retries",
        "--retry ",
    ] {
        assert!(!help.contains(hidden), "{hidden} in --help");
    }
}

#[test]
fn the_command_is_shown_shell_quoted() {
    let output = retry_std()
        .args([
            "-v",
            "-n",
            "1",
            "--",
            "sh",
            "-c",
            "echo a; exit 3",
            "it's",
            "a\nb",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(r"attempt 1/1: sh -c 'echo a; exit 3' 'it'\''s' $'a\nb'"),
        "{stderr}"
    );
    // What is shown is what a shell runs again.
    let line = stderr
        .lines()
        .find_map(|line| line.strip_prefix("retry: attempt 1/1: "))
        .unwrap();
    let echoed = std::process::Command::new("bash")
        .args(["-c", &format!("printf '%s|' {line}")])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&echoed.stdout),
        "sh|-c|echo a; exit 3|it's|a\nb|"
    );
    // --explain shows it the same way.
    let explained = retry()
        .args(["--explain", "-n", "2", "--", "sh", "-c", "echo a; exit 3"])
        .output()
        .unwrap();
    let explained = String::from_utf8_lossy(&explained.stdout);
    assert!(
        explained.contains("\nCommand: sh -c 'echo a; exit 3'\n"),
        "{explained}"
    );
}

#[test]
fn a_verdict_decided_by_a_flag_names_the_flag_not_the_preset() {
    // A command named curl (the curl preset applies by its name) that
    // fails as curl does when a connection is refused.
    let dir = scratch();
    let curl = script(
        dir.path(),
        "curl",
        "#!/bin/sh\necho 'curl: (7) Failed to connect' >&2\nexit 7\n",
    );
    let curl = curl.to_str().unwrap();
    for (flag, codes, said) in [
        ("--stop-on-exit", "7", "exit 7 is in --stop-on-exit"),
        ("--retry-on-exit", "6", "exit 7 is not in --retry-on-exit"),
    ] {
        let output = retry_std()
            .args(["-n", "2", "-d", "1ms", flag, codes, "--", curl])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = stderr_of(&output);
        assert_eq!(output.status.code(), Some(7), "{stderr}");
        assert!(stderr.contains(said), "{stderr}");
        assert!(!stderr.contains("preset curl"), "{flag}: {stderr}");
    }
    // Decided by the preset: named as before.
    let output = retry_std()
        .args(["-n", "1", "--", curl])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        stderr_of(&output).contains("preset curl"),
        "{}",
        stderr_of(&output)
    );
}

#[test]
fn one_code_in_both_exit_lists_is_a_usage_error() {
    let (output, attempts) = counted(
        &["--retry-on-exit", "1-10", "--stop-on-exit", "5"],
        "exit 5",
    );
    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(125), "{stderr}");
    assert_eq!(attempts, 0);
    assert!(
        stderr.contains("--retry-on-exit 1-10 and --stop-on-exit 5 both list exit code 5"),
        "{stderr}"
    );
    // Lists that do not meet are fine.
    let (output, attempts) = counted(
        &["-d", "1ms", "--retry-on-exit", "1-4", "--stop-on-exit", "5"],
        "exit 5",
    );
    assert_eq!(output.status.code(), Some(5), "{}", stderr_of(&output));
    assert_eq!(attempts, 1);
}

#[test]
fn a_circuit_stored_with_other_settings_is_said() {
    let dir = scratch();
    let state = dir.path().join("state");
    let run = |threshold: &str| {
        let output = retry_std()
            .args([
                "-n",
                "1",
                "--circuit",
                "db",
                "--circuit-threshold",
                threshold,
            ])
            .arg("--state-dir")
            .arg(&state)
            .args(["--", "false"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));
        stderr_of(&output)
    };
    let first = run("5");
    assert!(!first.contains("was stored with"), "{first}");
    let other = run("4");
    assert!(
        other.contains("circuit db was stored with --circuit-threshold 5, --circuit-cooldown 1m")
            && other.contains("this run uses --circuit-threshold 4"),
        "{other}"
    );
    // The same settings again: nothing to say.
    let same = run("4");
    assert!(!same.contains("was stored with"), "{same}");
}

#[test]
fn durations_read_as_timeout_reads_them_or_refused_saying_why() {
    // Too small for a double, yet positive: 1 ns, so the attempt times out.
    let (output, attempts) = counted(&["-n", "1", "-T", "1e-10000"], "sleep 5");
    assert_eq!(output.status.code(), Some(124), "{}", stderr_of(&output));
    assert!(attempts <= 1);
    // 0 is no limit to timeout(1): refused here, saying what to do.
    for flag in ["-T", "--max-time"] {
        let (output, attempts) = counted(&[flag, "0"], "exit 0");
        let stderr = stderr_of(&output);
        assert_eq!(output.status.code(), Some(125), "{stderr}");
        assert_eq!(attempts, 0);
        assert!(stderr.contains("leave the flag out"), "{stderr}");
    }
}

#[test]
fn completion_offers_presets_jitters_and_commands_after_the_separator() {
    let script_text = retry()
        .args(["--generate", "bash"])
        .output()
        .unwrap()
        .stdout;
    let dir = scratch();
    let completion = dir.path().join("retry.bash");
    std::fs::write(&completion, script_text).unwrap();
    let complete = |words: &str| {
        let body = format!(
            "source '{}'; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             cur=${{COMP_WORDS[COMP_CWORD]}}; prev=${{COMP_WORDS[COMP_CWORD-1]}}; \
             _retry_command retry \"$cur\" \"$prev\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            completion.display()
        );
        let out = std::process::Command::new("bash")
            .args(["-c", &body])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let presets = complete("retry --preset ''");
    for name in ["curl", "git", "none", "list"] {
        assert!(presets.lines().any(|l| l == name), "{name} in {presets}");
    }
    let jitters = complete("retry -j ''");
    for kind in ["full", "equal", "decorrelated", "none"] {
        assert!(jitters.lines().any(|l| l == kind), "{kind} in {jitters}");
    }
    let commands = complete("retry -n 3 -- ech");
    assert!(commands.lines().any(|l| l == "echo"), "{commands}");
    let zsh = retry().args(["--generate", "zsh"]).output().unwrap().stdout;
    let zsh = String::from_utf8_lossy(&zsh);
    assert!(zsh.contains(":_cmdambivalent"), "zsh completes the command");
    assert!(zsh.contains("(full equal decorrelated none)"));
    let fish = retry()
        .args(["--generate", "fish"])
        .output()
        .unwrap()
        .stdout;
    assert!(String::from_utf8_lossy(&fish).contains("__retry_complete_command"));
}

/// `retry ARGS... sh -c TALLY` with `dir` first on PATH: the output and
/// how many times the command (sh, or a program of `dir`) ran.
fn slipped(dir: &std::path::Path, args: &[&str]) -> (std::process::Output, usize) {
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = retry_std()
        .env("PATH", path)
        .args(args)
        .args(["sh", "-c", &tally(dir, "ran")])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (output, lines(dir, "ran"))
}

#[test]
fn a_number_where_the_command_goes_is_refused_with_the_attempts_it_means() {
    let dir = scratch();
    let (output, ran) = slipped(dir.path(), &["-d", "1ms", "3"]);
    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(125), "{stderr}");
    assert_eq!(ran, 0, "nothing runs");
    assert!(
        stderr.contains("'3' is where the command goes, and no program 3 is on PATH: did you mean retry -d 1ms -n 3 -- sh -c "),
        "{stderr}"
    );
    // After --, the command is as written: `3` is run and not found.
    let (output, ran) = slipped(dir.path(), &["-n", "1", "--", "3"]);
    assert_eq!(output.status.code(), Some(127), "{}", stderr_of(&output));
    assert_eq!(ran, 0);
    // A program named 3 on PATH is run.
    script(
        dir.path(),
        "3",
        &format!("#!/bin/sh\n{}\n", tally(dir.path(), "ran")),
    );
    let (output, ran) = slipped(dir.path(), &["3"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(ran, 1);
}

#[test]
fn a_unit_word_after_a_duration_is_refused_saying_quote_it() {
    let dir = scratch();
    for (args, said) in [
        (
            &["--max-time", "2", "minutes", "--"][..],
            "--max-time 2 minutes: 'minutes' would run as the command, and no program minutes is on PATH: quote it: --max-time '2 minutes' (or --max-time 2m)",
        ),
        (
            &["-T", "30", "sec"],
            "-T 30 sec: 'sec' would run as the command",
        ),
        (&["-d", "1", "h"], "quote it: -d '1 h' (or -d 1h)"),
    ] {
        let (output, ran) = slipped(dir.path(), args);
        let stderr = stderr_of(&output);
        assert_eq!(output.status.code(), Some(125), "{args:?}: {stderr}");
        assert_eq!(ran, 0, "{args:?}: nothing runs");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
    }
    // Quoted, it runs.
    let (output, ran) = slipped(dir.path(), &["--max-time", "2 minutes", "--"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(ran, 1);
    // A program named minutes on PATH is what was meant: it runs.
    script(
        dir.path(),
        "minutes",
        &format!("#!/bin/sh\n{}\n", tally(dir.path(), "ran")),
    );
    let (output, ran) = slipped(dir.path(), &["--max-time", "2", "minutes", "--"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert_eq!(ran, 2);
}

#[test]
fn other_retry_tools_flags_are_answered_with_retrys() {
    let dir = scratch();
    for (args, said) in [
        (
            &["--max-tries", "3"][..],
            "unknown flag --max-tries 3: retry's is --attempts 3 (-n 3)",
        ),
        (
            &["--forever"],
            "unknown flag --forever: retry's is --attempts unlimited (-n unlimited)",
        ),
        (
            &["--interval", "5"],
            "unknown flag --interval 5: retry's is --delay 5 (-d 5)",
        ),
        (
            &["--wait", "2s"],
            "unknown flag --wait 2s: retry's is --delay 2s (-d 2s)",
        ),
        (
            &["--sleep=2"],
            "the same sleep every time is -d 2 -m 1 -j none",
        ),
        (
            &["--retry-delay", "5"],
            "unknown flag --retry-delay 5: retry's is --delay 5",
        ),
        (
            &["--min-duration", "10ms"],
            "retry's is --delay 10ms (-d 10ms)",
        ),
        (&["--max-duration", "1m"], "retry's is --cap 1m (-c 1m)"),
        (
            &["--count", "4"],
            "unknown flag --count 4: retry's is --attempts 4 (-n 4)",
        ),
        (
            &["-a", "3"],
            "unknown flag -a 3: retry's is --attempts 3 (-n 3)",
        ),
        (
            &["--retry-max-time", "60"],
            "retry's is --max-time 60 (-t 60)",
        ),
        (
            &["--retry-on", "75"],
            "unknown flag --retry-on 75: retry's is --retry-on-exit 75",
        ),
        (&["--factor", "3"], "retry's is --multiplier 3 (-m 3)"),
        (&["--stagger", "5s"], "retry's is --splay 5s"),
        (&["--until", "fail"], "retry's is --until-failure"),
        (&["--backoff"], "retry always backs off exponentially"),
        (
            &["-attempts=3"],
            "unknown flag -attempts 3: retry's long flags take two dashes: --attempts 3",
        ),
    ] {
        let (output, ran) = slipped(dir.path(), args);
        let stderr = stderr_of(&output);
        assert_eq!(output.status.code(), Some(125), "{args:?}: {stderr}");
        assert_eq!(ran, 0, "{args:?}: nothing runs");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        assert!(!stderr.contains("similar argument"), "{args:?}: {stderr}");
    }
}

#[test]
fn clap_tips_that_mislead_are_gone_and_near_typos_keep_theirs() {
    for (flag, misled) in [
        ("--max-tries", "'--max-time'"),
        ("--retry-on", "'--retry'"),
        ("--forever", "'--foreground'"),
        ("--interval", "'--jitter'"),
    ] {
        let (output, attempts) = counted(&[flag, "3"], "exit 0");
        let stderr = stderr_of(&output);
        assert_eq!(output.status.code(), Some(125), "{stderr}");
        assert_eq!(attempts, 0);
        assert!(!stderr.contains("tip:"), "{flag}: {stderr}");
        assert!(!stderr.contains(misled), "{flag}: {stderr}");
    }
    let (output, _) = counted(&["--frobnicate"], "exit 0");
    assert!(
        !stderr_of(&output).contains("similar argument"),
        "{}",
        stderr_of(&output)
    );
    let (output, attempts) = counted(&["--atempts", "3"], "exit 0");
    let stderr = stderr_of(&output);
    assert_eq!((output.status.code(), attempts), (Some(125), 0), "{stderr}");
    assert!(
        stderr.contains("tip: a similar argument exists: '--attempts'"),
        "{stderr}"
    );
}

#[test]
fn preset_show_finds_the_preset_of_a_command() {
    let output = retry()
        .args(["--preset", "show", "claude"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    assert!(
        text.starts_with("# claude is served by the preset llm.\n"),
        "{text}"
    );
    assert!(text.contains("\n[preset.llm]\n"), "{text}");
    assert!(text.contains("commands = [\"claude\", "), "{text}");
    retry()
        .args(["--preset", "show", "no-such-command"])
        .assert()
        .code(125);
}
