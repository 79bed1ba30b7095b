//! Hooks: a user's shell command (`/bin/sh -c CMD`; on Windows
//! `cmd.exe /d /c CMD`) run by retry itself,
//! between attempts (`--on-retry`) or once when the run fails
//! (`--on-give-up`).
//!
//! A hook is a process like an attempt and is treated like one: it gets the
//! same process model (its own group outside a terminal's foreground), the
//! same supervision (its deadline, SIGTERM then SIGKILL after
//! `--kill-after`, a signal to retry passed on and noted) and the same
//! clean-up of what it left in its group. What differs is its wiring: it
//! reads nothing (stdin is `/dev/null`, so the run's input stays the
//! command's), and its stdout and stderr both go to retry's stderr, so its
//! words never mix into the command's output. This module only runs it;
//! what its ending means is the runner's and `decision`'s business.

use std::ffi::{OsStr, OsString};
use std::time::{Duration, Instant};

use crate::outcome::Ending;
use crate::process::signals::Events;
use crate::process::{self, ChildIo, Launch};
use crate::sys::fd::own_fd;

/// One hook to run.
pub(crate) struct Hook<'a> {
    /// The shell command, as given.
    pub(crate) command: &'a OsStr,
    /// Variables added to retry's own environment.
    pub(crate) env: Vec<(&'static str, OsString)>,
    /// Lead its own process group (as the attempts do).
    pub(crate) own_group: bool,
    /// When it is terminated; `None`: no limit.
    pub(crate) deadline: Option<Instant>,
    pub(crate) kill_after: Duration,
}

/// How a hook ended, and how long it took.
pub(crate) struct HookRun {
    pub(crate) ending: Ending,
    pub(crate) duration: Duration,
}

/// Retry's stderr for the hook's output; `/dev/null` when it cannot be had.
fn to_our_stderr() -> ChildIo {
    own_fd(2)
        .try_clone_to_owned()
        .map_or(ChildIo::Null, ChildIo::Fd)
}

/// Run `hook` to its end, waiting on `events` as an attempt does: a signal
/// to retry is passed on to it and ends it (noted in the ending's
/// `interrupted`).
pub(crate) fn run(hook: Hook<'_>, events: &mut Events) -> HookRun {
    let started = Instant::now();
    let argv = process::shell(hook.command);
    let launch = Launch {
        argv: &argv,
        env: hook.env,
        own_group: hook.own_group,
        stdin: ChildIo::Null,
        stdout: to_our_stderr(),
        stderr: to_our_stderr(),
    };
    let ending = match process::spawn(&launch) {
        Ok(running) => {
            // Our copies of its descriptors go before we wait.
            drop(launch);
            running.supervise(events, hook.deadline, hook.kill_after)
        }
        Err(process) => Ending::not_started(process),
    };
    HookRun {
        ending,
        duration: started.elapsed(),
    }
}
