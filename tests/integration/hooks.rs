//! Hooks and conditions: `--on-retry`, `--on-give-up`, `--success-on-exit`,
//! `--until-output`, `--until-failure`, `--reset-after`, with counter
//! scripts and real signals.

use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use predicates::prelude::*;

use crate::util::*;

/// A shell command that appends `words` (expanded by the shell) to `log`.
fn note(log: &Path, words: &str) -> String {
    format!("echo \"{words}\" >> '{}'", log.display())
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_default()
}

/// The events named `name`.
fn events<'a>(all: &'a [serde_json::Value], name: &str) -> Vec<&'a serde_json::Value> {
    all.iter().filter(|e| e["event"] == name).collect()
}

/// A script that counts its runs in `dir/count` and runs `body` with `$n`
/// set to this run's number.
fn counter(dir: &Path, body: &str) -> std::path::PathBuf {
    let count = dir.join("count");
    script(
        dir,
        "counter.sh",
        &format!(
            "#!/bin/sh\nn=$(cat '{c}' 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > '{c}'\n{body}\n",
            c = count.display()
        ),
    )
}

#[test]
fn on_retry_runs_exactly_between_attempts_and_sees_the_next_attempts_number() {
    let dir = scratch();
    let log = dir.path().join("log");
    let attempt = note(&log, "attempt $RETRY_ATTEMPT") + "; exit 7";
    let hook = note(
        &log,
        "hook $RETRY_ATTEMPT/$RETRY_MAX_ATTEMPTS prev=$RETRY_PREVIOUS_EXIT hint=$RETRY_HINT_FILE",
    );
    retry()
        .args(["-n", "3", "-d", "1ms", "--on-retry", &hook, "--"])
        .args(["sh", "-c", &attempt])
        .assert()
        .code(7);
    assert_eq!(
        read(&log),
        "attempt 1\nhook 2/3 prev=7 hint=\nattempt 2\nhook 3/3 prev=7 hint=\nattempt 3\n"
    );

    // Never after a success, nor after a permanent failure.
    let dir = scratch();
    let log = dir.path().join("log");
    let flaky = flaky(dir.path(), 1, 3);
    retry()
        .args(["-d", "1ms", "--on-retry", &note(&log, "hook"), "--"])
        .arg(&flaky)
        .assert()
        .success();
    assert_eq!(read(&log), "hook\n");
    let log = dir.path().join("log2");
    retry()
        .args(["-d", "1ms", "--stop-on-exit", "4", "--on-retry"])
        .arg(note(&log, "hook"))
        .args(["--", "sh", "-c", "exit 4"])
        .assert()
        .code(4);
    assert_eq!(read(&log), "");
}

#[test]
fn a_failing_on_retry_hook_warns_and_the_run_goes_on() {
    let dir = scratch();
    let script = flaky(dir.path(), 2, 5);
    let script = script.to_str().unwrap();
    let (out, all) = json_run(&["-d", "1ms", "--on-retry", "exit 3", "--", script]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(runs(dir.path()), 3);
    let hooks = events(&all, "hook");
    assert_eq!(hooks.len(), 2, "{all:?}");
    for hook in hooks {
        assert_eq!(hook["hook"], "on-retry");
        assert_eq!(hook["command"], "exit 3");
        assert_eq!(hook["exit_code"], 3);
        assert_eq!(hook["timed_out"], false);
        assert!(hook["duration_ms"].is_u64());
    }
    let warnings = events(&all, "warning");
    assert_eq!(warnings.len(), 2, "{all:?}");
    assert_eq!(warnings[0]["kind"], "hook");
    assert_eq!(
        warnings[0]["message"],
        "--on-retry 'exit 3' failed: exit 3; retrying anyway"
    );
    // In text, a line per failure.
    let dir = scratch();
    let flaky = flaky(dir.path(), 1, 5);
    retry()
        .args(["-d", "1ms", "--on-retry", "exit 3", "--"])
        .arg(&flaky)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "retry: warning: --on-retry 'exit 3' failed: exit 3; retrying anyway",
        ));
}

