//! Output and input: pattern classification, the curl preset against a real
//! local HTTP server, Retry-After, the hint file, stdin replay, buffered
//! stdout, streaming with bounded memory.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Stdio;
use std::time::{Duration, Instant};

use predicates::prelude::*;

use crate::util::*;

#[test]
fn a_retry_on_output_match_on_stderr_makes_a_failure_transient() {
    // Without the pattern, --retry-on-exit 2 would make exit 1 permanent.
    let args = [
        "-n",
        "3",
        "-d",
        "1ms",
        "--retry-on-exit",
        "2",
        "--retry-on-output",
        "glitch",
    ];
    let (out, attempts) = counted(&args, "echo 'temporary glitch' >&2; exit 1");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(attempts, 3);
}

#[test]
fn a_stop_on_output_match_is_permanent_and_beats_retry_on_output() {
    let args = [
        "-n",
        "3",
        "-d",
        "1ms",
        "--retry-on-output",
        "busy",
        "--stop-on-output",
        "^fatal:",
    ];
    let (out, attempts) = counted(&args, "echo 'fatal: busy disk' >&2; exit 1");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("fatal: busy disk\n") && stderr.contains("--stop-on-output '^fatal:'"),
        "{stderr}"
    );
    assert_eq!(attempts, 1);
}

#[test]
fn stdout_is_scanned_only_with_scan_stdout() {
    let (out, attempts) = counted(
        &["-n", "3", "-d", "1ms", "--stop-on-output", "fatal"],
        "echo fatal; exit 1",
    );
    assert_eq!(
        (out.stdout.as_slice(), attempts),
        (&b"fatal\nfatal\nfatal\n"[..], 3)
    );
    let (out, attempts) = counted(
        &[
            "-n",
            "3",
            "-d",
            "1ms",
            "--scan-stdout",
            "--stop-on-output",
            "fatal",
        ],
        "echo fatal; exit 1",
    );
    assert_eq!((out.stdout.as_slice(), attempts), (&b"fatal\n"[..], 1));
}

#[test]
fn a_line_split_across_reads_still_matches() {
    retry()
        .args([
            "-n",
            "3",
            "-d",
            "1ms",
            "--stop-on-output",
            "fatal error",
            "--",
            "sh",
            "-c",
            "printf 'fa' >&2; sleep 0.2; printf 'tal error\\n' >&2; exit 1",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("permanent"));
}

#[test]
fn a_match_after_a_very_long_line_is_found_and_the_bytes_pass_unchanged() {
    let out = retry()
        .args([
            "-n",
            "3",
            "-d",
            "1ms",
            "--scan-stdout",
            "--stop-on-output",
            "^fatal$",
            "--",
            "sh",
            "-c",
        ])
        .arg("head -c 3000000 /dev/zero | tr '\\0' a; printf '\\nfatal\\n'; exit 1")
        .output()
        .unwrap();
    assert_eq!(out.stdout.len(), 3_000_000 + 7);
    assert!(out.stdout[..3_000_000].iter().all(|&b| b == b'a'));
    assert!(String::from_utf8_lossy(&out.stderr).contains("attempt 1/3 failed"));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("attempt 2/3"));
}

