//! The loop of a run: the splay, then attempt, decision and sleep until the
//! decision ends the run. It carries the decision out; what the decision
//! is, and the attempt's final verdict, are `decision`'s.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use rand::RngExt;

use super::Run;
use super::judge::Judged;
use crate::outcome::Ending;
use crate::outcome::SleepSource;
use crate::policy::backoff::Backoff;
use crate::policy::classify::{Class, Verdict};
use crate::policy::decision::{self, Attempt, Decision, Done, Step};
use crate::process::signals::{self, SignalEvents};
use crate::report::{AttemptRecord, Reporter, SleepRecord};

/// How the attempts ended: the decision that ended them, how many there
/// were, and how the last one ended (`None`: none started).
pub(super) struct Ended {
    pub(super) done: Done,
    pub(super) attempts: u64,
    pub(super) last_ending: Option<Ending>,
    /// Successful attempts in a row at the end.
    pub(super) in_a_row: u64,
}

impl Ended {
    fn new(done: Done, attempts: u64, last_ending: Option<Ending>, in_a_row: u64) -> Ended {
        Ended {
            done,
            attempts,
            last_ending,
            in_a_row,
        }
    }
}

impl Run<'_> {
    /// The splay, then attempts and sleeps until the decision is `Done`.
    pub(super) fn attempts(
        &mut self,
        signals: &mut SignalEvents,
        reporter: &mut Reporter,
    ) -> Result<Ended> {
        if let Some(signal) = self.splay(signals, reporter) {
            return Ok(Ended::new(Done::interrupted(signal), 0, None, 0));
        }
        if let Some(done) = decision::before_first_attempt(self.setup.limits, Instant::now()) {
            return Ok(Ended::new(done, 0, None, 0));
        }
        self.deposit(reporter);
        let mut backoff = self.setup.config.policy.sleeps();
        let mut previous_exit: Option<i32> = None;
        let mut attempt = 0;
        let mut in_a_row = 0;
        let mut last_ending = None;
        loop {
            // A signal that came in since the last wait stops us before we
            // start anything new.
            if let Some(signal) = signals::pending_signal(&mut signals.events) {
                return Ok(Ended::new(
                    Done::interrupted(signal),
                    attempt,
                    last_ending,
                    in_a_row,
                ));
            }
            attempt += 1;
            let judged = self.attempt(attempt, previous_exit, signals, reporter)?;
            let ending = &judged.outcome.ending;
            previous_exit = Some(ending.exit_status().as_number());
            self.reset_after(&judged, &mut backoff);
            in_a_row = if judged.verdict.class == Class::Success {
                in_a_row + 1
            } else {
                0
            };
            let proposed = self.proposed_sleep(&judged, &mut backoff);
            let Decision { verdict, step } = decision::after_attempt(
                Attempt {
                    number: attempt,
                    ending,
                    verdict: judged.verdict.clone(),
                    downstream_closed: judged.outcome.downstream_closed,
                    in_a_row,
                },
                self.setup.limits,
                Instant::now(),
                (proposed.sleep, proposed.source),
            );
            self.count_failure(verdict.class);
            let record = attempt_record(attempt, self.setup.config.attempts, &judged, verdict);
            last_ending = Some(judged.outcome.ending.clone());
            let ended = |done| Ok(Ended::new(done, attempt, last_ending.clone(), in_a_row));
            match step {
                Step::Done(done) => {
                    reporter.attempt(&record, None);
                    if self.files.stdin.spool_failure().is_some() {
                        let problem = self.spool_problem();
                        reporter.warning(
                            "stdin",
                            &format!(
                                "{problem}; the last attempt was given all of it as it came, but it could not have been replayed"
                            ),
                        );
                    }
                    return ended(done);
                }
                Step::Sleep { .. } if self.files.stdin.spool_failure().is_some() => {
                    // The next attempt cannot be given the whole input.
                    reporter.attempt(&record, None);
                    bail!(
                        "{}; attempt {} cannot be given the whole input",
                        self.spool_problem(),
                        attempt + 1
                    );
                }
                Step::Sleep { sleep, source } => {
                    // Said only when a retry follows: after the last
                    // attempt there is no backoff to fall back on.
                    if let Some(warning) = &proposed.not_obeyed {
                        reporter.warning("retry-after", warning);
                    }
                    // The sleep ends when it was due: asking the budget's
                    // store is part of the wait, not added to it.
                    let wake = Instant::now() + sleep.delay;
                    if let Some(done) = self.budget_refuses(attempt, &judged, signals, reporter) {
                        reporter.attempt(&record, None);
                        return ended(done);
                    }
                    reporter.attempt(
                        &record,
                        Some(&SleepRecord {
                            attempt,
                            delay: sleep.delay,
                            ceiling: sleep.ceiling,
                            source,
                            header: proposed
                                .header
                                .as_ref()
                                .map(|wait| (wait.header, wait.reading.clone())),
                        }),
                    );
                    if let Some(signal) = signals::sleep_until(
                        &mut signals.events,
                        wake,
                        crate::process::reap_orphans,
                    ) {
                        return ended(Done::interrupted(signal));
                    }
                    let previous = &judged.outcome.ending;
                    // The sleep fitted when it began; a retry stopped during
                    // it (Ctrl-Z, SIGSTOP) may wake past --max-time: no
                    // attempt starts then, and the run ends with the last
                    // attempt's own status.
                    let late = decision::out_of_time(
                        attempt + 1,
                        previous,
                        self.setup.limits,
                        Instant::now(),
                        &format!("before attempt {} could start", attempt + 1),
                    );
                    if let Some(done) = late {
                        return ended(done);
                    }
                    if let Some(done) = self.on_retry(attempt + 1, previous, signals, reporter) {
                        return ended(done);
                    }
                }
            }
        }
    }

    /// `--reset-after`: a failed attempt that ran at least that long (the
    /// command was healthy for a while) starts the backoff over.
    fn reset_after(&self, judged: &Judged, backoff: &mut Backoff<'_>) {
        let ran_long = self
            .setup
            .config
            .hooks
            .reset_after
            .is_some_and(|limit| judged.outcome.duration >= limit);
        if ran_long && judged.verdict.class != Class::Success {
            backoff.reset();
        }
    }

    /// A failed attempt's final verdict, for the metrics.
    fn count_failure(&mut self, class: Class) {
        let failures = &mut self.state.failures;
        match class {
            Class::Success => {}
            Class::Transient => failures.transient += 1,
            Class::Throttled => failures.throttled += 1,
            Class::Permanent => failures.permanent += 1,
        }
    }

    /// `--splay`: a random sleep before the first attempt; a signal that
    /// cuts it short is returned.
    fn splay(&mut self, signals: &mut SignalEvents, reporter: &mut Reporter) -> Option<i32> {
        let splay = self.setup.config.splay;
        if splay.is_zero() {
            return None;
        }
        let nanos = u64::try_from(splay.as_nanos()).unwrap_or(u64::MAX);
        let delay = Duration::from_nanos(self.state.rng.random_range(0..nanos));
        reporter.sleep(&SleepRecord {
            attempt: 0,
            delay,
            ceiling: splay,
            source: SleepSource::Splay,
            header: None,
        });
        signals::sleep_until(&mut signals.events, Instant::now() + delay, || {})
    }
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
    }
}
