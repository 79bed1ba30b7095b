//! The rate-limit fields of the last HTTP response a command printed
//! (`curl -D /dev/stderr`, `curl -i` under `--scan-stdout`, `curl -v`'s
//! `< Name: value`, `wget -S`'s indented lines): its status, `Retry-After`,
//! `X-RateLimit-*`, the IETF `RateLimit`/`RateLimit-Policy` fields and their
//! older draft forms, `x-amz-retry-after`, `grpc-retry-pushback-ms` and
//! `Date`. A status line starts a new response, so when the output holds
//! several (redirects, a tool's own retries) the last one printed wins.
//!
//! Headers are headers: a field counts only inside a response's header
//! block, from its status line to the blank line that ends it (`curl -v`:
//! the `< ` line; `wget -S`, which prints no blank line: its first line
//! that is not indented as the status line was). A body line such as
//! `retry-after: 240`, and a bare `Retry-After:` line with no status line
//! before it, are not headers: a script that wants to say how long to wait
//! writes the hint file (`retry-after=30s`). gRPC has no status line:
//! `grpcurl -v`'s `Response headers received:` and `Response trailers
//! received:` open a block of the same response instead.
//!
//! Only collected here, as text; what the values mean is `policy::server_wait`'s.

/// What steps 1 and 2 of the scanner look for: every line [`Response::observe`]
/// takes contains one of these (case-insensitively), and the literals keep
/// the block search fast.
pub(crate) const WIDENED: &str = "(?i:retry-after|ratelimit|grpc-retry-pushback-ms|http/|date|response (?:headers|trailers) received)";

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

/// Reads a response's header block, line by line: [`HeaderReader::observe`]
/// takes each line while a block [`is_open`](HeaderReader::is_open), and
/// the candidates of [`WIDENED`] otherwise (only a status line matters then).
#[derive(Clone, Debug, Default)]
pub(crate) struct HeaderReader {
    response: Response,
    block: Option<Block>,
}

/// The header block being read: how its status line was printed.
#[derive(Clone, Copy, Debug)]
struct Block {
    /// `curl -v`'s `< ` before each received line.
    marked: bool,
    /// The status line's indent (`wget -S`: two spaces).
    indent: usize,
    /// Lines taken so far.
    lines: usize,
}