#[test]
fn binary_output_passes_through_byte_for_byte() {
    let dir = scratch();
    let data = dir.path().join("data");
    let mut bytes = vec![0u8; 8 << 20];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for byte in &mut bytes {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        *byte = seed as u8;
    }
    bytes.extend_from_slice(b"a\rb\0c\xff\n");
    std::fs::write(&data, &bytes).unwrap();
    let cat = format!("cat '{}'; cat '{}' >&2", data.display(), data.display());
    let out = retry()
        .args([
            "-q",
            "--scan-stdout",
            "--retry-on-output",
            r"(?-u)\xffnever",
            "--",
            "sh",
            "-c",
            &cat,
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stdout == bytes, "stdout differs");
    assert!(out.stderr == bytes, "stderr differs");
}

#[test]
fn non_utf8_bytes_can_be_matched() {
    let out = retry()
        .args([
            "-n",
            "3",
            "-d",
            "1ms",
            "--stop-on-output",
            r"(?-u)c\xff",
            "--",
            "sh",
            "-c",
            "printf 'a\\rb\\0c\\377\\n' >&2; exit 1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stderr.starts_with(b"a\rb\0c\xff\n"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("(permanent)"));
}

/// Peak RSS in KiB of the largest process of `retry args...`, measured by
/// GNU time: a small C parent, so the figure is retry's own (a process
/// started from a big parent such as this test starts with its memory
/// counted).
fn peak_rss_kib(args: &[&str]) -> u64 {
    let dir = scratch();
    let report = dir.path().join("rss");
    let status = std::process::Command::new("/usr/bin/time")
        .arg("-o")
        .arg(&report)
        .args(["-f", "%M", BIN])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("GNU time (/usr/bin/time) is needed for this test");
    assert!(status.success() || status.code().is_some());
    let text = std::fs::read_to_string(&report).unwrap();
    text.trim().lines().last().unwrap().parse().unwrap()
}

#[test]
fn memory_stays_bounded_while_hundreds_of_mib_stream_through() {
    // 200 MiB on both streams, and a 200 MiB line without a newline.
    let both = peak_rss_kib(&[
        "-q",
        "--scan-stdout",
        "--retry-on-output",
        "x",
        "--",
        "sh",
        "-c",
        "head -c 200M /dev/zero; head -c 200M /dev/zero >&2",
    ]);
    assert!(both < 16 * 1024, "peak RSS {both} KiB");
    let line = peak_rss_kib(&[
        "-q",
        "--retry-on-output",
        "x",
        "--",
        "sh",
        "-c",
        "head -c 200M /dev/zero | tr '\\0' a >&2",
    ]);
    assert!(line < 16 * 1024, "peak RSS {line} KiB");
}

#[test]
fn both_streams_scanned_while_the_child_fills_both_do_not_deadlock() {
    let out = retry()
        .args([
            "-q",
            "--scan-stdout",
            "--retry-on-output",
            "x",
            "--",
            "sh",
            "-c",
            "head -c 10M /dev/zero >&2; head -c 10M /dev/zero",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout.len(), 10 << 20);
    assert_eq!(out.stderr.len(), 10 << 20);
}

#[test]
fn stdout_and_stderr_into_one_file_keep_their_order_when_scanned() {
    let dir = scratch();
    let log = dir.path().join("log");
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{BIN}' -q --scan-stdout --retry-on-output X -- sh -c 'for i in 1 2 3; do echo o$i; echo e$i >&2; done' > '{}' 2>&1",
            log.display()
        ))
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "o1\ne1\no2\ne2\no3\ne3\n"
    );
}

#[test]
fn scanned_output_is_streamed_before_the_line_ends() {
    let mut child = retry_std()
        .args([
            "--scan-stdout",
            "--retry-on-output",
            "X",
            "--",
            "sh",
            "-c",
            "printf partial; sleep 2; echo end",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut first = [0u8; 7];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    assert_eq!(&first, b"partial");
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    child.wait().unwrap();
}

#[test]
fn retry_messages_never_continue_a_childs_unfinished_line() {
    let out = retry()
        .args([
            "-n",
            "2",
            "-d",
            "1ms",
            "--retry-on-output",
            "X",
            "--",
            "sh",
            "-c",
            "printf 'no newline' >&2; exit 1",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr
            .lines()
            .all(|l| l.starts_with("retry:") || l == "no newline"),
        "{stderr}"
    );
}

#[test]
fn an_attempt_ends_when_its_child_exits_even_if_a_grandchild_holds_the_pipe() {
    let first = marker();
    let started = Instant::now();
    retry()
        .args(["-n", "1", "--retry-on-output", "X", "--", "sh", "-c"])
        .arg(format!("sleep {first} >/dev/null & echo hi >&2; exit 3"))
        .assert()
        .code(3)
        .stderr(predicate::str::starts_with("hi\n"));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // The failed attempt's leftovers were terminated with its group.
    assert!(none_left(&first, Duration::from_secs(1)));

    let second = marker();
    let started = Instant::now();
    retry()
        .args(["--retry-on-output", "X", "--", "sh", "-c"])
        .arg(format!("sleep {second} >/dev/null & echo ok >&2"))
        .assert()
        .success();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let _ = none_left(&second, Duration::ZERO);
}

// ---- The hint file ----

#[test]
fn the_hint_file_decides_over_every_other_rule() {
    let (out, attempts) = counted(
        &["-n", "5", "-d", "1ms"],
        "echo permanent > \"$RETRY_HINT_FILE\"; exit 1",
    );
    assert_eq!((out.status.code(), attempts), (Some(1), 1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("hint file said permanent"));
    // transient beats --stop-on-exit
    let (out, attempts) = counted(
        &["-n", "3", "-d", "1ms", "--stop-on-exit", "1"],
        "echo transient > \"$RETRY_HINT_FILE\"; exit 1",
    );
    assert_eq!((out.status.code(), attempts), (Some(1), 3));
}

#[test]
fn a_retry_after_hint_sets_the_next_sleep_beyond_the_cap() {
    let body = "[ \"$RETRY_ATTEMPT\" = 2 ] && exit 0; echo retry-after=300ms > \"$RETRY_HINT_FILE\"; exit 1";
    let started = Instant::now();
    let out = retry()
        .args([
            "-d",
            "1ms",
            "-c",
            "1ms",
            "--log-format",
            "json",
            "--",
            "sh",
            "-c",
            body,
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(started.elapsed() >= Duration::from_millis(290));
    let events = json_events(&out.stderr);
    let sleep = events.iter().find(|e| e["event"] == "sleep").unwrap();
    assert_eq!(sleep["source"], "retry-after");
    assert_eq!(sleep["delay_ms"], 300);
}

#[test]
fn the_hint_file_is_removed_between_attempts() {
    let body =
        "[ -e \"$RETRY_HINT_FILE\" ] && exit 9; echo transient > \"$RETRY_HINT_FILE\"; exit 1";
    retry()
        .args(["-n", "3", "-d", "1ms", "--", "sh", "-c", body])
        .assert()
        .code(1);
}

#[test]
fn a_malformed_hint_is_reported_and_ignored() {
    retry()
        .args([
            "-n",
            "2",
            "-d",
            "1ms",
            "--",
            "sh",
            "-c",
            "echo soon > \"$RETRY_HINT_FILE\"; exit 1",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("warning: hint file: 'soon'"))
        .stderr(predicate::str::contains("attempt 2/2"));
}

// ---- Retry-After and the curl preset, against a real local server ----

#[test]
fn preset_curl_retries_503_and_502_until_success() {
    assert!(curl_available(), "curl is needed for this test");
    let (port, served) = http_server(vec!["503 Service Unavailable", "502 Bad Gateway", "200 OK"]);
    let url = format!("http://127.0.0.1:{port}/");
    retry()
        .args([
            "-d", "1ms", "--preset", "curl", "--", "curl", "-sS", "--fail", &url,
        ])
        .assert()
        .success()
        .stdout("body of 200 OK\n")
        .stderr(predicate::str::contains(
            "exit 22; curl reported HTTP 503 (preset curl)",
        ))
        .stderr(predicate::str::contains(
            "exit 22; curl reported HTTP 502 (preset curl)",
        ));
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 3);
}

#[test]
fn preset_curl_stops_at_once_on_404() {
    let (port, served) = http_server(vec!["404 Not Found"]);
    let url = format!("http://127.0.0.1:{port}/");
    retry()
        .args([
            "-d", "1ms", "--preset", "curl", "--", "curl", "-sS", "--fail", &url,
        ])
        .assert()
        .code(22)
        .stderr(predicate::str::contains(
            "exit 22; curl reported HTTP 404, which a second try would get again (preset curl) (permanent)",
        ));
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[test]
fn preset_curl_honours_retry_after_on_429() {
    let (port, served) = http_server(vec!["429 Too Many Requests|Retry-After: 1\r\n", "200 OK"]);
    let url = format!("http://127.0.0.1:{port}/");
    let started = Instant::now();
    let out = retry()
        .args([
            "-d",
            "1ms",
            "-c",
            "1ms",
            "--preset",
            "curl",
            "--log-format",
            "json",
            "--",
            "curl",
            "-sS",
            "-v",
            "--fail",
            &url,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(started.elapsed() >= Duration::from_millis(950));
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let sleep: serde_json::Value = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["event"] == "sleep")
        .unwrap();
    assert_eq!(sleep["source"], "retry-after");
    assert_eq!(sleep["delay_ms"], 1000);
}

#[test]
fn a_retry_after_that_cannot_fit_in_max_time_gives_up_at_once() {
    let (port, served) = http_server(vec!["503 Service Unavailable|Retry-After: 120\r\n"]);
    let url = format!("http://127.0.0.1:{port}/");
    let started = Instant::now();
    retry()
        .args([
            "--max-time",
            "5s",
            "--preset",
            "curl",
            "--",
            "curl",
            "-sS",
            "-v",
            "--fail",
            &url,
        ])
        .assert()
        .code(22)
        // Never answered by a shorter sleep: the run ends, naming the
        // header and what would have allowed it.
        .stderr(predicate::str::contains("gave up after 1 attempt in "))
        .stderr(predicate::str::contains(
            "Retry-After asked for 2m, which would end ",
        ))
        .stderr(predicate::str::contains(
            "past --max-time: not retrying (a --max-time that much longer would wait for it)",
        ));
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[test]
fn preset_curl_retries_a_closed_port_and_user_rules_override_it() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/");
    let out = retry()
        .args([
            "-n",
            "3",
            "-d",
            "1ms",
            "--preset",
            "curl",
            "--log-format",
            "json",
            "--",
            "curl",
            "-sS",
            "--fail",
            &url,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7));
    let events = json_events(
        &out.stderr
            .split(|&b| b == b'\n')
            .filter(|l| l.starts_with(b"{"))
            .collect::<Vec<_>>()
            .join(&b'\n'),
    );
    assert_eq!(events.last().unwrap()["outcome"], "exhausted");
    assert_eq!(events.last().unwrap()["attempts"], 3);
    // --stop-on-exit on the command line beats the preset's transient 7.
    retry()
        .args([
            "-n",
            "3",
            "-d",
            "1ms",
            "--preset",
            "curl",
            "--stop-on-exit",
            "7",
            "--",
            "curl",
            "-sS",
            "--fail",
            &url,
        ])
        .assert()
        .code(7)
        .stderr(predicate::str::contains("attempt 2/3").not());
}

// ---- stdin ----

fn pseudo_random(len: usize) -> Vec<u8> {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    (0..len)
        .map(|_| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as u8
        })
        .collect()
}

#[test]
fn replay_gives_every_attempt_the_whole_piped_input() {
    let dir = scratch();
    let input = pseudo_random(5 << 20);
    let body = format!("cat > '{}/in.'$RETRY_ATTEMPT; exit 1", dir.path().display());
    let mut child = retry_std()
        .args([
            "-q", "-n", "3", "-d", "1ms", "--stdin", "replay", "--", "sh", "-c", &body,
        ])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
        input
    });
    let status = child.wait().unwrap();
    let input = feeder.join().unwrap();
    assert_eq!(status.code(), Some(1));
    for attempt in 1..=3 {
        let got = std::fs::read(dir.path().join(format!("in.{attempt}"))).unwrap();
        assert!(
            got == input,
            "attempt {attempt} read {} bytes of {}",
            got.len(),
            input.len()
        );
    }
}

#[test]
fn replay_survives_a_child_that_reads_part_of_its_input_and_keeps_memory_bounded() {
    let dir = scratch();
    // Attempt 1 reads 3 bytes; attempts 2 and 3 must still see everything.
    let reader = script(
        dir.path(),
        "reader.sh",
        &format!(
            "#!/bin/sh\nif [ $RETRY_ATTEMPT = 1 ]; then head -c 3 > '{d}/in.1'; else cat > '{d}/in.'$RETRY_ATTEMPT; fi\nexit 1\n",
            d = dir.path().display()
        ),
    );
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "head -c 20M /dev/zero | '{BIN}' -q -n 3 -d 1ms --stdin replay -- '{}'",
            reader.display()
        ))
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1));
    assert_eq!(std::fs::metadata(dir.path().join("in.1")).unwrap().len(), 3);
    assert_eq!(
        std::fs::metadata(dir.path().join("in.2")).unwrap().len(),
        20 << 20
    );
    assert_eq!(
        std::fs::metadata(dir.path().join("in.3")).unwrap().len(),
        20 << 20
    );

    let rss = peak_rss_kib(&[
        "-q",
        "--stdin",
        "replay",
        "--",
        "sh",
        "-c",
        "head -c 300M /dev/zero | true",
    ]);
    assert!(rss < 16 * 1024, "{rss}");
}

#[test]
fn a_child_that_ignores_a_large_stdin_is_not_an_error() {
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "head -c 100M /dev/zero | '{BIN}' -q -n 2 -d 1ms --stdin replay -- true"
        ))
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_file_on_stdin_is_reread_from_its_starting_offset_by_every_attempt() {
    let dir = scratch();
    let input = dir.path().join("input");
    std::fs::write(&input, "skip:abcdef").unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{{ head -c 5 >/dev/null; '{BIN}' -q -n 3 -d 1ms -- sh -c 'head -c 3; echo; exit 1'; }} < '{}'",
            input.display()
        ))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "abc\nabc\nabc\n");
}

