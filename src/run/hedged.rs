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

use std::fs::File;
use std::io::{BufRead, Seek, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::Run;
use super::hint::{HintContent, HintFile};
use super::one_attempt::{Judged, child_env};
use super::wiring::{self, Outcome, OutputPlan, Stream};
use crate::outcome::Ending;
use crate::policy::hedging::{self, CopyState, Next};
use crate::process::signals::SignalEvents;
use crate::process::{ChildIo, Launch, Supervised};
use crate::report::Reporter;
use crate::run::pump::PumpReport;
use crate::safe_fs;
use crate::sys::fd::CancelPipe;

/// How a run hedges its attempts, settled at its start.
#[derive(Clone, Copy, Debug)]
pub(super) struct HedgePlan {
    /// How long a copy runs before the next starts.
    pub(super) delay: Duration,
    /// Copies beyond the first, at most.
    pub(super) hedges: u64,
}

/// One copy while the group runs.
struct Copy {
    number: u64,
    started: Instant,
    /// Until it has ended and been cleaned up.
    supervised: Option<Supervised>,
    /// A copy that could not start: its ending, judged at the next look.
    not_started: Option<Ending>,
    stdout: File,
    /// A hedge's stderr, said afterwards (copy 0's passes through).
    stderr: Option<File>,
    reports: mpsc::Receiver<(Stream, PumpReport)>,
    pumps: usize,
    state: CopyState,
    judged: Option<Judged>,
}

/// What starting one copy needs (all of it outlives the copies' threads).
struct CopyStart<'env> {
    number: u64,
    launch: Launch<'env>,
    deadline: Option<Instant>,
    kill_after: Duration,
    patterns: Option<&'env PatternSet>,
    scan_stdout: bool,
    stdin: CopyStdin,
    /// Its pumps' and its feeder's cancels.
    cancels: &'env (CancelPipe, CancelPipe),
    give_up: &'env (dyn Fn() -> bool + Sync),
}

impl Run<'_> {
    /// Attempt `attempt` as a group of copies: the judged copy that decides
    /// the group (the winner, the copy that failed for good, or the last to
    /// fail); the others are reported here.
    pub(super) fn hedged_attempt(
        &mut self,
        plan: HedgePlan,
        attempt: u64,
        previous_exit: Option<i32>,
        signals: &mut SignalEvents,
        reporter: &mut Reporter,
    ) -> Result<Judged> {
        reporter.attempt_start(attempt, self.setup.config.attempts, &self.setup.command_text);
        self.files.stdin.read_whole()?;
        while self.files.hedge_hints.len() < plan.hedges as usize {
            self.files.hedge_hints.push(HintFile::for_run()?);
        }
        let abandon = AtomicBool::new(false);
        let give_up = || abandon.load(Ordering::SeqCst);
        let group_start = Instant::now();
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
                for index in 0..copies.len() {
                    let copy = &mut copies[index];
                    let Some(process) = copy.supervised.as_mut().and_then(Supervised::ended)
                    else {
                        continue;
                    };
                    let supervised = copy.supervised.take().expect("a running copy");
                    let superseded = supervised.was_superseded();
                    let ending = supervised.finish(process, &mut signals.events);
                    let outcome = self.finish_copy(&copies[index], ending, &abandon);
                    let taken = self.copy_hint(copies[index].number).take();
                    let judged = self.judge(outcome, taken, reporter);
                    copies[index].state = if superseded {
                        CopyState::Superseded
                    } else {
                        CopyState::Ended(judged.verdict.class)
                    };
                    copies[index].judged = Some(judged);
                }
                let states: Vec<CopyState> = copies.iter().map(|c| c.state).collect();
                let may_start = !no_more && self.setup.limits.deadline.is_none_or(|d| Instant::now() < d);
                let next = hedging::next(
                    &states,
                    group_start,
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
                        let copy = self.start_copy(scope, number, attempt, previous_exit, &give_up)?;
                        copies.push(copy);
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
                    Next::AllFailed => {
                        // The last copy to end gives the group's failure.
                        let last = copies
                            .iter()
                            .enumerate()
                            .filter(|(_, c)| c.judged.is_some())
                            .max_by_key(|(_, c)| c.judged.as_ref().map(|j| c.started + j.outcome.duration))
                            .map_or(0, |(i, _)| i);
                        return Ok(last);
                    }
                    Next::Wait(_) => {}
                }
                for copy in &mut copies {
                    if let Some(supervised) = &mut copy.supervised {
                        supervised.tick(Instant::now());
                    }
                }
                let hedge_wake = match next {
                    Next::Wait(at) => at,
                    _ => None,
                };
                let wake = copies
                    .iter()
                    .filter_map(|c| c.supervised.as_ref().and_then(Supervised::wake))
                    .chain(hedge_wake)
                    .min();
                if let Some(event) = signals.events.next(wake) {
                    if matches!(event, crate::process::signals::Event::Signal { .. }) {
                        no_more = true;
                    }
                    for copy in &mut copies {
                        if let Some(supervised) = &mut copy.supervised {
                            supervised.on_event(event);
                        }
                    }
                }
            }
        })?;
        crate::process::watchdog::release();
        crate::process::reap_orphans();
        self.settle_copies(copies, decided, attempt, reporter)
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

    /// What starting copy `number` of attempt `attempt` takes.
    fn copy_start<'env>(
        &self,
        config: &'env crate::cli::config::Config,
        number: u64,
        (attempt, previous_exit): (u64, Option<i32>),
        cancels: &'env (CancelPipe, CancelPipe),
        give_up: &'env (dyn Fn() -> bool + Sync),
    ) -> Result<CopyStart<'env>> {
        let hint = match number {
            0 => &self.files.hint,
            n => &self.files.hedge_hints[n as usize - 1],
        };
        let mut env = child_env(&self.setup, attempt, previous_exit, hint);
        env.push(("RETRY_HEDGE", number.to_string().into()));
        Ok(CopyStart {
            number,
            launch: Launch {
                argv: &config.command,
                env,
                own_group: true,
                stdin: ChildIo::Inherit,
                stdout: ChildIo::Inherit,
                stderr: ChildIo::Inherit,
            },
            deadline: self.setup.attempt_deadline(),
            kill_after: config.kill_after,
            patterns: config.rules.patterns.as_ref(),
            scan_stdout: config.scan_stdout,
            stdin: self.files.stdin.for_copy()?,
            cancels,
            give_up,
        })
    }

    /// A copy's process ended: its pumps' reports, its outcome.
    fn finish_copy(&self, copy: &Copy, ending: Ending, abandon: &AtomicBool) -> Outcome {
        let ending_now = || crate::process::signals::terminating_arrived() || ending.timed_out;
        let reports = wiring::collect_reports(&copy.reports, copy.pumps, &copy.cancel, abandon, &ending_now);
        Outcome::of(ending, reports, copy.started)
    }

    /// The group is decided by copy `decided`: its stdout is delivered, the
    /// hedges' stderr said (marked), the other copies reported; the decided
    /// copy goes back to the schedule as the attempt.
    fn settle_copies(
        &mut self,
        copies: Vec<Copy>,
        decided: usize,
        attempt: u64,
        reporter: &mut Reporter,
    ) -> Result<Judged> {
        let mut chosen = None;
        for (index, copy) in copies.into_iter().enumerate() {
            if let Some(mut stderr) = copy.stderr {
                say_marked(&mut stderr, copy.number)?;
            }
            let Some(judged) = copy.judged else { continue };
            if index == decided {
                self.deliver_copy_stdout(copy.stdout)?;
                chosen = Some(judged);
                continue;
            }
            let superseded = copy.state == CopyState::Superseded;
            reporter.attempt(
                &super::schedule::copy_record(attempt, self.setup.config.attempts, &judged, copy.number, superseded),
                None,
            );
        }
        chosen.context("no copy of the hedged attempt ended")
    }

    /// The chosen copy's stdout: into the held file (`-o`,
    /// `--buffer-stdout`), else to retry's stdout.
    fn deliver_copy_stdout(&mut self, mut stdout: File) -> Result<()> {
        stdout.rewind().context("reading a copy's stdout")?;
        if let Some(held) = &self.files.held {
            let mut file = held.file().try_clone()?;
            std::io::copy(&mut stdout, &mut file).context("holding the chosen copy's stdout")?;
            return Ok(());
        }
        let mut out = std::io::stdout().lock();
        match std::io::copy(&mut stdout, &mut out).and_then(|_| out.flush()) {
            Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
                Err(err).context("writing the chosen copy's stdout")
            }
            _ => Ok(()),
        }
    }
}

