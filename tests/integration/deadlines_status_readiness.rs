//! Hand-offs between retry and what runs around it: the deadline a run
//! passes to the command (`RETRY_DEADLINE`) and that a nested retry keeps,
//! the status a run that gave up on a transient failure hands to a CI
//! system (`--give-up-exit`), and readiness (`--successes`).

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant, SystemTime};

use predicates::prelude::*;

use crate::util::*;

fn unix_ms() -> u64 {
    u64::try_from(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

fn read_number(path: &std::path::Path) -> u64 {
    let text = std::fs::read_to_string(path).unwrap();
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("{}: {text:?}", path.display()))
}

// ---- RETRY_DEADLINE ----

#[test]
fn the_command_and_on_retry_get_the_run_deadline_and_only_when_there_is_one() {
    let dir = scratch();
    let seen = dir.path().join("seen");
    let hook = dir.path().join("hook");
    let before = unix_ms();
    let out = retry()
        .args(["-t", "5s", "-n", "2", "-d", "1ms", "--on-retry"])
        .arg(format!("echo \"$RETRY_DEADLINE\" > '{}'", hook.display()))
        .args(["--", "sh", "-c"])
        .arg(format!(
            "echo \"$RETRY_DEADLINE\" > '{}'; exit 1",
            seen.display()
        ))
        .output()
        .unwrap();
    let after = unix_ms();
    assert_eq!(out.status.code(), Some(1));
    let deadline = read_number(&seen);
    assert!(
        (before + 5_000 - 1..=after + 5_000).contains(&deadline),
        "{before} .. {deadline} .. {after}"
    );
    assert_eq!(read_number(&hook), deadline, "the hook's is the run's");

    // No --max-time (and --timeout is an attempt's limit, not the run's):
    // no deadline, so none is given.
    retry()
        .args([
            "-T",
            "5s",
            "--",
            "sh",
            "-c",
            "echo \"${RETRY_DEADLINE-unset}\"",
        ])
        .assert()
        .success()
        .stdout("unset\n");
}

/// An outer retry with `-t 4s` runs an inner one that asked for a minute:
/// the inner one cuts its --max-time to what is left, says so under -v,
/// passes the outer deadline on unchanged, and ends on its own before it.
#[test]
fn a_nested_retry_never_runs_past_the_outer_deadline() {
    let dir = scratch();
    let outer_seen = dir.path().join("outer");
    let inner_seen = dir.path().join("inner");
    let inner_log = dir.path().join("inner.log");
    let inner = format!(
        "echo \"$RETRY_DEADLINE\" > '{outer}'; '{BIN}' -v -t 1m -d 300ms -j none --log-file '{log}' -- sh -c 'echo \"$RETRY_DEADLINE\" > {inner}; exit 1'",
        outer = outer_seen.display(),
        log = inner_log.display(),
        inner = inner_seen.display(),
    );
    let started = Instant::now();
    let out = retry()
        .args(["-n", "1", "-t", "4s", "--", "sh", "-c", &inner])
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    let log = std::fs::read_to_string(&inner_log).unwrap();
    // Attempts at 0, 0.3, 0.9 and 2.1 s; the next sleep (2.4 s) would end
    // past the outer deadline: the inner run ends at about 2.1 s.
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}\n{log}");
    assert_eq!(out.status.code(), Some(1), "{log}");
    assert_eq!(
        read_number(&inner_seen),
        read_number(&outer_seen),
        "the outer deadline is passed on as it came"
    );
    assert!(
        log.contains("RETRY_DEADLINE: the outer run's deadline comes in"),
        "{log}"
    );
    assert!(log.contains("--max-time 1m is cut to"), "{log}");
    // The inner run ended by its own decision (not by the outer one's
    // SIGTERM): no sleep would have ended before the deadline.
    assert!(log.contains("the next sleep"), "{log}");
    assert!(
        log.contains("(the deadline was the outer run's, RETRY_DEADLINE)"),
        "{log}"
    );
    assert!(!log.contains("interrupted"), "{log}");
    // Nesting under a deadline is bounded: no warning about it.
    assert!(!log.contains("running inside another retry"), "{log}");
}

#[test]
fn a_nested_retry_without_an_outer_deadline_still_warns() {
    let inner = format!("'{BIN}' -n 2 -d 1ms -- true");
    retry()
        .args(["-n", "3", "--", "sh", "-c", &inner])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "warning: running inside another retry (its attempt 1): retries multiply, 3 outer x 2 inner = 6",
        ));
}

