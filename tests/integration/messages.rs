//! What retry says, and in which form: JSON events with time and run id,
//! timestamped log files, the ending in `done`, colour choices, and the
//! idioms that deserve no message at all.

use std::time::Duration;

use crate::util::*;

#[test]
fn every_json_event_carries_a_utc_timestamp_and_the_run_id() {
    let (_, events) = json_run(&["-n", "2", "-d", "1ms", "--", "false"]);
    assert!(events.len() >= 3, "{events:?}");
    let run_id = events[0]["run_id"].as_str().unwrap().to_string();
    assert_eq!(run_id.len(), 32);
    for event in &events {
        assert_eq!(event["run_id"], run_id.as_str());
        let ts = event["ts"].as_str().unwrap();
        // 2026-12-01T07:00:00.123Z
        assert_eq!(ts.len(), 24, "{ts}");
        assert!(ts.ends_with('Z') && ts.as_bytes()[19] == b'.', "{ts}");
    }
    // Another run, another id.
    let (_, other) = json_run(&["--", "true"]);
    let _ = other;
    let (_, again) = json_run(&["-n", "1", "--", "false"]);
    assert_ne!(again[0]["run_id"], run_id.as_str());
}

#[test]
fn text_lines_in_a_log_file_start_with_a_timestamp() {
    let dir = scratch();
    let log = dir.path().join("retry.log");
    for _ in 0..2 {
        let status = retry_std()
            .args(["-n", "2", "-d", "1ms", "--log-file"])
            .arg(&log)
            .args(["--", "false"])
            .stdin(std::process::Stdio::null())
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(1));
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "two runs of three lines: {text}");
    for line in lines {
        let (stamp, rest) = line.split_once(' ').unwrap();
        assert!(stamp.ends_with('Z') && stamp.len() == 24, "{line}");
        assert!(rest.starts_with("retry: "), "{line}");
    }
}

#[test]
fn done_tells_a_timeout_from_exit_124_and_a_sigterm_death_from_exit_143() {
    let done = |args: &[&str]| json_run(args).1.last().unwrap().clone();
    let timeout = done(&["-n", "1", "-T", "100ms", "--", "sleep", "5"]);
    let exit124 = done(&["-n", "1", "--", "sh", "-c", "exit 124"]);
    assert_eq!(timeout["exit_code"], 124);
    assert_eq!(exit124["exit_code"], 124);
    assert_eq!(timeout["timed_out"], true);
    assert_eq!(exit124["timed_out"], false);
    let killed = done(&["-n", "1", "--", "sh", "-c", "kill -TERM $$"]);
    let exit143 = done(&["-n", "1", "--", "sh", "-c", "exit 143"]);
    assert_eq!(killed["signal"], libc::SIGTERM);
    assert!(exit143["signal"].is_null());
    assert_eq!(exit143["exit_code"], 143);
}

#[test]
fn a_timed_out_attempt_is_judged_only_as_timed_out() {
    // Attempts that sleep past a 100 ms timeout, with `rules` added.
    let timing_out = |attempts: &str, rules: &[&str]| {
        let mut args = vec!["-n", attempts, "-d", "1ms", "-T", "100ms"];
        args.extend_from_slice(rules);
        args.extend_from_slice(&["--", "sleep", "5"]);
        json_run(&args)
    };
    // --stop-on-exit 124 does not stop a timed-out attempt: it is retried.
    let (_, events) = timing_out("2", &["--stop-on-exit", "124"]);
    assert_eq!(events.last().unwrap()["attempts"], 2);
    // --retry-on-exit 75 does not make it permanent either.
    let (_, events) = timing_out("2", &["--retry-on-exit", "75"]);
    assert_eq!(events.last().unwrap()["attempts"], 2);
    // --stop-on-timeout does.
    let (out, events) = timing_out("3", &["--stop-on-timeout"]);
    assert_eq!(out.status.code(), Some(124));
    let done = events.last().unwrap();
    assert_eq!(done["attempts"], 1);
    assert_eq!(done["outcome"], "permanent");
}

