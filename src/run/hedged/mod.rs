//! A hedged attempt (`--hedge-after`, `--hedges`): when the attempt has run
//! that long without ending, one more copy of it starts; the first success
//! wins and the others are ended as a time limit ends an attempt (SIGTERM
//! to their groups, SIGKILL after `--kill-after`), reported as
//! `superseded`. What to do at each step is `policy::hedging`'s; this
//! carries it out, with the copies' processes, pipes and reports.
//!
//! Copies must not trample on each other: each holds its stdout in a spool
//! of its own and only the chosen copy's reaches retry's stdout (or the
//! file of `-o`, `--buffer-stdout`); copy 0's stderr passes through as it
//! comes, a hedge's is held and said afterwards, each line marked
//! `[hedge N]` (two writers on one pipe tear long lines); each has its own
//! hint file and `RETRY_HEDGE`; stdin is the whole input for each
//! (`--stdin replay`) or none. Copies always lead process groups of their
//! own (`--foreground` and a terminal are refused before anything runs).
//! To the schedule, the group is one attempt: the winner's, else the copy
//! that decided the group's end.

mod copy;
mod output;
mod plan;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant, SystemTime};

use anyhow::Result;

use super::Run;
use super::hint::HintFile;
use super::one_attempt::Judged;
use crate::contract::warning;
use crate::policy::hedging::{self, CopyState, Next};
use crate::process::Supervised;
use crate::process::signals::SignalEvents;
use crate::report::Reporter;
use crate::sys::fd::CancelPipe;

use copy::{Copy, start_copy};
use output::spooled_losses;
pub(super) use plan::HedgePlan;

