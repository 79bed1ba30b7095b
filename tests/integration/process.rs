//! Process control: timeouts, escalation, process groups, signals to retry,
//! parent death, terminals, inherited signal dispositions.

use std::io::{Read, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use predicates::prelude::*;

use crate::util::*;

#[test]
fn a_timed_out_final_attempt_exits_124() {
    let started = Instant::now();
    retry()
        .args(["-T", "200ms", "-n", "1", "--", "sleep", "5"])
        .assert()
        .code(124)
        .stderr(predicate::str::contains("timed out"));
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn a_child_that_ignores_sigterm_is_killed_after_kill_after_with_137() {
    let marker = marker();
    let started = Instant::now();
    retry()
        .args([
            "-T",
            "200ms",
            "--kill-after",
            "200ms",
            "-n",
            "1",
            "--",
            "sh",
            "-c",
        ])
        .arg(format!("trap '' TERM; sleep {marker}"))
        .assert()
        .code(137);
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(350) && elapsed < Duration::from_secs(3),
        "{elapsed:?}"
    );
    assert!(
        none_left(&marker, Duration::from_secs(1)),
        "sleep {marker} survived"
    );
}

#[test]
fn a_stopped_child_still_times_out() {
    let started = Instant::now();
    retry()
        .args(["-T", "200ms", "-n", "1", "--", "sh", "-c", "kill -STOP $$"])
        .assert()
        .code(124);
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn timed_out_attempts_leave_no_background_grandchildren() {
    let (a, b) = (marker(), marker());
    retry()
        .args(["-T", "200ms", "-n", "2", "-d", "1ms", "--", "sh", "-c"])
        .arg(format!("sleep {a} & sleep {b}"))
        .assert()
        .code(124);
    assert!(none_left(&a, Duration::from_secs(1)) && none_left(&b, Duration::from_secs(1)));
}

#[test]
fn in_retrys_group_a_timed_out_attempt_leaves_nothing_running_either() {
    // --foreground (a terminal's foreground): no group of its own to
    // signal, so what the command started, in the foreground (the sleep
    // sh waits for) or the background, is found and ended one by one.
    let (a, b) = (marker(), marker());
    let started = Instant::now();
    retry()
        .args([
            "--foreground",
            "-T",
            "200ms",
            "-n",
            "2",
            "-d",
            "1ms",
            "--",
            "sh",
            "-c",
        ])
        .arg(format!("sleep {a} & sleep {b}; echo not-reached"))
        .assert()
        .code(124)
        .stdout("");
    assert!(started.elapsed() < Duration::from_secs(4));
    assert!(
        none_left(&a, Duration::from_secs(1)) && none_left(&b, Duration::from_secs(1)),
        "a sleep survived its attempt"
    );
}

#[test]
fn in_retrys_group_a_failed_attempts_leftovers_are_ended_but_a_successes_are_not() {
    let dir = scratch();
    let (failed, kept) = (marker(), marker());
    // Attempt 1 fails leaving a sleep; attempt 2 counts it, then succeeds
    // leaving another (a service it started): that one is kept. (Its
    // output goes elsewhere: the test would wait for the pipe it holds.)
    let body = format!(
        "if [ $RETRY_ATTEMPT = 1 ]; then sleep {failed} & exit 1; fi; \
         echo $(ps -eo args | grep -c '^sleep {failed}$') > '{seen}'; sleep {kept} >/dev/null 2>&1 & exit 0",
        seen = dir.path().join("seen").display()
    );
    retry()
        .args([
            "--foreground",
            "-n",
            "2",
            "-d",
            "1ms",
            "--",
            "sh",
            "-c",
            &body,
        ])
        .assert()
        .success();
    let seen = std::fs::read_to_string(dir.path().join("seen")).unwrap();
    assert_eq!(
        seen.trim(),
        "0",
        "the failed attempt's sleep was still running"
    );
    assert_eq!(
        running_then_ended(&kept),
        1,
        "the successful attempt's service was ended"
    );
}

#[test]
fn in_retrys_group_a_service_of_an_earlier_success_is_spared_by_a_later_failure() {
    // --until-failure with no delay: the failing attempt starts within the
    // same 10 ms clock tick as the service became retry's (adopted) child;
    // it was retry's child before that attempt, so it is not the attempt's.
    let dir = scratch();
    let service = marker();
    let count = dir.path().join("count");
    let body = format!(
        "n=$(cat '{count}' 2>/dev/null || echo 0); echo $((n+1)) > '{count}'; \
         if [ $n = 0 ]; then sleep {service} >/dev/null 2>&1 & exit 0; fi; exit 1",
        count = count.display()
    );
    retry()
        .args([
            "--foreground",
            "--until-failure",
            "-d",
            "0",
            "-j",
            "none",
            "-n",
            "3",
        ])
        .args(["--", "sh", "-c", &body])
        .assert()
        .code(1);
    assert_eq!(
        running_then_ended(&service),
        1,
        "the service the first attempt started was killed"
    );
}

#[test]
fn in_retrys_group_a_command_whose_name_is_not_utf8_is_ended_with_what_it_started() {
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch();
    let (a, b) = (marker(), marker());
    let name = std::ffi::OsStr::from_bytes(b"job\xe9");
    let job = dir.path().join(name);
    std::fs::write(&job, format!("#!/bin/sh\nsleep {a} & sleep {b}\n")).unwrap();
    std::fs::set_permissions(&job, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // A survivor would hold the output pipes: the run would end only with it.
    let started = Instant::now();
    retry()
        .args([
            "--foreground",
            "-n",
            "1",
            "-T",
            "300ms",
            "--kill-after",
            "300ms",
            "--",
        ])
        .arg(&job)
        .assert()
        .code(124);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        none_left(&a, Duration::from_secs(2)) && none_left(&b, Duration::from_secs(2)),
        "what the command started survived"
    );
}

#[test]
fn in_retrys_group_leftovers_that_ignore_sigterm_and_keep_forking_are_all_killed() {
    let spawned = marker();
    let started = Instant::now();
    retry()
        .args([
            "--foreground",
            "-n",
            "1",
            "--kill-after",
            "300ms",
            "--",
            "sh",
            "-c",
        ])
        .arg(format!(
            "(trap '' TERM; while :; do sleep {spawned} & done) & sleep 0.2; exit 1"
        ))
        .assert()
        .code(1);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        none_left(&spawned, Duration::from_secs(2)),
        "sleeps forked after the first look survived"
    );
}

#[test]
fn what_a_failed_attempt_left_running_is_ended_before_the_next() {
    let dir = scratch();
    let marker = marker();
    // Each attempt counts the leftovers of earlier attempts still running.
    let body = format!(
        "echo $(ps -eo args | grep -c '^sleep {marker}$') >> '{}'; sleep {marker} & exit 1",
        dir.path().join("seen").display()
    );
    retry()
        .args(["-n", "3", "-d", "1ms", "--", "sh", "-c", &body])
        .assert()
        .code(1);
    let seen = std::fs::read_to_string(dir.path().join("seen")).unwrap();
    assert_eq!(seen.split_whitespace().collect::<Vec<_>>(), ["0", "0", "0"]);
    assert!(none_left(&marker, Duration::from_secs(1)));
}

#[test]
fn max_time_ends_a_running_attempt() {
    let started = Instant::now();
    let out = retry()
        .args(["-t", "300ms", "--log-format", "json", "--", "sleep", "5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(124));
    let events = json_events(&out.stderr);
    assert_eq!(events[0]["timed_out"], true);
    assert_eq!(events.last().unwrap()["outcome"], "deadline");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn the_attempt_limit_is_the_smaller_of_timeout_and_the_rest_of_max_time() {
    let started = Instant::now();
    retry()
        .args(["-t", "300ms", "-T", "10s", "--", "sleep", "5"])
        .assert()
        .code(124);
    assert!(started.elapsed() < Duration::from_secs(3));
}

/// Start retry in the background with `args`; returns the child and a
/// marker file that the attempt creates when it has started.
fn start_in_background(args: &[&str], dir: &std::path::Path) -> std::process::Child {
    // The signals these tests send reach retry at their default action,
    // also when the suite runs under nohup.
    retry_std_default_signals()
        .args(args)
        // What a run killed with SIGKILL leaves (its private run directory)
        // stays in the test's scratch directory.
        .env("TMPDIR", dir)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}: {}", dir.display()))
}

/// Send `name` to a retry sleeping a long backoff after one failed attempt:
/// it must die of that very signal at once, with no second attempt.
fn signal_during_the_backoff(name: &str, number: i32) {
    let dir = scratch();
    let body = tally(dir.path(), "attempts") + "; exit 1";
    let mut child = start_in_background(
        &["-d", "30s", "-j", "none", "--", "sh", "-c", &body],
        dir.path(),
    );
    wait_for_file(&dir.path().join("attempts"), Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(100));
    let sent = Instant::now();
    send_signal(child.id(), name);
    let status = child.wait().unwrap();
    assert!(
        sent.elapsed() < Duration::from_millis(500),
        "{name}: {:?}",
        sent.elapsed()
    );
    assert_eq!(code_and_signal(status), (None, Some(number)), "{name}");
    assert_eq!(lines(dir.path(), "attempts"), 1, "{name}");
}

#[test]
fn sigterm_during_the_backoff_ends_retry_by_sigterm_without_another_attempt() {
    signal_during_the_backoff("TERM", libc::SIGTERM);
}

#[test]
fn sigint_during_the_backoff_ends_retry_by_sigint_without_another_attempt() {
    signal_during_the_backoff("INT", libc::SIGINT);
}

#[test]
fn sigint_during_an_attempt_reaches_the_child_and_retry_dies_of_sigint() {
    let dir = scratch();
    let marker = marker();
    let saw = dir.path().join("saw-int");
    let started = dir.path().join("started");
    let body = format!(
        "trap 'echo INT > \"{saw}\"; exit 1' INT; {tally}; touch '{started}'; sleep {marker} & wait $!",
        saw = saw.display(),
        tally = tally(dir.path(), "attempts"),
        started = started.display()
    );
    let mut child = start_in_background(
        &["-n", "5", "-d", "1ms", "--", "sh", "-c", &body],
        dir.path(),
    );
    wait_for_file(&started, Duration::from_secs(5));
    send_signal(child.id(), "INT");
    let status = child.wait().unwrap();
    assert_eq!(code_and_signal(status), (None, Some(libc::SIGINT)));
    assert!(saw.exists(), "the child never saw SIGINT");
    assert_eq!(lines(dir.path(), "attempts"), 1, "no further attempt");
    assert!(none_left(&marker, Duration::from_secs(1)));
}

#[test]
fn sigterm_to_retry_escalates_to_sigkill_for_a_child_that_ignores_it() {
    let dir = scratch();
    let marker = marker();
    let started = dir.path().join("started");
    let body = format!("trap '' TERM; {}", sleeper(&started, &marker));
    let mut child = start_in_background(
        &["--kill-after", "200ms", "--", "sh", "-c", &body],
        dir.path(),
    );
    wait_for_file(&started, Duration::from_secs(5));
    let sent = Instant::now();
    send_signal(child.id(), "TERM");
    let status = child.wait().unwrap();
    assert_eq!(code_and_signal(status), (None, Some(libc::SIGTERM)));
    let elapsed = sent.elapsed();
    assert!(
        elapsed >= Duration::from_millis(150) && elapsed < Duration::from_secs(3),
        "{elapsed:?}"
    );
    assert!(none_left(&marker, Duration::from_secs(1)));
}

#[test]
fn sighup_and_sigquit_are_forwarded_and_reraised_too() {
    for (name, number) in [("HUP", libc::SIGHUP), ("QUIT", libc::SIGQUIT)] {
        let dir = scratch();
        let marker = marker();
        let started = dir.path().join("started");
        let body = sleeper(&started, &marker);
        let mut child = start_in_background(&["--", "sh", "-c", &body], dir.path());
        wait_for_file(&started, Duration::from_secs(5));
        send_signal(child.id(), name);
        let status = child.wait().unwrap();
        assert_eq!(code_and_signal(status), (None, Some(number)), "{name}");
        assert!(none_left(&marker, Duration::from_secs(1)), "{name}");
    }
}

#[test]
fn a_bash_loop_around_retry_stops_on_ctrl_c_to_its_process_group() {
    let dir = scratch();
    let script_path = script(
        dir.path(),
        "loop.sh",
        &format!(
            "#!/bin/bash\nfor i in 1 2 3; do\n  '{BIN}' -n 3 -- sh -c 'touch {started}; sleep 2'\n  echo \"iter $i rc=$?\"\ndone\necho finished\n",
            started = dir.path().join("started").display()
        ),
    );
    // A script's background job would have SIGINT ignored: Ctrl-C then
    // stops nothing, in the loop or in retry.
    let mut child = with_default_signals("setsid")
        .arg(&script_path)
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_file(&dir.path().join("started"), Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(100));
    // setsid made the script a group leader: signal its whole group, as a
    // terminal's Ctrl-C would.
    let status = std::process::Command::new("kill")
        .args(["-INT", "--", &format!("-{}", child.id())])
        .status()
        .unwrap();
    assert!(status.success());
    let status = child.wait().unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(
        !out.contains("iter 2") && !out.contains("finished"),
        "the loop went on: {out:?}"
    );
    assert_eq!(
        code_and_signal(status),
        (None, Some(libc::SIGINT)),
        "{out:?}"
    );
}

#[test]
fn a_final_attempt_killed_by_a_signal_is_reraised_without_a_core_file() {
    let dir = scratch();
    let status = retry_std()
        .current_dir(dir.path())
        .args(["-n", "1", "--", "sh", "-c", "kill -SEGV $$"])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(code_and_signal(status), (None, Some(libc::SIGSEGV)));
    let cores: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("core"))
        .collect();
    assert!(cores.is_empty());
}

#[test]
fn a_child_killed_by_sigint_ends_the_run_without_retrying() {
    let dir = scratch();
    let body = tally(dir.path(), "attempts") + "; kill -INT $$";
    let status = retry_std_default_signals()
        .args(["-n", "5", "-d", "1ms", "--", "sh", "-c", &body])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(code_and_signal(status), (None, Some(libc::SIGINT)));
    assert_eq!(lines(dir.path(), "attempts"), 1);
}

#[test]
fn retry_killed_with_sigkill_takes_its_attempt_with_it() {
    let dir = scratch();
    let marker = marker();
    let started = dir.path().join("started");
    // exec: the attempt itself is the sleep, so only the parent-death
    // signal can end it.
    let body = format!("touch '{}'; exec sleep {marker}", started.display());
    let mut child = start_in_background(&["--", "sh", "-c", &body], dir.path());
    wait_for_file(&started, Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(50));
    send_signal(child.id(), "KILL");
    let _ = child.wait();
    assert!(
        none_left(&marker, Duration::from_secs(2)),
        "the attempt outlived retry"
    );
}

/// Start `retry ARGS -- sh -c BODY` (BODY touches `started` first), SIGKILL
/// it once the command runs, and say whether every marked sleep is gone.
fn sigkill_leaves_nothing(args: &[&str], body: &str, markers: &[&str]) -> bool {
    let dir = scratch();
    let started = dir.path().join("started");
    let body = format!("touch '{}'; {body}", started.display());
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--", "sh", "-c", &body]);
    let mut child = start_in_background(&all, dir.path());
    wait_for_file(&started, Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(200));
    send_signal(child.id(), "KILL");
    let _ = child.wait();
    markers
        .iter()
        .all(|marker| none_left(marker, Duration::from_secs(3)))
}

#[test]
fn a_sigkilled_retry_takes_what_the_command_started_in_the_background_too() {
    // The parent-death signal reaches the command alone; the run's
    // watchdog ends the attempt's whole group.
    let (a, b) = (marker(), marker());
    assert!(
        sigkill_leaves_nothing(&[], &format!("sleep {a} & exec sleep {b}"), &[&a, &b]),
        "a background sleep outlived a SIGKILLed retry"
    );
}

#[test]
fn in_retrys_group_a_sigkilled_retry_takes_the_attempt_and_its_orphans() {
    // Below the command, and what it orphaned into retry's group (the
    // subshell that started `sleep c` is gone before retry is killed).
    let (a, b, c) = (marker(), marker(), marker());
    let body = format!("(sleep {c} &); sleep {a} & sleep {b}");
    assert!(
        sigkill_leaves_nothing(&["--foreground"], &body, &[&a, &b, &c]),
        "a sleep outlived a SIGKILLed retry"
    );
}

#[test]
fn a_sigkilled_retry_takes_every_hedged_copy() {
    // Each copy's group is guarded, from the copies' own threads: both are
    // ended, what their shells started in the background included.
    let (a, b) = (marker(), marker());
    assert!(
        sigkill_leaves_nothing(
            &["--hedge-after", "50ms"],
            &format!("sleep {a} & sleep {b}"),
            &[&a, &b]
        ),
        "a hedged copy's sleep outlived a SIGKILLed retry"
    );
}

#[test]
fn in_retrys_group_a_grandchild_that_ignores_sigterm_is_killed_at_kill_after() {
    // The shell dies of the time limit's SIGTERM at once; its grandchild,
    // which ignores SIGTERM, is orphaned then: it is found all the same,
    // and killed at --kill-after.
    let (a, b) = (marker(), marker());
    let started = Instant::now();
    retry()
        .args([
            "--foreground",
            "-T",
            "200ms",
            "--kill-after",
            "300ms",
            "-n",
            "1",
        ])
        .args(["--", "sh", "-c"])
        .arg(format!("(trap '' TERM; sleep {a}) & sleep {b}"))
        .assert()
        .code(124);
    assert!(started.elapsed() < Duration::from_secs(8));
    assert!(
        none_left(&a, Duration::from_secs(2)) && none_left(&b, Duration::from_secs(2)),
        "the SIGTERM-ignoring grandchild outlived --kill-after"
    );
}

#[test]
fn a_caller_that_ignores_sigterm_does_not_disarm_the_time_limits() {
    // `trap '' TERM` passes an ignored SIGTERM to retry; the command gets
    // SIGTERM's default all the same, so -T ends it with SIGTERM (124),
    // not with SIGKILL after --kill-after (137).
    for limit in ["-T", "--max-time"] {
        let started = Instant::now();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "trap '' TERM; exec '{BIN}' -n 1 {limit} 300ms --kill-after 5s -- sleep 30"
            ))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(124), "{limit}: {out:?}");
        assert!(started.elapsed() < Duration::from_secs(4), "{limit}");
    }
}

