//! What the last HTTP response a command printed asks of the next attempt:
//! how long to wait ([`server_wait`]) and whether the failure was the server
//! throttling the client ([`throttling`]). Pure: the clock comes in as `now`.
//!
//! Precedence (the design notes' rate-limits.md, section 3.1), first found
//! wins: `Retry-After` (the IETF draft says it MUST win over `RateLimit`),
//! `grpc-retry-pushback-ms`, `x-amz-retry-after`, then the quota fields when
//! the quota is spent: `RateLimit` items with `r=0` (the largest `t`), the
//! older drafts' `RateLimit-Remaining: 0` with `RateLimit-Reset`, and
//! `X-RateLimit-Remaining: 0` with `X-RateLimit-Reset`. `RateLimit-Policy`
//! alone gives no wait.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::scan::Response;
use crate::values::MAX_DURATION;

/// A wait the server asked for, and which header asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ServerWait {
    pub(crate) delay: Duration,
    /// The header, as usually spelled: `Retry-After`, `X-RateLimit-Reset`.
    pub(crate) header: &'static str,
    /// How its value was read, for `-v`: `1767225600, read as Unix time
    /// (epoch seconds)`.
    pub(crate) reading: String,
}

fn wait(delay: Duration, header: &'static str, reading: String) -> ServerWait {
    ServerWait {
        delay: delay.min(MAX_DURATION),
        header,
        reading,
    }
}

/// The wait `response` asks for, measured from `now` (absolute times are
/// measured from the response's own `Date` when it printed one, so a
/// skewed local clock does not move them).
pub(crate) fn server_wait(response: &Response, now: SystemTime) -> Option<ServerWait> {
    let sent = response
        .date
        .as_deref()
        .and_then(|date| httpdate::parse_http_date(date).ok())
        .unwrap_or(now);
    if let Some(value) = &response.retry_after
        && let Some(delay) = parse_retry_after(value, sent)
    {
        return Some(wait(delay, "Retry-After", value.clone()));
    }
    if let Some(value) = &response.grpc_pushback_ms
        && let Some(ms) = whole_number(value)
    {
        let reading = format!("{value}, read as milliseconds");
        return Some(wait(
            Duration::from_millis(ms),
            "grpc-retry-pushback-ms",
            reading,
        ));
    }
    if let Some(value) = &response.amz_retry_after
        && let Some(ms) = whole_number(value)
    {
        let reading = format!("{value}, read as milliseconds");
        return Some(wait(
            Duration::from_millis(ms),
            "x-amz-retry-after",
            reading,
        ));
    }
    if let Some(value) = &response.ratelimit
        && let Some(delay) = ietf_wait(value)
    {
        return Some(wait(delay, "RateLimit", value.clone()));
    }
    let quota_spent = |remaining: &Option<String>| {
        remaining
            .as_deref()
            .is_some_and(|r| r.trim().parse::<f64>() == Ok(0.0))
    };
    for (remaining, reset, header) in [
        (
            &response.ratelimit_remaining,
            &response.ratelimit_reset,
            "RateLimit-Reset",
        ),
        (
            &response.x_ratelimit_remaining,
            &response.x_ratelimit_reset,
            "X-RateLimit-Reset",
        ),
    ] {
        if quota_spent(remaining)
            && let Some(value) = reset
            && let Some((delay, how)) = reset_delay(value, sent)
        {
            return Some(wait(delay, header, format!("{value}, read as {how}")));
        }
    }
    None
}

/// Why the failure of an attempt that printed `response` is the server
/// throttling the client, if it is: HTTP 429; a 503 that came with a wait;
/// an error response (or one with no status seen) whose quota is spent.
pub(crate) fn throttling(response: &Response, now: SystemTime) -> Option<String> {
    let wait = server_wait(response, now);
    match (response.status, &wait) {
        (Some(429), _) => return Some("HTTP 429".to_string()),
        (Some(503), Some(wait)) => return Some(format!("HTTP 503 with {}", wait.header)),
        (Some(status), _) if status < 400 => return None,
        _ => {}
    }
    let spent = wait.filter(|wait| {
        matches!(
            wait.header,
            "RateLimit" | "RateLimit-Reset" | "X-RateLimit-Reset"
        )
    })?;
    let status = response
        .status
        .map_or(String::new(), |status| format!("HTTP {status}, "));
    Some(format!("{status}{} says the quota is spent", spent.header))
}

