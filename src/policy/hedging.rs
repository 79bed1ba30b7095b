//! Hedged attempts (`--hedge-after`, `--hedges`): when an attempt has run
//! long without ending, one more copy of it starts, and the first success
//! wins (gRPC's hedging policy, A6; Polly's hedging strategy; Dean and
//! Barroso's "The Tail at Scale"). Pure: what to do next is decided from
//! the copies' states, the clock and the limits, table-tested here.
//!
//! - Copy `k` (from 1) starts `k` delays after the first, while none has
//!   ended well, and at once when a copy failed transiently and hedges
//!   remain (the next try need not wait for the slow one).
//! - The first success wins: the others are ended as a time limit ends an
//!   attempt, and reported as `superseded`.
//! - A permanent failure of any copy ends the run: the others are ended.
//! - When every copy failed transiently, the group is one failed attempt:
//!   the ordinary schedule goes on (its last copy's failure is the group's).
//! - No hedge starts while the retry budget refuses it (each hedge costs a
//!   token, as gRPC's throttling tokens and Finagle's `RetryBudget` charge
//!   them), while a circuit is probing (one request is the probe), or past
//!   the run's deadline.

use std::time::{Duration, Instant};

use crate::policy::classify::Class;
use crate::values::human;

/// The most copies beyond the first (gRPC allows at most 5).
pub(crate) const MOST_HEDGES: u64 = 5;

/// How long before the next copy: a fixed delay, or the 95th percentile
/// of earlier successful runs (`p95`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HedgeAfter {
    Fixed(Duration),
    P95,
}

/// `--hedge-after p95` never hedges sooner than this: a command that is
/// always fast would otherwise be doubled for nothing.
pub(crate) const P95_FLOOR: Duration = Duration::from_millis(100);

/// Learning needs this many earlier successful runs; until then a run is
/// not hedged.
pub(crate) const P95_SAMPLES: usize = 5;

/// The 95th percentile of `durations` (nearest rank), at least
/// [`P95_FLOOR`]; `None` below [`P95_SAMPLES`] samples.
pub(crate) fn p95(durations: &[Duration]) -> Option<Duration> {
    if durations.len() < P95_SAMPLES {
        return None;
    }
    let mut sorted = durations.to_vec();
    sorted.sort_unstable();
    // Nearest rank: ceil(0.95 n), from 1.
    let rank = (sorted.len() * 95).div_ceil(100).max(1);
    Some(sorted[rank - 1].max(P95_FLOOR))
}

/// One copy, as the decision sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CopyState {
    Running,
    /// Ended, and judged.
    Ended(Class),
    /// Ended by retry because another copy won, or the run ended.
    Superseded,
}

/// What the group of copies does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Wait for a copy to end, or until this moment (`None`: no limit of
    /// the hedging's own).
    Wait(Option<Instant>),
    /// Start another copy now.
    Start,
    /// Copy `winner` succeeded: end the others (superseded).
    Won { winner: usize },
    /// Copy `failed` failed permanently: end the others, the run ends.
    Lost { failed: usize },
    /// Every copy ended and failed transiently: the group is one failed
    /// attempt, the last copy to end giving its failure.
    AllFailed,
}

/// The settings a group of copies is run under.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    /// How long a copy runs before the next starts.
    pub(crate) delay: Duration,
    /// Copies beyond the first, at most.
    pub(crate) hedges: u64,
    /// Whether another copy may start at all now: the budget gave a token
    /// for it, no circuit is probing, the run has time left.
    pub(crate) may_start: bool,
}

/// What follows, with `copies` in the order they started (the first
/// started at `first_start`), at `now`.
pub(crate) fn next(copies: &[CopyState], first_start: Instant, now: Instant, plan: Plan) -> Next {
    if copies.is_empty() {
        return Next::Start;
    }
    if let Some(winner) = copies
        .iter()
        .position(|&c| c == CopyState::Ended(Class::Success))
    {
        return Next::Won { winner };
    }
    if let Some(failed) = copies
        .iter()
        .position(|&c| c == CopyState::Ended(Class::Permanent))
    {
        return Next::Lost { failed };
    }
    let running = copies.iter().filter(|&&c| c == CopyState::Running).count();
    let started = copies.len() as u64;
    let hedges_left = started <= plan.hedges && plan.may_start;
    let failed = copies
        .iter()
        .any(|&c| matches!(c, CopyState::Ended(Class::Transient | Class::Throttled)));
    if running == 0 {
        // A transient failure: the next copy at once, while hedges remain.
        return if failed && hedges_left && started > 0 {
            Next::Start
        } else {
            Next::AllFailed
        };
    }
    if !hedges_left {
        return Next::Wait(None);
    }
    // Copy k is due k delays after the first.
    let due = u32::try_from(started)
        .ok()
        .and_then(|k| plan.delay.checked_mul(k))
        .and_then(|after| first_start.checked_add(after));
    match due {
        Some(due) if now >= due => Next::Start,
        due => Next::Wait(due),
    }
}

