//! The rate-limit fields of the last HTTP response a command printed
//! (`curl -D /dev/stderr`, `curl -i` under `--scan-stdout`, `curl -v`'s
//! `< Name: value`, `wget -S`'s indented lines): its status, `Retry-After`,
//! `X-RateLimit-*`, the IETF `RateLimit`/`RateLimit-Policy` fields and their
//! older draft forms, `x-amz-retry-after`, `grpc-retry-pushback-ms` and
//! `Date`. A status line starts a new response, so when the output holds
//! several (redirects, a tool's own retries) the last one printed wins.
//!
//! Only collected here, as text; what the values mean is `policy::server_wait`'s.

/// What steps 1 and 2 of the scanner look for: every line [`Response::observe`]
/// takes contains one of these (case-insensitively), and the literals keep
/// the block search fast.
pub(crate) const WIDENED: &str = "(?i:retry-after|ratelimit|grpc-retry-pushback-ms|http/|date)";

/// The fields of one response, as printed (values trimmed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Response {
    /// The status of the status line (`HTTP/2 429`).
    pub(crate) status: Option<u16>,
    pub(crate) date: Option<String>,
    pub(crate) retry_after: Option<String>,
    /// Milliseconds (AWS).
    pub(crate) amz_retry_after: Option<String>,
    /// Milliseconds (gRPC, A6).
    pub(crate) grpc_pushback_ms: Option<String>,
    /// IETF `RateLimit` (every field line, joined with `, `): `"default";r=0;t=30`,
    /// or draft -07's `limit=100, remaining=0, reset=5`.
    pub(crate) ratelimit: Option<String>,
    pub(crate) ratelimit_policy: Option<String>,
    /// Drafts -00 to -06 (and GitLab): `RateLimit-Remaining`, `RateLimit-Reset`.
    pub(crate) ratelimit_remaining: Option<String>,
    pub(crate) ratelimit_reset: Option<String>,
    /// GitHub's and many others': `X-RateLimit-Remaining`, `X-RateLimit-Reset`.
    pub(crate) x_ratelimit_remaining: Option<String>,
    pub(crate) x_ratelimit_reset: Option<String>,
}

/// Longest value kept: a rate-limit field is short; a flood is not kept.
const MOST_VALUE: usize = 512;
/// Past this length the `RateLimit` list takes no more field lines (a few
/// policies make a list; thousands of lines are a flood).
const MOST_LIST: usize = 16 * MOST_VALUE;

impl Response {
    /// Nothing of a response was seen.
    pub(crate) fn is_empty(&self) -> bool {
        *self == Response::default()
    }

    /// Take one line of output (without its line end) if it is a status
    /// line or a header this module knows.
    pub(crate) fn observe(&mut self, line: &[u8]) {
        let line = trim_start(line);
        // curl -v marks received lines with `< `.
        let line = line.strip_prefix(b"<").map_or(line, trim_start);
        if line.len() >= 5 && line[..5].eq_ignore_ascii_case(b"http/") {
            if let Some(status) = status_of(line) {
                *self = Response {
                    status: Some(status),
                    ..Response::default()
                };
            }
            return;
        }
        let Some(colon) = memchr::memchr(b':', line) else {
            return;
        };
        let name = trim_end(&line[..colon]);
        if name.is_empty() || !name.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-') {
            return;
        }
        let field = match name.to_ascii_lowercase().as_slice() {
            b"retry-after" => &mut self.retry_after,
            b"date" => &mut self.date,
            b"x-amz-retry-after" => &mut self.amz_retry_after,
            b"grpc-retry-pushback-ms" => &mut self.grpc_pushback_ms,
            b"ratelimit" => {
                let value = value_of(&line[colon + 1..]);
                // Several field lines are one list, joined in place (a copy
                // per line is quadratic in a flood of them) and bounded.
                match &mut self.ratelimit {
                    Some(list) if list.len() >= MOST_LIST => {}
                    Some(list) => {
                        list.push_str(", ");
                        list.push_str(&value);
                    }
                    None => self.ratelimit = Some(value),
                }
                return;
            }
            b"ratelimit-policy" => &mut self.ratelimit_policy,
            b"ratelimit-remaining" => &mut self.ratelimit_remaining,
            b"ratelimit-reset" => &mut self.ratelimit_reset,
            b"x-ratelimit-remaining" => &mut self.x_ratelimit_remaining,
            b"x-ratelimit-reset" => &mut self.x_ratelimit_reset,
            _ => return,
        };
        *field = Some(value_of(&line[colon + 1..]));
    }
}

