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
mod tree;
pub(crate) mod watchdog;

use crate::outcome::{Ending, ProcessEnd};
use crate::sys::process::Exit;
use ending::not_started;
pub(crate) use launch::{ChildIo, Launch, shell};

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitOptions};

use crate::process::signals::{Event, Events};

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

    /// Wait for the attempt to end, woken by its exit, its deadline or a
    /// signal to retry (all through the one event source), whichever comes first.
    /// `deadline` is the attempt's effective limit; `kill_after` the grace
    /// between SIGTERM and SIGKILL. Then clean up its group and reap it.
    pub(crate) fn supervise(
        mut self,
        events: &mut Events,
        deadline: Option<Instant>,
        kill_after: Duration,
    ) -> Ending {
        let mut timed_out = false;
        let mut killed = false;
        let mut interrupted = None;
        let mut kill_at: Option<Instant> = None;
        let process = loop {
            // Adopted orphans are reaped as they end, also while the
            // attempt runs; the attempt itself is only looked at.
            let ours = self.keeper.as_ref().map_or(self.pid, kept::Keeper::pid);
            crate::sys::process::reap_ended_except(ours);
            if let Some(process) = self.peek_ending() {
                break process;
            }
            let now = Instant::now();
            if !timed_out && interrupted.is_none() && deadline.is_some_and(|d| now >= d) {
                timed_out = true;
                self.send(libc::SIGTERM);
                kill_at = Some(now + kill_after);
                continue;
            }
            if kill_at.is_some_and(|at| now >= at) {
                killed = true;
                kill_at = None;
                self.send(libc::SIGKILL);
                continue;
            }
            let wake = [
                deadline.filter(|_| !timed_out && interrupted.is_none()),
                kill_at,
            ]
            .into_iter()
            .flatten()
            .min();
            match events.next(wake) {
                Some(Event::Signal {
                    signal,
                    from_terminal,
                }) => {
                    // The terminal delivers its signals to the child too when
                    // it shares our group; everything else we pass on.
                    if self.own_group || !from_terminal {
                        self.send(signal);
                    }
                    if interrupted.is_none() {
                        interrupted = Some(signal);
                        kill_at = kill_at.or(Some(Instant::now() + kill_after));
                    }
                }
                Some(Event::Stop { from_terminal }) => self.stop_with_us(from_terminal),
                // Continued (`fg`, `bg`): an attempt stopped for the terminal
                // meanwhile may get it now.
                Some(Event::ChildChanged | Event::Continued) => self.look_for_a_stop(),
                None => {}
            }
        };
        self.take_terminal_back();

        let succeeded = process == ProcessEnd::Exited(0) && !timed_out;
        let clean = !succeeded;
        if clean && self.own_group {
            // The leader is still an unreaped zombie, so its group id cannot
            // have been reused: signal the group before reaping.
            let _ = rustix::process::kill_process_group(self.pid, Signal::TERM);
            let _ = rustix::process::kill_process_group(self.pid, Signal::CONT);
        }
        if clean && !self.own_group && self.keeper.is_none() {
            // Its start time, which finds what it started, can be read only
            // while it is unreaped.
            self.start = self.start.or_else(|| tree::start_of(self.pid));
        }
        // A keeper is kept until what is below it has been ended: let go,
        // it would leave that to us, mixed with what is not the attempt's.
        if !(clean && self.keeper.is_some()) {
            self.reap();
        }
        if clean {
            interrupted = interrupted.or(self.end_leftovers(events, kill_after));
        }
        self.reap();
        // Ended (or a success's, left to run): nothing for the watchdog.
        watchdog::release();
        reap_orphans();
        Ending {
            process,
            timed_out,
            killed,
            interrupted,
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