#[test]
fn yes_into_head_ends_at_once_with_sigpipe() {
    // Inherited stdout, and stdout scanned through retry's pipe.
    for scan in ["", "--scan-stdout --retry-on-output X"] {
        let started = Instant::now();
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "'{BIN}' -n 5 {scan} -- yes | head -1; echo \"status=${{PIPESTATUS[0]}}\""
            ))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("status=141"), "{scan:?}: {stdout}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        // A reader that went away on purpose is no failure worth a word.
        assert!(!stderr.contains("failed"), "{scan:?}: {stderr}");
        assert!(!stderr.contains("gave up"), "{scan:?}: {stderr}");
        assert!(!stderr.contains("attempt 2/5"), "{scan:?}: {stderr}");
        assert!(started.elapsed() < Duration::from_secs(3));
    }
}

#[test]
fn an_ignored_sighup_stays_ignored_for_retry_and_the_child() {
    let dir = scratch();
    let started = dir.path().join("started");
    let body = format!(
        "grep SigIgn /proc/$$/status; touch '{}'; sleep 0.5",
        started.display()
    );
    let mut child = std::process::Command::new("env")
        .arg("--ignore-signal=HUP")
        .arg(BIN)
        .args(["--", "sh", "-c", &body])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&started, Duration::from_secs(5));
    send_signal(child.id(), "HUP");
    let status = child.wait().unwrap();
    assert!(status.success(), "retry did not ignore SIGHUP: {status:?}");
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let mask = u64::from_str_radix(out.trim().trim_start_matches("SigIgn:").trim(), 16).unwrap();
    assert_ne!(
        mask & (1 << (libc::SIGHUP - 1)),
        0,
        "the child does not ignore SIGHUP: {out}"
    );
}