#[test]
fn a_death_by_signal_meets_the_exit_code_lists_as_128_plus_n() {
    let dir = scratch();
    let body = format!("{}; kill -TERM $$", tally(dir.path(), "runs"));
    // 143 is not in the list: permanent after one attempt.
    retry()
        .args([
            "-n",
            "3",
            "-d",
            "1ms",
            "--retry-on-exit",
            "75",
            "--",
            "sh",
            "-c",
            &body,
        ])
        .assert()
        .interrupted();
    assert_eq!(lines(dir.path(), "runs"), 1);
    // 143 in the list: retried.
    retry()
        .args([
            "-n",
            "3",
            "-d",
            "1ms",
            "--retry-on-exit",
            "143",
            "--",
            "sh",
            "-c",
            &body,
        ])
        .assert()
        .interrupted();
    assert_eq!(lines(dir.path(), "runs"), 4);
}

#[test]
fn yes_into_head_says_at_most_one_line_under_verbose() {
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "'{BIN}' -v -n 5 -- yes | head -1 >/dev/null; echo \"status=${{PIPESTATUS[0]}}\""
        ))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("status=141"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let after_start: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.contains("policy:") && !l.contains("attempt 1/5: yes"))
        .collect();
    assert!(after_start.len() <= 1, "{stderr}");
    assert!(
        !stderr.contains("gave up") && !stderr.contains("failed"),
        "{stderr}"
    );
}

fn coloured(args: &[&str], env: &[(&str, &str)]) -> bool {
    let mut command = retry();
    command.env_remove("CLICOLOR").env_remove("CLICOLOR_FORCE");
    for (key, value) in env {
        command.env(key, value);
    }
    let out = command
        .args(args)
        .args(["-n", "1", "--", "false"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stderr).contains('\x1b')
}

#[test]
fn colour_follows_the_flag_and_the_ecosystems_variables() {
    // Not a terminal here: auto means no colour unless forced.
    assert!(!coloured(&[], &[]));
    assert!(coloured(&[], &[("CLICOLOR_FORCE", "1")]));
    assert!(!coloured(
        &[],
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]
    ));
    assert!(coloured(&["--color", "always"], &[("NO_COLOR", "1")]));
    assert!(!coloured(&["--color", "never"], &[("CLICOLOR_FORCE", "1")]));
    // JSON and log files are never coloured.
    assert!(!coloured(
        &["--color", "always", "--log-format", "json"],
        &[]
    ));
}

#[test]
fn a_delay_asked_by_the_hint_file_is_said_to_come_from_it() {
    let out = retry()
        .args([
            "-n",
            "2",
            "--",
            "sh",
            "-c",
            "echo retry-after=10ms > \"$RETRY_HINT_FILE\"; exit 1",
        ])
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("as the hint file asked"), "{stderr}");
    assert!(!stderr.contains("Retry-After asked"), "{stderr}");
}

