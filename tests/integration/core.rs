//! The core runner: policy flags, the loop, exit statuses, environment,
//! reporting, `--explain`.

use std::time::{Duration, Instant};

use predicates::prelude::*;

use crate::util::*;

#[test]
fn a_command_that_fails_twice_succeeds_on_the_third_attempt() {
    let dir = scratch();
    let flaky = flaky(dir.path(), 2, 7);
    retry()
        .args(["-d", "1ms", "--"])
        .arg(&flaky)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "attempt 1/5 failed: exit 7 (transient); retrying in",
        ))
        .stderr(predicate::str::contains("succeeded on attempt 3/5 after"));
    assert_eq!(runs(dir.path()), 3);
}

#[test]
fn the_final_attempts_exit_code_is_passed_through() {
    for code in [3, 255] {
        let dir = scratch();
        let flaky = flaky(dir.path(), 100, code);
        retry()
            .args(["-n", "2", "-d", "1ms", "--"])
            .arg(&flaky)
            .assert()
            .code(code)
            .stderr(predicate::str::contains("gave up after 2 attempts in"))
            .stderr(predicate::str::contains(format!(": exit {code}")));
        assert_eq!(runs(dir.path()), 2);
    }
}

#[test]
fn a_missing_command_is_127_at_once_without_retrying() {
    let started = Instant::now();
    retry()
        .args(["-n", "5", "-d", "5s", "--", "/nonexistent/command"])
        .assert()
        .code(127)
        .stderr(predicate::str::contains(
            "'/nonexistent/command': no such file",
        ));
    assert!(started.elapsed() < Duration::from_secs(3));
    retry()
        .env("PATH", "/nowhere")
        .args(["-d", "5s", "ls"])
        .assert()
        .code(127);
}

#[test]
fn a_command_that_is_not_executable_is_126_without_retrying() {
    let dir = scratch();
    let plain = dir.path().join("plain");
    std::fs::write(&plain, "echo hi\n").unwrap();
    for target in [plain.to_str().unwrap(), "/", "/etc/passwd"] {
        let started = Instant::now();
        retry().args(["-d", "5s", "--", target]).assert().code(126);
        assert!(started.elapsed() < Duration::from_secs(3), "{target}");
    }
}

#[test]
fn a_bad_interpreter_is_127() {
    let dir = scratch();
    let bad = script(dir.path(), "bad", "#!/nonexistent/interp\n");
    retry()
        .args(["-d", "5s", "--"])
        .arg(&bad)
        .assert()
        .code(127)
        .stderr(predicate::str::contains("bad interpreter"));
}

#[test]
fn every_usage_error_is_125_names_the_flag_and_runs_nothing() {
    let dir = scratch();
    let marker = dir.path().join("ran");
    let touch = format!("touch '{}'", marker.display());
    let cases: &[(&[&str], &str)] = &[
        (&["--bogus"], "--bogus"),
        (&["--timeout", "xyz"], "--timeout"),
        (&["--timeout", "-1"], "--timeout"),
        (&["--timeout", "nan"], "--timeout"),
        (&["--timeout", "0"], "--timeout"),
        (&["--max-time", "200y"], "--max-time"),
        (&["--delay", "1e30"], "--delay"),
        (&["--cap", "0"], "--cap"),
        (&["--kill-after", "soon"], "--kill-after"),
        (&["--splay", "-5s"], "--splay"),
        (&["--attempts", "0"], "--attempts"),
        (&["--attempts", "many"], "--attempts"),
        (&["--multiplier", "0.5"], "--multiplier"),
        (&["--multiplier", "inf"], "--multiplier"),
        (&["--jitter", "lots"], "--jitter"),
        (&["--jitter", "0"], "--jitter"),
        (&["--jitter", "150%"], "--jitter"),
        (&["--retry-on-exit", "256"], "--retry-on-exit"),
        (&["--stop-on-exit", "5-3"], "--stop-on-exit"),
        (&["--retry-on-output", "("], "--retry-on-output"),
        (&["--stop-on-output", "[z-a]"], "--stop-on-output"),
        (&["--stdin", "sometimes"], "--stdin"),
        (&["--log-format", "xml"], "--log-format"),
        (&["--preset", "nosuch"], "--preset"),
        (&["--preset", "Bad!"], "--preset"),
        (&["--splay", "10s", "--max-time", "5s"], "--splay"),
        (&["--log-file", "/nonexistent/dir/log"], "--log-file"),
        (
            &["--metrics-file", "/nonexistent/dir/job.prom"],
            "--metrics-file",
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
    // No command at all.
    retry().assert().code(125);
}

#[test]
fn help_and_version_exit_zero_on_stdout() {
    retry()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("Backoff:"))
        .stdout(predicate::str::contains("Limits:"));
    retry()
        .arg("--version")
        .assert()
        .success()
        .stdout(predicate::str::starts_with("retry "));
}

#[test]
fn help_into_a_closed_pipe_does_not_panic() {
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{BIN}' --help | head -1; echo \"status=${{PIPESTATUS:-x}}\""
        ))
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&output.stderr).contains("panicked"));
}