/// `HTTP/1.1 429 Too Many Requests`, `HTTP/2 503`: the three-digit status.
fn status_of(line: &[u8]) -> Option<u16> {
    let space = memchr::memchr(b' ', line)?;
    let rest = trim_start(&line[space..]);
    let digits = rest.get(..3)?;
    if !digits.iter().all(u8::is_ascii_digit) || rest.get(3).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

fn value_of(raw: &[u8]) -> String {
    let value = trim_end(trim_start(raw));
    let value = &value[..value.len().min(MOST_VALUE)];
    String::from_utf8_lossy(value).into_owned()
}

fn trim_start(bytes: &[u8]) -> &[u8] {
    let from = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    &bytes[from..]
}

fn trim_end(bytes: &[u8]) -> &[u8] {
    let to = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    &bytes[..to]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(lines: &[&str]) -> Response {
        let mut response = Response::default();
        for line in lines {
            response.observe(line.as_bytes());
        }
        response
    }

    #[test]
    fn every_tool_s_form_of_a_header_is_read() {
        let curl_d = seen(&[
            "HTTP/2 403",
            "x-ratelimit-remaining: 0",
            "x-ratelimit-reset: 1767225600",
        ]);
        assert_eq!(curl_d.status, Some(403));
        assert_eq!(curl_d.x_ratelimit_remaining.as_deref(), Some("0"));
        assert_eq!(curl_d.x_ratelimit_reset.as_deref(), Some("1767225600"));
        let curl_v = seen(&["< HTTP/1.1 429 Too Many Requests", "< Retry-After: 7 "]);
        assert_eq!(
            (curl_v.status, curl_v.retry_after.as_deref()),
            (Some(429), Some("7"))
        );
        let wget_s = seen(&[
            "  HTTP/1.1 503 Service Unavailable",
            "  X-Amz-Retry-After: 1500",
        ]);
        assert_eq!(wget_s.amz_retry_after.as_deref(), Some("1500"));
        let ietf = seen(&[
            "RateLimit-Policy: \"burst\";q=100;w=60",
            "RateLimit: \"burst\";r=0;t=30",
            "ratelimit: \"daily\";r=5;t=86400",
            "Grpc-Retry-Pushback-Ms: 250",
        ]);
        assert_eq!(
            ietf.ratelimit.as_deref(),
            Some("\"burst\";r=0;t=30, \"daily\";r=5;t=86400")
        );
        assert_eq!(
            ietf.ratelimit_policy.as_deref(),
            Some("\"burst\";q=100;w=60")
        );
        assert_eq!(ietf.grpc_pushback_ms.as_deref(), Some("250"));
    }

    #[test]
    fn a_status_line_starts_a_new_response_and_other_lines_are_ignored() {
        let response = seen(&[
            "HTTP/1.1 503",
            "Retry-After: 120",
            "HTTP/1.1 429",
            "Content-Type: text/plain",
            "body: retry-after: 9 is not a header",
            "curl: (22) The requested URL returned error: 429",
        ]);
        assert_eq!(response.status, Some(429));
        assert_eq!(response.retry_after, None);
        assert!(seen(&["see https://example.com/http/x"]).is_empty());
        assert!(seen(&["HTTP/1.1 4299 x"]).status.is_none());
    }

    #[test]
    fn a_flood_of_ratelimit_lines_keeps_a_bounded_list() {
        let mut response = Response::default();
        for _ in 0..100_000 {
            response.observe(b"RateLimit: \"a\";r=1;t=1");
        }
        let list = response.ratelimit.unwrap();
        assert!(list.len() < MOST_LIST + MOST_VALUE + 2, "{}", list.len());
        assert!(list.starts_with("\"a\";r=1;t=1, \"a\""), "{list}");
    }
}
