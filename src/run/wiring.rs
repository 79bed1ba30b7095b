//! One attempt, wired up: the child's standard descriptors, the threads that
//! pump scanned output and feed replayed input (only when there is output to
//! scan or input to replay), and the end of it all.
//!
//! Output that is not scanned is not piped at all: the child inherits the
//! descriptor (a terminal stays a terminal, interleaving stays exact). When
//! output is scanned and stdout and stderr lead to the same file or pipe
//! (`>log 2>&1`, `2>&1 | tee`), the child gets one pipe for both, which
//! keeps their relative order; not when they lead to a terminal, where a
//! stream that is not scanned stays the terminal. A held stdout
//! (`--buffer-stdout`, `-o`) always comes through a pipe of the attempt's.
//!
//! The attempt ends when the child exits, not when its pipes reach end of
//! file: a background grandchild may hold them open. After the exit (and the
//! group clean-up) the pumps get a short time to drain, then are cancelled.

use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::outcome::{Ending, ProcessEnd};
use crate::process::signals::Events;
use crate::process::{ChildIo, Launch};
use crate::run::pump::{Destination, PumpReport, pump};
use crate::run::stdin::AttemptStdin;
use crate::scan::{PatternSet, ScanResult};
use crate::sys::fd::{AsFd, CancelPipe, Outlet, OwnedFd, pipe};

/// How long pumps may keep draining after the attempt's process is gone.
const DRAIN: Duration = Duration::from_millis(200);

/// How the attempt's output is wired.
pub(crate) struct OutputPlan<'a> {
    /// The patterns to scan for; `None` when nothing is scanned.
    pub(crate) patterns: Option<&'a PatternSet>,
    pub(crate) scan_stdout: bool,
    /// stdout and stderr are the same open file: one pipe for both.
    pub(crate) same_file: bool,
    /// `--buffer-stdout` or `-o`: stdout goes here instead.
    pub(crate) stdout_spool: Option<&'a File>,
    /// A hedge's stderr, held apart to be said afterwards, marked.
    pub(crate) stderr_spool: Option<&'a File>,
}

/// Which of the child's streams a pump carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
    /// Both, through one pipe (they lead to the same file).
    Both,
}

/// Output of the child's that retry could not pass on (a full disk,
/// `/dev/full`): the stream, and the error writing it.
#[derive(Debug)]
pub(crate) struct LostOutput {
    pub(crate) stream: Stream,
    pub(crate) error: std::io::Error,
}

pub(crate) struct Outcome {
    pub(crate) ending: Ending,
    pub(crate) scan: ScanResult,
    /// A reader of our stdout or stderr went away while we passed output on.
    pub(crate) downstream_closed: bool,
    /// Our stderr now stands in the middle of a line of the child's.
    pub(crate) stderr_mid_line: bool,
    pub(crate) duration: Duration,
    /// Trouble feeding stdin, worth a warning.
    pub(crate) stdin_error: Option<String>,
    /// Output that could not be written on (the child saw no error).
    pub(crate) lost: Vec<LostOutput>,
}

/// A pipe for the child's output: larger than the default 64 KiB where the
/// system allows, so a fast writer needs fewer round trips through us.
fn output_pipe() -> Result<(OwnedFd, OwnedFd)> {
    let (source, sink) = pipe()?;
    crate::sys::fs::set_pipe_size(sink.as_fd(), crate::scan::CHUNK);
    Ok((source, sink))
}

pub(crate) struct PumpJob<'a> {
    source: OwnedFd,
    destination: Destination<'a>,
    stream: Stream,
    /// Fed to the scanner (a held stdout that is not scanned is only
    /// copied).
    scanned: bool,
}

pub(crate) struct AttemptSpec<'a> {
    pub(crate) launch: Launch<'a>,
    pub(crate) deadline: Option<Instant>,
    pub(crate) kill_after: Duration,
}