#[test]
fn a_hanging_on_retry_hook_is_killed_at_the_attempt_timeout_with_no_process_left() {
    let dir = scratch();
    let marker = marker();
    // A hook that ignores SIGTERM and leaves a background child in its group.
    let hook = format!("sleep {marker} & trap '' TERM; sleep {marker}");
    let body = tally(dir.path(), "attempts") + "; exit 1";
    let started = Instant::now();
    let (out, all) = json_run(&[
        "-n",
        "2",
        "-d",
        "1ms",
        "-T",
        "300ms",
        "--kill-after",
        "100ms",
        "--on-retry",
        &hook,
        "--",
        "sh",
        "-c",
        &body,
    ]);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(lines(dir.path(), "attempts"), 2, "the retry went ahead");
    let hooks = events(&all, "hook");
    assert_eq!(hooks.len(), 1);
    assert_eq!(hooks[0]["timed_out"], true);
    assert!(hooks[0]["duration_ms"].as_u64().unwrap() >= 300);
    assert!(none_left(&marker, Duration::from_secs(1)));
    assert_eq!(events(&all, "warning")[0]["kind"], "hook");
}

#[test]
fn on_retry_is_bounded_by_max_time_too() {
    let dir = scratch();
    let marker = marker();
    let body = tally(dir.path(), "attempts") + "; exit 6";
    let started = Instant::now();
    let (out, all) = json_run(&[
        "-d",
        "1ms",
        "-t",
        "600ms",
        "--on-retry",
        &format!("sleep {marker}"),
        "--",
        "sh",
        "-c",
        &body,
    ]);
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(6), "the failed attempt's status");
    assert_eq!(
        lines(dir.path(), "attempts"),
        1,
        "no attempt after the deadline"
    );
    let done = events(&all, "done");
    assert_eq!(done[0]["outcome"], "deadline");
    assert!(none_left(&marker, Duration::from_secs(1)));
}

