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
        .stderr(predicate::str::contains("--max-time reached"));
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
fn buffer_stdout_of_a_run_that_gives_up_is_the_last_attempts() {
    retry()
        .args([
            "-q",
            "-n",
            "2",
            "-d",
            "1ms",
            "--buffer-stdout",
            "--",
            "sh",
            "-c",
            "echo try $RETRY_ATTEMPT; exit 5",
        ])
        .assert()
        .code(5)
        .stdout("try 2\n");
}