/// Pipes for the attempt's output as `output` asks, set in `launch`, and
/// the pump jobs that read them (none when nothing is scanned or held).
pub(crate) fn plumb<'g>(
    launch: &mut Launch<'_>,
    output: &OutputPlan<'_>,
    give_up: &'g (dyn Fn() -> bool + Sync),
) -> Result<Vec<PumpJob<'g>>> {
    let mut jobs = Vec::new();
    let scanning = output.patterns.is_some();
    let scan_stdout = scanning && output.scan_stdout;
    // Output scanned and both streams bound for the same file: one pipe for
    // both (and both scanned), so the file gets them in their exact order.
    let one_pipe = scanning
        && output.same_file
        && output.stdout_spool.is_none()
        && output.stderr_spool.is_none();
    if scanning || output.stderr_spool.is_some() {
        let (source, sink) = output_pipe()?;
        let destination = match output.stderr_spool {
            Some(spool) => Destination::File(spool.try_clone()?),
            None => Destination::Outlet {
                outlet: Outlet::new(2),
                give_up,
            },
        };
        jobs.push(PumpJob {
            source,
            destination,
            stream: if one_pipe {
                Stream::Both
            } else {
                Stream::Stderr
            },
            scanned: scanning,
        });
        if one_pipe {
            launch.stdout = ChildIo::Fd(sink.try_clone()?);
        }
        launch.stderr = ChildIo::Fd(sink);
    }
    if (scan_stdout && !one_pipe) || output.stdout_spool.is_some() {
        // A held stdout is never handed to the child, scanned or not: it
        // gets a pipe of this attempt's, and only we write the spool. What
        // the attempt leaves running writes into that pipe, which is closed
        // when the attempt is over; it never reaches the spool of a later
        // attempt, nor a file that outlives the run.
        let (source, sink) = output_pipe()?;
        let destination = match output.stdout_spool {
            Some(spool) => Destination::File(spool.try_clone()?),
            None => Destination::Outlet {
                outlet: Outlet::new(1),
                give_up,
            },
        };
        jobs.push(PumpJob {
            source,
            destination,
            stream: Stream::Stdout,
            scanned: scan_stdout,
        });
        launch.stdout = ChildIo::Fd(sink);
    }
    Ok(jobs)
}

pub(crate) fn run(
    mut spec: AttemptSpec<'_>,
    output: &OutputPlan<'_>,
    stdin: AttemptStdin<'_>,
    events: &mut Events,
) -> Result<Outcome> {
    let started = Instant::now();
    // Set once the attempt is over and the run is ending (a signal, a time
    // limit): a pump then stops waiting for a reader that takes nothing.
    let abandon = AtomicBool::new(false);
    let give_up = || abandon.load(Ordering::SeqCst);
    let jobs = plumb(&mut spec.launch, output, &give_up)?;
    let AttemptStdin {
        io: stdin_io,
        feeder,
    } = stdin;
    spec.launch.stdin = stdin_io;

    // All plumbing exists before the child does: nothing of ours changes
    // while it runs, and a failure here leaves no child behind.
    let cancels = if jobs.is_empty() && feeder.is_none() {
        None
    } else {
        Some((CancelPipe::new()?, CancelPipe::new()?))
    };

    let Some((pump_cancel, feed_cancel)) = cancels else {
        // Nothing to pump or feed: no threads, no pipes.
        let running = match crate::process::spawn(&spec.launch) {
            Ok(running) => running,
            Err(process) => return Ok(Outcome::unpumped(Ending::not_started(process), started)),
        };
        drop(spec.launch);
        let ending = running.supervise(events, spec.deadline, spec.kill_after);
        return Ok(Outcome::unpumped(ending, started));
    };
    let patterns = output.patterns;
    let (pump_watch, feed_watch) = (pump_cancel.watch(), feed_cancel.watch());
    let (ending, reports, stdin_error) = std::thread::scope(|scope| {
        // The threads start before the child: one that cannot (no process
        // left under RLIMIT_NPROC) is retry's own failure, with no child
        // left writing into a pipe nobody reads.
        let (sender, reports) = mpsc::channel::<(Stream, PumpReport)>();
        let (job_count, mut no_thread) = start_pumps(scope, jobs, patterns, pump_watch, &sender);
        let feeder = feeder.and_then(|feeder| {
            std::thread::Builder::new()
                .spawn_scoped(scope, move || feeder.run(feed_watch))
                .map_err(|err| {
                    no_thread.get_or_insert(err);
                })
                .ok()
        });
        let spawned = match no_thread {
            None => Ok(crate::process::spawn(&spec.launch)),
            Some(err) => Err(err),
        };
        // Close our copies of the child's ends, or the pumps never see EOF.
        drop(spec.launch);
        let ending = match spawned {
            Ok(Ok(running)) => Ok(running.supervise(events, spec.deadline, spec.kill_after)),
            Ok(Err(process)) => Ok(Ending::not_started(process)),
            Err(err) => Err(err),
        };
        let child_ran = matches!(&ending, Ok(ending) if !matches!(ending.process, ProcessEnd::NotStarted { .. }));

        // Stop feeding input at once; give output a moment to drain.
        feed_cancel.cancel();
        let stdin_error = feeder.and_then(|handle| match handle.join() {
            Ok(Ok(())) => None,
            // Input fed to no child is not lost: a replay keeps it all.
            Ok(Err(_)) if !child_ran => None,
            Ok(Err(err)) => Some(format!("{err:#}")),
            Err(_) => Some("the stdin feeder failed".to_string()),
        });
        let ending_now = || {
            crate::process::signals::terminating_arrived()
                || ending.as_ref().is_ok_and(|ending| ending.timed_out)
                || spec
                    .deadline
                    .is_some_and(|deadline| Instant::now() >= deadline)
        };
        let collected = collect_reports(&reports, job_count, &pump_cancel, &abandon, &ending_now);
        (ending, collected, stdin_error)
    });

    let ending =
        ending.map_err(|err| anyhow::anyhow!("cannot start a thread for the attempt: {err}"))?;
    let mut outcome = Outcome::of(ending, reports, started);
    outcome.stdin_error = stdin_error;
    Ok(outcome)
}