#[test]
fn an_inherited_deadline_bounds_a_run_without_max_time() {
    let (out, events) = {
        let deadline = (unix_ms() + 600).to_string();
        let out = retry_std()
            .env("RETRY_DEADLINE", &deadline)
            .args(["--log-format", "json", "-n", "100", "-d", "1ms"])
            .args(["--", "sh", "-c", "sleep 5"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let events = json_events(&out.stderr);
        (out, events)
    };
    // The first attempt was ended at the deadline, and none followed.
    assert_eq!(out.status.code(), Some(124));
    let done = events.last().unwrap();
    assert_eq!(done["outcome"], "deadline");
    assert_eq!(done["attempts"], 1);
    assert!(done["elapsed_ms"].as_u64().unwrap() < 3_000, "{done}");
}

#[test]
fn an_expired_deadline_starts_no_attempt() {
    let dir = scratch();
    let ran = dir.path().join("ran");
    let past = (unix_ms() - 1_000).to_string();
    let out = retry_std()
        .env("RETRY_DEADLINE", &past)
        .args(["--log-format", "json", "--", "touch"])
        .arg(&ran)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(124));
    assert!(!ran.exists(), "an attempt ran");
    let done = json_events(&out.stderr).pop().unwrap();
    assert_eq!(done["outcome"], "deadline");
    assert_eq!(done["attempts"], 0);
    assert_eq!(done["command_exit_code"], serde_json::Value::Null);

    // A deadline is a transient end: handed off like the others.
    retry()
        .env("RETRY_DEADLINE", &past)
        .args(["--give-up-exit", "75", "--", "touch"])
        .arg(&ran)
        .assert()
        .code(75);
    assert!(!ran.exists(), "an attempt ran");
}

#[test]
fn a_deadline_that_cannot_be_read_is_refused_by_name() {
    let dir = scratch();
    let ran = dir.path().join("ran");
    for bad in ["soon", "-1", "1780000000", "12.5"] {
        retry()
            .env("RETRY_DEADLINE", bad)
            .args(["--", "touch"])
            .arg(&ran)
            .assert()
            .code(125)
            .stderr(predicate::str::contains(format!("RETRY_DEADLINE '{bad}'")));
        assert!(!ran.exists(), "{bad}: an attempt ran");
    }
    // Empty counts as unset.
    retry()
        .env("RETRY_DEADLINE", "")
        .args(["--", "true"])
        .assert()
        .success();
}

// ---- --give-up-exit ----

#[test]
fn give_up_exit_replaces_the_status_of_a_transient_end_only() {
    // Attempts exhausted: the code, while the JSON keeps the command's.
    let (out, events) = json_run(&[
        "-n",
        "2",
        "-d",
        "1ms",
        "--give-up-exit",
        "75",
        "--",
        "sh",
        "-c",
        "exit 7",
    ]);
    assert_eq!(out.status.code(), Some(75));
    let attempts: Vec<_> = events.iter().filter(|e| e["event"] == "attempt").collect();
    assert!(attempts.iter().all(|e| e["exit_code"] == 7), "{events:?}");
    let done = events.last().unwrap();
    assert_eq!(done["outcome"], "exhausted");
    assert_eq!(done["exit_code"], 75);
    assert_eq!(done["command_exit_code"], 7);

    // The text summary says both.
    retry()
        .args(["-n", "2", "-d", "1ms", "--give-up-exit", "75"])
        .args(["--", "sh", "-c", "exit 7"])
        .assert()
        .code(75)
        .stderr(predicate::str::contains("gave up after 2 attempts in"))
        .stderr(predicate::str::contains("exit 7; exit 75 (--give-up-exit)"));

    // --max-time: the code instead of 124.
    retry()
        .args(["-t", "300ms", "--give-up-exit", "75", "--", "sleep", "5"])
        .assert()
        .code(75);

    // A permanent failure keeps the command's status ...
    retry()
        .args(["--stop-on-exit", "7", "--give-up-exit", "75"])
        .args(["--", "sh", "-c", "exit 7"])
        .assert()
        .code(7);
    retry()
        .args(["--give-up-exit", "75", "--", "/nonexistent/command"])
        .assert()
        .code(127);
    // ... and a success is a success.
    retry()
        .args(["--give-up-exit", "75", "--", "true"])
        .assert()
        .success();
}

#[test]
fn give_up_exit_is_what_on_give_up_is_told() {
    let dir = scratch();
    let told = dir.path().join("told");
    retry()
        .args(["-n", "1", "--give-up-exit", "99", "--on-give-up"])
        .arg(format!(
            "echo \"$RETRY_EXIT $RETRY_OUTCOME\" > '{}'",
            told.display()
        ))
        .args(["--", "sh", "-c", "exit 3"])
        .assert()
        .code(99);
    assert_eq!(std::fs::read_to_string(&told).unwrap(), "99 exhausted\n");
}

#[test]
fn give_up_exit_hands_off_a_budget_refusal_and_an_open_circuit() {
    let state = scratch();
    std::fs::set_permissions(state.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let state_dir = state.path().display().to_string();
    // A bucket of one token, nothing flowing in: the second retry is refused.
    let budget = [
        "-d",
        "0",
        "-n",
        "5",
        "--budget",
        "b",
        "--budget-burst",
        "1",
        "--budget-ratio",
        "0",
        "--budget-min",
        "0/s",
        "--state-dir",
        &state_dir,
        "--give-up-exit",
        "75",
        "--log-format",
        "json",
    ];
    let out = retry()
        .args(budget)
        .args(["--", "sh", "-c", "exit 3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(75));
    let done = json_events(&out.stderr).pop().unwrap();
    assert_eq!(done["outcome"], "budget-exhausted");
    assert_eq!(done["command_exit_code"], 3);

    // Two failed runs open the circuit (for an hour: a loaded machine must
    // not see the cooldown end); the third is refused with the code.
    for _ in 0..2 {
        retry()
            .args(circuit_args_cooling("c", "1h"))
            .args(["--state-dir", &state_dir, "--", "false"])
            .assert()
            .code(1);
    }
    retry()
        .args(circuit_args_cooling("c", "1h"))
        .args([
            "--state-dir",
            &state_dir,
            "--give-up-exit",
            "9",
            "--",
            "true",
        ])
        .assert()
        .code(9);
}

#[test]
fn give_up_exit_takes_a_code_from_0_to_255() {
    for bad in ["256", "-1", "x", ""] {
        retry()
            .args(["--give-up-exit", bad, "--", "true"])
            .assert()
            .code(125)
            .stderr(predicate::str::contains("--give-up-exit"));
    }
    retry()
        .args(["-n", "1", "--give-up-exit", "0", "--", "false"])
        .assert()
        .success();
}

// ---- --successes ----

/// A script whose run number N (from 1) succeeds when the Nth letter of
/// `plan` is S, and fails with 7 when it is F (past the plan: S).
fn planned(dir: &std::path::Path, plan: &str) -> std::path::PathBuf {
    let count = dir.join("count");
    script(
        dir,
        "planned.sh",
        &format!(
            "#!/bin/sh\nn=$(cat '{c}' 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > '{c}'\nletter=$(printf %s '{plan}' | cut -c $n)\n[ \"$letter\" = F ] && exit 7\nexit 0\n",
            c = count.display()
        ),
    )
}

#[test]
fn successes_needs_that_many_in_a_row_and_a_failure_starts_over() {
    let dir = scratch();
    let command = planned(dir.path(), "SFSSS");
    let command = command.to_str().unwrap();
    let (out, events) = json_run(&["-d", "100ms", "-n", "6", "--successes", "3", "--", command]);
    assert_eq!(out.status.code(), Some(0), "{events:?}");
    assert_eq!(runs(dir.path()), 5);
    let done = events.last().unwrap();
    assert_eq!(done["outcome"], "success");
    assert_eq!(done["attempts"], 5);
    assert_eq!(done["successes"], 3);
    // Between successes: the base delay, steady (not jittered).
    let sleeps: Vec<_> = events.iter().filter(|e| e["event"] == "sleep").collect();
    assert_eq!(sleeps.len(), 4);
    for after_success in [1, 3, 4] {
        let sleep = sleeps
            .iter()
            .find(|e| e["attempt"] == after_success)
            .unwrap();
        assert_eq!(sleep["delay_ms"], 100, "{sleep}");
    }
    assert!(done["elapsed_ms"].as_u64().unwrap() >= 300, "{done}");
}

#[test]
fn successes_counts_every_attempt_against_the_limit() {
    let dir = scratch();
    let command = planned(dir.path(), "SFSSS");
    let command = command.to_str().unwrap();
    // Four attempts: S F S S, never three in a row: a failed run, never 0.
    let (out, events) = json_run(&["-d", "1ms", "-n", "4", "--successes", "3", "--", command]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(runs(dir.path()), 4);
    let done = events.last().unwrap();
    assert_eq!(done["outcome"], "exhausted");
    assert_eq!(done["successes"], 2);
    assert_eq!(done["command_exit_code"], 0);

    // The same run, handed off.
    let dir = scratch();
    let command = planned(dir.path(), "SFSSS");
    retry()
        .args([
            "-d",
            "1ms",
            "-n",
            "4",
            "--successes",
            "3",
            "--give-up-exit",
            "75",
            "--",
        ])
        .arg(&command)
        .assert()
        .code(75)
        .stderr(predicate::str::contains(
            "only 2 of the 3 successes in a row --successes asks for",
        ));
}

#[test]
fn successes_says_how_the_run_got_ready() {
    let dir = scratch();
    let command = planned(dir.path(), "FSS");
    retry()
        .args(["-d", "1ms", "--successes", "2", "--"])
        .arg(&command)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "succeeded 2 times in a row, the last on attempt 3/5",
        ));
}

#[test]
fn successes_refuses_what_can_never_be_met() {
    for args in [
        &["--successes", "0"][..],
        &["--successes", "x"],
        &["--successes", "6"],
        &["-n", "2", "--successes", "3"],
        &["--successes", "2", "--until-failure"],
    ] {
        retry()
            .args(args)
            .args(["--", "true"])
            .assert()
            .code(125)
            .stderr(predicate::str::contains("--successes"));
    }
    retry()
        .args(["-t", "1m", "--successes", "6", "-d", "1ms", "--", "true"])
        .assert()
        .success();
}

#[test]
fn explain_shows_successes_give_up_exit_and_an_outer_deadline() {
    let deadline = (unix_ms() + 90_000).to_string();
    let out = retry()
        .env("RETRY_DEADLINE", &deadline)
        .args([
            "--explain",
            "-n",
            "6",
            "--successes",
            "3",
            "--give-up-exit",
            "75",
        ])
        .args(["-t", "10m"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(
            "--successes 3: the run succeeds only after 3 successful attempts in a row, 1s apart"
        ),
        "{text}"
    );
    assert!(text.contains("3 failed attempts at most"), "{text}");
    assert!(
        text.contains("--give-up-exit 75: a run that ends on a transient failure"),
        "{text}"
    );
    assert!(text.contains("--max-time 10m is cut to"), "{text}");
    assert!(
        text.lines().next().unwrap().contains("max-time 1m"),
        "{text}"
    );
}

#[test]
fn confirming_a_success_takes_no_retry_budget() {
    let state = scratch();
    std::fs::set_permissions(state.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let state_dir = state.path().display().to_string();
    // One token, nothing flowing in: two retries would be refused, but
    // confirmations are no retries.
    let (out, events) = json_run(&[
        "-d",
        "1ms",
        "--successes",
        "3",
        "--budget",
        "b",
        "--budget-burst",
        "1",
        "--budget-ratio",
        "0",
        "--budget-min",
        "0/s",
        "--state-dir",
        &state_dir,
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let done = events.last().unwrap();
    assert_eq!(done["outcome"], "success", "{events:?}");
    assert_eq!(done["attempts"], 3);
}

#[test]
fn a_run_whose_deadline_had_passed_tells_the_circuit_nothing() {
    let state = scratch();
    std::fs::set_permissions(state.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let state_dir = state.path().display().to_string();
    let past = (unix_ms() - 1_000).to_string();
    for _ in 0..2 {
        retry()
            .env("RETRY_DEADLINE", &past)
            .args(circuit_args_cooling("late", "1h"))
            .args(["--state-dir", &state_dir, "--", "true"])
            .assert()
            .code(124);
    }
    // Two runs that never ran the command opened nothing.
    retry()
        .args(circuit_args_cooling("late", "1h"))
        .args(["--state-dir", &state_dir, "--", "true"])
        .assert()
        .success();
}

#[test]
fn nested_runs_mark_their_lines_with_their_depth() {
    // Three levels; the innermost command fails once and says the depth it
    // was given.
    let dir = scratch();
    let seen = dir.path().join("depth");
    let command = format!(
        "echo \"$RETRY_DEPTH\" >> '{}'; [ \"$RETRY_ATTEMPT\" -ge 2 ]",
        seen.display()
    );
    let out = retry_std()
        .args([
            "-n", "1", "--", BIN, "-n", "1", "--", BIN, "-n", "2", "-d", "1ms",
        ])
        .args(["--", "sh", "-c", &command])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("retry[2]: warning: running inside another retry"),
        "{stderr}"
    );
    assert!(
        stderr.contains("retry[3]: attempt 1/2 failed: exit 1"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("\nretry: "),
        "the outermost said something: {stderr}"
    );
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), "3\n3\n");
}
