//! `--preset curl`: the rules of curl's own `--retry`, for a `curl --fail`
//! child.
//!
//! curl retries "transient" errors: timeouts, and HTTP 408, 429, 500, 502,
//! 503 and 504. As a child, curl tells us which by its exit code and, for
//! HTTP errors under `--fail`, by its message `curl: (22) The requested URL
//! returned error: 503`. So:
//!
//! - transient exit codes: 5 and 6 (could not resolve proxy or host), 7
//!   (could not connect), 28 (timeout), 35 (TLS handshake failed), 52 (empty
//!   reply), 55 and 56 (send or receive failure);
//! - exit 22 with one of the six HTTP codes in its message: transient;
//! - every other exit code is permanent: other HTTP errors (404, 401, ...),
//!   usage errors (2), malformed URLs (3), and so on.
//!
//! The rules form a rule set below the user's own, so `--stop-on-exit` or
//! `--retry-on-output` on the command line always win.

use regex::bytes::Regex;

use crate::rules::{OutputRule, RuleSet, RuleSource};
use crate::values::CodeSet;

pub(crate) const CURL_TRANSIENT_EXIT_CODES: [u8; 8] = [5, 6, 7, 28, 35, 52, 55, 56];
pub(crate) const CURL_TRANSIENT_HTTP: &str = r"returned error: (408|429|500|502|503|504)\b";

/// The rules of `--preset curl`.
pub(crate) fn curl() -> RuleSet {
    RuleSet {
        retry_on_exit: Some(CodeSet::from_codes(&CURL_TRANSIENT_EXIT_CODES)),
        retry_on_output: vec![OutputRule::new(
            Regex::new(CURL_TRANSIENT_HTTP).expect("constant pattern"),
            "curl reported HTTP 408, 429, 500, 502, 503 or 504",
        )],
        ..RuleSet::empty(RuleSource::Preset("curl".to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_http_pattern_takes_only_curls_transient_statuses() {
        let regex = Regex::new(CURL_TRANSIENT_HTTP).unwrap();
        for status in ["408", "429", "500", "502", "503", "504"] {
            let line = format!("curl: (22) The requested URL returned error: {status}");
            assert!(regex.is_match(line.as_bytes()), "{status}");
        }
        for status in ["404", "401", "501", "5030", "400"] {
            let line = format!("curl: (22) The requested URL returned error: {status}");
            assert!(!regex.is_match(line.as_bytes()), "{status}");
        }
        assert!(
            regex.is_match(b"curl: (22) The requested URL returned error: 503 Service Unavailable")
        );
    }
}