#[test]
fn main_output_that_cannot_be_written_is_retrys_own_failure() {
    let dir = scratch();
    let state = dir.path().to_str().unwrap();
    let modes: &[&[&str]] = &[
        &["--help"],
        &["--version"],
        &["--generate", "man"],
        &["--explain", "--", "true"],
        &["--preset", "list"],
        &["--preset", "show", "curl"],
        &["--circuit", "x", "--state-dir", state, "--circuit-status"],
    ];
    for args in modes {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = retry_std().args(*args).stdout(full).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Before: the write error was dropped, and retry exited 0.
        assert_eq!(out.status.code(), Some(125), "{args:?}: {stderr}");
        assert_eq!(
            stderr, "retry: error: writing to stdout: No space left on device (ENOSPC)\n",
            "{args:?}"
        );
        // A reader that went away is no error: quiet, 0.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = retry_std().args(*args).stdout(writer).output().unwrap();
        assert_eq!(
            (out.status.code(), String::from_utf8_lossy(&out.stderr)),
            (Some(0), "".into()),
            "{args:?}"
        );
    }
}

#[test]
fn every_duration_form_is_accepted() {
    for value in [
        "250ms", "1s", "2m", "1h 30m", "1min", "1.5s", "0.25m", "0.5", "3",
    ] {
        retry()
            .args(["--timeout", value, "--", "true"])
            .assert()
            .success();
    }
}

