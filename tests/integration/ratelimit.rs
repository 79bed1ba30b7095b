//! Rate limits end to end (issue 26, items 1 and 2): the rate-limit headers
//! beyond Retry-After, served by a local HTTP server on 127.0.0.1 through
//! real curl (`-D /dev/stderr`) or printed by a script, and the `throttled`
//! verdict with `--throttle-delay`, in messages, JSON, metrics and
//! `--explain`.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use predicates::prelude::*;

use crate::util::*;

/// A server on 127.0.0.1 whose n-th request (from 0) gets `answer(n)`: a
/// status (`429 Too Many Requests`) and header lines, each ending in CRLF.
/// Returns its port and the count of requests served.
fn server<F>(answer: F) -> (u16, Arc<AtomicUsize>)
where
    F: Fn(usize) -> (&'static str, String) + Send + 'static,
{
    let served = Arc::new(AtomicUsize::new(0));
    let counter = served.clone();
    let port = serve(move |_, mut stream| {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        let (status, headers) = answer(n);
        let body = format!("body of {status}\n");
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    });
    (port, served)
}

/// The first answer fails as given, every later one is `200 OK`.
fn fails_once(status: &'static str, headers: String) -> (u16, Arc<AtomicUsize>) {
    server(move |n| {
        if n == 0 {
            (status, headers.clone())
        } else {
            ("200 OK", String::new())
        }
    })
}

fn epoch_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// `retry --log-format json ARGS -- curl -fsS -D /dev/stderr -o /dev/null
/// URL`: the output, the events and how long it took.
fn curl_json(args: &[&str], port: u16) -> (std::process::Output, Vec<serde_json::Value>, Duration) {
    curl_json_with(args, &[], port)
}

/// [`curl_json`] with more arguments for curl.
fn curl_json_with(
    args: &[&str],
    curl_args: &[&str],
    port: u16,
) -> (std::process::Output, Vec<serde_json::Value>, Duration) {
    assert!(curl_available(), "curl is needed for this test");
    let url = format!("http://127.0.0.1:{port}/");
    let started = Instant::now();
    let out = retry_std()
        .args(["--log-format", "json"])
        .args(args)
        .args(["--", "curl", "-fsS", "-D", "/dev/stderr", "-o", "/dev/null"])
        .args(curl_args)
        .arg(&url)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let took = started.elapsed();
    let events = events_of(&out.stderr);
    (out, events, took)
}

/// retry's JSON events among the child's own stderr lines (the headers).
fn events_of(stderr: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|value| value.get("event").is_some())
        .collect()
}

/// `retry --log-format json ARGS`: the output and the events.
fn json_lenient(args: &[&str]) -> (std::process::Output, Vec<serde_json::Value>) {
    let out = retry_std()
        .args(["--log-format", "json"])
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let events = events_of(&out.stderr);
    (out, events)
}

fn event<'a>(events: &'a [serde_json::Value], name: &str) -> &'a serde_json::Value {
    events
        .iter()
        .find(|e| e["event"] == name)
        .unwrap_or_else(|| panic!("no {name} event in {events:?}"))
}

#[test]
fn github_s_spent_quota_waits_until_x_ratelimit_reset_in_epoch_seconds() {
    // GitHub answers a spent primary quota with 403 and the reset as Unix
    // time: the curl preset's "403 is permanent" gives way to the headers.
    let reset = epoch_now() + 2;
    let (port, served) = fails_once(
        "403 Forbidden",
        format!(
            "x-ratelimit-limit: 60\r\nx-ratelimit-remaining: 0\r\nx-ratelimit-reset: {reset}\r\n"
        ),
    );
    let (out, events, took) = curl_json(&["-v", "-d", "1ms"], port);
    assert!(out.status.success(), "{events:?}");
    assert_eq!(served.load(Ordering::SeqCst), 2);
    // Until the reset second: at least 1 s from now, at most 2 s.
    assert!(took >= Duration::from_millis(950), "{took:?}");
    let attempt = event(&events, "attempt");
    assert_eq!(attempt["outcome"], "throttled", "{attempt}");
    assert!(
        attempt["reason"]
            .as_str()
            .unwrap()
            .contains("X-RateLimit-Reset says the quota is spent"),
        "{attempt}"
    );
    let sleep = event(&events, "sleep");
    assert_eq!(sleep["source"], "retry-after");
    assert_eq!(sleep["header"], "X-RateLimit-Reset");
    // At most the 2 s to the reset (less as much as the attempt took).
    assert!(sleep["delay_ms"].as_u64().unwrap() <= 2100, "{sleep}");
}

