//! `RETRY_DEADLINE`: the deadline an outer run (another retry, or a CI
//! job) gave this one, as Unix time in milliseconds. A retry that finds it
//! never runs past it: its own `--max-time` is cut to what is left.
//!
//! Empty counts as unset. A value that cannot be read is refused (exit
//! 125) rather than ignored: the promise is that no nested run outlasts the
//! outer deadline, and a deadline that cannot be read cannot be kept. A
//! deadline already past is no error: the run starts no attempt.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::time::{Duration, Instant, SystemTime};

/// The variable's name.
pub(crate) const VARIABLE: &str = "RETRY_DEADLINE";

/// Below this many milliseconds (March 1973) a value is taken for Unix
/// seconds written by mistake, once the clock is past [`SANE_CLOCK_MS`]
/// (a machine without a real-time clock may well live in 1970).
const SECONDS_BY_MISTAKE_MS: u64 = 100_000_000_000;
const SANE_CLOCK_MS: u64 = 1_000_000_000_000;

/// The deadline found in the environment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OuterDeadline {
    /// When it comes, on the monotonic clock (immune to clock changes
    /// during the run).
    pub(crate) at: Instant,
    /// As it was given: passed on unchanged when it stays the deadline,
    /// so that a chain of nested runs does not drift.
    pub(crate) unix_ms: u64,
    /// What was left of it when it was read.
    pub(crate) left: Duration,
}

/// A `RETRY_DEADLINE` that cannot be read: the value as shown, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DeadlineError {
    /// The value, made one safe line.
    shown: String,
    why: &'static str,
}

impl fmt::Display for DeadlineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{VARIABLE} '{}': {} (Unix time in milliseconds is expected)",
            self.shown, self.why
        )
    }
}

impl std::error::Error for DeadlineError {}

/// `RETRY_DEADLINE` from retry's own environment (`env` reads it).
pub(crate) fn from_env(
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Option<OuterDeadline>, DeadlineError> {
    match env(VARIABLE) {
        None => Ok(None),
        Some(value) => parse(&value, SystemTime::now(), Instant::now()),
    }
}

/// Read `value`, the clocks saying `now` and `instant` at the same moment.
/// `None`: empty (unset), or so far ahead that no clock of this process
/// reaches it.
pub(crate) fn parse(
    value: &OsStr,
    now: SystemTime,
    instant: Instant,
) -> Result<Option<OuterDeadline>, DeadlineError> {
    if value.is_empty() {
        return Ok(None);
    }
    let shown = crate::text::sanitize_line(&value.to_string_lossy(), 40);
    let problem = |why: &'static str| DeadlineError {
        shown: shown.clone(),
        why,
    };
    let Some(text) = value.to_str() else {
        return Err(problem("not text (bytes that are not UTF-8)"));
    };
    if text.trim() != text {
        return Err(problem("white space around the number"));
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(problem("not a whole number of milliseconds"));
    }
    if digits.len() < text.len() {
        return Err(problem("a sign before the number"));
    }
    // u64 milliseconds run past the year 500 million: more is no time.
    let unix_ms: u64 = text
        .parse()
        .map_err(|_| problem("too large: no clock reaches it"))?;
    let now_ms = unix_millis(now);
    if unix_ms < SECONDS_BY_MISTAKE_MS && now_ms >= SANE_CLOCK_MS {
        return Err(problem(
            "a time in 1970 or 1971: seconds, not milliseconds?",
        ));
    }
    let left = Duration::from_millis(unix_ms.saturating_sub(now_ms));
    Ok(instant
        .checked_add(left)
        .map(|at| OuterDeadline { at, unix_ms, left }))
}

/// `at` (a moment `instant` is `now` on the wall clock) as Unix time in
/// milliseconds, rounded down: a nested run may end a little early, never
/// late.
pub(crate) fn unix_ms_of(at: Instant, now: SystemTime, instant: Instant) -> u64 {
    let wall = match at.checked_duration_since(instant) {
        Some(ahead) => now.checked_add(ahead),
        None => now.checked_sub(instant.duration_since(at)),
    };
    wall.map_or(u64::MAX, unix_millis)
}

fn unix_millis(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW_MS: u64 = 1_780_000_000_000;

    fn read(value: &str) -> Result<Option<OuterDeadline>, String> {
        let now = SystemTime::UNIX_EPOCH + Duration::from_millis(NOW_MS);
        parse(OsStr::new(value), now, Instant::now()).map_err(|err| err.to_string())
    }

    #[test]
    fn a_deadline_ahead_leaves_the_time_until_it() {
        let deadline = read(&(NOW_MS + 2_500).to_string()).unwrap().unwrap();
        assert_eq!(deadline.left, Duration::from_millis(2_500));
        assert_eq!(deadline.unix_ms, NOW_MS + 2_500);
    }

    #[test]
    fn a_deadline_past_leaves_nothing() {
        let deadline = read(&(NOW_MS - 1).to_string()).unwrap().unwrap();
        assert_eq!(deadline.left, Duration::ZERO);
    }

    #[test]
    fn empty_is_unset() {
        assert_eq!(read(""), Ok(None));
    }

    #[test]
    fn what_is_not_milliseconds_is_refused_by_name() {
        for bad in [
            "soon",
            "-5",
            "1.5e12",
            " 1780000000000",
            "1780000000000s",
            "+1",
        ] {
            let err = read(bad).unwrap_err();
            assert!(err.starts_with("RETRY_DEADLINE '"), "{bad}: {err}");
        }
        let err = read("1780000000").unwrap_err();
        assert!(err.contains("seconds, not milliseconds?"), "{err}");
        // Too long for any clock: refused, not wrapped, and said so.
        let err = read("99999999999999999999").unwrap_err();
        assert!(err.contains("too large"), "{err}");
        assert!(read(" 1780000000000").unwrap_err().contains("white space"));
        assert!(read("-5").unwrap_err().contains("a sign"));
        assert!(read("+1780000000000").unwrap_err().contains("a sign"));
        assert!(read("1.5e12").unwrap_err().contains("not a whole number"));
    }

    #[test]
    fn a_clock_in_1970_takes_small_values_as_they_are() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(60);
        let deadline = parse(OsStr::new("90000"), now, Instant::now())
            .unwrap()
            .unwrap();
        assert_eq!(deadline.left, Duration::from_secs(30));
    }

    #[test]
    fn an_instant_maps_back_to_the_wall_clock_rounded_down() {
        let instant = Instant::now();
        let now = SystemTime::UNIX_EPOCH + Duration::from_micros(NOW_MS * 1000 + 900);
        let at = instant + Duration::from_millis(1_500);
        assert_eq!(unix_ms_of(at, now, instant), NOW_MS + 1_500);
        if let Some(before) = instant.checked_sub(Duration::from_millis(10)) {
            assert_eq!(unix_ms_of(before, now, instant), NOW_MS - 10);
        }
    }
}
