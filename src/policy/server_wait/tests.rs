use super::*;

fn at(date: &str) -> SystemTime {
    httpdate::parse_http_date(date).unwrap()
}

const NOW: &str = "Tue, 01 Dec 2026 10:00:00 GMT";
/// NOW as Unix time.
const NOW_EPOCH: u64 = 1_796_119_200;

/// The response of `lines`, a status line before them when they have none
/// (fields count only in a header block).
fn response(lines: &[&str]) -> Response {
    let status = ["HTTP/1.1 429"];
    let has_status = lines.is_empty()
        || lines
            .iter()
            .any(|line| line.trim_start().starts_with("HTTP/"));
    let lines = if has_status { &[][..] } else { &status[..] }
        .iter()
        .chain(lines);
    Response::from_lines(lines.map(|line| line.as_bytes()))
}

fn waited(lines: &[&str]) -> Option<(Duration, &'static str, String)> {
    server_wait(&response(lines), at(NOW)).map(|w| (w.delay, w.header, w.reading))
}

#[test]
fn retry_after_seconds_and_http_dates() {
    let now = httpdate::parse_http_date("Tue, 01 Dec 2026 10:00:00 GMT").unwrap();
    assert_eq!(
        parse_retry_after("120", now),
        Some(Duration::from_secs(120))
    );
    assert_eq!(parse_retry_after(" 5 ", now), Some(Duration::from_secs(5)));
    assert_eq!(
        parse_retry_after("Tue, 01 Dec 2026 10:00:30 GMT", now),
        Some(Duration::from_secs(30))
    );
    assert_eq!(
        parse_retry_after("Tue, 01 Dec 2026 09:00:00 GMT", now),
        Some(Duration::ZERO)
    );
    assert_eq!(parse_retry_after("soon", now), None);
    assert_eq!(parse_retry_after("-5", now), None);
    assert_eq!(
        parse_retry_after("99999999999999999999999", now),
        Some(MAX_DURATION)
    );
}

#[test]
fn now_is_the_epoch_the_tests_think() {
    assert_eq!(
        at(NOW).duration_since(UNIX_EPOCH).unwrap().as_secs(),
        NOW_EPOCH
    );
}

#[test]
fn an_x_ratelimit_reset_is_read_only_when_the_quota_is_spent_and_by_its_magnitude() {
    let epoch = format!("x-ratelimit-reset: {}", NOW_EPOCH + 42);
    assert_eq!(
        waited(&["HTTP/2 403", "x-ratelimit-remaining: 0", &epoch]),
        Some((
            Duration::from_secs(42),
            "X-RateLimit-Reset",
            format!("{}, read as Unix time (epoch seconds)", NOW_EPOCH + 42)
        ))
    );
    let millis = format!("X-RateLimit-Reset: {}", (NOW_EPOCH + 3) * 1000);
    let (delay, _, reading) = waited(&["X-RateLimit-Remaining: 0", &millis]).unwrap();
    assert_eq!(delay, Duration::from_secs(3));
    assert!(reading.ends_with("epoch milliseconds)"), "{reading}");
    assert_eq!(
        waited(&["X-Ratelimit-Remaining: 0", "X-Ratelimit-Reset: 30"]).unwrap(),
        (
            Duration::from_secs(30),
            "X-RateLimit-Reset",
            "30, read as seconds from now".to_string()
        )
    );
    // Quota left: no wait. A reset in the past: now.
    assert_eq!(waited(&["x-ratelimit-remaining: 4", &epoch]), None);
    let past = format!("x-ratelimit-reset: {}", NOW_EPOCH - 100);
    assert_eq!(
        waited(&["x-ratelimit-remaining: 0", &past]).unwrap().0,
        Duration::ZERO
    );
}

#[test]
fn an_epoch_reset_is_measured_from_the_responses_own_date() {
    // The local clock is 10 minutes fast; the server's Date is what counts.
    let lines = [
        "Date: Tue, 01 Dec 2026 09:50:00 GMT",
        "x-ratelimit-remaining: 0",
        "x-ratelimit-reset: 1796118620",
    ];
    assert_eq!(waited(&lines).unwrap().0, Duration::from_secs(20));
}