#[test]
fn an_inherited_blocked_sigterm_is_unblocked() {
    let dir = scratch();
    let marker = marker();
    let started = dir.path().join("started");
    let body = sleeper(&started, &marker);
    let program = "import signal, os, sys\nsignal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])\nos.execv(sys.argv[1], sys.argv[1:])";
    let mut child = std::process::Command::new("python3")
        .args(["-c", program, BIN, "--", "sh", "-c", &body])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_file(&started, Duration::from_secs(5));
    send_signal(child.id(), "TERM");
    let status = child.wait().unwrap();
    assert_eq!(code_and_signal(status), (None, Some(libc::SIGTERM)));
    assert!(none_left(&marker, Duration::from_secs(1)));
}

#[test]
fn an_inherited_ignored_sigchld_does_not_break_waiting() {
    let started = Instant::now();
    let status = std::process::Command::new("env")
        .args([
            "--ignore-signal=CHLD",
            BIN,
            "-n",
            "2",
            "-d",
            "1ms",
            "--",
            "sh",
            "-c",
            "exit 3",
        ])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(3));
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn a_script_without_a_shebang_runs_under_bin_sh() {
    let dir = scratch();
    let plain = script(
        dir.path(),
        "noshebang",
        "echo \"ran with $# args: $1\"\nexit 0\n",
    );
    retry()
        .arg("--")
        .arg(&plain)
        .arg("hello")
        .assert()
        .success()
        .stdout("ran with 1 args: hello\n");
}

