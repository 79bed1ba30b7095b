//! Hedged attempts (`--hedge-after`, `--hedges`): when an attempt has run
//! long without ending, one more copy of it starts, and the first success
//! wins (gRPC's hedging policy, A6; Polly's hedging strategy; Dean and
//! Barroso's "The Tail at Scale"). Pure: what to do next is decided from
//! the copies' states, the clock and the limits, table-tested here.
//!
//! - The next copy starts when the newest has run the delay, while none
//!   has ended well, and at once when a copy failed transiently since the
//!   newest started and hedges remain (the next try need not wait for the
//!   slow one: gRPC's hedging sends the next request at once on a
//!   non-fatal status).
//! - A copy that failed asking for a wait (judged throttled, a hint's
//!   `retry-after=`, a `Retry-After` read from its response) starts no
//!   other: a server that asked to slow down is not sent more copies at
//!   once (gRPC's server pushback), and its wait steers the next sleep.
//! - The first success wins: the others are ended as a time limit ends an
//!   attempt, and reported as `superseded`.
//! - A permanent failure of any copy ends the run: the others are ended.
//! - When every copy failed transiently, the group is one failed attempt:
//!   the ordinary schedule goes on (its last copy's failure is the group's).
//! - No hedge starts while the retry budget refuses it (each hedge costs a
//!   token, as gRPC's throttling tokens and Finagle's `RetryBudget` charge
//!   them), while a circuit is probing (one request is the probe), or past
//!   the run's deadline.

use std::time::{Duration, Instant, SystemTime};

use crate::outcome::Hint;
use crate::policy::classify::Class;
use crate::policy::server_wait::server_wait;
use crate::scan::Response;
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

/// One copy's state, as the decision sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CopyState {
    Running,
    /// Ended, and judged.
    Ended(Class),
    /// Failed, asking for a wait before the next try ([`asks_to_wait`]).
    AskedToWait,
    /// Ended by retry because another copy won, or the run ended.
    Superseded,
}

/// One copy, as the decision sees it: its state, when it started and,
/// once judged, when that was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) state: CopyState,
    pub(crate) started: Instant,
    pub(crate) ended: Option<Instant>,
}