impl Run<'_> {
    /// Attempt `attempt` as a group of copies: the judged copy that decides
    /// the group (the winner, the copy that failed for good, or the one
    /// that gives the failure of all); the others are reported here.
    pub(super) fn hedged_attempt(
        &mut self,
        plan: HedgePlan,
        attempt: u64,
        previous_exit: Option<i32>,
        signals: &mut SignalEvents,
        reporter: &mut Reporter,
    ) -> Result<Judged> {
        reporter.attempt_start(
            attempt,
            self.setup.config.attempts,
            &self.setup.command_text,
        );
        if let Some(held) = &self.files.held {
            held.reset()?;
        }
        anyhow::ensure!(
            self.files.stdin.whole_for_copies(),
            "--stdin replay: the input was not read to its end"
        );
        while self.files.hedge_hints.len() < plan.hedges as usize {
            self.files.hedge_hints.push(HintFile::for_run()?);
        }
        for number in 0..=plan.hedges {
            if let Err(problem) = self.copy_hint(number).prepare() {
                reporter.warning(warning::HINT, &problem);
            }
        }
        let abandon = AtomicBool::new(false);
        let give_up = || abandon.load(Ordering::SeqCst);
        let config = self.setup.config;
        // Each copy's pumps and feeder watch a pair of these, made before
        // the copies' threads, which they outlive.
        let cancels = (0..=plan.hedges)
            .map(|_| Ok((CancelPipe::new()?, CancelPipe::new()?)))
            .collect::<Result<Vec<_>>>()?;
        let mut copies: Vec<Copy> = Vec::new();
        let mut no_more = false;
        let decided = std::thread::scope(|scope| -> Result<usize> {
            loop {
                // Look at each running copy; judge those that ended.
                let kept: Vec<_> = copies
                    .iter()
                    .filter_map(|c| c.supervised.as_ref().map(Supervised::kept_pid))
                    .collect();
                crate::sys::process::reap_ended_except(&kept);
                self.judge_ended(&mut copies, (&abandon, &cancels), signals, reporter);
                let seen: Vec<_> = copies.iter().map(Copy::seen).collect();
                let may_start = !no_more
                    && self
                        .setup
                        .limits
                        .deadline
                        .is_none_or(|d| Instant::now() < d);
                let next = hedging::next(
                    &seen,
                    Instant::now(),
                    hedging::Plan {
                        delay: plan.delay,
                        hedges: plan.hedges,
                        may_start,
                    },
                );
                match next {
                    Next::Start => {
                        // A hedge costs a budget token; none while a circuit
                        // probes (one request is the probe).
                        let number = copies.len() as u64;
                        if number > 0 && !self.may_hedge(signals, reporter) {
                            no_more = true;
                            continue;
                        }
                        let start = self.copy_start(
                            config,
                            number,
                            (attempt, previous_exit),
                            &cancels[number as usize],
                            &give_up,
                        )?;
                        copies.push(start_copy(scope, start)?);
                        continue;
                    }
                    Next::Won { winner: decided } | Next::Lost { failed: decided } => {
                        let now = Instant::now();
                        for copy in &mut copies {
                            if let Some(supervised) = &mut copy.supervised {
                                supervised.supersede(now);
                            }
                        }
                        if copies.iter().all(|c| c.supervised.is_none()) {
                            return Ok(decided);
                        }
                    }
                    Next::AllFailed => return Ok(hedging::decider(&seen)),
                    Next::Wait(_) => {}
                }
                if wait_for_copies(&mut copies, &next, signals) {
                    no_more = true;
                }
            }
        })?;
        crate::process::watchdog::release();
        crate::process::reap_orphans();
        self.settle_copies(copies, decided, attempt, reporter)
    }

    /// Judge the copies that ended since the last look (or could not
    /// start), and note each one's state.
    fn judge_ended(
        &mut self,
        copies: &mut [Copy],
        (abandon, cancels): (&AtomicBool, &[(CancelPipe, CancelPipe)]),
        signals: &mut SignalEvents,
        reporter: &mut Reporter,
    ) {
        for copy in copies {
            let (ending, superseded) = if let Some(ending) = copy.not_started.take() {
                (ending, false)
            } else {
                let Some(process) = copy.supervised.as_mut().and_then(Supervised::ended) else {
                    continue;
                };
                let supervised = copy.supervised.take().expect("a running copy");
                let superseded = supervised.was_superseded();
                (supervised.finish(process, &mut signals.events), superseded)
            };
            let outcome = Self::finish_copy(copy, ending, abandon, cancels);
            let outcome = spooled_losses(copy, outcome, reporter);
            let taken = self.copy_hint(copy.number).take();
            let mut judged = self.judge(outcome, taken, reporter);
            judged.copy = Some(copy.number);
            let class = judged.verdict.class;
            copy.state = if superseded {
                CopyState::Superseded
            } else if hedging::asks_to_wait(
                class,
                judged.hint,
                judged.response.as_ref(),
                SystemTime::now(),
            ) {
                CopyState::AskedToWait
            } else {
                CopyState::Ended(class)
            };
            copy.ended = Some(Instant::now());
            copy.judged = Some(judged);
        }
    }

    /// The hint file of copy `number`.
    fn copy_hint(&mut self, number: u64) -> &mut HintFile {
        match number {
            0 => &mut self.files.hint,
            n => &mut self.files.hedge_hints[n as usize - 1],
        }
    }

    /// Whether another copy may start: no circuit is probing, and the
    /// budget (if any) gives a token for it.
    fn may_hedge(&mut self, signals: &mut SignalEvents, reporter: &mut Reporter) -> bool {
        if self.setup.probing {
            return false;
        }
        match self.withdraw(signals, reporter) {
            None => true,
            Some((_, answer)) => matches!(
                answer,
                crate::policy::decision::BudgetAnswer::Taken { .. }
                    | crate::policy::decision::BudgetAnswer::Unusable
            ),
        }
    }
}

/// Move the running copies' clocks (time limits, kill-after) on, then wait
/// for the next event or wake-up (a copy's time limit, the next hedge);
/// whether a signal arrived (no more copies start after one).
fn wait_for_copies(copies: &mut [Copy], next: &Next, signals: &mut SignalEvents) -> bool {
    for copy in copies.iter_mut() {
        if let Some(supervised) = &mut copy.supervised {
            supervised.tick(Instant::now());
        }
    }
    let hedge_wake = match next {
        Next::Wait(at) => *at,
        _ => None,
    };
    let wake = copies
        .iter()
        .filter_map(|c| c.supervised.as_ref().and_then(Supervised::wake))
        .chain(hedge_wake)
        .min();
    let Some(event) = signals.events.next(wake) else {
        return false;
    };
    for copy in copies.iter_mut() {
        if let Some(supervised) = &mut copy.supervised {
            supervised.on_event(event);
        }
    }
    matches!(event, crate::process::signals::Event::Signal { .. })
}
