//! Every signal that would end retry, what the caller ignored, and the
//! file size limit (`ulimit -f`): issue 25, item 1.

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use crate::util::*;

/// Run `script` under `bash -c`, with `retry` as `$R`; stdin is `input`.
fn bash(script: &str, input: &[u8]) -> std::process::Output {
    let mut command = std::process::Command::new("bash");
    command
        .args(["-c", script])
        .env("R", BIN)
        .env_remove("XDG_STATE_HOME")
        .env("XDG_CONFIG_HOME", "/nonexistent/retry-test-config")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // A reader that stops early (a killed run) closes the pipe: not an error.
    let _ = stdin.write_all(input);
    drop(stdin);
    child.wait_with_output().unwrap()
}

#[test]
fn xcpu_pwr_vtalrm_realtime_and_sent_fault_signals_end_the_attempts_group_and_retry_dies_of_them() {
    // PWR and the real-time signals are Linux's (the libc crate names no
    // other system's real-time signals).
    let signals = [
        ("XCPU", libc::SIGXCPU),
        ("VTALRM", libc::SIGVTALRM),
        ("PROF", libc::SIGPROF),
        #[cfg(target_os = "linux")]
        ("PWR", libc::SIGPWR),
        #[cfg(target_os = "linux")]
        ("RTMIN+3", libc::SIGRTMIN() + 3),
        #[cfg(target_os = "linux")]
        ("RTMAX", libc::SIGRTMAX()),
        // The C library keeps these for itself and its sigaction refuses
        // them (glibc 32 and 33, musl 32 to 34): installed by the system call.
        #[cfg(target_os = "linux")]
        ("32", 32),
        #[cfg(target_os = "linux")]
        ("33", 33),
        #[cfg(target_os = "linux")]
        ("34", 34),
        // Sent, not a fault: handled as the others, not swallowed by the
        // Rust runtime's stack-overflow handler.
        ("SEGV", libc::SIGSEGV),
        ("BUS", libc::SIGBUS),
    ];
    for (name, number) in signals {
        let dir = scratch();
        let marker = marker();
        let started = dir.path().join("started");
        // The grandchild sleeps on after its shell: only a signal to the
        // attempt's whole group reaches it.
        let body = format!(
            "{}; {} & wait",
            tally(dir.path(), "attempts"),
            sleeper(&started, &marker)
        );
        let mut child = retry_std()
            .args(["-n", "3", "-d", "1ms", "--kill-after", "300ms"])
            .args(["--", "sh", "-c", &body])
            .env("TMPDIR", dir.path())
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for_file(&started, Duration::from_secs(5));
        // By number: kill(1) does not read every name (RTMIN+3).
        send_signal(child.id(), &number.to_string());
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
        // The run's private directory (the hint file's) went with it.
        let left: Vec<String> = listing(dir.path())
            .into_iter()
            .filter(|name| name != "started" && name != "attempts")
            .collect();
        assert!(left.is_empty(), "{name}: left behind: {left:?}");
    }
}

/// The command's ignored signals, as /proc shows them (a hex mask).
fn ignored_by_the_command(setup: &str) -> u64 {
    let out = bash(
        &format!("{setup} \"$R\" -q -n 1 -- sh -c 'grep SigIgn /proc/$$/status'"),
        b"",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mask = text
        .split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("{text} {}", String::from_utf8_lossy(&out.stderr)));
    u64::from_str_radix(mask, 16).unwrap()
}

#[test]
fn what_the_caller_ignored_stays_ignored_for_the_command_and_nothing_else() {
    let bit = |signal: i32| 1u64 << (signal - 1);
    // Retry ignores PIPE, XFSZ, TTIN and TTOU for itself: the command gets
    // their defaults back.
    let plain = ignored_by_the_command("");
    for signal in [libc::SIGPIPE, libc::SIGXFSZ, libc::SIGTTIN, libc::SIGTTOU] {
        assert_eq!(plain & bit(signal), 0, "{signal}: {plain:x}");
    }
    // Under `trap '' PIPE` (systemd services run so) and `trap '' XFSZ`,
    // the command keeps them ignored, as under coreutils timeout.
    let trapped = ignored_by_the_command("trap '' PIPE XFSZ USR1;");
    for signal in [libc::SIGPIPE, libc::SIGXFSZ, libc::SIGUSR1] {
        assert_ne!(trapped & bit(signal), 0, "{signal}: {trapped:x}");
    }
}

