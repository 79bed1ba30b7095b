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
//!
//! No wait of the group's holds the others up: what a copy that ended left
//! in its group is ended a step at a time (`Cleanup`) while the others run
//! on, so their time limits, a winner and a signal to retry are seen when
//! they come. A signal to retry is passed on to every copy and ends the
//! run, whichever copy it reached.

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
use crate::policy::decision::BudgetAnswer;
use crate::policy::hedging::{self, CopyState, Next};
use crate::process::Supervised;
use crate::process::signals::{Event, SignalEvents};
use crate::report::Reporter;
use crate::sys::fd::CancelPipe;

use copy::{Copy, start_copy};
use output::spooled_losses;
pub(super) use plan::HedgePlan;

/// What the group learned as it went: whether more copies may start, and
/// the first signal retry got meanwhile (it ends the run).
#[derive(Default)]
struct Group {
    no_more: bool,
    signal: Option<i32>,
}

/// Whether a hedge may start, as the budget and the circuit say.
enum MayHedge {
    Yes,
    No,
    /// A signal to retry came while the budget's store was asked.
    Interrupted(i32),
}

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
        let cancels = self.prepare_group(plan, attempt, reporter)?;
        let abandon = AtomicBool::new(false);
        let give_up = || abandon.load(Ordering::SeqCst);
        let config = self.setup.config;
        let mut copies: Vec<Copy> = Vec::new();
        let mut group = Group::default();
        let decided = std::thread::scope(|scope| -> Result<usize> {
            loop {
                self.look_at_copies(&mut copies, (&abandon, &cancels), signals, reporter);
                let seen: Vec<_> = copies.iter().map(Copy::seen).collect();
                let may_start = !group.no_more
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
                let all_over = copies.iter().all(|c| !c.live());
                match next {
                    Next::Start => {
                        // A hedge costs a budget token; none while a circuit
                        // probes (one request is the probe).
                        let number = copies.len() as u64;
                        if number > 0 {
                            match self.may_hedge(signals, reporter) {
                                MayHedge::Yes => {}
                                MayHedge::No => {
                                    group.no_more = true;
                                    continue;
                                }
                                MayHedge::Interrupted(signal) => {
                                    group.on_event(&mut copies, signal_event(signal));
                                    continue;
                                }
                            }
                        }
                        let started = self
                            .copy_start(
                                config,
                                number,
                                (attempt, previous_exit),
                                &cancels[number as usize],
                                &give_up,
                            )
                            .and_then(|start| start_copy(scope, start));
                        match started {
                            Ok(copy) => copies.push(copy),
                            // Nothing runs yet: retry's own failure.
                            Err(err) if copies.is_empty() => return Err(err),
                            // Copies run: they go on, without this one.
                            Err(err) => {
                                reporter.warning(
                                    warning::HEDGING,
                                    &format!(
                                        "hedge {number} of attempt {attempt} could not start ({err:#}); the attempt goes on without it"
                                    ),
                                );
                                group.no_more = true;
                            }
                        }
                        continue;
                    }
                    Next::Won { winner: decided } | Next::Lost { failed: decided } => {
                        let now = Instant::now();
                        for copy in &mut copies {
                            if let Some(supervised) = &mut copy.supervised {
                                supervised.supersede(now);
                            }
                        }
                        if all_over {
                            return Ok(decided);
                        }
                    }
                    Next::AllFailed if all_over => return Ok(hedging::decider(&seen)),
                    Next::AllFailed | Next::Wait(_) => {}
                }
                wait_for_copies(&mut copies, &next, signals, &mut group);
            }
        })?;
        crate::process::watchdog::release();
        crate::process::reap_orphans();
        let mut judged = self.settle_copies(copies, decided, attempt, reporter)?;
        // A signal that came while the copies ran ends the run, whichever
        // copy it reached.
        let ending = &mut judged.outcome.ending;
        ending.interrupted = ending.interrupted.or(group.signal);
        Ok(judged)
    }

    /// Before a group's first copy: its start said, the held stdout
    /// forgotten, a hint file for each copy; and the cancels each copy's
    /// pumps and feeder watch, made before the copies' threads, which they
    /// outlive.
    fn prepare_group(
        &mut self,
        plan: HedgePlan,
        attempt: u64,
        reporter: &mut Reporter,
    ) -> Result<Vec<(CancelPipe, CancelPipe)>> {
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
        (0..=plan.hedges)
            .map(|_| Ok((CancelPipe::new()?, CancelPipe::new()?)))
            .collect()
    }

    /// Look at each copy: judge those that ended since the last look (or
    /// could not start), and end what ended ones left, a step; the
    /// watchdog is told again what is left whenever something is over.
    fn look_at_copies(
        &mut self,
        copies: &mut [Copy],
        (abandon, cancels): (&AtomicBool, &[(CancelPipe, CancelPipe)]),
        signals: &mut SignalEvents,
        reporter: &mut Reporter,
    ) {
        let live = copies.iter().filter(|c| c.live()).count();
        for copy in copies.iter_mut() {
            if let Some(cleanup) = &mut copy.cleanup
                && !cleanup.step(Instant::now())
            {
                copy.cleanup = None;
            }
            let (ending, superseded) = if let Some(ending) = copy.not_started.take() {
                (ending, false)
            } else {
                let Some(process) = copy.supervised.as_mut().and_then(Supervised::ended) else {
                    continue;
                };
                let supervised = copy.supervised.take().expect("a running copy");
                let superseded = supervised.was_superseded();
                let (ending, cleanup) = supervised.finish_apart(process, &mut signals.events);
                copy.cleanup = cleanup;
                (ending, superseded)
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
        // The watchdog guards only what is left: a process group that is
        // over may be another's by the time retry dies.
        let left = copies.iter().filter(|c| c.live()).count();
        if left < live && left > 0 {
            crate::process::watchdog::release();
            for copy in copies.iter_mut() {
                copy.guard_again();
            }
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
    fn may_hedge(&mut self, signals: &mut SignalEvents, reporter: &mut Reporter) -> MayHedge {
        if self.setup.probing {
            return MayHedge::No;
        }
        match self.withdraw(signals, reporter) {
            None | Some((_, BudgetAnswer::Taken { .. } | BudgetAnswer::Unusable)) => MayHedge::Yes,
            Some((_, BudgetAnswer::Interrupted(signal))) => MayHedge::Interrupted(signal),
            Some(_) => MayHedge::No,
        }
    }
}

/// A terminating signal, as an event from the signal pipe.
fn signal_event(signal: i32) -> Event {
    Event::Signal {
        signal,
        from_terminal: false,
    }
}

impl Group {
    /// An event for the copies: each running copy acts on it; a signal to
    /// retry ends what ended copies left at once, starts no more copies,
    /// and ends the run.
    fn on_event(&mut self, copies: &mut [Copy], event: Event) {
        let now = Instant::now();
        for copy in copies.iter_mut() {
            if let Some(supervised) = &mut copy.supervised {
                supervised.on_event(event);
            }
            if let (Some(_), Some(cleanup)) = (event.terminating(), &mut copy.cleanup) {
                cleanup.hurry(now);
            }
        }
        if let Some(signal) = event.terminating() {
            self.no_more = true;
            self.signal.get_or_insert(signal);
        }
    }
}

/// Move the running copies' clocks (time limits, kill-after) on, then wait
/// for the next event or wake-up (a copy's time limit, the next hedge, a
/// look at what an ended copy left), and act on it.
fn wait_for_copies(
    copies: &mut [Copy],
    next: &Next,
    signals: &mut SignalEvents,
    group: &mut Group,
) {
    let now = Instant::now();
    for copy in copies.iter_mut() {
        if let Some(supervised) = &mut copy.supervised {
            supervised.tick(now);
        }
    }
    let hedge_wake = match next {
        Next::Wait(at) => *at,
        _ => None,
    };
    let wake = copies
        .iter()
        .filter_map(|c| c.supervised.as_ref().and_then(Supervised::wake))
        .chain(
            copies
                .iter()
                .filter_map(|c| Some(c.cleanup.as_ref()?.wake(now))),
        )
        .chain(hedge_wake)
        .min();
    // Woken by a copy's end (or, on Unix, an adopted orphan's), an event,
    // or the time.
    let running: Vec<&Supervised> = copies
        .iter()
        .filter_map(|c| c.supervised.as_ref())
        .collect();
    if let Some(event) = crate::process::wait_for(&running, &mut signals.events, wake) {
        group.on_event(copies, event);
    }
}