#[test]
fn a_while_read_loop_around_retry_keeps_its_lines() {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "printf 'a\\nb\\nc\\n' | while read x; do '{BIN}' -q -- echo \"got $x\"; done"
        ))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "got a\ngot b\ngot c\n"
    );
}

#[test]
fn auto_warns_when_a_later_attempt_reads_a_shared_pipe() {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "printf 'a\\nb\\n' | '{BIN}' -n 2 -d 1ms -- sh -c 'read x; echo got $x; exit 1'"
        ))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "got a\ngot b\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning: stdin is a pipe"));
}

#[test]
fn stdin_null_gives_dev_null() {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "echo data | '{BIN}' --stdin null -- sh -c 'cat; echo end'"
        ))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "end\n");
}

// ---- --buffer-stdout ----

#[test]
fn buffer_stdout_emits_only_the_final_attempts_output() {
    let body = "printf 'partial body of attempt %s' $RETRY_ATTEMPT; [ $RETRY_ATTEMPT = 3 ] && { echo; echo complete; }; [ $RETRY_ATTEMPT = 3 ]";
    retry()
        .args(["-q", "-d", "1ms", "--buffer-stdout", "--", "sh", "-c", body])
        .assert()
        .success()
        .stdout("partial body of attempt 3\ncomplete\n");
    // Scanned as well as buffered.
    retry()
        .args([
            "-q",
            "-d",
            "1ms",
            "--buffer-stdout",
            "--scan-stdout",
            "--retry-on-output",
            "partial",
            "--",
            "sh",
            "-c",
            body,
        ])
        .assert()
        .success()
        .stdout("partial body of attempt 3\ncomplete\n");
}

