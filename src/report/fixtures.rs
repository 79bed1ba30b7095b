//! Records, a clock and an environment for the sinks' tests.

use std::ffi::OsString;
use std::time::{Duration, SystemTime};

use super::{AttemptRecord, DoneRecord, InForce, SleepRecord};
use crate::outcome::{RunOutcome, SleepSource};
use crate::policy::classify::Class;

/// An environment of `pairs` only.
pub(crate) fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
    move |name| {
        pairs
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| OsString::from(value))
    }
}

/// 2023-11-14T22:13:20Z, always.
pub(crate) fn noon() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

/// Attempt `attempt` of 5 took 123 ms; unless it succeeded, it exited 7.
pub(crate) fn attempt_record(attempt: u64, outcome: Class) -> AttemptRecord {
    let code = if outcome == Class::Success { 0 } else { 7 };
    AttemptRecord {
        attempt,
        max_attempts: Some(5),
        exit_code: Some(code),
        signal: None,
        timed_out: false,
        duration: Duration::from_millis(123),
        outcome,
        reason: format!("exit {code}"),
        copy: None,
        superseded: false,
    }
}

/// A backoff of 734 ms under a ceiling of 1 s after attempt `attempt`.
pub(crate) fn sleep_record(attempt: u64) -> SleepRecord {
    SleepRecord {
        attempt,
        delay: Duration::from_millis(734),
        ceiling: Duration::from_secs(1),
        source: SleepSource::Backoff,
        header: None,
    }
}

/// A run of `attempts` of at most 5 ended so after 4.2 s; unless it
/// succeeded, its last attempt exited 7.
pub(crate) fn done_record(outcome: RunOutcome, attempts: u64) -> DoneRecord {
    let code = if outcome == RunOutcome::Success { 0 } else { 7 };
    DoneRecord {
        outcome,
        attempts,
        max_attempts: Some(5),
        elapsed: Duration::from_millis(4211),
        exit_code: code,
        detail: format!("exit {code}"),
        timed_out: false,
        signal: None,
        until_failure: false,
        successes: u64::from(outcome == RunOutcome::Success),
        command_exit_code: Some(code),
        in_force: InForce::default(),
    }
}