/// The value of a Retry-After header (RFC 9110 section 10.2.3): a number of
/// seconds, or an HTTP-date, which becomes the time from `now` until then (0
/// if it has passed). `None` when it is neither.
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        let seconds: u64 = value.parse().unwrap_or(u64::MAX);
        return Some(Duration::from_secs(seconds).min(MAX_DURATION));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A non-negative integer (a negative or malformed value is ignored).
fn whole_number(value: &str) -> Option<u64> {
    let value = value.trim();
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(value.parse().unwrap_or(u64::MAX))
}

/// A bare number that no API would send as a delta: a reset at or past
/// 2001-09-09 is Unix time (rate-limits.md 1.3, rule 3).
const EPOCH_SECONDS_FROM: f64 = 1e9;
const EPOCH_MILLIS_FROM: f64 = 1e12;

/// A reset value as a wait from `sent`, and how it was read: epoch seconds,
/// epoch milliseconds or seconds from now, decided by its magnitude.
fn reset_delay(value: &str, sent: SystemTime) -> Option<(Duration, &'static str)> {
    let number: f64 = value.trim().parse().ok()?;
    if !number.is_finite() || number < 0.0 {
        return None;
    }
    let (seconds, how) = if number >= EPOCH_MILLIS_FROM {
        (number / 1000.0, "Unix time (epoch milliseconds)")
    } else if number >= EPOCH_SECONDS_FROM {
        (number, "Unix time (epoch seconds)")
    } else {
        let delay = Duration::try_from_secs_f64(number).ok()?;
        return Some((delay, "seconds from now"));
    };
    // Past what the clock holds: the longest wait, as for a Retry-After
    // that no Duration holds (the limits then refuse it, with a warning).
    let Some(at) = Duration::try_from_secs_f64(seconds)
        .ok()
        .and_then(|since| UNIX_EPOCH.checked_add(since))
    else {
        return Some((MAX_DURATION, how));
    };
    // A reset in the past means now, not a wait.
    Some((at.duration_since(sent).unwrap_or(Duration::ZERO), how))
}

/// The wait an IETF `RateLimit` field asks for: the largest `t` of the items
/// whose remaining quota `r` is 0 (drafts -08 on: `"name";r=0;t=30`), or
/// draft -07's `limit=100, remaining=0, reset=5`.
fn ietf_wait(value: &str) -> Option<Duration> {
    let mut longest: Option<u64> = None;
    let (mut remaining, mut reset) = (None, None);
    for item in split_outside_quotes(value, b',') {
        let mut parts = split_outside_quotes(item, b';').into_iter();
        let head = parts.next().unwrap_or_default().trim();
        if let Some((key, number)) = head.split_once('=') {
            // Draft -07: a dictionary of numbers.
            match key.trim().to_ascii_lowercase().as_str() {
                "remaining" => remaining = whole_number(number),
                "reset" => reset = whole_number(number),
                _ => {}
            }
            continue;
        }
        let (mut r, mut t) = (None, None);
        for parameter in parts {
            match parameter.trim().split_once('=') {
                Some(("r", number)) => r = whole_number(number),
                Some(("t", number)) => t = whole_number(number),
                _ => {}
            }
        }
        if r == Some(0)
            && let Some(t) = t
        {
            longest = Some(longest.map_or(t, |l| l.max(t)));
        }
    }
    if longest.is_none() && remaining == Some(0) {
        longest = reset;
    }
    longest.map(|seconds| Duration::from_secs(seconds).min(MAX_DURATION))
}

/// `text` cut at every `separator` that is not inside a quoted string.
fn split_outside_quotes(text: &str, separator: u8) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut quoted, mut escaped, mut start) = (false, false, 0);
    for (at, byte) in text.bytes().enumerate() {
        match byte {
            _ if escaped => escaped = false,
            b'\\' if quoted => escaped = true,
            b'"' => quoted = !quoted,
            b if b == separator && !quoted => {
                parts.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

#[cfg(test)]
mod tests;