#[test]
fn a_closed_stderr_or_stdout_never_makes_retry_panic() {
    for fd in ["2", "1"] {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("'{BIN}' -n 2 -d 1ms -- sh -c 'echo out; echo err >&2; exit 4' {fd}>&-; echo \"status=$?\""))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("status=4"), "fd {fd} closed: {stdout}");
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    }
}

#[test]
fn a_signal_racing_the_spawn_never_leaves_an_attempt_behind() {
    let marker = marker();
    for i in 0..20 {
        let mut child = retry_std()
            .args(["--", "sleep", &marker])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(500 * (i % 6)));
        send_signal(child.id(), "TERM");
        let status = child.wait().unwrap();
        assert!(status.signal_or_exit_is_term(), "{status:?}");
    }
    assert!(none_left(&marker, Duration::from_secs(2)));
}

trait TermCheck {
    fn signal_or_exit_is_term(&self) -> bool;
}

impl TermCheck for std::process::ExitStatus {
    /// Killed by SIGTERM, either before retry's handlers were installed (the
    /// default action) or after (re-raised).
    fn signal_or_exit_is_term(&self) -> bool {
        code_and_signal(*self) == (None, Some(libc::SIGTERM))
    }
}

/// Run `retry` under a pseudo-terminal (it is then the terminal's
/// foreground), type `input`, and return what appeared on the terminal.
fn under_pty(args: &[&str], input: &str) -> String {
    let program = r"
import os, pty, sys, time, select
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = b''
def pump(seconds):
    global out
    end = time.time() + seconds
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return False
            if not data:
                return False
            out += data
    return True
pump(0.5)
os.write(fd, sys.stdin.buffer.read())
pump(3)
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors='replace'))
sys.stdout.write('\nSTATUS=%d\n' % os.waitstatus_to_exitcode(status))
";
    let mut child = with_default_signals("python3")
        .args(["-c", program, BIN])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_child_under_a_terminal_reads_a_typed_line() {
    let out = under_pty(
        &[
            "-T",
            "10s",
            "--",
            "sh",
            "-c",
            "read x; echo got:$x; [ -t 0 ] && echo tty",
        ],
        "hello\n",
    );
    assert!(out.contains("got:hello"), "{out}");
    assert!(out.contains("tty"), "{out}");
    assert!(out.contains("STATUS=0"), "{out}");
}

