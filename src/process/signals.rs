//! Signal hygiene at startup, and delivery of signals into the main loop.
//!
//! Signal handlers only mark the signal (and whether the kernel sent it) and
//! write to a self-pipe (`sys::signal_pipe`); the main thread waits on that
//! pipe with `poll` and a timeout, so one wait wakes for whichever comes
//! first: a signal, a child changing state (SIGCHLD is in the set) or a
//! deadline. No thread, no channel, and nothing polls a flag.
//!
//! Why not ctrlc (the design card's crate): ctrlc cannot tell SIGINT from
//! SIGTERM or SIGHUP, so retry could neither forward the signal it got nor
//! die of it; and it installs its handler over `SIG_IGN`, which breaks
//! `nohup retry ...`. We simply do not catch signals the caller ignored.

use std::time::Instant;

use crate::sys::signal;
use crate::sys::signal_pipe::{SENDER_KNOWN, SignalPipe};
use crate::sys::wait::{Watch, wait};
use anyhow::{Context, Result};
use rustix::event::PollFlags;

/// Whether a terminating signal has reached retry since [`install`] (the
/// handlers raise a flag besides writing to the pipe). The signal itself is
/// still handed out by [`Events`]: this only tells the few waits that cannot
/// watch the pipe (a state store's lock or socket, which look between short
/// slices of their wait) to give up.
pub(crate) fn terminating_arrived() -> bool {
    crate::sys::signal_pipe::ending_arrived()
}

/// The signals a terminal sends to its whole foreground process group
/// (keys, hang-up): when the kernel sent one of these, a child in our
/// group got it too. Any other signal the kernel sends (SIGXCPU for our own
/// CPU limit, say) reached retry alone.
const FROM_A_TERMINAL: [i32; 4] = [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP, libc::SIGTSTP];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// Retry received a terminating signal. `from_terminal` is true when a
    /// terminal sent it (a key), which also delivered it to every process
    /// of the foreground group.
    Signal { signal: i32, from_terminal: bool },
    /// SIGTSTP (Ctrl-Z, or sent): the job is to stop, the attempt with
    /// retry (`jobs`).
    Stop { from_terminal: bool },
    /// SIGCONT: retry was stopped and goes on (`fg`, `bg`). Every wait
    /// counts its time from the clock again (a restarted `poll` would count
    /// the time stopped as not spent).
    Continued,
    /// A child changed state (SIGCHLD): time to look at it.
    ChildChanged,
}

impl Event {
    /// The terminating signal it is, if it is one.
    pub(crate) fn terminating(self) -> Option<i32> {
        match self {
            Event::Signal { signal, .. } => Some(signal),
            _ => None,
        }
    }
}

/// The source of [`Event`]s: the self-pipe the signal handlers write to.
pub(crate) struct Events {
    pipe: SignalPipe,
    /// Signals taken from the pipe but not yet handed out.
    queued: std::collections::VecDeque<Event>,
}

pub(crate) struct SignalEvents {
    pub(crate) events: Events,
}

/// Retry's first step, before anything of it writes a file: a write past
/// the file size limit (`ulimit -f`, systemd's `LimitFSIZE=`) fails with
/// EFBIG and takes its kind's error path (the replay spool, a log, the
/// metrics file, a state store) instead of killing retry (SIGXFSZ's
/// default). The child gets the caller's disposition back (`sys::spawn`).
pub(crate) fn survive_file_size_limit() {
    signal::ignore(libc::SIGXFSZ);
}