#[test]
fn buffer_stdout_of_a_run_that_gives_up_emits_nothing_and_says_how_much_was_dropped() {
    let args = [
        "-n",
        "2",
        "-d",
        "1ms",
        "--buffer-stdout",
        "--",
        "sh",
        "-c",
        "echo try $RETRY_ATTEMPT; exit 5",
    ];
    retry()
        .args(args)
        .assert()
        .code(5)
        .stdout("")
        .stderr(predicate::str::contains(
            "dropped the last attempt's stdout (6 bytes)",
        ));
    // Scanned, too; and in JSON, a warning event.
    let (out, events) =
        json_run(&[&["--scan-stdout", "--retry-on-output", "X"][..], &args[..]].concat());
    assert_eq!((out.status.code(), out.stdout.len()), (Some(5), 0));
    let warning = events
        .iter()
        .find(|e| e["event"] == "warning" && e["kind"] == "output")
        .expect("a warning about the dropped output");
    assert!(
        warning["message"].as_str().unwrap().contains("6 bytes"),
        "{warning}"
    );
    assert_eq!(events.last().unwrap()["outcome"], "exhausted");
}

#[test]
fn buffer_stdout_that_cannot_be_emitted_is_retrys_own_failure() {
    // stdout on /dev/full: ENOSPC, even though the attempt succeeded.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = retry_std()
        .args(["--buffer-stdout", "--", "echo", "data"])
        .stdout(full)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(stderr.contains("(ENOSPC)"), "{stderr}");
    // A reader that is gone: EPIPE.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = retry_std()
        .args([
            "--log-format",
            "json",
            "--buffer-stdout",
            "--",
            "echo",
            "data",
        ])
        .stdout(writer)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    let events = json_events(&out.stderr);
    let error = events.iter().find(|e| e["event"] == "error").unwrap();
    assert!(
        error["message"].as_str().unwrap().contains("(EPIPE)"),
        "{error}"
    );
    // The command succeeded; retry exits 125 because of the delivery.
    let done = events.last().unwrap();
    assert_eq!(
        (&done["outcome"], &done["exit_code"]),
        (&"success".into(), &125.into())
    );
}