/// The CPU time (user and system) of retry started with `args`, reaped by
/// `wait4` once it ends by itself, or after `end_after` with SIGTERM.
fn cpu_time_of(args: &[&str], end_after: Option<Duration>) -> Duration {
    #[allow(clippy::zombie_processes)] // reaped by wait4 below
    let child = retry_std()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = i32::try_from(child.id()).unwrap();
    if let Some(after) = end_after {
        std::thread::sleep(after);
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid).unwrap(),
            rustix::process::Signal::TERM,
        )
        .unwrap();
    }
    let mut status = 0;
    // SAFETY: all zeroes is a valid rusage.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 writes the status and the usage of our own child
    // `pid` into the two buffers; nothing else reaps it (`child` is
    // never waited for).
    let reaped = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) };
    assert_eq!(reaped, pid);
    // `tv_usec` is an i32 on macOS, an i64 on Linux.
    #[allow(clippy::useless_conversion)]
    let time = |t: libc::timeval| {
        Duration::from_micros((t.tv_sec * 1_000_000 + i64::from(t.tv_usec)).unsigned_abs())
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

#[test]
fn a_time_limit_of_forty_days_waits_without_spinning() {
    // macOS's poll refuses a timeout past 24.8 days: a wait read that as
    // "time is up" and spun at full CPU. Every wait goes in slices of a
    // day (sys::wait), on every system; here, that none spins.
    let second = Duration::from_secs(1);
    for (args, end_after) in [
        (&["-T", "40d", "--", "sleep", "1"][..], None),
        (&["--max-time", "40d", "--", "sleep", "1"][..], None),
        // The sleep between two attempts, cut short by SIGTERM.
        (
            &["-n", "2", "-d", "40d", "--cap", "40d", "--", "false"][..],
            Some(second),
        ),
    ] {
        let started = Instant::now();
        let cpu = cpu_time_of(args, end_after);
        assert!(started.elapsed() >= second, "{args:?}");
        assert!(
            cpu < Duration::from_millis(300),
            "{args:?}: {cpu:?} of CPU in {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn after_a_timed_out_attempt_the_previous_exit_is_124_as_reported() {
    // The attempt died of the SIGTERM its timeout sent (143 to a shell), but
    // retry reports it as "timed out (exit 124)": the variable says the same,
    // for the next attempt and for --on-retry.
    let dir = scratch();
    let log = dir.path().join("env.log");
    let body = format!(
        "echo \"attempt $RETRY_ATTEMPT prev=[$RETRY_PREVIOUS_EXIT]\" >> '{log}'; [ $RETRY_ATTEMPT -ge 2 ] || exec sleep 5",
        log = log.display()
    );
    let hook = format!(
        "echo \"hook prev=[$RETRY_PREVIOUS_EXIT]\" >> '{}'",
        log.display()
    );
    retry()
        .args([
            "-n",
            "2",
            "-d",
            "1ms",
            "-T",
            "200ms",
            "--on-retry",
            &hook,
            "--",
            "sh",
            "-c",
            &body,
        ])
        .assert()
        .success();
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        text,
        "attempt 1 prev=[]\nhook prev=[124]\nattempt 2 prev=[124]\n"
    );
}

#[test]
fn the_child_gets_its_attempt_number_limit_run_id_and_previous_exit() {
    let dir = scratch();
    let log = dir.path().join("env.log");
    let body = format!(
        "echo \"$RETRY_ATTEMPT|$RETRY_MAX_ATTEMPTS|$RETRY_RUN_ID|$RETRY_PREVIOUS_EXIT\" >> '{}'; [ $RETRY_ATTEMPT -ge 3 ] || exit 4",
        log.display()
    );
    retry()
        .args(["-n", "4", "-d", "1ms", "--", "sh", "-c", &body])
        .assert()
        .success();
    let text = std::fs::read_to_string(&log).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('|').collect()).collect();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0][0], "1");
    assert_eq!(rows[2][0], "3");
    assert!(rows.iter().all(|r| r[1] == "4"));
    assert!(
        rows[0][2].len() >= 16 && rows.iter().all(|r| r[2] == rows[0][2]),
        "one run id for every attempt"
    );
    assert_eq!(rows[0][3], "");
    assert_eq!(rows[1][3], "4");

    // Unlimited attempts: an empty limit.
    let out = retry()
        .args([
            "--max-time",
            "5s",
            "--",
            "sh",
            "-c",
            "printf '[%s]' \"$RETRY_MAX_ATTEMPTS\"",
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "[]");
}

#[test]
fn two_runs_get_different_run_ids() {
    let id = || {
        retry()
            .args(["--", "sh", "-c", "printf %s \"$RETRY_RUN_ID\""])
            .output()
            .unwrap()
            .stdout
    };
    assert_ne!(id(), id());
}

#[test]
fn arguments_reach_the_child_verbatim() {
    let out = retry()
        .args(["--", "printf", "%s|", "", "a b"])
        .arg(std::ffi::OsStr::new(unsafe_non_utf8()))
        .args(["--", "--help", "-n"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout, b"|a b|\xff|--|--help|-n|");
}

fn unsafe_non_utf8() -> &'static std::ffi::OsStr {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::OsStr::from_bytes(b"\xff")
}

#[test]
fn stop_on_exit_ends_the_run_at_once() {
    let dir = scratch();
    let flaky = flaky(dir.path(), 100, 2);
    retry()
        .args(["-d", "1ms", "--stop-on-exit", "2,9"])
        .arg(&flaky)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("permanent"));
    assert_eq!(runs(dir.path()), 1);
}