#[test]
fn v_says_how_a_reset_was_read_epoch_or_seconds_from_now() {
    assert!(curl_available(), "curl is needed for this test");
    let reset = epoch_now() + 1;
    for (value, reading) in [
        (reset.to_string(), "read as Unix time (epoch seconds)"),
        (
            "1".to_string(),
            "X-RateLimit-Reset: 1, read as seconds from now",
        ),
    ] {
        let (port, _) = fails_once(
            "429 Too Many Requests",
            format!("X-RateLimit-Remaining: 0\r\nX-RateLimit-Reset: {value}\r\n"),
        );
        let url = format!("http://127.0.0.1:{port}/");
        retry()
            .args([
                "-v",
                "-d",
                "1ms",
                "--",
                "curl",
                "-fsS",
                "-D",
                "/dev/stderr",
                "-o",
                "/dev/null",
                &url,
            ])
            .assert()
            .success()
            .stderr(predicate::str::contains("(throttled); retrying in"))
            .stderr(predicate::str::contains("as X-RateLimit-Reset asked"))
            .stderr(predicate::str::contains(reading));
    }
}

#[test]
fn the_ietf_ratelimit_field_sets_the_wait_and_makes_a_503_throttled() {
    let (port, served) = fails_once(
        "503 Service Unavailable",
        "RateLimit-Policy: \"default\";q=10;w=60\r\nRateLimit: \"default\";r=0;t=1\r\n".to_string(),
    );
    let (out, events, took) = curl_json(&["-d", "1ms"], port);
    assert!(out.status.success(), "{events:?}");
    assert_eq!(served.load(Ordering::SeqCst), 2);
    assert!(took >= Duration::from_millis(950), "{took:?}");
    assert_eq!(event(&events, "attempt")["outcome"], "throttled");
    let sleep = event(&events, "sleep");
    assert_eq!(
        (&sleep["header"], &sleep["delay_ms"]),
        (&"RateLimit".into(), &1000.into())
    );
}

#[test]
fn x_amz_retry_after_is_milliseconds_and_a_500_with_it_stays_transient() {
    let (port, _) = fails_once(
        "500 Internal Server Error",
        "x-amz-retry-after: 1200\r\n".to_string(),
    );
    let (out, events, took) = curl_json(&["-d", "1ms"], port);
    assert!(out.status.success(), "{events:?}");
    assert!(took >= Duration::from_millis(1150), "{took:?}");
    assert_eq!(event(&events, "attempt")["outcome"], "transient");
    let sleep = event(&events, "sleep");
    assert_eq!(sleep["header"], "x-amz-retry-after");
    assert_eq!(sleep["delay_ms"], 1200);
}

#[test]
fn retry_after_wins_over_the_rate_limit_fields_and_the_last_response_counts() {
    // A redirect's headers come first; the final 429 carries both fields.
    let (port, _) = server(|n| match n {
        0 => (
            "302 Found",
            "Location: /next\r\nRetry-After: 30\r\n".to_string(),
        ),
        1 => (
            "429 Too Many Requests",
            "RateLimit: \"d\";r=0;t=20\r\nRetry-After: 1\r\n".to_string(),
        ),
        _ => ("200 OK", String::new()),
    });
    let (out, events, _) = curl_json_with(&["-d", "1ms"], &["-L"], port);
    assert!(out.status.success(), "{events:?}");
    assert_eq!(event(&events, "attempt")["outcome"], "throttled");
    let sleep = event(&events, "sleep");
    assert_eq!(sleep["header"], "Retry-After");
    assert_eq!(sleep["delay_ms"], 1000);
}