#[test]
fn stderr_on_dev_full_while_scanned_neither_kills_the_child_nor_goes_unnamed() {
    let dir = scratch();
    let log = dir.path().join("log");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    // Without retry in between, head would get ENOSPC; through a pump that
    // gave up it got SIGPIPE (exit 141). Now it gets neither, and retry
    // names the error.
    let status = retry_std()
        .arg("--log-file")
        .arg(&log)
        .args([
            "--retry-on-output",
            "X",
            "--",
            "sh",
            "-c",
            "head -c 1000000 /dev/zero >&2; echo $? > status; exit 0",
        ])
        .current_dir(dir.path())
        .stderr(full)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("status")).unwrap(),
        "0\n"
    );
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains("writing the command's stderr: No space left on device (ENOSPC)"),
        "{log}"
    );
    assert_eq!(log.matches("ENOSPC").count(), 1, "warned once: {log}");
}

#[test]
fn scanned_output_reaches_a_slow_reader_whole_after_the_command_has_exited() {
    let mut child = retry_std()
        .args([
            "-q",
            "--scan-stdout",
            "--retry-on-output",
            "X",
            "--",
            "head",
            "-c",
            "1M",
            "/dev/zero",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut total = 0;
    let mut buffer = vec![0u8; 32 * 1024];
    loop {
        // About 640 KB/s: what is left in the pipe when head exits takes
        // longer than the pumps' drain time to pass on.
        std::thread::sleep(Duration::from_millis(50));
        match stdout.read(&mut buffer).unwrap() {
            0 => break,
            count => total += count,
        }
    }
    assert!(child.wait().unwrap().success());
    assert_eq!(total, 1 << 20);
}

// ---- -o FILE ----

/// A directory holding `out` with "old\n", mode 0640.
fn old_output() -> (tempfile::TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch();
    let out = dir.path().join("out");
    std::fs::write(&out, "old\n").unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o640)).unwrap();
    (dir, out)
}