#[test]
fn ctrl_c_at_a_terminal_ends_the_run_with_sigint_and_no_second_attempt() {
    let dir = scratch();
    let body = tally(dir.path(), "attempts") + "; sleep 5";
    let out = under_pty(&["-n", "5", "-d", "1ms", "--", "sh", "-c", &body], "\x03");
    assert!(out.contains(&format!("STATUS=-{}", libc::SIGINT)), "{out}");
    assert_eq!(lines(dir.path(), "attempts"), 1, "{out}");
}

#[test]
fn foreground_keeps_the_child_in_retrys_group_and_otherwise_it_leads_its_own() {
    let groups = |args: &[&str]| -> (String, String) {
        let out = retry()
            .args(args)
            .args([
                "--",
                "sh",
                "-c",
                "cut -d' ' -f5 /proc/$$/stat; cut -d' ' -f5 /proc/$PPID/stat",
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut lines = text.lines().map(str::to_string);
        (lines.next().unwrap(), lines.next().unwrap())
    };
    let (child, retry_group) = groups(&["--foreground"]);
    assert_eq!(
        child, retry_group,
        "--foreground: the child shares retry's group"
    );
    let (child, retry_group) = groups(&[]);
    assert_ne!(
        child, retry_group,
        "not a terminal's foreground: the child leads its own group"
    );
}

#[cfg_attr(
    retry_posix,
    ignore = "Linux and FreeBSD only: without a subreaper, orphans are init's to reap (docs/platforms.md)"
)]
#[test]
fn no_zombie_is_left_during_the_backoff() {
    let dir = scratch();
    let body = tally(dir.path(), "attempts") + "; exit 1";
    let mut child = start_in_background(
        &["-n", "2", "-d", "2s", "-j", "none", "--", "sh", "-c", &body],
        dir.path(),
    );
    wait_for_file(&dir.path().join("attempts"), Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(300));
    let retry_pid = child.id().to_string();
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        if fields.get(1) == Some(&retry_pid.as_str()) {
            children.push(fields[0].to_string());
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    // The run's watchdog is its one child, and sleeps (S) until retry ends.
    assert_eq!(
        children,
        ["S"],
        "retry has other children than its watchdog during its sleep: states {children:?}"
    );
}

#[cfg_attr(
    retry_posix,
    ignore = "Linux and FreeBSD only: without a subreaper, orphans are init's to reap (docs/platforms.md)"
)]
#[test]
fn orphans_are_reaped_as_they_end_while_the_attempt_still_runs() {
    let dir = scratch();
    let count = dir.path().join("zombies");
    // 300 double-forked helpers that end at once: each is orphaned to
    // retry (a subreaper) and ends while the attempt runs on; the attempt
    // then counts the zombies whose parent is retry.
    let body = format!(
        "i=0; while [ $i -lt 300 ]; do ( : & ); i=$((i+1)); done; sleep 1; \
         cat /proc/[0-9]*/stat 2>/dev/null | awk -v p=$PPID '$3 == \"Z\" && $4 == p' \
         | wc -l > '{}'",
        count.display()
    );
    // In its own group the attempt's parent is retry; in retry's group,
    // on Linux, the keeper: each reaps the orphans as they end.
    for mode in [&[][..], &["--foreground"]] {
        retry()
            .args(mode)
            .args(["-n", "1", "--", "sh", "-c", &body])
            .assert()
            .success();
        let zombies: usize = std::fs::read_to_string(&count)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            zombies < 10,
            "{mode:?}: {zombies} zombies during the attempt"
        );
    }
}

