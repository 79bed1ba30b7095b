//! Words every layer shares about how things ended: what an attempt said
//! about itself (its hint) and what a finished run reports. They live here,
//! low in the house, so that no layer reaches up for them.

use std::time::Duration;

use crate::exit::ExitStatus;

/// How a run ended: the `outcome` of the JSON `done` event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RunOutcome {
    Success,
    Permanent,
    Exhausted,
    Deadline,
    Interrupted,
    CircuitOpen,
    /// The retry budget had no token for the next retry.
    BudgetExhausted,
}

impl RunOutcome {
    pub(crate) const ALL: [RunOutcome; 7] = [
        RunOutcome::Success,
        RunOutcome::Permanent,
        RunOutcome::Exhausted,
        RunOutcome::Deadline,
        RunOutcome::Interrupted,
        RunOutcome::CircuitOpen,
        RunOutcome::BudgetExhausted,
    ];

    /// The run failed and gives up: what `--on-give-up` is for. Not a
    /// success, not retry itself interrupted by a signal, not a refusal
    /// before anything ran.
    pub(crate) fn gave_up(self) -> bool {
        !matches!(
            self,
            RunOutcome::Success | RunOutcome::Interrupted | RunOutcome::CircuitOpen
        )
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RunOutcome::Success => "success",
            RunOutcome::Permanent => "permanent",
            RunOutcome::Exhausted => "exhausted",
            RunOutcome::Deadline => "deadline",
            RunOutcome::Interrupted => "interrupted",
            RunOutcome::CircuitOpen => "circuit-open",
            RunOutcome::BudgetExhausted => "budget-exhausted",
        }
    }
}

/// Why a sleep is as long as it is: the `source` of the JSON `sleep` event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SleepSource {
    Backoff,
    /// A `Retry-After:` header in the output.
    RetryAfter,
    /// `retry-after=` in the hint file (`retry-after` in JSON too).
    Hint,
    Splay,
}

impl SleepSource {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SleepSource::Backoff => "backoff",
            SleepSource::RetryAfter | SleepSource::Hint => "retry-after",
            SleepSource::Splay => "splay",
        }
    }
}

/// The word an attempt wrote to `$RETRY_HINT_FILE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hint {
    Permanent,
    Transient,
    /// Transient, and known to be throttling (backs off from `--throttle-delay`).
    Throttled,
    RetryAfter(Duration),
}

/// What a finished run reports, beyond its exit status.
pub(crate) struct RunSummary {
    pub(crate) status: ExitStatus,
    pub(crate) outcome: RunOutcome,
    pub(crate) attempts: u64,
    pub(crate) elapsed: Duration,
    pub(crate) failures: Failures,
}

/// A run's failed attempts by their final verdict: the `retry_failures`
/// metric.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Failures {
    pub(crate) transient: u64,
    pub(crate) throttled: u64,
    pub(crate) permanent: u64,
}
