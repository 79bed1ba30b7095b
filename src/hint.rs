//! The two ways an attempt can tell retry how long to wait, or whether to
//! retry at all: the hint file (`$RETRY_HINT_FILE`) and an HTTP Retry-After
//! header in its output. This module owns the hint file (its place, its
//! reading, its removal) and both parsers.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::values::parse_duration;

/// The word an attempt wrote to `$RETRY_HINT_FILE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hint {
    Permanent,
    Transient,
    RetryAfter(Duration),
}

/// The hint file of a run: removed when the run ends, however it ends.
pub(crate) struct HintFile(PathBuf);

impl HintFile {
    /// The file for run `run_id`. Its name holds the run's random id, so
    /// nobody can guess it in advance.
    pub(crate) fn for_run(run_id: &str) -> HintFile {
        HintFile(std::env::temp_dir().join(format!("retry-{run_id}.hint")))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// Read the attempt's hint and remove the file, so the next attempt
    /// starts without one. A word that is not a hint is an error message.
    pub(crate) fn take(&self) -> Result<Option<Hint>, String> {
        let bytes = std::fs::read(&self.0);
        let _ = std::fs::remove_file(&self.0);
        let Ok(bytes) = bytes else { return Ok(None) };
        parse_hint(&String::from_utf8_lossy(&bytes))
    }
}

impl Drop for HintFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Parse the hint file's content: one word, `permanent`, `transient` or
/// `retry-after=DURATION`. Surrounding white space is ignored; an empty file
/// is no hint.
pub(crate) fn parse_hint(content: &str) -> Result<Option<Hint>, String> {
    let word = content.trim();
    if word.is_empty() {
        return Ok(None);
    }
    match word.to_ascii_lowercase().as_str() {
        "permanent" => return Ok(Some(Hint::Permanent)),
        "transient" => return Ok(Some(Hint::Transient)),
        _ => {}
    }
    if let Some(value) = word.strip_prefix("retry-after=") {
        return parse_duration(value)
            .map(|d| Some(Hint::RetryAfter(d)))
            .map_err(|err| format!("hint file: retry-after={value}: {err}"));
    }
    Err(format!(
        "hint file: '{}' is not one of permanent, transient, retry-after=DURATION",
        word.chars().take(60).collect::<String>()
    ))
}

/// The value of a Retry-After header (RFC 9110 section 10.2.3): a number of
/// seconds, or an HTTP-date, which becomes the time from `now` until then (0
/// if it has passed). `None` when it is neither.
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        let seconds: u64 = value.parse().unwrap_or(u64::MAX);
        return Some(Duration::from_secs(seconds).min(crate::values::MAX_DURATION));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hint_words() {
        assert_eq!(parse_hint("permanent\n"), Ok(Some(Hint::Permanent)));
        assert_eq!(parse_hint(" transient "), Ok(Some(Hint::Transient)));
        assert_eq!(
            parse_hint("retry-after=1.5s"),
            Ok(Some(Hint::RetryAfter(Duration::from_millis(1500))))
        );
        assert_eq!(
            parse_hint("retry-after=3"),
            Ok(Some(Hint::RetryAfter(Duration::from_secs(3))))
        );
        assert_eq!(parse_hint(""), Ok(None));
        assert!(parse_hint("maybe").is_err());
        assert!(parse_hint("retry-after=soon").is_err());
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
            Some(crate::values::MAX_DURATION)
        );
    }
}