/// A header block longer than this is a flood, not a response: it ends.
const MOST_BLOCK_LINES: usize = 512;

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

    /// The fields of `lines`, each without its line end (a hint file, a
    /// test's lines).
    pub(crate) fn from_lines<'a>(lines: impl IntoIterator<Item = &'a [u8]>) -> Response {
        let mut reader = HeaderReader::default();
        for line in lines {
            reader.observe(line);
        }
        reader.response
    }

    /// Take a field line of the open block, if it is one this module knows.
    fn take_field(&mut self, line: &[u8]) {
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

impl HeaderReader {
    /// A header block is being read: every line must reach [`observe`](Self::observe).
    pub(crate) fn is_open(&self) -> bool {
        self.block.is_some()
    }

    /// The last response printed.
    pub(crate) fn into_response(self) -> Response {
        self.response
    }

    /// Take one line of output (without its line end): a status line
    /// starts a block; while one is open, a field line is read and the
    /// line that ends the block closes it.
    pub(crate) fn observe(&mut self, line: &[u8]) {
        let indent = line
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(line.len());
        let rest = &line[indent..];
        // curl -v marks received lines with `< `.
        let (marked, rest) = match rest.strip_prefix(b"<") {
            Some(after) => (true, trim_start(after)),
            None => (false, rest),
        };
        if rest.len() >= 5
            && rest[..5].eq_ignore_ascii_case(b"http/")
            && let Some(status) = status_of(rest)
        {
            self.response = Response {
                status: Some(status),
                ..Response::default()
            };
            self.block = Some(Block {
                marked,
                indent,
                lines: 0,
            });
            return;
        }
        if !marked && indent == 0 && is_grpcurl_block(rest) {
            self.block = Some(Block {
                marked,
                indent,
                lines: 0,
            });
            return;
        }
        let Some(block) = &mut self.block else {
            return;
        };
        block.lines += 1;
        let blank = trim_end(rest).is_empty();
        let ends = if block.marked {
            // curl's other lines (`*`, `>`, `{`) come between; only its
            // empty `< ` line ends the received headers.
            if !marked {
                return;
            }
            blank
        } else if marked {
            return;
        } else {
            // wget -S prints no blank line: its block ends at the first
            // line not indented as the status line was.
            blank || indent < block.indent
        };
        if ends || block.lines > MOST_BLOCK_LINES {
            self.block = None;
            return;
        }
        self.response.take_field(rest);
    }
}

/// `grpcurl -v`'s line before the metadata it received.
fn is_grpcurl_block(line: &[u8]) -> bool {
    let line = trim_end(line);
    line.eq_ignore_ascii_case(b"Response headers received:")
        || line.eq_ignore_ascii_case(b"Response trailers received:")
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

/// The value, trimmed. One longer than [`MOST_VALUE`] is kept cut, with
/// `...` after it, so that it reads as malformed: what lay past the cut
/// could have made a valid-looking start (`120` then spaces) invalid.
fn value_of(raw: &[u8]) -> String {
    let value = trim_end(trim_start(raw));
    if value.len() > MOST_VALUE {
        return format!("{}...", String::from_utf8_lossy(&value[..MOST_VALUE]));
    }
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
        Response::from_lines(lines.iter().map(|line| line.as_bytes()))
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
            "HTTP/1.1 429",
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
        assert!(seen(&["Retry-After: 120", "x-ratelimit-remaining: 0"]).is_empty());
        assert!(seen(&["HTTP/1.1 4299 x"]).status.is_none());
    }

    #[test]
    fn fields_count_only_in_the_header_block() {
        // curl -i / -D: the blank line ends the block; the body's YAML is not a header.
        let body = seen(&[
            "HTTP/1.1 200 OK",
            "Date: x",
            "",
            "retry-after: 240",
            "ratelimit: \"a\";r=0;t=9",
        ]);
        assert_eq!(
            (body.status, body.retry_after, body.ratelimit),
            (Some(200), None, None)
        );
        assert_eq!(body.date.as_deref(), Some("x"));
        // curl -v: `<` lines only; its `*` lines in between are passed over.
        let verbose = seen(&[
            "< HTTP/2 429",
            "* some note",
            "< retry-after: 5",
            "< ",
            "retry-after: 240",
            "< x-ratelimit-reset: 9",
        ]);
        assert_eq!(verbose.retry_after.as_deref(), Some("5"));
        assert_eq!(verbose.x_ratelimit_reset, None);
        // wget -S: indented, no blank line; its next unindented line ends it.
        let wget = seen(&[
            "  HTTP/1.1 503 Service Unavailable",
            "  Retry-After: 7",
            "2026-12-06 10:00:00 ERROR 503: Service Unavailable.",
            "  Retry-After: 99",
            "Retry-After: 98",
        ]);
        assert_eq!(
            (wget.status, wget.retry_after.as_deref()),
            (Some(503), Some("7"))
        );
        // A redirect's body, then the next response's own block.
        let next = seen(&[
            "HTTP/1.1 302",
            "Retry-After: 1",
            "",
            "moved",
            "HTTP/1.1 429",
            "Retry-After: 3",
        ]);
        assert_eq!(
            (next.status, next.retry_after.as_deref()),
            (Some(429), Some("3"))
        );
    }

    #[test]
    fn grpcurl_s_metadata_blocks_are_read_without_a_status_line() {
        let grpc = seen(&[
            "Response headers received:",
            "content-type: application/grpc",
            "",
            "Response trailers received:",
            "grpc-retry-pushback-ms: 700",
            "Sent 1 request and received 0 responses",
            "",
            "grpc-retry-pushback-ms: 9",
        ]);
        assert_eq!(grpc.grpc_pushback_ms.as_deref(), Some("700"));
        assert_eq!(grpc.status, None);
    }

    #[test]
    fn an_overlong_value_is_kept_cut_and_marked_never_as_a_valid_start() {
        let long = format!("Retry-After: 120{}x", " ".repeat(MOST_VALUE));
        let value = seen(&["HTTP/1.1 429", &long]).retry_after.unwrap();
        assert!(
            value.starts_with("120") && value.ends_with("..."),
            "{value}"
        );
        assert_eq!(value.len(), MOST_VALUE + 3);
    }

    #[test]
    fn a_block_that_never_ends_stops_being_read() {
        let mut lines = vec!["HTTP/1.1 429".to_string()];
        lines.extend((0..MOST_BLOCK_LINES).map(|i| format!("x-filler-{i}: 1")));
        lines.push("Retry-After: 5".to_string());
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        assert_eq!(seen(&lines).retry_after, None);
    }

    #[test]
    fn a_flood_of_ratelimit_lines_keeps_a_bounded_list() {
        let mut reader = HeaderReader::default();
        reader.observe(b"HTTP/1.1 429");
        for _ in 0..100_000 {
            reader.block.as_mut().unwrap().lines = 0;
            reader.observe(b"RateLimit: \"a\";r=1;t=1");
        }
        let list = reader.into_response().ratelimit.unwrap();
        assert!(list.len() < MOST_LIST + MOST_VALUE + 2, "{}", list.len());
        assert!(list.starts_with("\"a\";r=1;t=1, \"a\""), "{list}");
    }
}
