//! One child process: starting it, watching it, ending it.
//!
//! The main thread owns the child alone: it spawns it (so the parent-death
//! signal, which the kernel ties to the spawning thread, lasts the whole
//! run), sends every signal while the child is not yet reaped (so its pid
//! and group id cannot have been reused), and reaps it.
//!
//! Process model. Outside a terminal's foreground, each attempt leads its
//! own process group: termination reaches the whole tree it started, and
//! whatever the attempt left in its group is terminated before the next
//! attempt. In the foreground of a terminal the child stays in our group, as
//! with `timeout --foreground`: it can read the terminal, and the terminal's
//! Ctrl-C and Ctrl-Z reach it and us at once (so we do not forward a signal
//! the terminal already delivered to it). There, termination goes to each
//! process the attempt started (`tree`), as no group id names them.

mod ending;
mod jobs;
mod kept;
mod launch;
mod leftovers;
pub(crate) mod signals;
mod supervised;

pub(crate) use supervised::{Cleanup, Supervised, wait_for};
mod tree;
pub(crate) mod watchdog;

use crate::outcome::ProcessEnd;
use crate::sys::process::Exit;
use ending::not_started;
pub(crate) use launch::{ChildIo, Launch, shell};

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::process::{Pid, WaitOptions};

/// A started attempt: its pid, ours to signal until reaped.
pub(crate) struct Running {
    pid: Pid,
    own_group: bool,
    reaped: bool,
    /// In the shared-group mode, the child's start time (see `tree`).
    start: Option<u64>,
    /// In the shared-group mode, retry's children and its group's other
    /// processes when the child was spawned: not the attempt's.
    before: Vec<tree::Member>,
    /// In the shared-group mode, every process of the attempt found so far:
    /// one that is orphaned later (to init, where nothing adopts orphans)
    /// is still ended, SIGKILL at `--kill-after` included.
    found: Vec<tree::Member>,
    /// What job control did for it (`jobs`).
    job: jobs::Job,
    /// In the shared-group mode where there is one, the keeper the command
    /// runs under: then the attempt's processes are its descendants.
    keeper: Option<kept::Keeper>,
}

/// Start the command (see `spawn` for how): a script without `#!` runs
/// under `/bin/sh`, as with execvp (and so timeout, env, xargs).
pub(crate) fn spawn(launch: &Launch<'_>) -> Result<Running, ProcessEnd> {
    let program = launch.argv[0].as_os_str();
    let before = if launch.own_group {
        Vec::new()
    } else {
        tree::present(our_group())
    };
    let started = open_null(launch).and_then(|null| {
        let fd = |io| child_fd(io, null.as_ref());
        let request = crate::sys::spawn::Request {
            program,
            args: &launch.argv[1..],
            env: &launch.env,
            stdio: [fd(&launch.stdin), fd(&launch.stdout), fd(&launch.stderr)],
            own_group: launch.own_group,
        };
        // Sharing our group, the attempt runs under a keeper where there
        // is one: no other mark names its processes exactly.
        if !launch.own_group
            && let Some(kept) = crate::sys::spawn::start_kept(&request)
        {
            return kept.map(|kept| (kept.child, Some(kept::Keeper::new(kept))));
        }
        crate::sys::spawn::start(&request).map(|pid| (pid, None))
    });
    match started {
        Ok((pid, keeper)) => {
            let mut running = Running {
                pid,
                own_group: launch.own_group,
                reaped: false,
                start: None,
                before,
                found: Vec::new(),
                job: jobs::Job::default(),
                keeper,
            };
            running.guard();
            Ok(running)
        }
        Err(err) => Err(not_started(program, &err)),
    }
}

/// Retry's own process group (0: none in this PID namespace).
fn our_group() -> i32 {
    crate::sys::process::own_group()
}

/// The descriptor `io` puts in the child's place; `None` leaves retry's.
fn child_fd<'a>(io: &'a ChildIo, null: Option<&'a OwnedFd>) -> Option<BorrowedFd<'a>> {
    match io {
        ChildIo::Inherit => None,
        ChildIo::Null => null.map(AsFd::as_fd),
        ChildIo::Fd(fd) => Some(fd.as_fd()),
    }
}