#[cfg_attr(
    retry_posix,
    ignore = "Linux only: the keeper that names an attempt's processes needs a child subreaper (docs/platforms.md)"
)]
#[test]
fn in_retrys_group_a_worker_a_sidecar_detaches_is_not_the_attempts() {
    let dir = scratch();
    let worker = marker();
    let detached = dir.path().join("detached");
    // A sidecar started before `exec retry` (so retry's child) detaches a
    // worker while the attempt runs: the worker is orphaned to retry, a
    // subreaper, but it is not the attempt's, and survives its clean-up.
    let attempt = format!(
        "while [ ! -e '{d}' ]; do sleep 0.05; done; exit 1",
        d = detached.display()
    );
    let body = format!(
        "( sleep 0.3; ( sleep {worker} >/dev/null 2>&1 & ); touch '{d}' ) & \
         exec {BIN} --foreground -n 1 -- sh -c \"{attempt}\"",
        d = detached.display()
    );
    let out = std::process::Command::new("sh")
        .args(["-c", &body])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        running_then_ended(&worker),
        1,
        "the sidecar's worker was ended with the attempt"
    );
}

#[test]
fn in_retrys_group_a_set_gid_command_dies_with_a_sigkilled_retry() {
    // The kernel clears the parent-death signal at the exec of a set-uid,
    // set-gid or file-capability program. A set-gid copy of sleep (root
    // can make one; a user can for a group of theirs) shows it.
    let dir = scratch();
    let sleep = dir.path().join("sgid-sleep");
    std::fs::copy("/bin/sleep", &sleep).unwrap();
    let made = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "chgrp 65534 '{0}' && chmod 2755 '{0}' && [ -g '{0}' ]",
            sleep.display()
        ))
        .status()
        .unwrap();
    if !made.success() {
        eprintln!("skipped: cannot make a set-gid file here");
        return;
    }
    // Scratch directories may be mounted nosuid: then the exec is plain.
    let marker = marker();
    let started = dir.path().join("started");
    let body = format!(
        "touch '{}'; exec '{}' {marker}",
        started.display(),
        sleep.display()
    );
    let mut child = retry_std()
        .args(["--foreground", "--", "sh", "-c", &body])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_file(&started, Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(100));
    send_signal(child.id(), "KILL");
    let _ = child.wait();
    assert!(
        none_left(&marker, Duration::from_secs(3)),
        "the set-gid command outlived retry"
    );
}

