//! The schedule of a run: the splay, then attempt, decision and sleep until
//! the decision ends the run. It carries out what `policy` decides
//! ([`decision::after_attempt`], [`next_sleep::propose`],
//! [`decision::after_budget`], [`decision::after_hook`],
//! [`decision::out_of_time`]) and decides nothing itself. Everything it
//! does to the world goes through [`Effects`]: the run's own (`effects`),
//! or in the tests below a script of attempts on a clock that only moves
//! when the schedule sleeps.

use std::time::{Duration, Instant, SystemTime};

use anyhow::{Result, bail};
use rand::RngExt;
use rand::rngs::SmallRng;

use super::hook_process::HookRun;
use super::one_attempt::Judged;
use crate::contract::warning;
use crate::outcome::{Ending, SleepSource};
use crate::policy::backoff::Backoff;
use crate::policy::classify::{Class, Verdict};
use crate::policy::decision::{self, Attempt, BudgetAnswer, Decision, Done, Limits, Step};
use crate::policy::next_sleep::{self, Left, Proposal, SleepRules};
use crate::report::{AttemptRecord, SleepRecord};

/// What the schedule has done to the world.
pub(super) trait Effects {
    /// The monotonic clock.
    fn now(&self) -> Instant;
    /// The wall clock (a response's `Date` and reset times are read by it).
    fn wall(&self) -> SystemTime;
    /// The run's randomness (the splay, the backoff's jitter).
    fn rng(&mut self) -> &mut SmallRng;
    /// A terminating signal that arrived since the last look.
    fn pending_signal(&mut self) -> Option<i32>;
    /// Sleep until `wake`, unless a terminating signal comes first: it.
    fn sleep_until(&mut self, wake: Instant) -> Option<i32>;
    /// `--budget`: the first attempt's deposit.
    fn deposit(&mut self);
    /// `--budget`: a token for the next retry; `None` without a budget (or
    /// once its store failed). Its name comes with the answer.
    fn withdraw(&mut self) -> Option<(String, BudgetAnswer)>;
    /// Run attempt `number` and judge it.
    fn attempt(&mut self, number: u64, previous_exit: Option<i32>) -> Result<Judged>;
    /// `--on-retry` before attempt `next` (`None`: no hook).
    fn on_retry(&mut self, next: u64, previous: &Ending) -> Option<HookRun>;
    /// Say how `--on-retry` went, and whether the run ends on it.
    fn report_on_retry(&mut self, ran: &HookRun, run_ends: bool);
    /// `--stdin replay`: why the spool cannot replay the input, if so.
    fn spool_failure(&self) -> Option<String>;
    fn report_attempt(&mut self, record: &AttemptRecord, next: Option<&SleepRecord>);
    fn report_sleep(&mut self, record: &SleepRecord);
    fn warning(&mut self, kind: &str, message: &str);
}

/// What the schedule needs to know of the run's settings.
#[derive(Clone, Copy, Debug)]
pub(super) struct Plan {
    pub(super) limits: Limits,
    pub(super) sleeps: SleepRules,
    /// `--attempts`, for the records.
    pub(super) max_attempts: Option<u64>,
    /// `--splay`.
    pub(super) splay: Duration,
    /// `--reset-after`.
    pub(super) reset_after: Option<Duration>,
}

/// How the attempts ended: the decision that ended them, how many there
/// were, and how the last one ended (`None`: none started).
pub(super) struct Ended {
    pub(super) done: Done,
    pub(super) attempts: u64,
    pub(super) last_ending: Option<Ending>,
    /// Successful attempts in a row at the end.
    pub(super) in_a_row: u64,
}