#[test]
fn retry_on_exit_makes_other_codes_permanent() {
    let dir = scratch();
    let flaky = flaky(dir.path(), 100, 9);
    retry()
        .args(["-d", "1ms", "--retry-on-exit", "1-5,75"])
        .arg(&flaky)
        .assert()
        .code(9);
    assert_eq!(runs(dir.path()), 1);
    let dir = scratch();
    let flaky75 = crate::util::flaky(dir.path(), 100, 75);
    retry()
        .args(["-n", "3", "-d", "1ms", "--retry-on-exit", "1-5,75"])
        .arg(&flaky75)
        .assert()
        .code(75);
    assert_eq!(runs(dir.path()), 3);
}

#[test]
fn json_events_follow_the_contract_schema() {
    let dir = scratch();
    let flaky = flaky(dir.path(), 2, 7);
    let (out, events) = json_run(&["-d", "1ms", "-c", "5ms", "--", flaky.to_str().unwrap()]);
    assert!(out.status.success());
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["attempt", "sleep", "attempt", "sleep", "attempt", "done"]
    );
    let first = &events[0];
    assert_eq!(first["attempt"], 1);
    assert_eq!(first["max_attempts"], 5);
    assert_eq!(first["exit_code"], 7);
    assert!(first["signal"].is_null());
    assert_eq!(first["timed_out"], false);
    assert!(first["duration_ms"].is_u64());
    assert_eq!(first["outcome"], "transient");
    assert_eq!(first["reason"], "exit 7");
    let sleep = &events[1];
    assert_eq!(sleep["attempt"], 1);
    assert!(sleep["delay_ms"].as_u64().unwrap() <= 1);
    assert_eq!(sleep["ceiling_ms"], 1);
    assert_eq!(sleep["source"], "backoff");
    assert_eq!(events[4]["outcome"], "success");
    let done = &events[5];
    assert_eq!(done["outcome"], "success");
    assert_eq!(done["attempts"], 3);
    assert!(done["elapsed_ms"].is_u64());
    assert_eq!(done["exit_code"], 0);
}

#[test]
fn json_reports_exhausted_and_permanent_runs() {
    let (_, events) = json_run(&["-n", "2", "-d", "1ms", "--", "sh", "-c", "exit 3"]);
    let done = events.last().unwrap();
    assert_eq!(done["outcome"], "exhausted");
    assert_eq!(done["exit_code"], 3);
    let (_, events) = json_run(&["--stop-on-exit", "3", "--", "sh", "-c", "exit 3"]);
    assert_eq!(events.last().unwrap()["outcome"], "permanent");
    let (_, events) = json_run(&["--", "/nonexistent"]);
    assert_eq!(events[0]["exit_code"], 127);
    assert_eq!(events.last().unwrap()["exit_code"], 127);
}