/// A hedge's held stderr on retry's stderr, each line marked `[hedge N]`.
fn say_marked(stderr: &mut File, number: u64) -> Result<()> {
    stderr.rewind()?;
    let mut err = std::io::stderr().lock();
    let reader = std::io::BufReader::new(stderr);
    for line in reader.split(b'\n') {
        let mut line = line?;
        line.push(b'\n');
        let mut marked = format!("[hedge {number}] ").into_bytes();
        marked.extend_from_slice(&line);
        if err.write_all(&marked).is_err() {
            break;
        }
    }
    Ok(())
}

/// A new spool for a copy's output, in the temporary directory.
fn spool() -> Result<File> {
    let dir = safe_fs::temp_dir();
    tempfile::tempfile_in(&dir)
        .with_context(|| format!("creating a spool for a copy in {}", safe_fs::shown_temp_dir(&dir)))
}

/// Start one copy: its spools, pipes, pump threads (in `scope`), feeder
/// and process.
fn start_copy<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    start: CopyStart<'env>,
) -> Result<Copy> {
    let CopyStart {
        number,
        mut launch,
        deadline,
        kill_after,
        patterns,
        scan_stdout,
        stdin,
        cancels,
        give_up,
    } = start;
    let stdout = spool()?;
    let stderr = (number > 0).then(spool).transpose()?;
    let output = OutputPlan {
        patterns,
        scan_stdout,
        same_file: false,
        stdout_spool: Some(&stdout),
        stderr_spool: stderr.as_ref(),
    };
    let jobs = wiring::plumb(&mut launch, &output, give_up)?;
    launch.stdin = stdin.io;
    let (sender, reports) = mpsc::channel();
    let (pumps, no_thread) = wiring::start_pumps(scope, jobs, patterns, cancels.0.watch(), &sender);
    if let Some(err) = no_thread {
        return Err(err).context("cannot start a thread for a copy of the attempt");
    }
    if let Some(feed) = stdin.feed {
        let watch = cancels.1.watch();
        std::thread::Builder::new()
            .spawn_scoped(scope, move || feed.run(watch))
            .context("cannot start a thread for a copy's stdin")?;
    }
    let started = Instant::now();
    let spawned = crate::process::spawn(&launch);
    // Close our copies of the child's ends, or the pumps never see EOF.
    drop(launch);
    let (supervised, not_started) = match spawned {
        Ok(running) => (Some(Supervised::new(running, deadline, kill_after)), None),
        Err(process) => (None, Some(Ending::not_started(process))),
    };
    Ok(Copy {
        number,
        started,
        supervised,
        not_started,
        stdout,
        stderr,
        reports,
        pumps,
        state: CopyState::Running,
        judged: None,
    })
}
