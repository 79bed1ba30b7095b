//! One copy of a hedged attempt: what starting it takes, its spools,
//! pipes and pumps, and what is left of it once its process ended.

use std::fs::File;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::outcome::Ending;
use crate::policy::hedging::{CopyState, Seen};
use crate::process::{ChildIo, Cleanup, Launch, Supervised};
use crate::run::Run;
use crate::run::copy_stdin::CopyStdin;
use crate::run::one_attempt::{Judged, child_env};
use crate::run::pump::PumpReport;
use crate::run::wiring::{self, Outcome, OutputPlan, Stream};
use crate::safe_fs;
use crate::scan::PatternSet;
use crate::sys::fd::CancelPipe;

/// One copy while the group runs.
pub(super) struct Copy {
    pub(super) number: u64,
    pub(super) started: Instant,
    /// Until it has ended and been cleaned up.
    pub(super) supervised: Option<Supervised>,
    /// A copy that could not start: its ending, judged at the next look.
    pub(super) not_started: Option<Ending>,
    pub(super) stdout: File,
    /// A hedge's stderr, said afterwards (copy 0's passes through).
    pub(super) stderr: Option<File>,
    pub(super) reports: mpsc::Receiver<(Stream, PumpReport)>,
    pub(super) pumps: usize,
    /// Its pumps' and its feeder's cancels (the group's, by its number).
    pub(super) cancels: usize,
    pub(super) state: CopyState,
    pub(super) judged: Option<Judged>,
    /// When it was judged.
    pub(super) ended: Option<Instant>,
    /// What its process left in its group, being ended.
    pub(super) cleanup: Option<Cleanup>,
    /// Its stdout did not all reach its spool: what went wrong.
    pub(super) lost_stdout: Option<String>,
}

impl Copy {
    /// As the decision sees it.
    pub(super) fn seen(&self) -> Seen {
        Seen {
            state: self.state,
            started: self.started,
            ended: self.ended,
        }
    }

    /// Whether anything of it is left to look after: its process, or what
    /// it left in its group.
    pub(super) fn live(&self) -> bool {
        self.supervised.is_some() || self.cleanup.is_some() || self.not_started.is_some()
    }

    /// Tell the watchdog again what of it to end should retry die now.
    pub(super) fn guard_again(&mut self) {
        if let Some(supervised) = &mut self.supervised {
            supervised.guard_again();
        }
        if let Some(cleanup) = &mut self.cleanup {
            cleanup.guard_again();
        }
    }
}

/// What starting one copy needs (all of it outlives the copies' threads).
pub(super) struct CopyStart<'env> {
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
    /// What starting copy `number` of attempt `attempt` takes.
    pub(super) fn copy_start<'env>(
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
    pub(super) fn finish_copy(
        copy: &Copy,
        ending: Ending,
        abandon: &AtomicBool,
        cancels: &[(CancelPipe, CancelPipe)],
    ) -> Outcome {
        let ending_now = || crate::process::signals::terminating_arrived() || ending.timed_out;
        let reports = wiring::collect_reports(
            &copy.reports,
            copy.pumps,
            &cancels[copy.cancels].0,
            abandon,
            &ending_now,
        );
        cancels[copy.cancels].1.cancel();
        Outcome::of(ending, reports, copy.started)
    }
}

/// A new spool for a copy's output, in the temporary directory.
fn spool() -> Result<File> {
    let dir = safe_fs::temp_dir();
    tempfile::tempfile_in(&dir).with_context(|| {
        format!(
            "creating a spool for a copy in {}",
            safe_fs::shown_temp_dir(&dir)
        )
    })
}

/// Start one copy: its spools, pipes, pump threads (in `scope`), feeder
/// and process.
pub(super) fn start_copy<'scope, 'env>(
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
        cancels: number as usize,
        state: CopyState::Running,
        judged: None,
        ended: None,
        cleanup: None,
        lost_stdout: None,
    })
}