/// Run retry under `unshare ARGS`, `prefix` run first in the same shell;
/// `None` when this machine cannot unshare (no privilege, no util-linux).
fn unshared(unshare: &[&str], prefix: &str, args: &str) -> Option<std::process::Output> {
    let probe = std::process::Command::new("unshare")
        .args(unshare)
        .args(["sh", "-c", prefix])
        .output()
        .ok()?;
    if !probe.status.success() {
        eprintln!("skipped: unshare {unshare:?} is not allowed here");
        return None;
    }
    let body = format!("{prefix} && exec {BIN} {args}");
    Some(
        std::process::Command::new("unshare")
            .args(unshare)
            .args(["sh", "-c", &body])
            .stdin(Stdio::null())
            .output()
            .unwrap(),
    )
}

#[test]
fn in_retrys_group_a_process_table_that_cannot_be_read_is_said_once() {
    let args = "--foreground -n 2 -d 1ms -- sh -c 'exit 1'";
    // A tmpfs over /proc, and a /proc of another PID namespace.
    let cases = [
        (&["-m"][..], "mount -t tmpfs none /proc"),
        (&["-p", "-f"][..], "true"),
    ];
    for (unshare, prefix) in cases {
        let Some(out) = unshared(unshare, prefix, args) else {
            continue;
        };
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{unshare:?}: {stderr}");
        assert_eq!(
            stderr.matches("process table cannot be read").count(),
            1,
            "{unshare:?}: {stderr}"
        );
    }
    // Where it can be read, or in a group of its own, nothing is said.
    let quiet = unshared(&["-m"], "true", "-n 1 -- true");
    if let Some(out) = quiet {
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_child_gets_no_descriptor_of_retrys_own() {
    let descriptors = |runner: &str| -> Vec<String> {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("echo input | {runner} sh -c 'ls /proc/$$/fd'"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    // Whatever this test's own environment leaks to every process (a
    // jobserver pipe, say) is the baseline.
    let direct = descriptors("");
    for extra in [
        "",
        "--retry-on-output X --scan-stdout",
        "--stdin replay",
        "--buffer-stdout",
    ] {
        assert_eq!(
            descriptors(&format!("'{BIN}' -q {extra} --")),
            direct,
            "with {extra:?}"
        );
    }
}

#[test]
fn descriptors_stay_constant_over_hundreds_of_attempts() {
    // Look only once retry has finished spawning (the standard library holds
    // a socket pair open until it has seen the exec) and waits for us: its
    // main thread is then asleep in poll. On a loaded machine a fixed pause
    // was not always enough.
    let body = "sleep 0.02; \
        while [ \"$(cut -d' ' -f3 /proc/$PPID/stat)\" != S ]; do sleep 0.005; done; \
        ls /proc/$PPID/fd | wc -l; exit 1";
    for extra in [&[][..], &["--retry-on-output", "X"][..]] {
        let out = retry()
            .args(["-q", "-n", "150", "-d", "0"])
            .args(extra)
            .args(["--", "sh", "-c", body])
            .output()
            .unwrap();
        let counts: std::collections::BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect();
        assert_eq!(
            counts.len(),
            1,
            "retry's descriptor count changed across attempts ({extra:?}): {counts:?}"
        );
    }
}

#[test]
fn usr1_usr2_and_alrm_end_the_attempts_group_and_retry_dies_of_them() {
    for (name, number) in [
        ("USR1", libc::SIGUSR1),
        ("USR2", libc::SIGUSR2),
        ("ALRM", libc::SIGALRM),
    ] {
        let dir = scratch();
        let marker = marker();
        let started = dir.path().join("started");
        // The grandchild ignores nothing, but only the group signal reaches it.
        let body = format!(
            "{}; {} & wait",
            tally(dir.path(), "attempts"),
            sleeper(&started, &marker)
        );
        let mut child = start_in_background(
            &["--kill-after", "300ms", "--", "sh", "-c", &body],
            dir.path(),
        );
        wait_for_file(&started, Duration::from_secs(5));
        send_signal(child.id(), name);
        let status = child.wait().unwrap();
        assert_eq!(code_and_signal(status), (None, Some(number)), "{name}");
        assert_eq!(
            lines(dir.path(), "attempts"),
            1,
            "{name}: no further attempt"
        );
        assert!(
            none_left(&marker, Duration::from_secs(2)),
            "{name}: the attempt's grandchild outlived retry"
        );
    }
}