/// The splay, then attempts and sleeps until the decision is `Done`.
#[allow(
    clippy::too_many_lines,
    reason = "the schedule's loop, read top to bottom as the guide tells it"
)]
pub(super) fn run(
    plan: &Plan,
    backoff: &mut Backoff<'_>,
    effects: &mut impl Effects,
) -> Result<Ended> {
    let ended = |done, attempts, last_ending: &Option<Ending>, in_a_row| Ended {
        done,
        attempts,
        last_ending: last_ending.clone(),
        in_a_row,
    };
    if let Some(signal) = splay(plan.splay, effects) {
        return Ok(ended(Done::interrupted(signal), 0, &None, 0));
    }
    if let Some(done) = decision::before_first_attempt(plan.limits, effects.now()) {
        return Ok(ended(done, 0, &None, 0));
    }
    effects.deposit();
    let mut previous_exit: Option<i32> = None;
    let mut attempt = 0;
    let mut in_a_row = 0;
    let mut last_ending = None;
    loop {
        // A signal that came in since the last wait stops us before we
        // start anything new.
        if let Some(signal) = effects.pending_signal() {
            return Ok(ended(
                Done::interrupted(signal),
                attempt,
                &last_ending,
                in_a_row,
            ));
        }
        attempt += 1;
        let judged = effects.attempt(attempt, previous_exit)?;
        let ending = judged.outcome.ending.clone();
        previous_exit = Some(ending.exit_status().as_number());
        let failed = judged.verdict.class != Class::Success;
        if failed
            && plan
                .reset_after
                .is_some_and(|limit| judged.outcome.duration >= limit)
        {
            // The command was healthy for a while: no old failure counts.
            backoff.reset();
        }
        in_a_row = if failed { 0 } else { in_a_row + 1 };
        let left = Left {
            class: judged.verdict.class,
            hint: judged.hint,
            response: judged.response.as_ref(),
        };
        let proposed =
            next_sleep::propose(&plan.sleeps, left, effects.wall(), backoff, effects.rng());
        let Decision { verdict, step } = decision::after_attempt(
            Attempt {
                number: attempt,
                ending: &ending,
                verdict: judged.verdict.clone(),
                downstream_closed: judged.outcome.downstream_closed,
                in_a_row,
            },
            plan.limits,
            effects.now(),
            &proposed,
        );
        let record = attempt_record(attempt, plan.max_attempts, &judged, verdict);
        last_ending = Some(ending.clone());
        let (sleep, source) = match step {
            Step::Done(done) => {
                effects.report_attempt(&record, None);
                // A server's wait that ended the run is said as a warning
                // too, for the JSON events (the `done` event has no words).
                if let Some(why) =
                    decision::wait_not_waited_for(plan.limits, effects.now(), &proposed)
                    && done.detail.starts_with(&why)
                {
                    effects.warning(warning::RETRY_AFTER, &why);
                }
                if let Some(problem) = effects.spool_failure() {
                    effects.warning(warning::STDIN,
                        &format!(
                            "{problem}; the last attempt was given all of it as it came, but it could not have been replayed"
                        ),
                    );
                }
                return Ok(ended(done, attempt, &last_ending, in_a_row));
            }
            Step::Sleep { sleep, source } => (sleep, source),
        };
        if let Some(problem) = effects.spool_failure() {
            // The next attempt cannot be given the whole input: retry's
            // own failure, not the command's.
            effects.report_attempt(&record, None);
            bail!(
                "{problem}; attempt {} cannot be given the whole input",
                attempt + 1
            );
        }
        // The sleep ends when it was due: asking the budget's store is
        // part of the wait, not added to it.
        let wake = effects.now() + sleep.delay;
        if decision::takes_a_token(judged.verdict.class, plan.limits)
            && let Some((name, answer)) = effects.withdraw()
            && let Some(done) = decision::after_budget(
                &name,
                &answer,
                (attempt + 1, &ending),
                plan.limits,
                effects.now(),
            )
        {
            effects.report_attempt(&record, None);
            return Ok(ended(done, attempt, &last_ending, in_a_row));
        }
        let header = match &proposed {
            Proposal::Sleep { header, .. } => header.as_ref(),
            Proposal::Refused { .. } => None,
        };
        effects.report_attempt(
            &record,
            Some(&SleepRecord {
                attempt,
                delay: sleep.delay,
                ceiling: sleep.ceiling,
                source,
                header: header.map(|wait| (wait.header, wait.reading.clone())),
            }),
        );
        if let Some(signal) = effects.sleep_until(wake) {
            return Ok(ended(
                Done::interrupted(signal),
                attempt,
                &last_ending,
                in_a_row,
            ));
        }
        // The sleep fitted when it began; a retry stopped during it (Ctrl-Z,
        // SIGSTOP) may wake past --max-time: no attempt starts then.
        let during = format!("before attempt {} could start", attempt + 1);
        let late = decision::out_of_time(attempt + 1, &ending, plan.limits, effects.now(), &during);
        if let Some(done) = late {
            return Ok(ended(done, attempt, &last_ending, in_a_row));
        }
        if let Some(ran) = effects.on_retry(attempt + 1, &ending) {
            let ends = decision::after_hook(
                attempt + 1,
                &ending,
                &ran.ending,
                plan.limits,
                effects.now(),
            );
            effects.report_on_retry(&ran, ends.is_some());
            if let Some(done) = ends {
                return Ok(ended(done, attempt, &last_ending, in_a_row));
            }
        }
    }
}

/// `--splay`: a random sleep before the first attempt; a signal that cuts
/// it short is returned.
fn splay(splay: Duration, effects: &mut impl Effects) -> Option<i32> {
    if splay.is_zero() {
        return None;
    }
    let nanos = u64::try_from(splay.as_nanos()).unwrap_or(u64::MAX);
    let delay = Duration::from_nanos(effects.rng().random_range(0..nanos));
    effects.report_sleep(&SleepRecord {
        attempt: 0,
        delay,
        ceiling: splay,
        source: SleepSource::Splay,
        header: None,
    });
    let wake = effects.now() + delay;
    effects.sleep_until(wake)
}

/// The `attempt` event: the attempt as it ended, with its final verdict.
fn attempt_record(
    attempt: u64,
    max_attempts: Option<u64>,
    judged: &Judged,
    verdict: Verdict,
) -> AttemptRecord {
    let ending = &judged.outcome.ending;
    AttemptRecord {
        attempt,
        max_attempts,
        exit_code: ending.exit_code(),
        signal: ending.signal(),
        timed_out: ending.timed_out,
        duration: judged.outcome.duration,
        outcome: verdict.class,
        reason: verdict.reason,
        copy: judged.copy,
        superseded: false,
    }
}

/// The `attempt` event of a copy of a hedged attempt that did not decide
/// it: its own outcome, or `superseded`.
pub(super) fn copy_record(
    attempt: u64,
    max_attempts: Option<u64>,
    judged: &Judged,
    copy: u64,
    superseded: bool,
) -> AttemptRecord {
    AttemptRecord {
        copy: Some(copy),
        superseded,
        ..attempt_record(attempt, max_attempts, judged, judged.verdict.clone())
    }
}

#[cfg(test)]
#[path = "schedule/tests.rs"]
mod tests;