#[test]
fn a_retry_after_longer_than_the_limit_ends_the_run_at_once_naming_it() {
    let hint = "echo retry-after=99y > \"$RETRY_HINT_FILE\"; exit 1";
    let header = "printf 'HTTP/1.1 503\\nRetry-After: Fri, 31 Dec 9999 23:59:59 GMT\\n'; exit 1";
    for (body, asker) in [(hint, "the hint file"), (header, "Retry-After")] {
        let started = std::time::Instant::now();
        let (out, events) = json_run(&[
            "-n",
            "3",
            "-d",
            "10ms",
            "--retry-after",
            "--scan-stdout",
            "--",
            "sh",
            "-c",
            body,
        ]);
        assert!(started.elapsed() < Duration::from_secs(10), "{body}");
        // The command's status; never answered by a shorter sleep.
        assert_eq!(out.status.code(), Some(1));
        assert!(!events.iter().any(|e| e["event"] == "sleep"), "{events:?}");
        let done = events.iter().find(|e| e["event"] == "done").unwrap();
        assert_eq!(
            (&done["outcome"], &done["attempts"]),
            (&"exhausted".into(), &1.into())
        );
        let warning = events
            .iter()
            .find(|e| e["event"] == "warning" && e["kind"] == "retry-after")
            .unwrap_or_else(|| panic!("{body}: {events:?}"));
        let detail = warning["message"].as_str().unwrap();
        assert!(
            detail.starts_with(&format!("{asker} asked for "))
                && detail
                    .contains("longer than --max-retry-after 5m: not retrying (--max-retry-after "),
            "{detail}"
        );
    }
    // Within the limit it is obeyed.
    let (_, events) = json_run(&[
        "-n",
        "2",
        "--max-retry-after",
        "1s",
        "--",
        "sh",
        "-c",
        "echo retry-after=20ms > \"$RETRY_HINT_FILE\"; exit 1",
    ]);
    let sleep = events.iter().find(|e| e["event"] == "sleep").unwrap();
    assert_eq!(sleep["source"], "retry-after");
    assert_eq!(sleep["delay_ms"], 20);
}

#[test]
fn usage_errors_honour_the_log_format_and_the_log_file() {
    let dir = scratch();
    let marker = dir.path().join("ran");
    let touch = format!("touch '{}'", marker.display());
    // A clap error (conflicting flags) and a configuration error, as JSON.
    for args in [
        &["--log-format", "json", "-q", "-v", "--", "sh", "-c", &touch][..],
        &[
            "--log-format=json",
            "--splay",
            "5s",
            "-t",
            "1s",
            "--",
            "sh",
            "-c",
            &touch,
        ][..],
        &[
            "--log-format",
            "json",
            "--retry-on-output",
            "(",
            "--",
            "sh",
            "-c",
            &touch,
        ][..],
    ] {
        let out = retry().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(125), "{args:?}");
        let events = json_events(&out.stderr);
        assert_eq!(events.len(), 1, "{args:?}: {events:?}");
        assert_eq!(events[0]["event"], "error");
        assert!(events[0]["message"].as_str().unwrap().len() > 10);
    }
    // Into the log file, as a timestamped line.
    let log = dir.path().join("retry.log");
    let out = retry()
        .arg("--log-file")
        .arg(&log)
        .args(["--splay", "5s", "-t", "1s", "--", "sh", "-c", &touch])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains(" retry: error: --splay 5s"), "{text}");
    assert!(!marker.exists(), "nothing may run after a usage error");
}

