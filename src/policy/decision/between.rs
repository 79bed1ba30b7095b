//! Decisions between attempts, besides the one after an attempt: before
//! the first (a deadline already past), after the retry budget answered,
//! after `--on-retry`, after any wait (`--max-time` ran out meanwhile), and
//! the bound of `--on-give-up`.

use std::time::{Duration, Instant};

use super::{Done, End, Limits, failure_detail, runs};
use crate::exit::ExitStatus;
use crate::outcome::{Ending, RunOutcome};
use crate::policy::classify::Class;

/// Before the first attempt: `Some` when the run's deadline has passed
/// already (an outer run's, `RETRY_DEADLINE`, or a splay that took all of
/// `--max-time`): no attempt starts, and the run ends as timed out.
pub(crate) fn before_first_attempt(limits: Limits, now: Instant) -> Option<Done> {
    if limits.deadline.is_none_or(|deadline| now < deadline) {
        return None;
    }
    Some(Done {
        end: End::Failed {
            outcome: RunOutcome::Deadline,
            last: ExitStatus::TIMED_OUT,
        },
        detail: "the run's deadline had passed before its first attempt: none started (exit 124)"
            .to_string(),
    })
}

/// After `--on-retry` ran, before attempt `next`: `None` lets it go ahead
/// (a hook that failed only warns). A signal to retry during the hook ends
/// the run, as during an attempt; so does `--max-time` running out
/// meanwhile, with the status of `previous`, the attempt before the hook.
pub(crate) fn after_hook(
    next: u64,
    previous: &Ending,
    hook: &Ending,
    limits: Limits,
    now: Instant,
) -> Option<Done> {
    if let Some(signal) = hook.interrupted {
        return Some(Done::interrupted(signal));
    }
    out_of_time(next, previous, limits, now, "during --on-retry")
}

/// What the retry budget's store answered before the retry after an
/// attempt.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum BudgetAnswer {
    /// A token was taken: `left` remain.
    Taken { left: f64 },
    /// No whole token: `tokens` left.
    Refused { tokens: f64 },
    /// The store could not be used (said once): retries go ahead, without
    /// the budget from now on.
    Unusable,
    /// A signal to retry cut the wait for the store short.
    Interrupted(i32),
}

/// Whether the retry after an attempt judged `class` takes a budget token:
/// not an attempt that confirms a success (`--successes`), nor the repeats
/// of `--until-failure` (no retries).
pub(crate) fn takes_a_token(class: Class, limits: Limits) -> bool {
    class != Class::Success && !limits.until_failure
}

/// After the budget `name` answered, before attempt `next`: `Some` when the
/// run ends instead. A signal ends it; so does `--max-time` running out
/// while the store was asked (whatever it said, no retry fits any more),
/// with the status of `previous`; and a refusal, with that status too.
pub(crate) fn after_budget(
    name: &str,
    answer: &BudgetAnswer,
    (next, previous): (u64, &Ending),
    limits: Limits,
    now: Instant,
) -> Option<Done> {
    if let BudgetAnswer::Interrupted(signal) = *answer {
        return Some(Done::interrupted(signal));
    }
    let during = format!("while asking retry budget {name}");
    if let Some(done) = out_of_time(next, previous, limits, now, &during) {
        return Some(done);
    }
    match *answer {
        BudgetAnswer::Refused { tokens } => Some(Done::budget_exhausted(name, tokens, previous)),
        _ => None,
    }
}

/// Whether and until when `--on-give-up` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GiveUpHook {
    /// It runs, ended at `until` (`None`: no limit holds).
    Runs { until: Option<Instant> },
    /// The outer run's deadline has passed: it is not run.
    OuterDeadlinePassed,
}

/// `--on-give-up`, starting `now`: bounded by `limit` (its `--timeout`,
/// else retry's own bound), after the run's own deadline, but never past
/// an outer run's (`outer`, which it inherits as `RETRY_DEADLINE`).
pub(crate) fn give_up_hook(limit: Duration, outer: Option<Instant>, now: Instant) -> GiveUpHook {
    if outer.is_some_and(|outer| outer <= now) {
        return GiveUpHook::OuterDeadlinePassed;
    }
    let until = [now.checked_add(limit), outer].into_iter().flatten().min();
    GiveUpHook::Runs { until }
}

/// Before attempt `next`, after a wait (`during`: "during --on-retry",
/// "while asking retry budget api"): `Some` when `--max-time` ran out
/// meanwhile, and the run ends with the status of `previous`, the attempt
/// before the wait, as if no sleep had fitted.
pub(crate) fn out_of_time(
    next: u64,
    previous: &Ending,
    limits: Limits,
    now: Instant,
    during: &str,
) -> Option<Done> {
    if limits.deadline.is_none_or(|deadline| now < deadline) {
        return None;
    }
    Some(if limits.until_failure {
        Done::passed(format!(
            "all {} passed; --max-time ran out {during}",
            runs(next.saturating_sub(1))
        ))
    } else {
        Done {
            end: End::failed(RunOutcome::Deadline, previous),
            detail: format!("--max-time ran out {during}; {}", failure_detail(previous)),
        }
    })
}