/// `--explain`'s line: when copies start, what they cost, who wins.
pub(crate) fn explain(
    after: HedgeAfter,
    hedges: u64,
    learn_as: Option<&str>,
    (budget, circuit): (bool, bool),
) -> String {
    let after = match after {
        HedgeAfter::Fixed(delay) => human(delay),
        HedgeAfter::P95 => format!(
            "the 95th percentile of the last successful attempts of {} (at least {}; no hedging until {P95_SAMPLES} are known)",
            learn_as.unwrap_or("the name"),
            human(P95_FLOOR)
        ),
    };
    let copies = match hedges {
        1 => format!("an attempt still running after {after} gets one more copy"),
        n => format!(
            "an attempt still running gets another copy each time its newest has run {after}, up to {n} more"
        ),
    };
    let mut cost = String::new();
    if budget {
        cost.push_str(" Each copy beyond the first takes a budget token; none starts without one.");
    }
    if circuit {
        cost.push_str(" None starts while the circuit probes (one request is the probe).");
    }
    format!(
        "Hedging (for idempotent commands only): {copies}; the first success wins and the others are ended as a timeout ends an attempt (superseded); a permanent failure of any copy ends the run; when every copy failed, the schedule below goes on. Only the winner's stdout is delivered.{cost}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: Plan = Plan {
        delay: Duration::from_millis(100),
        hedges: 2,
        may_start: true,
    };

    fn at(ms: u64, start: Instant) -> Instant {
        start + Duration::from_millis(ms)
    }

    #[test]
    fn copies_start_a_delay_apart_up_to_the_hedges() {
        let t0 = Instant::now();
        let run = CopyState::Running;
        let table = [
            // (copies, now in ms, expected)
            (vec![], 0, Next::Start),
            (vec![run], 50, Next::Wait(Some(at(100, t0)))),
            (vec![run], 100, Next::Start),
            (vec![run, run], 150, Next::Wait(Some(at(200, t0)))),
            (vec![run, run], 250, Next::Start),
            // Two hedges started: wait for an end, however long.
            (vec![run, run, run], 900, Next::Wait(None)),
        ];
        for (copies, now, expected) in table {
            assert_eq!(
                next(&copies, t0, at(now, t0), PLAN),
                expected,
                "{copies:?} at {now}"
            );
        }
        let refused = Plan {
            may_start: false,
            ..PLAN
        };
        assert_eq!(next(&[run], t0, at(500, t0), refused), Next::Wait(None));
    }

    #[test]
    fn the_first_success_wins_and_a_permanent_failure_ends_everything() {
        let t0 = Instant::now();
        let run = CopyState::Running;
        let ok = CopyState::Ended(Class::Success);
        let bad = CopyState::Ended(Class::Permanent);
        let flaky = CopyState::Ended(Class::Transient);
        assert_eq!(next(&[run, ok], t0, t0, PLAN), Next::Won { winner: 1 });
        assert_eq!(
            next(&[flaky, run, ok], t0, t0, PLAN),
            Next::Won { winner: 2 }
        );
        assert_eq!(next(&[run, bad], t0, t0, PLAN), Next::Lost { failed: 1 });
        // A transient failure starts the next copy at once, not at its time.
        assert_eq!(next(&[flaky], t0, at(10, t0), PLAN), Next::Start);
        assert_eq!(
            next(&[flaky, run], t0, at(110, t0), PLAN),
            Next::Wait(Some(at(200, t0)))
        );
        // Every copy failed: the group failed, the schedule goes on.
        assert_eq!(next(&[flaky, flaky, flaky], t0, t0, PLAN), Next::AllFailed);
        let throttled = CopyState::Ended(Class::Throttled);
        assert_eq!(
            next(
                &[throttled],
                t0,
                t0,
                Plan {
                    may_start: false,
                    ..PLAN
                }
            ),
            Next::AllFailed
        );
    }

    #[test]
    fn p95_needs_samples_and_keeps_a_floor() {
        let ms = Duration::from_millis;
        assert_eq!(p95(&[ms(500); 4]), None);
        let mut durations: Vec<Duration> = (1..=100).map(|n| ms(n * 10)).collect();
        assert_eq!(p95(&durations), Some(ms(950)));
        durations.truncate(20);
        assert_eq!(p95(&durations), Some(ms(190)));
        assert_eq!(p95(&[ms(1); 10]), Some(P95_FLOOR));
    }
}
