//! Runs that count successes: `--successes` (N in a row make the run a
//! success) and `--until-failure` (repeat while it succeeds). The plain
//! retry's decision, which they depart from, is the parent's.

use std::time::{Duration, Instant};

use super::{Done, End, Limits, Step, failure_detail, runs, sleep_of};
use crate::outcome::Ending;
use crate::outcome::RunOutcome;
use crate::policy::classify::Class;
use crate::policy::next_sleep::Proposal;
use crate::values::human;

/// `--successes N`: a success short of N in a row does not end the run;
/// another attempt follows after `proposed` (the base delay), within the
/// limits. When they end the run first, it failed as one that never got
/// ready does (exit 1: a failed run never exits 0).
pub(super) fn confirm_success(
    (number, in_a_row): (u64, u64),
    ending: &Ending,
    limits: Limits,
    now: Instant,
    proposed: &Proposal,
) -> Step {
    let short = |end: &str| {
        format!(
            "{end}{}, but only {in_a_row} of the {} successes in a row --successes asks for (exit 1)",
            ending.describe(),
            limits.successes
        )
    };
    if limits.max_attempts.is_some_and(|max| number >= max) {
        return Step::Done(Done {
            end: End::failed(RunOutcome::Exhausted, ending),
            detail: short(""),
        });
    }
    let (sleep, source) = match sleep_of(proposed) {
        Ok(sleep) => sleep,
        Err(refused) => {
            return Step::Done(Done {
                end: End::failed(RunOutcome::Exhausted, ending),
                detail: short(&format!("{refused}; ")),
            });
        }
    };
    let wake = now + sleep.delay.min(Duration::from_secs(u32::MAX.into()));
    if limits.deadline.is_some_and(|deadline| wake >= deadline) {
        let end = format!(
            "the next sleep ({}) would end past it; ",
            human(sleep.delay)
        );
        return Step::Done(Done {
            end: End::failed(RunOutcome::Deadline, ending),
            detail: short(&end),
        });
    }
    Step::Sleep { sleep, source }
}

/// `--until-failure`, the inverse run: after a success, another run (within
/// the limits and after the policy's sleep); the first failure, transient or
/// permanent, ends the run with its status (outcome `permanent`). When the
/// limits end the run first, every run passed: success, exit 0. A run cut
/// short by `--max-time` neither passed nor failed: it is not counted (but
/// when no run finished before it, nothing was learned: `deadline`, 124).
pub(super) fn next_repeat(
    attempt: u64,
    ending: &Ending,
    class: Class,
    limits: Limits,
    now: Instant,
    proposed: &Proposal,
) -> Step {
    let past_deadline = |at: Instant| limits.deadline.is_some_and(|deadline| at >= deadline);
    let before = attempt.saturating_sub(1);
    if class != Class::Success {
        if ending.timed_out && past_deadline(now) {
            if before == 0 {
                return Done::with(RunOutcome::Deadline, ending);
            }
            return Step::Done(Done::passed(format!(
                "--max-time reached during run {attempt}, which is not counted; the {} before it passed",
                runs(before)
            )));
        }
        return Step::Done(Done {
            end: End::failed(RunOutcome::Permanent, ending),
            detail: format!(
                "{} on run {attempt}, after {} that passed",
                failure_detail(ending),
                runs(before)
            ),
        });
    }
    if limits.max_attempts.is_some_and(|max| attempt >= max) {
        return Step::Done(Done::passed(format!("all {} passed", runs(attempt))));
    }
    let (sleep, source) = match sleep_of(proposed) {
        Ok(sleep) => sleep,
        Err(refused) => {
            return Step::Done(Done::passed(format!(
                "all {} passed; {refused}",
                runs(attempt)
            )));
        }
    };
    if past_deadline(now + sleep.delay.min(Duration::from_secs(u32::MAX.into()))) {
        return Step::Done(Done::passed(format!(
            "all {} passed; the next sleep ({}) would end past --max-time",
            runs(attempt),
            human(sleep.delay)
        )));
    }
    Step::Sleep { sleep, source }
}