fn mode_of(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn output_file_keeps_its_old_content_when_the_run_fails() {
    let (dir, out) = old_output();
    let assert = retry()
        .args(["-n", "2", "-d", "1ms", "-o"])
        .arg(&out)
        .args(["--", "sh", "-c", "echo partial body; exit 3"])
        .assert()
        .code(3)
        .stdout("");
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(
        stderr.contains("keeps its old content; the last attempt's stdout (13 bytes) was dropped"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old\n");
    assert_eq!(mode_of(&out), 0o640);
    assert_eq!(listing(dir.path()), ["out"]);
}

#[cfg_attr(
    retry_posix,
    ignore = "Linux only: an unnamed file vanishes with a killed run; elsewhere the named one stays until the next run (docs/platforms.md)"
)]
#[test]
fn output_file_survives_sigkill_of_retry_mid_attempt_and_no_temporary_file_is_left() {
    let (dir, out) = old_output();
    let signals = scratch();
    let started = signals.path().join("started");
    let sleep = marker();
    let mut child = retry_std()
        // The private run directory a SIGKILL leaves stays in scratch.
        .env("TMPDIR", signals.path())
        .arg("-o")
        .arg(&out)
        .args(["--", "sh", "-c"])
        .arg(format!(
            "echo partial body; touch '{}'; exec sleep {sleep}",
            started.display()
        ))
        .spawn()
        .unwrap();
    wait_for_file(&started, Duration::from_secs(10));
    send_signal(child.id(), "KILL");
    child.wait().unwrap();
    assert!(none_left(&sleep, Duration::from_secs(2)));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old\n");
    assert_eq!(listing(dir.path()), ["out"]);
}

#[test]
fn output_file_is_replaced_atomically_by_a_successful_attempt_and_keeps_its_mode() {
    use std::os::unix::fs::MetadataExt;
    let (dir, out) = old_output();
    let signals = scratch();
    let started = signals.path().join("started");
    let before = std::fs::metadata(&out).unwrap().ino();
    let mut child = retry_std()
        .args(["-q", "-d", "1ms", "-o"])
        .arg(&out)
        .args(["--", "sh", "-c"])
        .arg(format!(
            "[ $RETRY_ATTEMPT = 1 ] && {{ echo first; exit 1; }}; echo new body; touch '{}'; sleep 0.3",
            started.display()
        ))
        .spawn()
        .unwrap();
    wait_for_file(&started, Duration::from_secs(10));
    // The attempt has written its output and not ended: FILE is untouched.
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old\n");
    assert!(child.wait().unwrap().success());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "new body\n");
    assert_eq!(mode_of(&out), 0o640);
    assert_ne!(
        std::fs::metadata(&out).unwrap().ino(),
        before,
        "renamed into place"
    );
    assert_eq!(listing(dir.path()), ["out"]);
}