/// `/dev/null`, when one of the child's descriptors is to be it.
fn open_null(launch: &Launch<'_>) -> std::io::Result<Option<OwnedFd>> {
    let wanted = [&launch.stdin, &launch.stdout, &launch.stderr]
        .into_iter()
        .any(|io| matches!(io, ChildIo::Null));
    if !wanted {
        return Ok(None);
    }
    let null = rustix::fs::open(
        "/dev/null",
        rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    Ok(Some(null))
}

impl Running {
    /// Tell the run's watchdog what to end should retry die now: the
    /// attempt's group, or in retry's group its command (the keeper, where
    /// there is one, does that itself).
    fn guard(&mut self) {
        if self.own_group {
            watchdog::guard_group(self.pid);
        } else if self.keeper.is_none() {
            self.start = tree::start_of(self.pid);
            if let Some(start) = self.start {
                watchdog::guard_shared(self.pid, start, our_group(), &self.before);
            }
        }
    }

    /// Send `signal` to the attempt: its pid and, in group mode, its whole
    /// group, else each process it started (`tree`); then SIGCONT, so a
    /// stopped child can act on it. Only called before the child is reaped.
    fn send(&mut self, signal: i32) {
        self.deliver(signal);
        if signal != libc::SIGKILL && signal != libc::SIGCONT {
            self.deliver(libc::SIGCONT);
        }
    }

    /// Send `signal` to the attempt as `send` does, without the SIGCONT.
    fn deliver(&mut self, signal: i32) {
        let Some(sig) = crate::sys::signal::to_send(signal) else {
            return;
        };
        if self.own_group {
            let _ = rustix::process::kill_process(self.pid, sig);
            let _ = rustix::process::kill_process_group(self.pid, sig);
            return;
        }
        // In retry's group, what the command started is looked for first:
        // a shell that dies of the signal at once would orphan it before a
        // later look (to init, where nothing adopts orphans).
        let members = self.shared_leftovers();
        // Under a keeper the command may be reaped already (by the keeper),
        // its pid free: it is signalled as one of the keeper's members.
        if self.keeper.is_none() {
            let _ = rustix::process::kill_process(self.pid, sig);
        }
        for member in members {
            tree::signal(member, sig);
        }
    }

    /// How the child ended, if it has. Looks without reaping, so its pid
    /// (and group id) stay ours to signal.
    fn peek_ending(&mut self) -> Option<ProcessEnd> {
        if let Some(keeper) = &mut self.keeper {
            return keeper.ending();
        }
        // Stopped or continued is no end (job control looks at those
        // apart, `jobs`).
        match crate::sys::process::peek_exit(self.pid) {
            Ok(Some(Exit::Code(code))) => Some(ProcessEnd::Exited(code)),
            Ok(Some(Exit::Signal(signal))) => Some(ProcessEnd::Signaled(signal)),
            Ok(None) => None,
            // ECHILD cannot happen for our own unreaped child; do not hang.
            Err(_) => Some(ProcessEnd::Exited(255)),
        }
    }
}

/// Become a child subreaper: what an attempt leaves behind when its parent
/// exits is reparented to us rather than to init, so we see it exit, and no
/// zombie of it lingers in the attempt's group (some init processes are slow
/// to reap). Call once at start.
pub(crate) fn adopt_orphans() -> Option<String> {
    crate::sys::process::adopt_orphans().map(|refused| {
        format!(
            "the system refused to let retry adopt what an attempt orphans ({}): such processes go to init, and are found only in retry's process group",
            std::io::Error::from(refused)
        )
    })
}

/// Whether the processes an attempt starts can be found apart from retry's
/// group (the shared-group mode needs the process table: `/proc` on Linux).
/// False in another PID namespace's `/proc`, or with none mounted.
pub(crate) fn can_find_processes() -> bool {
    crate::sys::process::table_readable()
}

/// Reap any adopted orphan that has exited (one that escaped its group with
/// `setsid`, say). Only called between attempts, when no attempt is unreaped.
pub(crate) fn reap_orphans() {
    while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
}

impl Running {
    /// Wait for the child's exit and collect it; once.
    fn reap(&mut self) {
        if let Some(keeper) = &mut self.keeper {
            keeper.reap();
            self.reaped = true;
        }
        while !self.reaped {
            match rustix::process::waitpid(Some(self.pid), WaitOptions::empty()) {
                Err(rustix::io::Errno::INTR) => {}
                _ => self.reaped = true,
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Reaping keeps no zombie behind whatever path dropped us.
        self.reap();
    }
}