#[test]
fn under_an_ignored_sigpipe_yes_into_head_sees_epipe_as_under_timeout() {
    let out = bash(
        "trap '' PIPE; \"$R\" -q -n 1 -- bash -c 'yes | head -1 >/dev/null; echo \"yes=${PIPESTATUS[0]}\"'",
        b"",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // yes got EPIPE (exit 1, "Broken pipe"), not SIGPIPE (141).
    assert!(stdout.contains("yes=1"), "{stdout} {stderr}");
    assert!(stderr.contains("Broken pipe"), "{stderr}");
    let out = bash(
        "\"$R\" -q -n 1 -- bash -c 'yes | head -1 >/dev/null; echo \"yes=${PIPESTATUS[0]}\"'",
        b"",
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("yes=141"),
        "without the trap, SIGPIPE: {out:?}"
    );
}

#[test]
fn past_ulimit_f_the_replay_spool_ends_the_run_with_125_naming_efbig() {
    let dir = scratch();
    // 200 KB of input, a 50 KiB file size limit: the spool cannot hold it.
    let input = vec![b'x'; 200_000];
    let out = bash(
        &format!(
            "ulimit -f 50; TMPDIR='{}' \"$R\" -n 2 -d 0 --stdin replay -- sh -c 'wc -c; exit 1'",
            dir.path().display()
        ),
        &input,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(stderr.contains("File too large (EFBIG)"), "{stderr}");
    assert!(stderr.contains("--stdin replay"), "{stderr}");
    // The first attempt got the whole input as it came.
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "200000");
}

#[test]
fn past_ulimit_f_the_metrics_file_and_the_log_are_reported_and_the_status_kept() {
    let dir = scratch();
    let metrics = dir.path().join("m.prom");
    let out = bash(
        &format!(
            "ulimit -f 0; \"$R\" -n 1 --metrics-file '{}' -- sh -c 'exit 0'",
            metrics.display()
        ),
        b"",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("--metrics-file") && stderr.contains("File too large"),
        "{stderr}"
    );

    let log = dir.path().join("retry.log");
    let out = bash(
        &format!(
            "ulimit -f 0; \"$R\" -n 2 -d 0 --log-file '{}' -- sh -c 'exit 3'",
            log.display()
        ),
        b"",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("--log-file") && stderr.contains("File too large"),
        "{stderr}"
    );
    // Its lines are not lost: stderr has them.
    assert!(stderr.contains("gave up after 2 attempts"), "{stderr}");
}

#[test]
fn past_ulimit_f_a_circuit_store_fails_open_and_the_command_runs() {
    let dir = scratch();
    let out = bash(
        &format!(
            "ulimit -f 0; XDG_STATE_HOME='{}' \"$R\" -n 1 --circuit limited -- sh -c 'echo ran; exit 3'",
            dir.path().display()
        ),
        b"",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n", "{stderr}");
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("circuit limited"), "{stderr}");
}

#[test]
fn past_ulimit_f_scanned_output_that_cannot_be_written_is_a_warning() {
    let dir = scratch();
    let out_file = dir.path().join("out");
    // A failed attempt's output that cannot all be written: warned about,
    // and the run goes on to its own status.
    let out = bash(
        &format!(
            "ulimit -f 50; \"$R\" -n 1 --retry-on-output X --scan-stdout -- sh -c 'head -c 100000 /dev/zero; exit 4' > '{}'",
            out_file.display()
        ),
        b"",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("warning") && stderr.contains("File too large (EFBIG)"),
        "{stderr}"
    );
}