/// Whether a copy that failed as `class`, with `hint` and `response`,
/// asked for a wait before the next try (at wall-clock time `now`).
pub(crate) fn asks_to_wait(
    class: Class,
    hint: Option<Hint>,
    response: Option<&Response>,
    now: SystemTime,
) -> bool {
    match class {
        Class::Success | Class::Permanent => false,
        Class::Throttled => true,
        Class::Transient => {
            matches!(hint, Some(Hint::RetryAfter(_)))
                || response.is_some_and(|r| server_wait(r, now).is_some())
        }
    }
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
    /// attempt, given by [`decider`].
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

/// What follows, with `copies` in the order they started, at `now`.
pub(crate) fn next(copies: &[Seen], now: Instant, plan: Plan) -> Next {
    let Some(newest) = copies.iter().map(|c| c.started).max() else {
        return Next::Start;
    };
    let is = |state| move |c: &Seen| c.state == state;
    if let Some(winner) = copies.iter().position(is(CopyState::Ended(Class::Success))) {
        return Next::Won { winner };
    }
    if let Some(failed) = copies
        .iter()
        .position(is(CopyState::Ended(Class::Permanent)))
    {
        return Next::Lost { failed };
    }
    let running = copies
        .iter()
        .filter(|c| c.state == CopyState::Running)
        .count();
    let hedges_left = copies.len() as u64 <= plan.hedges
        && plan.may_start
        && !copies.iter().any(is(CopyState::AskedToWait));
    let failed = |c: &Seen| {
        matches!(
            c.state,
            CopyState::Ended(Class::Transient | Class::Throttled)
        )
    };
    if running == 0 {
        // A transient failure: the next copy at once, while hedges remain.
        return if hedges_left && copies.iter().any(failed) {
            Next::Start
        } else {
            Next::AllFailed
        };
    }
    if !hedges_left {
        return Next::Wait(None);
    }
    // A copy that failed since the newest started: the next one now.
    if copies
        .iter()
        .any(|c| failed(c) && c.ended.is_some_and(|ended| ended > newest))
    {
        return Next::Start;
    }
    // Else when the newest has run the delay.
    match newest.checked_add(plan.delay) {
        Some(due) if now >= due => Next::Start,
        due => Next::Wait(due),
    }
}

/// The copy that gives a group whose copies all failed its failure: the
/// last to end of those that asked for a wait (so that the wait is
/// honoured), else the last to end.
pub(crate) fn decider(copies: &[Seen]) -> usize {
    let last = |waited: bool| {
        copies
            .iter()
            .enumerate()
            .filter(|(_, c)| !waited || c.state == CopyState::AskedToWait)
            .filter_map(|(index, c)| Some((index, c.ended?)))
            .max_by_key(|&(_, ended)| ended)
            .map(|(index, _)| index)
    };
    last(true).or_else(|| last(false)).unwrap_or(0)
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
        "Hedging (for idempotent commands only): {copies} (at once after a copy's failure, none after one that asks for a wait); the first success wins and the others are ended as a timeout ends an attempt (superseded); a permanent failure of any copy ends the run; when every copy failed, the schedule below goes on. Only the winner's stdout is delivered.{cost}"
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

    /// A copy started at `from` ms, running (`to`: None) or ended at `to`
    /// ms as `state`.
    fn copy(t0: Instant, from: u64, to: Option<(u64, CopyState)>) -> Seen {
        Seen {
            state: to.map_or(CopyState::Running, |(_, state)| state),
            started: at(from, t0),
            ended: to.map(|(ms, _)| at(ms, t0)),
        }
    }

    #[test]
    fn each_copy_starts_when_the_newest_has_run_the_delay_up_to_the_hedges() {
        let t0 = Instant::now();
        let run = |from| copy(t0, from, None);
        let table = [
            // (copies, now in ms, expected)
            (vec![], 0, Next::Start),
            (vec![run(0)], 50, Next::Wait(Some(at(100, t0)))),
            (vec![run(0)], 100, Next::Start),
            (vec![run(0), run(100)], 150, Next::Wait(Some(at(200, t0)))),
            (vec![run(0), run(100)], 250, Next::Start),
            // Counted from the newest, which started late (a failure).
            (vec![run(0), run(130)], 210, Next::Wait(Some(at(230, t0)))),
            // Two hedges started: wait for an end, however long.
            (vec![run(0), run(100), run(200)], 900, Next::Wait(None)),
        ];
        for (copies, now, expected) in table {
            assert_eq!(
                next(&copies, at(now, t0), PLAN),
                expected,
                "{copies:?} at {now}"
            );
        }
        let refused = Plan {
            may_start: false,
            ..PLAN
        };
        assert_eq!(next(&[run(0)], at(500, t0), refused), Next::Wait(None));
    }

    #[test]
    fn the_first_success_wins_and_a_permanent_failure_ends_everything() {
        let t0 = Instant::now();
        let run = |from| copy(t0, from, None);
        let ended = |from, to, class| copy(t0, from, Some((to, CopyState::Ended(class))));
        let ok = |from, to| ended(from, to, Class::Success);
        let flaky = |from, to| ended(from, to, Class::Transient);
        assert_eq!(
            next(&[run(0), ok(100, 120)], t0, PLAN),
            Next::Won { winner: 1 }
        );
        assert_eq!(
            next(&[flaky(0, 10), run(10), ok(110, 120)], t0, PLAN),
            Next::Won { winner: 2 }
        );
        assert_eq!(
            next(&[run(0), ended(100, 120, Class::Permanent)], t0, PLAN),
            Next::Lost { failed: 1 }
        );
    }

    #[test]
    fn a_transient_failure_starts_the_next_copy_at_once_and_all_failed_goes_to_the_schedule() {
        let t0 = Instant::now();
        let run = |from| copy(t0, from, None);
        let flaky = |from, to| copy(t0, from, Some((to, CopyState::Ended(Class::Transient))));
        let table = [
            // The only copy failed: the next at once.
            (vec![flaky(0, 10)], 10, Next::Start),
            // Its replacement runs: the next one when it has run the delay.
            (
                vec![flaky(0, 10), run(10)],
                60,
                Next::Wait(Some(at(110, t0))),
            ),
            // A hedge failed while the first still runs: the next at once.
            (vec![run(0), flaky(100, 120)], 120, Next::Start),
            // The first failed while the hedge runs: the next at once too.
            (vec![flaky(0, 150), run(100)], 150, Next::Start),
            // Every copy failed: the group failed, the schedule goes on.
            (
                vec![flaky(0, 10), flaky(10, 20), flaky(20, 30)],
                30,
                Next::AllFailed,
            ),
        ];
        for (copies, now, expected) in table {
            assert_eq!(
                next(&copies, at(now, t0), PLAN),
                expected,
                "{copies:?} at {now}"
            );
        }
        // Once the next started, not again.
        let more = Plan { hedges: 3, ..PLAN };
        assert_eq!(
            next(&[flaky(0, 150), run(100), run(150)], at(160, t0), more),
            Next::Wait(Some(at(250, t0)))
        );
        let refused = Plan {
            may_start: false,
            ..PLAN
        };
        assert_eq!(next(&[flaky(0, 10)], at(10, t0), refused), Next::AllFailed);
    }

    #[test]
    fn a_copy_that_asked_for_a_wait_starts_no_other_and_gives_the_failure() {
        let t0 = Instant::now();
        let run = |from| copy(t0, from, None);
        let waits = |from, to| copy(t0, from, Some((to, CopyState::AskedToWait)));
        let flaky = |from, to| copy(t0, from, Some((to, CopyState::Ended(Class::Transient))));
        assert_eq!(next(&[waits(0, 10)], at(10, t0), PLAN), Next::AllFailed);
        assert_eq!(
            next(&[run(0), waits(100, 110)], at(500, t0), PLAN),
            Next::Wait(None)
        );
        // All failed: the one that asked for a wait decides, else the last.
        let group = [waits(0, 50), flaky(100, 300)];
        assert_eq!(next(&group, at(300, t0), PLAN), Next::AllFailed);
        assert_eq!(decider(&group), 0);
        assert_eq!(decider(&[flaky(0, 300), flaky(100, 200)]), 0);
        assert_eq!(decider(&[flaky(0, 100), flaky(100, 200)]), 1);
        let (now, hint) = (
            SystemTime::now(),
            Some(Hint::RetryAfter(Duration::from_secs(2))),
        );
        assert!(asks_to_wait(Class::Transient, hint, None, now));
        assert!(asks_to_wait(Class::Throttled, None, None, now));
        assert!(!asks_to_wait(Class::Transient, None, None, now));
        assert!(!asks_to_wait(Class::Permanent, hint, None, now));
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