#[test]
fn a_wait_longer_than_max_retry_after_ends_the_run_naming_the_header_and_the_flag() {
    // GitHub's reset 10 minutes ahead, with --max-retry-after 2s: the run
    // gives up at once with curl's own status, never asks again sooner.
    let reset = epoch_now() + 600;
    let (port, served) = fails_once(
        "429 Too Many Requests",
        format!("x-ratelimit-remaining: 0\r\nx-ratelimit-reset: {reset}\r\n"),
    );
    let (out, events, took) = curl_json(
        &[
            "-d",
            "1ms",
            "--throttle-delay",
            "1ms",
            "--max-retry-after",
            "2s",
        ],
        port,
    );
    assert_eq!(out.status.code(), Some(22), "{events:?}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert_eq!(served.load(Ordering::SeqCst), 1);
    assert!(!events.iter().any(|e| e["event"] == "sleep"), "{events:?}");
    assert_eq!(event(&events, "done")["outcome"], "exhausted");
    let warning = event(&events, "warning");
    assert_eq!(warning["kind"], "retry-after");
    let detail = warning["message"].as_str().unwrap();
    assert!(
        detail.starts_with("X-RateLimit-Reset asked for ")
            && detail
                .contains("longer than --max-retry-after 2s: not retrying (--max-retry-after "),
        "{detail}"
    );
    // --give-up-exit applies: it gave up on a transient failure.
    let (port, _) = fails_once(
        "429 Too Many Requests",
        format!("x-ratelimit-remaining: 0\r\nx-ratelimit-reset: {reset}\r\n"),
    );
    let (out, _, _) = curl_json(&["--max-retry-after", "2s", "--give-up-exit", "75"], port);
    assert_eq!(out.status.code(), Some(75));
}

#[test]
fn grpc_retry_pushback_printed_by_a_tool_sets_the_wait() {
    let dir = scratch();
    let tool = script(
        dir.path(),
        "grpc-tool",
        &format!(
            "n=$(cat '{0}/n' 2>/dev/null || echo 0); echo $((n+1)) > '{0}/n'\n\
             [ \"$n\" -ge 1 ] && exit 0\n\
             printf '\\nResponse trailers received:\\ngrpc-retry-pushback-ms: 700\\n' >&2\n\
             printf 'ERROR:\\n  Code: ResourceExhausted\\n' >&2\n\
             exit 1\n",
            dir.path().display()
        ),
    );
    let started = Instant::now();
    let (out, events) = json_lenient(&["--retry-after", "-d", "1ms", "--", tool.to_str().unwrap()]);
    assert!(out.status.success(), "{events:?}");
    assert!(started.elapsed() >= Duration::from_millis(650));
    let sleep = event(&events, "sleep");
    assert_eq!(
        (&sleep["header"], &sleep["delay_ms"]),
        (&"grpc-retry-pushback-ms".into(), &700.into())
    );
}

#[test]
fn a_throttled_failure_backs_off_from_throttle_delay_and_shows_in_json_and_metrics() {
    // A 429 with no wait header: the backoff, from --throttle-delay.
    let dir = scratch();
    let metrics = dir.path().join("job.prom");
    let (port, served) = fails_once("429 Too Many Requests", String::new());
    let (out, events, took) = curl_json(
        &[
            "-d",
            "1ms",
            "--throttle-delay",
            "1200ms",
            "--jitter",
            "none",
            "--metrics-file",
            metrics.to_str().unwrap(),
        ],
        port,
    );
    assert!(out.status.success(), "{events:?}");
    assert_eq!(served.load(Ordering::SeqCst), 2);
    assert!(took >= Duration::from_millis(1150), "{took:?}");
    let attempt = event(&events, "attempt");
    assert_eq!(attempt["outcome"], "throttled");
    let sleep = event(&events, "sleep");
    assert_eq!(
        (&sleep["source"], &sleep["delay_ms"]),
        (&"backoff".into(), &1200.into())
    );
    assert!(sleep.get("header").is_none(), "{sleep}");
    let prom = std::fs::read_to_string(&metrics).unwrap();
    assert!(
        prom.contains("retry_failures{name=\"curl\",verdict=\"throttled\"} 1\n"),
        "{prom}"
    );
    assert!(
        prom.contains("retry_failures{name=\"curl\",verdict=\"transient\"} 0\n"),
        "{prom}"
    );
}

#[test]
fn a_transient_failure_keeps_delay_and_a_hint_can_say_throttled() {
    let dir = scratch();
    let body = format!(
        "n=$(cat '{0}/n' 2>/dev/null || echo 0); echo $((n+1)) > '{0}/n'\n\
         [ \"$n\" -ge 2 ] && exit 0\n\
         [ \"$n\" -eq 1 ] && echo throttled > \"$RETRY_HINT_FILE\"\n\
         exit 3\n",
        dir.path().display()
    );
    let tool = script(dir.path(), "tool", &body);
    let started = Instant::now();
    let (out, events) = json_lenient(&[
        "-d",
        "1ms",
        "--throttle-delay",
        "800ms",
        "--jitter",
        "none",
        "--",
        tool.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{events:?}");
    assert!(started.elapsed() >= Duration::from_millis(750));
    let outcomes: Vec<_> = events
        .iter()
        .filter(|e| e["event"] == "attempt")
        .map(|e| e["outcome"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(outcomes, ["transient", "throttled", "success"]);
    let delays: Vec<_> = events
        .iter()
        .filter(|e| e["event"] == "sleep")
        .map(|e| e["delay_ms"].as_u64().unwrap())
        .collect();
    // The second failure is retry 2: the ceiling doubled from each base.
    assert_eq!(delays, [1, 1600]);
}

#[test]
fn explain_and_v_show_throttle_delay_and_a_bad_one_is_a_usage_error() {
    retry()
        .args(["--explain", "--throttle-delay", "2s"])
        .assert()
        .success()
        .stdout(predicate::str::contains("throttle-delay 2s"))
        .stdout(predicate::str::contains(
            "the ceiling grows from the larger of --delay and --throttle-delay: --throttle-delay 2s (first ceilings 2s, 4s, 8s, ...)",
        ));
    // A floor, not a replacement: a larger --delay wins for a 429 too.
    retry()
        .args(["--explain", "-d", "5s", "--throttle-delay", "2s"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "--delay 5s (--throttle-delay 2s is only a floor) (first ceilings 5s, 10s, 20s, ...)",
        ));
    retry()
        .args(["-v", "-n", "1", "--", "true"])
        .assert()
        .success()
        .stderr(predicate::str::contains("delay 1s, throttle-delay 1s,"));
    let dir = scratch();
    let marker = dir.path().join("ran");
    for bad in ["soon", "-1s", "1e30"] {
        retry()
            .args(["--throttle-delay", bad, "--", "touch"])
            .arg(&marker)
            .assert()
            .code(125)
            .stderr(
                predicate::str::contains("--throttle-delay").and(predicate::str::contains(bad)),
            );
        assert!(!marker.exists());
    }
}

#[test]
fn response_headers_in_the_hint_file_are_read_without_retry_after() {
    // `curl -D "$RETRY_HINT_FILE"` inside a script: no preset, no
    // --retry-after, and the headers still set the wait and the verdict.
    assert!(curl_available(), "curl is needed for this test");
    let (port, served) = fails_once(
        "429 Too Many Requests",
        "X-RateLimit-Remaining: 0\r\nX-RateLimit-Reset: 1\r\n".to_string(),
    );
    let url = format!("http://127.0.0.1:{port}/");
    let command = format!("curl -fsS -D \"$RETRY_HINT_FILE\" -o /dev/null {url}");
    let started = Instant::now();
    let (out, events) = json_lenient(&["-d", "1ms", "--", "sh", "-c", &command]);
    assert!(out.status.success(), "{events:?}");
    assert_eq!(served.load(Ordering::SeqCst), 2);
    assert!(started.elapsed() >= Duration::from_millis(950));
    let attempt = event(&events, "attempt");
    assert_eq!(attempt["outcome"], "throttled", "{attempt}");
    let sleep = event(&events, "sleep");
    assert_eq!(
        (&sleep["header"], &sleep["delay_ms"]),
        (&"X-RateLimit-Reset".into(), &1000.into())
    );
    assert!(events.iter().all(|e| e["event"] != "warning"), "{events:?}");
}

#[test]
fn a_response_with_many_headers_in_the_hint_file_is_read_not_refused_as_too_long() {
    // Real APIs send kilobytes of headers (policies, cookies, tracing): the
    // hint file that `curl -D` writes is not one word's few bytes.
    assert!(curl_available(), "curl is needed for this test");
    let padding = format!("X-Padding: {}\r\n", "a".repeat(100)).repeat(80);
    let (port, served) = fails_once(
        "429 Too Many Requests",
        format!("{padding}Retry-After: 1\r\n"),
    );
    let url = format!("http://127.0.0.1:{port}/");
    let command = format!("curl -fsS -D \"$RETRY_HINT_FILE\" -o /dev/null {url}");
    let (out, events) = json_lenient(&["-d", "1ms", "--", "sh", "-c", &command]);
    assert!(out.status.success(), "{events:?}");
    assert_eq!(served.load(Ordering::SeqCst), 2);
    assert!(events.iter().all(|e| e["event"] != "warning"), "{events:?}");
    assert_eq!(event(&events, "attempt")["outcome"], "throttled");
    let sleep = event(&events, "sleep");
    assert_eq!(
        (&sleep["header"], &sleep["delay_ms"]),
        (&"Retry-After".into(), &1000.into())
    );
}

#[test]
fn a_flood_of_ratelimit_lines_is_read_in_linear_time_and_the_success_stands() {
    // Each `RateLimit:` line joins one list: joined by copying the list so
    // far, 100,000 lines (2.3 MB) took retry 17 s, past -T, and a command
    // that had exited 0 at once was judged timed out (124).
    let (out, events) = json_lenient(&[
        "--retry-after",
        "-T",
        "10s",
        "-n",
        "1",
        "--",
        "sh",
        "-c",
        "yes 'RateLimit: \"a\";r=1;t=1' | head -n 100000 >&2",
    ]);
    assert_eq!(out.status.code(), Some(0), "{events:?}");
    assert_eq!(event(&events, "done")["outcome"], "success");
}

#[test]
fn body_lines_and_bare_lines_are_not_headers() {
    // curl -i prints the body after the blank line that ends the headers:
    // a YAML body's `retry-after: 240` sets no wait and `x-ratelimit-remaining: 0`
    // makes no 503 throttled.
    assert!(curl_available(), "curl is needed for this test");
    let served = Arc::new(AtomicUsize::new(0));
    let counter = served.clone();
    let port = serve(move |_, mut stream| {
        counter.fetch_add(1, Ordering::SeqCst);
        let body = "retry-after: 240\nx-ratelimit-remaining: 0\nx-ratelimit-reset: 240\n";
        let _ = write!(
            stream,
            "HTTP/1.1 503 Service Unavailable\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    });
    let url = format!("http://127.0.0.1:{port}/");
    let started = Instant::now();
    let (out, events) = json_lenient(&[
        "-n",
        "2",
        "-d",
        "10ms",
        "--retry-after",
        "--scan-stdout",
        "--",
        "sh",
        "-c",
        &format!("curl -sS -i '{url}'; exit 1"),
    ]);
    assert!(started.elapsed() < Duration::from_secs(30), "{events:?}");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(served.load(Ordering::SeqCst), 2);
    assert_eq!(
        event(&events, "attempt")["outcome"],
        "transient",
        "{events:?}"
    );
    assert_eq!(event(&events, "sleep")["source"], "backoff", "{events:?}");
    // A bare field with no status line before it is no header either (the
    // hint file is how a script asks for a wait).
    let (out, events) = json_lenient(&[
        "-n",
        "2",
        "-d",
        "10ms",
        "--retry-after",
        "--",
        "sh",
        "-c",
        "echo 'Retry-After: 240' >&2; exit 1",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(event(&events, "sleep")["source"], "backoff", "{events:?}");
}

#[test]
fn a_servers_escape_sequences_never_reach_retrys_own_lines() {
    // The IETF list's second item is a name full of OSC and CSI sequences;
    // its first gives the wait, so `-v` quotes the whole field.
    let (port, served) = fails_once(
        "429 Too Many Requests",
        "RateLimit: \"d\";r=0;t=1, \"\x1b]0;owned\x07\x1b[2J\r\";r=1;t=1\r\n".to_string(),
    );
    let dir = scratch();
    let log = dir.path().join("retry.log");
    let url = format!("http://127.0.0.1:{port}/");
    let out = retry_std()
        .args(["-v", "-d", "1ms", "--log-file", log.to_str().unwrap(), "--"])
        .args(["curl", "-fsS", "-D", "/dev/stderr", "-o", "/dev/null", &url])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(served.load(Ordering::SeqCst), 2);
    let logged = std::fs::read(&log).unwrap();
    let text = String::from_utf8_lossy(&logged);
    assert!(text.contains("as RateLimit asked"), "{text}");
    assert!(text.contains(r"\e]0;owned\x07"), "{text}");
    let controls: Vec<u8> = logged
        .iter()
        .copied()
        .filter(|&b| (b < 0x20 && b != b'\n') || b == 0x7f)
        .collect();
    assert!(controls.is_empty(), "{controls:?} in {text}");
}