#[test]
fn a_new_output_file_gets_0644_under_the_umask() {
    let dir = scratch();
    for (umask, mode) in [("022", 0o644), ("027", 0o640), ("077", 0o600)] {
        let out = dir.path().join(format!("out-{umask}"));
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "umask {umask}; exec '{BIN}' -o '{}' -- echo made",
                out.display()
            ))
            .status()
            .unwrap();
        assert!(status.success());
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "made\n");
        assert_eq!(mode_of(&out), mode, "umask {umask}");
    }
}

#[test]
fn output_with_scanned_stdout_still_goes_to_the_file() {
    let dir = scratch();
    let out = dir.path().join("out");
    retry()
        .args([
            "-q",
            "-d",
            "1ms",
            "--scan-stdout",
            "--retry-on-output",
            "busy",
            "-o",
        ])
        .arg(&out)
        .args([
            "--",
            "sh",
            "-c",
            "[ $RETRY_ATTEMPT = 1 ] && { echo busy; exit 1; }; echo done",
        ])
        .assert()
        .success()
        .stdout("");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "done\n");
    assert_eq!(listing(dir.path()), ["out"]);
}

#[test]
fn output_refuses_what_is_not_a_regular_file_before_running_anything() {
    let dir = scratch();
    let fifo = dir.path().join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    std::os::unix::fs::symlink("elsewhere", dir.path().join("link")).unwrap();
    let ran = dir.path().join("ran");
    let cases = [
        (fifo.clone(), "is a FIFO"),
        ("/dev/null".into(), "is a character device"),
        (dir.path().join("link"), "is a symbolic link"),
        (dir.path().to_path_buf(), "is a directory"),
        (
            dir.path().join("missing/out"),
            "No such file or directory (ENOENT)",
        ),
    ];
    for (target, words) in cases {
        let assert = retry()
            .arg("-o")
            .arg(&target)
            .args(["--", "touch"])
            .arg(&ran)
            .assert()
            .code(125);
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
        assert!(
            stderr.contains(&format!("-o {}", target.display())) && stderr.contains(words),
            "{stderr}"
        );
        assert!(!ran.exists(), "ran with -o {}", target.display());
    }
}

#[test]
fn output_that_cannot_be_put_in_place_after_a_success_is_retrys_own_failure() {
    // The command succeeds, but by then a FIFO stands at FILE.
    let dir = scratch();
    let out = dir.path().join("out");
    let body = format!("echo body; mkfifo '{}'", out.display());
    let (result, events) = json_run(&["-o", out.to_str().unwrap(), "--", "sh", "-c", &body]);
    assert_eq!(result.status.code(), Some(125));
    let error = events.iter().find(|e| e["event"] == "error").unwrap();
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("is now a FIFO"), "{message}");
    let done = events.last().unwrap();
    assert_eq!(
        (&done["outcome"], &done["exit_code"]),
        (&"success".into(), &125.into())
    );
    assert_eq!(listing(dir.path()), ["out"]);
}