#[test]
fn no_sleep_follows_the_last_attempt() {
    let started = Instant::now();
    let (out, events) = json_run(&["-n", "2", "-d", "300ms", "-j", "none", "--", "false"]);
    assert_eq!(out.status.code(), Some(1));
    let sleeps = events.iter().filter(|e| e["event"] == "sleep").count();
    assert_eq!(sleeps, 1);
    // One 300 ms sleep, not two.
    assert!(
        started.elapsed() < Duration::from_millis(590),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn max_time_alone_means_unlimited_attempts_and_no_sleep_past_it() {
    let started = Instant::now();
    let (out, events) = json_run(&[
        "--max-time",
        "700ms",
        "-d",
        "50ms",
        "-c",
        "100ms",
        "-j",
        "none",
        "--",
        "false",
    ]);
    let elapsed = started.elapsed();
    let done = events.last().unwrap();
    // On a loaded machine the last `false` may still be starting when the
    // budget ends: it is then terminated, as the contract says (124, the
    // done event's timed_out). Either way no sleep went past the budget.
    let cut = done["timed_out"] == true;
    assert_eq!(out.status.code(), Some(if cut { 124 } else { 1 }), "{done}");
    assert_eq!(done["outcome"], "deadline");
    let attempts = done["attempts"].as_u64().unwrap();
    assert!(
        attempts > 5,
        "only {attempts} attempts: --max-time alone must not stop at 5"
    );
    assert!(
        events
            .iter()
            .filter(|e| e["event"] == "attempt")
            .all(|e| e["max_attempts"].is_null())
    );
    // Gave up before the budget ran out rather than sleep past it.
    assert!(elapsed < Duration::from_millis(1500), "{elapsed:?}");
    // No sleep was started that the budget would have cut: the run ended
    // on its last attempt, or on a sleep planned to end within the budget
    // that a loaded machine woke from too late to start another (the
    // planned end read from the events' clock: the run started before its
    // first event, so its deadline is no later than that plus 700 ms; 30
    // ms for the sleep's event being written just after it was planned).
    let last = &events[events.len() - 2];
    if last["event"] == "sleep" {
        let at = |event: &serde_json::Value| {
            humantime::parse_rfc3339(event["ts"].as_str().unwrap()).unwrap()
        };
        let planned_end = at(last) + Duration::from_millis(last["delay_ms"].as_u64().unwrap());
        let budget_end = at(&events[0]) + Duration::from_millis(700 + 30);
        assert!(
            planned_end <= budget_end,
            "a sleep past --max-time: {events:?}"
        );
    } else {
        assert_eq!(last["event"], "attempt", "{events:?}");
    }
}

#[test]
fn a_sleep_that_would_pass_max_time_is_not_started() {
    let started = Instant::now();
    retry()
        .args(["--max-time", "2s", "-d", "5s", "-j", "none", "--", "false"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("--max-time reached"));
    assert!(started.elapsed() < Duration::from_millis(1500));
}

#[test]
fn a_thousand_attempts_with_multiplier_10_do_not_overflow() {
    retry()
        .args([
            "-n", "1000", "-d", "0", "-m", "10", "-c", "1ms", "-q", "--", "false",
        ])
        .timeout(Duration::from_secs(120))
        .assert()
        .code(1);
    retry()
        .args(["--explain", "-n", "10000", "-m", "10"])
        .assert()
        .success();
}

#[test]
fn quiet_prints_nothing_and_verbose_prints_the_policy_and_each_start() {
    retry()
        .args(["-q", "-n", "2", "-d", "1ms", "--", "false"])
        .assert()
        .code(1)
        .stderr("");
    retry()
        .args(["-v", "-n", "2", "-d", "1ms", "--", "false"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("policy: 2 attempts"))
        .stderr(predicate::str::contains("attempt 2/2: false"));
}

#[test]
fn log_file_receives_the_messages_and_appends() {
    let dir = scratch();
    let log = dir.path().join("retry.log");
    for _ in 0..2 {
        retry()
            .args(["-n", "2", "-d", "1ms", "--log-file"])
            .arg(&log)
            .args(["--", "false"])
            .assert()
            .code(1)
            .stderr("");
    }
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.matches("gave up after 2 attempts").count(), 2);
}

#[test]
fn splay_sleeps_before_the_first_attempt() {
    let (_, events) = json_run(&["--splay", "50ms", "--", "true"]);
    assert_eq!(events[0]["event"], "sleep");
    assert_eq!(events[0]["source"], "splay");
    assert_eq!(events[0]["attempt"], 0);
    assert!(events[0]["delay_ms"].as_u64().unwrap() < 50);
}

#[test]
fn explain_shows_the_seed_schedule_and_runs_nothing() {
    let dir = scratch();
    let marker = dir.path().join("ran");
    retry()
        .args([
            "--explain",
            "--delay",
            "1s",
            "--cap",
            "30s",
            "--attempts",
            "5",
            "--",
            "touch",
        ])
        .arg(&marker)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "worst case 15s of sleep, mean 7.5s",
        ))
        .stdout(predicate::str::contains("ceiling"));
    assert!(!marker.exists());
}

#[test]
fn explain_shows_where_max_time_cuts_the_schedule() {
    retry()
        .args(["--explain", "-d", "1s", "-j", "none", "--max-time", "10s"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "--max-time 10s ends the run before retry 4",
        ));
    retry()
        .args(["--explain", "-d", "1s", "--max-time", "1m"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "ends the run around here on average",
        ));
}