/// Start a thread for each pump job in `scope`, its report sent on
/// `sender`: how many started, and the error of one that could not.
pub(crate) fn start_pumps<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    jobs: Vec<PumpJob<'env>>,
    patterns: Option<&'env PatternSet>,
    watch: crate::sys::fd::BorrowedFd<'env>,
    sender: &mpsc::Sender<(Stream, PumpReport)>,
) -> (usize, Option<std::io::Error>) {
    let mut started = 0;
    let mut no_thread = None;
    for job in jobs {
        let sender = sender.clone();
        let pumping = std::thread::Builder::new().spawn_scoped(scope, move || {
            let patterns = patterns.filter(|_| job.scanned);
            let report = pump(job.source, job.destination, patterns, watch);
            let _ = sender.send((job.stream, report));
        });
        match pumping {
            Ok(_) => started += 1,
            Err(err) => {
                no_thread.get_or_insert(err);
            }
        }
    }
    (started, no_thread)
}

/// The pumps' reports (`jobs` of them), once the attempt's process is
/// gone: a short drain, then they are cancelled (something that outlived
/// the attempt holds the pipe); a write held by a reader downstream that
/// takes nothing is let go (`abandon`) once `ending_now` says the run is
/// ending, so that neither a signal nor a time limit waits for it.
pub(crate) fn collect_reports(
    reports: &mpsc::Receiver<(Stream, PumpReport)>,
    jobs: usize,
    cancel: &CancelPipe,
    abandon: &AtomicBool,
    ending_now: &dyn Fn() -> bool,
) -> Vec<(Stream, PumpReport)> {
    let mut collected = Vec::with_capacity(jobs);
    let drain_end = Instant::now() + DRAIN;
    while collected.len() < jobs {
        let wait = drain_end.saturating_duration_since(Instant::now());
        if let Ok(report) = reports.recv_timeout(wait) {
            collected.push(report);
        } else {
            cancel.cancel();
            if ending_now() {
                abandon.store(true, Ordering::SeqCst);
            }
            match reports.recv_timeout(crate::sys::fd::STALL_SLICE) {
                Ok(report) => collected.push(report),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
    }
    collected
}

impl Outcome {
    /// An attempt that ended as `ending`, with what its pumps reported.
    pub(crate) fn of(
        ending: Ending,
        reports: Vec<(Stream, PumpReport)>,
        started: Instant,
    ) -> Outcome {
        let mut outcome = Outcome::unpumped(ending, started);
        for (stream, report) in reports {
            outcome.scan.merge(&report.scan);
            outcome.downstream_closed |= report.downstream_closed;
            if stream != Stream::Stdout {
                outcome.stderr_mid_line = report.ends_mid_line;
            }
            if let Some(error) = report.write_error {
                outcome.lost.push(LostOutput { stream, error });
            }
        }
        outcome
    }

    /// An attempt whose output went nowhere through us.
    fn unpumped(ending: Ending, started: Instant) -> Outcome {
        Outcome {
            ending,
            scan: ScanResult::default(),
            downstream_closed: false,
            stderr_mid_line: false,
            duration: started.elapsed(),
            stdin_error: None,
            lost: Vec::new(),
        }
    }
}