#[test]
fn a_temporary_file_left_by_a_killed_run_is_removed_by_the_next() {
    let dir = scratch();
    let old = std::time::SystemTime::now() - Duration::from_secs(300);
    let stale = dir.path().join(".retry-out-0123456789abcdef.tmp");
    std::fs::File::create(&stale)
        .unwrap()
        .set_modified(old)
        .unwrap();
    // A recent one may belong to a run still going: it stays.
    let recent = dir.path().join(".retry-out-fedcba9876543210.tmp");
    std::fs::File::create(&recent).unwrap();
    retry()
        .arg("-o")
        .arg(dir.path().join("out"))
        .args(["--", "echo", "fresh"])
        .assert()
        .success();
    assert_eq!(
        listing(dir.path()),
        [".retry-out-fedcba9876543210.tmp", "out"]
    );
}

// ---- A disk that fills up (root: a small tmpfs) ----

#[test]
fn replay_with_a_spool_that_fills_its_disk_never_hands_on_a_truncated_input() {
    let Some(disk) = SmallDisk::mount("1m", "the full replay spool test") else {
        return;
    };
    let input = vec![b'x'; 5 << 20];
    let run = |body: &str| {
        let mut child = retry_std()
            .env("TMPDIR", &disk.path)
            .args([
                "-n", "2", "-d", "1ms", "--stdin", "replay", "--", "sh", "-c", body,
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let input = input.clone();
        let feeder = std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        let out = child.wait_with_output().unwrap();
        feeder.join().unwrap();
        out
    };
    // Attempt 1 reads all 5 MiB as it comes; attempt 2 cannot be given it.
    let out = run("wc -c; exit 1");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "5242880");
    assert!(
        stderr.contains("No space left on device (ENOSPC)")
            && stderr.contains(&format!("{} (TMPDIR)", disk.path.display()))
            && stderr.contains("attempt 2 cannot be given the whole input"),
        "{stderr}"
    );
    // An attempt that succeeds needed no replay: it got everything.
    let out = run("wc -c");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "5242880");
    assert!(String::from_utf8_lossy(&out.stderr).contains("(ENOSPC)"));
}

#[test]
fn held_stdout_on_a_full_disk_is_named_and_never_delivered() {
    let Some(disk) = SmallDisk::mount("1m", "the full --buffer-stdout spool test") else {
        return;
    };
    let body = "head -c 5M /dev/zero; echo finished >&2";
    // --buffer-stdout, scanned: the pump cannot hold it all.
    let out = retry()
        .env("TMPDIR", &disk.path)
        .args(["--buffer-stdout", "--scan-stdout", "--retry-on-output", "X"])
        .args(["--", "sh", "-c", body])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(
        stderr.contains("finished"),
        "the command was not cut short: {stderr}"
    );
    assert!(
        stderr.contains("No space left on device (ENOSPC)"),
        "{stderr}"
    );
    // -o on the full disk: FILE keeps its old content.
    let out_file = disk.path.join("out");
    std::fs::write(&out_file, "old\n").unwrap();
    let result = retry()
        .args(["--scan-stdout", "--retry-on-output", "X", "-o"])
        .arg(&out_file)
        .args(["--", "sh", "-c", body])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(125), "{stderr}");
    assert!(
        stderr.contains("(ENOSPC)") && stderr.contains("is left as it was"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), "old\n");
    assert_eq!(listing(&disk.path), ["out"]);
}

#[test]
fn one_file_for_both_streams_gets_exactly_the_bytes_and_order_it_would_without_retry() {
    let dir = scratch();
    // Partial lines on both streams, interleaved, with pauses so each piece
    // is its own write.
    let writer = script(
        dir.path(),
        "interleave",
        "#!/bin/sh\nfor i in 1 2 3 4 5; do printf 'The reques' >&2; printf 'err body %s\\n' $i; \
         printf 'ted URL returned error: 503\\n' >&2; done; exit 0\n",
    );
    let direct = dir.path().join("direct");
    let through = dir.path().join("through");
    let run = |command: String, out: &std::path::Path| {
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{command} >'{}' 2>&1", out.display()))
            .stdin(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
    };
    run(format!("'{}'", writer.display()), &direct);
    run(
        format!(
            "'{BIN}' --retry-on-output 'never matches' -- '{}'",
            writer.display()
        ),
        &through,
    );
    assert_eq!(
        std::fs::read(&through).unwrap(),
        std::fs::read(&direct).unwrap(),
        "the file must get the same bytes in the same order"
    );
}