#[test]
fn hook_output_goes_to_retrys_stderr_and_never_to_the_log_file() {
    let dir = scratch();
    let log = dir.path().join("retry.log");
    let hook = "echo hook-out; echo hook-err >&2";
    let out = retry()
        .args(["-n", "2", "-d", "1ms", "--log-file"])
        .arg(&log)
        .args(["--on-retry", hook, "--on-give-up", hook])
        .args(["--", "sh", "-c", "echo child-out; exit 1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "child-out\nchild-out\n"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "hook-out\nhook-err\nhook-out\nhook-err\n"
    );
    let logged = read(&log);
    assert!(logged.contains("gave up after 2 attempts"), "{logged}");
    assert!(!logged.contains("hook-"), "{logged}");
}

#[test]
fn a_signal_during_on_retry_ends_the_run_by_that_signal_with_nothing_left() {
    let dir = scratch();
    let marker = marker();
    let started = dir.path().join("hook-started");
    let body = tally(dir.path(), "attempts") + "; exit 1";
    let mut child = retry_std()
        .args(["-d", "1ms", "--on-retry", &sleeper(&started, &marker)])
        .args(["--on-give-up", &tally(dir.path(), "gave-up")])
        .args(["--", "sh", "-c", &body])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_file(&started, Duration::from_secs(5));
    let sent = Instant::now();
    send_signal(child.id(), "TERM");
    let status = child.wait().unwrap();
    assert!(
        sent.elapsed() < Duration::from_secs(2),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(code_and_signal(status), (None, Some(libc::SIGTERM)));
    assert_eq!(
        lines(dir.path(), "attempts"),
        1,
        "no attempt after the signal"
    );
    assert_eq!(lines(dir.path(), "gave-up"), 0);
    assert!(none_left(&marker, Duration::from_secs(1)));
}

/// Run retry with `--on-give-up` writing what it sees into a file; returns
/// the status and the file's lines.
fn give_up(args: &[&str]) -> (Option<i32>, Vec<String>) {
    let dir = scratch();
    let seen = dir.path().join("seen");
    let hook = note(
        &seen,
        "exit=$RETRY_EXIT outcome=$RETRY_OUTCOME attempts=$RETRY_ATTEMPTS attempt=$RETRY_ATTEMPT",
    );
    let out = retry()
        .args(["--on-give-up", &hook])
        .args(args)
        .output()
        .unwrap();
    let seen = read(&seen).lines().map(str::to_string).collect();
    (out.status.code(), seen)
}

#[test]
fn on_give_up_runs_once_on_exhaustion_a_permanent_failure_and_the_deadline() {
    let exhausted = give_up(&["-n", "3", "-d", "1ms", "--", "sh", "-c", "exit 7"]);
    assert_eq!(
        exhausted,
        (
            Some(7),
            vec!["exit=7 outcome=exhausted attempts=3 attempt=".to_string()]
        )
    );
    let permanent = give_up(&["--stop-on-exit", "2", "--", "sh", "-c", "exit 2"]);
    assert_eq!(
        permanent,
        (
            Some(2),
            vec!["exit=2 outcome=permanent attempts=1 attempt=".to_string()]
        )
    );
    // The next sleep cannot fit: retry gives up at once.
    let no_room = give_up(&["-t", "2s", "-d", "5s", "-j", "none", "--", "false"]);
    assert_eq!(
        no_room,
        (
            Some(1),
            vec!["exit=1 outcome=deadline attempts=1 attempt=".to_string()]
        )
    );
    // An attempt cut short by --max-time: retry is about to exit 124.
    let cut = give_up(&["-t", "300ms", "--", "sleep", "5"]);
    assert_eq!(
        cut,
        (
            Some(124),
            vec!["exit=124 outcome=deadline attempts=1 attempt=".to_string()]
        )
    );
    let not_found = give_up(&["--", "/nonexistent/command"]);
    assert_eq!(
        not_found,
        (
            Some(127),
            vec!["exit=127 outcome=permanent attempts=1 attempt=".to_string()]
        )
    );
}

#[test]
fn on_give_up_never_runs_on_success() {
    let dir = scratch();
    let flaky = flaky(dir.path(), 2, 1);
    let hook = tally(dir.path(), "gave-up");
    retry()
        .args(["-d", "1ms", "--on-give-up", &hook, "--"])
        .arg(&flaky)
        .assert()
        .success();
    assert_eq!(runs(dir.path()), 3);
    assert_eq!(lines(dir.path(), "gave-up"), 0);
}

#[test]
fn on_give_up_never_runs_when_retry_is_terminated() {
    let dir = scratch();
    let marker = marker();
    let started = dir.path().join("started");
    let mut child = retry_std()
        .args(["--on-give-up", &tally(dir.path(), "gave-up")])
        .args(["--", "sh", "-c", &sleeper(&started, &marker)])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_file(&started, Duration::from_secs(5));
    send_signal(child.id(), "TERM");
    let status = child.wait().unwrap();
    assert_eq!(code_and_signal(status), (None, Some(libc::SIGTERM)));
    assert_eq!(lines(dir.path(), "gave-up"), 0);
    assert!(none_left(&marker, Duration::from_secs(1)));
}

#[test]
fn a_signal_during_on_give_up_ends_it_and_retry_dies_of_the_signal() {
    let dir = scratch();
    let marker = marker();
    let started = dir.path().join("hook-started");
    let child = retry_std()
        .args(["-n", "1", "--log-format", "json"])
        .args(["--on-give-up", &sleeper(&started, &marker)])
        .args(["--", "sh", "-c", "exit 3"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&started, Duration::from_secs(5));
    send_signal(child.id(), "TERM");
    let out = child.wait_with_output().unwrap();
    assert_eq!(code_and_signal(out.status), (None, Some(libc::SIGTERM)));
    let all = json_events(&out.stderr);
    let done = &events(&all, "done")[0];
    assert_eq!(done["outcome"], "interrupted");
    assert_eq!(done["exit_code"], 128 + libc::SIGTERM);
    assert!(none_left(&marker, Duration::from_secs(1)));
}

#[test]
fn a_hanging_on_give_up_is_ended_at_the_timeout_and_the_status_is_kept() {
    let marker = marker();
    let hook = format!("trap '' TERM; sleep {marker} & wait");
    let started = Instant::now();
    let (out, all) = json_run(&[
        "-n",
        "1",
        "-T",
        "300ms",
        "--kill-after",
        "100ms",
        "--on-give-up",
        &hook,
        "--",
        "sh",
        "-c",
        "exit 9",
    ]);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(9));
    let hooks = events(&all, "hook");
    assert_eq!(hooks.len(), 1);
    assert_eq!(hooks[0]["hook"], "on-give-up");
    assert_eq!(hooks[0]["timed_out"], true);
    let warning = &events(&all, "warning")[0];
    assert!(
        warning["message"]
            .as_str()
            .unwrap()
            .ends_with("failed: timed out (exit 137); retry ends as it would have"),
        "{warning}"
    );
    assert_eq!(events(&all, "done")[0]["exit_code"], 9);
    assert!(none_left(&marker, Duration::from_secs(1)));
}

#[test]
fn success_on_exit_3_exits_0_after_one_attempt() {
    let (out, attempts) = counted(&["-d", "1ms", "--success-on-exit", "3"], "exit 3");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(attempts, 1);
    // Other codes still fail, and the lists still judge them.
    let (out, attempts) = counted(
        &["-d", "1ms", "--success-on-exit", "3", "--stop-on-exit", "4"],
        "exit 4",
    );
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(attempts, 1);
    let (_, all) = json_run(&["--success-on-exit", "0,3", "--", "sh", "-c", "exit 3"]);
    let attempt = &events(&all, "attempt")[0];
    assert_eq!(attempt["outcome"], "success");
    assert_eq!(attempt["reason"], "exit 3 is in --success-on-exit");
    assert_eq!(events(&all, "done")[0]["exit_code"], 0);
}

#[test]
fn until_output_polls_until_the_third_run_prints_ready() {
    let dir = scratch();
    let poll = counter(
        dir.path(),
        "echo \"run $n\"; [ $n -ge 3 ] && echo ready; echo \"err $n\" >&2; exit 0",
    );
    let out = retry_std()
        .args(["-d", "1ms", "--until-output", "^ready$", "--"])
        .arg(&poll)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(runs(dir.path()), 3);
    // The output passes through unchanged and in order.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "run 1\nrun 2\nrun 3\nready\n"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "attempt 1/5 failed: exit 0; not ready yet (no line matched --until-output) (transient)"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("err 1\n") && stderr.contains("err 3\n"),
        "{stderr}"
    );

    // A matching line on stderr counts too; stdout and stderr on one file
    // keep their order.
    let dir = scratch();
    let poll = counter(
        dir.path(),
        "echo \"out $n\"; [ $n -ge 2 ] && echo ready >&2; exit 0",
    );
    let file = dir.path().join("both");
    let both = fs::File::create(&file).unwrap();
    let status = retry_std()
        .args(["-d", "1ms", "-q", "--until-output", "ready", "--"])
        .arg(&poll)
        .stdin(Stdio::null())
        .stdout(both.try_clone().unwrap())
        .stderr(both)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(read(&file), "out 1\nout 2\nready\n");
}

#[test]
fn until_output_gives_up_with_1_when_never_ready_and_with_the_code_of_a_failure() {
    let (out, all) = json_run(&[
        "-n",
        "3",
        "-d",
        "1ms",
        "--until-output",
        "ready",
        "--",
        "sh",
        "-c",
        "echo not yet",
    ]);
    assert_eq!(out.status.code(), Some(1), "a failed run never exits 0");
    assert_eq!(events(&all, "attempt").len(), 3);
    let done = &events(&all, "done")[0];
    assert_eq!(done["outcome"], "exhausted");
    assert_eq!(done["exit_code"], 1);
    // A failing code is a failure, whatever the output says.
    let (out, attempts) = counted(
        &["-n", "2", "-d", "1ms", "--until-output", "ready"],
        "echo ready; exit 5",
    );
    assert_eq!(out.status.code(), Some(5));
    assert_eq!(attempts, 2);
    // Not ready is judged by the output rules, not by the code lists.
    let (out, attempts) = counted(
        &[
            "-d",
            "1ms",
            "--until-output",
            "Running",
            "--stop-on-output",
            "CrashLoop",
            "--retry-on-exit",
            "75",
        ],
        "echo CrashLoopBackOff >&2; exit 0",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(attempts, 1);
}

#[test]
fn until_failure_stops_at_the_failing_run_and_exits_with_its_code() {
    let dir = scratch();
    let log = dir.path().join("log");
    let hunt = counter(dir.path(), "[ $n -ge 4 ] && exit 9; exit 0");
    let hunt = hunt.to_str().unwrap();
    let hook = note(&log, "between $RETRY_ATTEMPT prev=$RETRY_PREVIOUS_EXIT");
    let (out, all) = json_run(&[
        "-d",
        "0",
        "--until-failure",
        "--on-retry",
        &hook,
        "--",
        hunt,
    ]);
    assert_eq!(out.status.code(), Some(9));
    assert_eq!(runs(dir.path()), 4);
    let outcomes: Vec<&str> = events(&all, "attempt")
        .iter()
        .map(|e| e["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["success", "success", "success", "permanent"]);
    let done = &events(&all, "done")[0];
    assert_eq!(done["outcome"], "permanent");
    assert_eq!(done["exit_code"], 9);
    assert_eq!(done["attempts"], 4);
    assert_eq!(
        read(&log),
        "between 2 prev=0\nbetween 3 prev=0\nbetween 4 prev=0\n"
    );
    // Unlimited by default: far more than the usual 5 attempts.
    let dir = scratch();
    let hunt = counter(dir.path(), "[ $n -ge 12 ] && exit 3; exit 0");
    retry()
        .args(["-d", "0", "-q", "--until-failure", "--"])
        .arg(&hunt)
        .assert()
        .code(3)
        // -q keeps only the hunt's result: what it was run for.
        .stderr(predicate::str::is_match("^retry: gave up after 12 attempts in [^\n]*: permanent failure, exit 3 on run 12, after 11 runs that passed\n$").unwrap());
    assert_eq!(runs(dir.path()), 12);
}

#[test]
fn until_failure_exits_0_when_every_run_passed() {
    let (out, all) = json_run(&["-n", "4", "-d", "0", "--until-failure", "--", "true"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(events(&all, "attempt").len(), 4);
    assert_eq!(events(&all, "sleep").len(), 3, "sleeps between runs");
    let done = &events(&all, "done")[0];
    assert_eq!(done["outcome"], "success");
    assert_eq!(done["exit_code"], 0);
    // Bounded by time: a run cut short by --max-time is not counted.
    let (out, all) = json_run(&[
        "-t",
        "400ms",
        "-d",
        "0",
        "--until-failure",
        "--",
        "sleep",
        "0.15",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let attempts = events(&all, "attempt");
    assert!(attempts.len() >= 2, "{all:?}");
    assert_eq!(attempts.last().unwrap()["timed_out"], true);
    assert_eq!(events(&all, "done")[0]["outcome"], "success");
}

#[test]
fn reset_after_shows_in_the_sleep_events_ceilings() {
    let dir = scratch();
    // Runs 1, 2 and 4 fail at once; run 3 was healthy for 400 ms first.
    let flaky = counter(dir.path(), "[ $n -eq 3 ] && sleep 0.4; exit 1");
    let flaky = flaky.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["-n", "5", "-d", "20ms", "-j", "none"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", flaky]);
        let _ = fs::remove_file(dir.path().join("count"));
        let (out, all) = json_run(&args);
        assert_eq!(out.status.code(), Some(1));
        events(&all, "sleep")
            .iter()
            .map(|e| e["ceiling_ms"].as_u64().unwrap())
            .collect::<Vec<u64>>()
    };
    assert_eq!(run(&["--reset-after", "300ms"]), [20, 40, 20, 40]);
    assert_eq!(run(&[]), [20, 40, 80, 160]);
}

#[test]
fn bad_values_are_125_naming_the_flag_and_run_nothing() {
    let dir = scratch();
    let marker = dir.path().join("ran");
    let touch = format!("touch '{}'", marker.display());
    let cases: &[(&[&str], &str)] = &[
        (&["--success-on-exit", "300"], "--success-on-exit"),
        (&["--success-on-exit", "x"], "--success-on-exit"),
        (
            &["--success-on-exit", "3", "--stop-on-exit", "1-5"],
            "--success-on-exit 3: exit code 3 is also in --stop-on-exit",
        ),
        (
            &["--retry-on-exit", "7", "--success-on-exit", "2,7"],
            "--success-on-exit 2,7: exit code 7 is also in --retry-on-exit",
        ),
        (&["--until-output", "("], "--until-output"),
        (&["--reset-after", "0"], "--reset-after"),
        (&["--reset-after", "-1s"], "--reset-after"),
        (&["--reset-after", "soon"], "--reset-after"),
        (&["--on-retry", ""], "--on-retry"),
        (&["--on-give-up", " "], "--on-give-up"),
        (&["--until-failure", "--on-give-up", "x"], "--on-give-up"),
        (
            &["--until-failure", "--until-output", "x"],
            "--until-output",
        ),
    ];
    for (args, flag) in cases {
        retry()
            .args(*args)
            .args(["--", "sh", "-c", &touch])
            .assert()
            .code(125)
            .stderr(
                predicate::str::contains(*flag).and(predicate::str::starts_with("retry: error:")),
            );
        assert!(!marker.exists(), "{args:?} ran the command");
    }
}

#[test]
fn help_and_explain_tell_of_the_hooks_and_conditions() {
    let help = retry().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in [
        "Hooks and conditions:",
        "--on-retry <CMD>",
        "--on-give-up <CMD>",
        "--success-on-exit <CODES>",
        "--until-output <REGEX>",
        "--until-failure",
        "--reset-after <DURATION>",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help");
    }
    retry()
        .args(["--explain", "--success-on-exit", "3", "--until-output", "^ok$"])
        .args(["--on-retry", "make clean", "--on-give-up", "alert", "-T", "10s"])
        .args(["--reset-after", "5m"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "Success: exit 0 or 3 (--success-on-exit) and a line of output (stdout or stderr) matching --until-output '^ok$'",
        ))
        .stdout(predicate::str::contains(
            "--on-retry: 'make clean' runs after each sleep, right before the retry (at most 10s each",
        ))
        .stdout(predicate::str::contains(
            "--on-give-up: alert runs once if the run fails (at most 10s)",
        ))
        .stdout(predicate::str::contains("--reset-after 5m:"));
    retry()
        .args(["--explain", "--until-failure"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Schedule: unlimited attempts"))
        .stdout(predicate::str::contains(
            "--until-failure: the command runs again",
        ));
}

#[test]
fn the_words_of_a_hunt_and_of_a_hook_cut_short_tell_what_happened() {
    // --until-failure says how many runs passed, not "succeeded on attempt N".
    let out = retry()
        .args(["-n", "3", "-d", "0", "--until-failure", "--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--until-failure: all 3 runs passed"),
        "{stderr}"
    );
    assert!(!stderr.contains("succeeded on attempt"), "{stderr}");
    // A hook cut short by --max-time is not followed by a retry: no
    // "retrying anyway".
    let out = retry()
        .args([
            "-n",
            "3",
            "-d",
            "10ms",
            "-t",
            "500ms",
            "--on-retry",
            "sleep 5",
        ])
        .args(["--", "sh", "-c", "exit 4"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no retry follows"), "{stderr}");
    assert!(!stderr.contains("retrying anyway"), "{stderr}");
}