/// Prepare the process's signals, in the order the rules ask for, and the
/// self-pipe their handlers write to. Call before any other thread exists:
/// threads inherit the signal mask.
pub(crate) fn install() -> Result<SignalEvents> {
    // An inherited SIGCHLD=SIG_IGN makes the kernel reap children itself,
    // and then `wait` fails with ECHILD.
    signal::set_default(libc::SIGCHLD);
    // A parent may hand us a blocked mask; blocked, these never arrive.
    signal::unblock(signal::terminating().chain([libc::SIGCHLD, libc::SIGTSTP, libc::SIGCONT]));

    // nohup and `trap '' INT`: what the caller ignores stays ignored, for us
    // and (see `sys::spawn`) for the child.
    let mut handled: Vec<i32> = signal::terminating()
        .filter(|&s| !signal::caller_ignored(s))
        .collect();
    let terminating = handled.len();
    handled.push(libc::SIGCHLD);
    // Job control: Ctrl-Z stops the attempt with us; a continue restarts
    // the clock of every wait. A SIGCONT continues us whatever its
    // disposition, so the caller's ignore has nothing to keep there.
    if !signal::caller_ignored(libc::SIGTSTP) {
        handled.push(libc::SIGTSTP);
    }
    handled.push(libc::SIGCONT);

    let pipe = SignalPipe::install(&handled, terminating).context("installing signal handlers")?;
    // Our own messages to a terminal, when we are in the background, must
    // not stop us. The child gets the caller's dispositions back (see
    // `sys::spawn`).
    signal::ignore(libc::SIGTTOU);
    signal::ignore(libc::SIGTTIN);
    survive_file_size_limit();
    Ok(SignalEvents {
        events: Events {
            pipe,
            queued: std::collections::VecDeque::default(),
        },
    })
}

impl Events {
    /// The next event, waiting until `until` at most (`None`: no limit).
    /// Returns `None` when the time is up first.
    pub(crate) fn next(&mut self, until: Option<Instant>) -> Option<Event> {
        loop {
            if let Some(event) = self.queued.pop_front() {
                return Some(event);
            }
            if until.is_some_and(|until| Instant::now() >= until) {
                // Still hand out what already arrived.
                self.collect();
                return self.queued.pop_front();
            }
            // In slices of at most a day (`sys::wait`): macOS's poll
            // refuses a timeout past 24.8 days.
            let mut watch = [Watch::new(self.pipe.readable(), PollFlags::IN)];
            match wait(&mut watch, until) {
                Ok(0) => return None,
                Ok(_) => self.collect(),
                Err(rustix::io::Errno::INTR) => {}
                Err(_) => return None,
            }
        }
    }

    /// Move what the handlers recorded into the queue.
    fn collect(&mut self) {
        for arrival in self.pipe.take() {
            // Where the sender cannot be told (macOS), a terminal's signal
            // is presumed when retry's group is the terminal's foreground:
            // the key reached the command too, and it must not get the
            // signal twice (a `kill -INT` of retry alone then ends the
            // attempt by SIGKILL at --kill-after: docs/platforms.md).
            let from_kernel = if SENDER_KNOWN {
                arrival.from_kernel
            } else {
                super::jobs::in_the_terminals_foreground()
            };
            let from_terminal = from_kernel && FROM_A_TERMINAL.contains(&arrival.signal);
            let event = match arrival.signal {
                libc::SIGCHLD => Event::ChildChanged,
                libc::SIGCONT => Event::Continued,
                libc::SIGTSTP => Event::Stop { from_terminal },
                signal => Event::Signal {
                    signal,
                    from_terminal,
                },
            };
            self.queued.push_back(event);
        }
    }
}

/// A terminating signal that has already arrived, if any; never waits.
pub(crate) fn pending_signal(events: &mut Events) -> Option<i32> {
    sleep_until(events, Instant::now(), || {})
}

/// Sleep until `until`, unless a terminating signal comes first: then return
/// it. A child changing state meanwhile (an orphan adopted from an earlier
/// attempt, say) calls `on_child`; Ctrl-Z stops retry here and now (no
/// attempt runs).
pub(crate) fn sleep_until(
    events: &mut Events,
    until: Instant,
    mut on_child: impl FnMut(),
) -> Option<i32> {
    loop {
        match events.next(Some(until)) {
            Some(Event::Signal { signal, .. }) => return Some(signal),
            Some(Event::ChildChanged) => on_child(),
            Some(Event::Stop { .. }) => signal::stop_as(libc::SIGTSTP),
            Some(Event::Continued) => {}
            None => return None,
        }
    }
}
