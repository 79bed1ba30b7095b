//! One child process on Windows: starting it, watching it, ending it.
//!
//! Process model. Each attempt runs in a Job Object of its own
//! (`sys::spawn`): everything it starts is in the job, and ending the job
//! ends them all. The job is made with kill-on-close, so retry's death,
//! however it comes, ends the attempt too (the Unix watchdog's work). The
//! attempt leads a console process group of its own
//! (`CREATE_NEW_PROCESS_GROUP`): a console's Ctrl-C reaches retry and not
//! the attempt, and retry can give the attempt alone a Ctrl-Break.
//!
//! Ending an attempt (a time limit, a Ctrl-C or Ctrl-Break to retry): a
//! Ctrl-Break to its group first, where that can be sent (a console shared
//! with retry) and `--kill-after` gives it time, then the whole job is
//! terminated. The exit status of a time limit is 124 either way (no
//! SIGKILL to tell apart). A failed attempt's leftovers are ended with the
//! job before the next attempt; a successful one's run on (the job lets
//! them go), as on Unix.

mod ending;
#[path = "../launch.rs"]
mod launch;
pub(crate) mod signals;
mod supervised;

use std::time::{Duration, Instant};

use crate::outcome::ProcessEnd;
use crate::sys::spawn::{Request, Started};
pub(crate) use launch::{ChildIo, Launch, shell};
pub(crate) use supervised::{Cleanup, Supervised, wait_for};

/// The exit code the processes of a job ended by a time limit get.
pub(super) const TIMED_OUT_CODE: u32 = 124;
/// The exit code the processes of a job ended for another reason get (a
/// signal to retry, a failed attempt's leftovers), as `taskkill /f` gives.
pub(super) const ENDED_CODE: u32 = 1;

/// Windows has no watchdog process: the Job Object's kill-on-close ends an
/// attempt when retry dies.
pub(crate) mod watchdog {
    /// Nothing to start.
    #[allow(clippy::unnecessary_wraps, reason = "Unix's can fail")]
    pub(crate) fn start() -> std::io::Result<()> {
        Ok(())
    }

    /// Nothing to release.
    pub(crate) fn release() {}
}

/// A started attempt: its process and its job.
pub(crate) struct Running {
    pub(super) started: Started,
    own_group: bool,
}

/// The child's standard stream for `io`.
fn stdio(io: &ChildIo) -> std::io::Result<std::process::Stdio> {
    Ok(match io {
        ChildIo::Inherit => std::process::Stdio::inherit(),
        ChildIo::Null => std::process::Stdio::null(),
        ChildIo::Fd(handle) => std::process::Stdio::from(handle.try_clone()?),
    })
}

/// Start the command in a job of its own (see `sys::spawn` for how it is
/// found).
pub(crate) fn spawn(launch: &Launch<'_>) -> Result<Running, ProcessEnd> {
    let program = launch.argv[0].as_os_str();
    let started = [&launch.stdin, &launch.stdout, &launch.stderr]
        .map(stdio)
        .into_iter()
        .collect::<std::io::Result<Vec<_>>>()
        .and_then(|streams| {
            let [stdin, stdout, stderr]: [std::process::Stdio; 3] =
                streams.try_into().map_err(|_| std::io::ErrorKind::Other)?;
            crate::sys::spawn::start(Request {
                program,
                args: &launch.argv[1..],
                env: &launch.env,
                stdio: [stdin, stdout, stderr],
                own_group: launch.own_group,
            })
        });
    match started {
        Ok(started) => Ok(Running {
            started,
            own_group: launch.own_group,
        }),
        Err(err) => Err(ending::not_started(program, &err)),
    }
}

impl Running {
    /// How the child ended, if it has.
    pub(super) fn peek_ending(&mut self) -> Option<ProcessEnd> {
        match self.started.child.try_wait() {
            // The 32-bit exit code as it is (an NTSTATUS such as 0xC000013A
            // reads as a negative number).
            Ok(Some(status)) => Some(ProcessEnd::Exited(status.code().unwrap_or(255))),
            Ok(None) => None,
            Err(_) => Some(ProcessEnd::Exited(255)),
        }
    }

    /// Ask the attempt to end: a Ctrl-Break to its group when there is time
    /// for it (`grace`) and it can be sent, then the end of that grace; else
    /// its job is ended now (`None`).
    pub(super) fn ask_to_end(&mut self, grace: Duration, code: u32) -> Option<Instant> {
        if !grace.is_zero()
            && self.own_group
            && crate::sys::process::ctrl_break(self.started.child.id())
        {
            return Some(Instant::now() + grace);
        }
        self.end_job(code);
        None
    }

    /// End the attempt's job; should the system refuse, its process at
    /// least (what it started then runs on until retry's end closes the
    /// job).
    pub(super) fn end_job(&mut self, code: u32) {
        if !self.started.job.terminate(code) {
            let _ = self.started.child.kill();
        }
    }
}

/// Orphans need no adopting on Windows: the job holds them.
pub(crate) fn adopt_orphans() -> Option<String> {
    None
}

/// The job names an attempt's processes: they can always be found.
pub(crate) fn can_find_processes() -> bool {
    true
}

/// Nothing to reap on Windows.
pub(crate) fn reap_orphans() {}