#[test]
fn explain_counts_the_splay_and_speaks_plainly() {
    let explain = |args: &[&str]| {
        let out = retry().arg("--explain").args(args).output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let one = explain(&["-n", "1", "-j", "none"]);
    assert!(one.contains("1 attempt;"), "{one}");
    assert!(one.contains("no jitter"), "{one}");
    assert!(
        !one.contains("1 attempts") && !one.contains("none jitter"),
        "{one}"
    );
    let splayed = explain(&["-n", "3", "-j", "none", "-d", "1s", "--splay", "10s"]);
    // Sleeps 1s + 2s, plus a splay of up to 10s (mean 5s).
    assert!(
        splayed.contains("worst case 13s of sleep, mean 8s"),
        "{splayed}"
    );
    let capped = explain(&["-d", "2s", "-c", "1s"]);
    assert!(capped.contains("the cap wins"), "{capped}");
}

#[test]
fn a_delay_longer_than_the_cap_is_said_at_the_start() {
    let out = retry()
        .args(["-n", "1", "-d", "2s", "-c", "1s", "--", "true"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--delay 2s is longer than --cap 1s"),
        "{stderr}"
    );
}

#[test]
fn the_help_lists_every_exit_status_and_the_stdin_offset() {
    let out = retry().arg("--help").output().unwrap();
    // Wrapped to the terminal: compare with the white space folded.
    let help = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for needle in [
        "124 timed out",
        "75 a",
        "125",
        "126",
        "127",
        "offset it had when retry started",
    ] {
        assert!(help.contains(needle), "{needle}: {help}");
    }
}

#[test]
fn a_timeout_says_the_status_it_exits_with() {
    // With --kill-after 0 the attempt may die of SIGTERM (124) or need
    // SIGKILL (137): whichever it was, the words name that same status.
    for args in [
        &["-T", "100ms", "--kill-after", "0", "--", "sleep", "5"][..],
        &[
            "-T",
            "100ms",
            "--kill-after",
            "0",
            "--",
            "sh",
            "-c",
            "trap '' TERM; sleep 5",
        ][..],
    ] {
        let out = retry().args(["-n", "1"]).args(args).output().unwrap();
        let code = out.status.code().unwrap();
        assert!(code == 124 || code == 137, "{code}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("timed out (exit {code})")),
            "{stderr}"
        );
        assert!(!stderr.contains("killed by SIGTERM"), "{stderr}");
    }
}

#[test]
fn an_empty_or_odd_command_name_is_shown_visibly_on_one_line() {
    let out = retry().args(["-n", "1", "--", ""]).output().unwrap();
    assert_eq!(out.status.code(), Some(127));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("'' (an empty command name): command not found"),
        "{stderr}"
    );
    let out = retry()
        .args(["-n", "1", "--", "a\nretry: forged"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.lines().any(|l| l.starts_with("retry: forged")),
        "{stderr}"
    );
}

/// `retry --log-file LOG ARGS -- true`, a usage error: its stderr.
fn refused_with_log(log: &std::path::Path, args: &[&str]) -> String {
    let out = retry()
        .arg("--log-file")
        .arg(log)
        .args(args)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125), "{args:?}");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn a_usage_error_shows_on_stderr_also_with_a_log_file() {
    let dir = scratch();
    let log = dir.path().join("retry.log");
    // As without --log-file: clap's rendering, its tip included.
    let stderr = refused_with_log(&log, &["-n", "0"]);
    assert_eq!(
        stderr,
        "retry: error: invalid value '0' for '--attempts <N>': must be at least 1 (the first attempt counts)\n\nFor more information, try '--help'.\n"
    );
    let stderr = refused_with_log(&log, &["--retry-on-output", "("]);
    assert!(
        stderr.starts_with("retry: error: invalid value '('"),
        "{stderr}"
    );
    // A configuration error too.
    let stderr = refused_with_log(&log, &["--splay", "5s", "-t", "1s"]);
    assert_eq!(
        stderr,
        "retry: error: --splay 5s must be shorter than --max-time 1s\n"
    );
    // And the log still has them.
    let text = std::fs::read_to_string(&log).unwrap();
    for first in ["invalid value '0'", "invalid value '('", "--splay 5s"] {
        assert!(text.contains(&format!(" retry: error: {first}")), "{text}");
    }
}

#[test]
fn every_line_of_a_usage_error_in_a_log_file_is_prefixed_and_has_no_tip() {
    let dir = scratch();
    let log = dir.path().join("retry.log");
    refused_with_log(&log, &["-n", "0"]);
    refused_with_log(&log, &["--retry-on-output", "("]);
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .map(|line| {
            let rest = line.split_once(' ').and_then(|(stamp, rest)| {
                (stamp.ends_with('Z') && stamp.len() == 24)
                    .then_some(rest)?
                    .strip_prefix("retry:")
            });
            rest.unwrap_or_else(|| panic!("not `TIMESTAMP retry: ...`: {line:?} in\n{text}"))
        })
        .collect();
    assert!(!text.contains("For more information"), "{text}");
    assert_eq!(
        lines[0],
        " error: invalid value '0' for '--attempts <N>': must be at least 1 (the first attempt counts)"
    );
    assert!(lines[1].starts_with(" error: invalid value '('"), "{text}");
    // The regex error's caret still points at the pattern's character.
    let pattern = lines.iter().position(|l| l.trim() == "(").expect(&text);
    assert_eq!(
        lines[pattern].find('('),
        lines[pattern + 1].find('^'),
        "{text}"
    );
}

#[test]
fn a_json_usage_error_has_no_tip() {
    let out = retry()
        .args(["--log-format", "json", "-n", "0", "--", "true"])
        .output()
        .unwrap();
    let events = json_events(&out.stderr);
    assert_eq!(
        events[0]["message"],
        "invalid value '0' for '--attempts <N>': must be at least 1 (the first attempt counts)"
    );
}

#[test]
fn a_log_file_after_the_command_is_the_commands_not_the_usage_errors() {
    // `--log-file app.log` after `sh` is an argument of the command: a
    // usage error of the line goes to stderr, in retry's own form, and no
    // file named after the command's argument is made.
    let dir = scratch();
    for (args, first) in REFUSED_BEFORE_A_COMMANDS_LOG_FILE {
        let out = retry().current_dir(dir.path()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(125), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with(&format!("retry: error: {first}")),
            "{args:?}: {stderr}"
        );
        assert!(
            !dir.path().join("app.log").exists(),
            "{args:?}: the usage error went into the command's app.log"
        );
    }
}

#[test]
fn a_log_file_before_the_command_still_gets_the_usage_error() {
    let dir = scratch();
    let log = dir.path().join("retry.log");
    let log_arg = log.to_str().unwrap();
    for (args, first) in [
        (
            &["--log-file", log_arg, "--atempts", "3", "true"][..],
            "unexpected argument '--atempts' found",
        ),
        (
            &["-n", "0", "--log-file", log_arg, "--", "true"],
            "invalid value '0' for '--attempts <N>'",
        ),
        (
            &["--splay", "5s", "-t", "1s", "--log-file", log_arg, "true"],
            "--splay 5s must be shorter than --max-time 1s",
        ),
    ] {
        let out = retry().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(125), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with(&format!("retry: error: {first}")),
            "{stderr}"
        );
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains(&format!(" retry: error: {first}")), "{text}");
    }
}