#[test]
fn ietf_ratelimit_takes_the_longest_spent_item_and_older_drafts_are_read_too() {
    assert_eq!(
        waited(&["RateLimit: \"default\";r=0;t=30"]).map(|w| (w.0, w.1)),
        Some((Duration::from_secs(30), "RateLimit"))
    );
    let lines = ["RateLimit: \"burst\";r=0;t=5, \"daily\";r=0;t=50, \"hour\";r=3;t=900"];
    assert_eq!(waited(&lines).unwrap().0, Duration::from_secs(50));
    assert_eq!(waited(&["RateLimit: \"a,b\";r=1;t=30"]), None);
    assert_eq!(waited(&["RateLimit-Policy: \"burst\";q=100;w=60"]), None);
    // Draft -07, and -00 to -06 (a delta; GitLab's epoch by magnitude).
    assert_eq!(
        waited(&["RateLimit: limit=100, remaining=0, reset=5"])
            .unwrap()
            .0,
        Duration::from_secs(5)
    );
    assert_eq!(
        waited(&["RateLimit-Remaining: 0", "RateLimit-Reset: 7"])
            .unwrap()
            .1,
        "RateLimit-Reset"
    );
}

#[test]
fn retry_after_comes_first_then_pushback_then_amazons_then_the_quota() {
    let all = [
        "x-ratelimit-remaining: 0",
        "x-ratelimit-reset: 9",
        "RateLimit: \"d\";r=0;t=8",
        "x-amz-retry-after: 7000",
        "grpc-retry-pushback-ms: 6000",
        "Retry-After: 5",
    ];
    let order = [
        "Retry-After",
        "grpc-retry-pushback-ms",
        "x-amz-retry-after",
        "RateLimit",
        "X-RateLimit-Reset",
    ];
    for (skip, header) in order.iter().enumerate() {
        let lines = &all[..all.len() - skip];
        let (delay, found, _) = waited(lines).unwrap();
        assert_eq!(found, *header);
        assert_eq!(delay, Duration::from_secs(5 + skip as u64));
    }
    assert_eq!(
        waited(&["x-amz-retry-after: 1500"]).unwrap().0,
        Duration::from_millis(1500)
    );
    // A negative or malformed value is ignored.
    assert_eq!(waited(&["grpc-retry-pushback-ms: -1"]), None);
    assert_eq!(waited(&["x-amz-retry-after: soon"]), None);
}

#[test]
fn throttling_is_429_a_503_with_a_wait_or_a_spent_quota_on_an_error() {
    let why = |lines: &[&str]| throttling(&response(lines), at(NOW));
    assert_eq!(
        why(&["HTTP/1.1 429 Too Many Requests"]).unwrap(),
        "HTTP 429"
    );
    assert_eq!(
        why(&["HTTP/1.1 503", "Retry-After: 3"]).unwrap(),
        "HTTP 503 with Retry-After"
    );
    assert_eq!(why(&["HTTP/1.1 503"]), None);
    assert_eq!(
        why(&[
            "HTTP/2 403",
            "x-ratelimit-remaining: 0",
            "x-ratelimit-reset: 60"
        ])
        .unwrap(),
        "HTTP 403, X-RateLimit-Reset says the quota is spent"
    );
    // The last request allowed succeeded: not throttling.
    assert_eq!(
        why(&[
            "HTTP/2 200",
            "x-ratelimit-remaining: 0",
            "x-ratelimit-reset: 60"
        ]),
        None
    );
    assert_eq!(why(&["HTTP/2 500", "Retry-After: 3"]), None);
    assert_eq!(why(&[]), None);
}

#[test]
fn an_absurd_reset_is_the_longest_wait_as_an_absurd_retry_after_is_not_ignored() {
    // Past what a Duration or the system clock holds: read as the longest
    // wait (which --max-retry-after then refuses, with a warning), not
    // dropped as if no quota were spent.
    for reset in ["1e300", "99999999999999999999999", "1e25"] {
        let line = format!("X-RateLimit-Reset: {reset}");
        let (delay, header, _) = waited(&["HTTP/1.1 503", "X-RateLimit-Remaining: 0", &line])
            .unwrap_or_else(|| panic!("{reset}: no wait"));
        assert_eq!(
            (delay, header),
            (MAX_DURATION, "X-RateLimit-Reset"),
            "{reset}"
        );
    }
    let spent = response(&[
        "HTTP/1.1 503",
        "RateLimit-Remaining: 0",
        "RateLimit-Reset: 1e300",
    ]);
    assert_eq!(
        throttling(&spent, at(NOW)).as_deref(),
        Some("HTTP 503 with RateLimit-Reset")
    );
}