#[test]
fn a_refused_wait_is_said_only_when_a_retry_would_follow() {
    // The last attempt gives up with its own words: a wait nothing follows
    // is nobody's business.
    let (out, events) = json_run(&[
        "-n",
        "1",
        "--retry-after",
        "--scan-stdout",
        "--",
        "sh",
        "-c",
        "printf 'HTTP/1.1 503\\nRetry-After: 3600\\n'; exit 1",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        !events
            .iter()
            .any(|e| e["event"] == "warning" && e["kind"] == "retry-after"),
        "{events:?}"
    );
    assert_eq!(
        events.iter().find(|e| e["event"] == "done").unwrap()["outcome"],
        "exhausted"
    );
}

#[test]
fn a_command_that_cannot_start_says_what_to_do_about_it() {
    let dir = scratch();
    let crlf = dir.path().join("crlf.sh");
    std::fs::write(&crlf, "#!/bin/sh\r\necho hi\r\n").unwrap();
    let plain = dir.path().join("plain.sh");
    std::fs::write(&plain, "#!/bin/sh\necho hi\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&crlf, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    std::fs::create_dir(dir.path().join("tools")).unwrap();
    for (command, status, says) in [
        ("curlx", 127, "'curlx': command not found on PATH"),
        ("./missing.sh", 127, "'./missing.sh': no such file"),
        (
            "./crlf.sh",
            127,
            "'./crlf.sh': bad interpreter: the #! line ends in a carriage return",
        ),
        (
            "./plain.sh",
            126,
            "'./plain.sh': permission denied: the file is not executable (chmod +x ./plain.sh)",
        ),
        ("./tools", 126, "'./tools': is a directory, not a program"),
    ] {
        let out = retry_std()
            .args(["-n", "1", "--", command])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let (_, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(status), "{command}: {stderr}");
        assert!(stderr.contains(says), "{command}: {stderr}");
    }
}
