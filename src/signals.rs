//! Signal hygiene at startup, and delivery of signals into the main loop.
//!
//! Signals reach the runner as [`Event`]s on one channel, so a single
//! `recv_timeout` wakes for whichever comes first: a signal, a child changing
//! state (SIGCHLD) or a deadline. Nothing polls a flag.
//!
//! Why signal-hook and not ctrlc (the design card's crate): ctrlc cannot tell
//! SIGINT from SIGTERM or SIGHUP, so retry could neither forward the signal it
//! got nor die of it; and it installs its handler over SIG_IGN, which breaks
//! `nohup retry ...`. signal-hook reports the signal and its origin, and we
//! simply do not register signals the caller ignored.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Instant;

use anyhow::{Context, Result};
use signal_hook::iterator::SignalsInfo;
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::low_level::siginfo::Cause;

/// Signals that end the run: forwarded to the attempt, then re-raised.
pub const TERMINATING: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Retry received a terminating signal. `from_terminal` is true when the
    /// kernel sent it (a key at the terminal), which also delivered it to
    /// every process of the foreground group.
    Signal { signal: i32, from_terminal: bool },
    /// A child changed state (SIGCHLD): time to look at it.
    ChildChanged,
}

/// Dispositions the caller handed us that must survive into the child.
#[derive(Clone, Copy, Debug, Default)]
pub struct Inherited {
    pub ignores_ttin: bool,
    pub ignores_ttou: bool,
}

pub struct SignalEvents {
    pub events: Receiver<Event>,
    pub inherited: Inherited,
}

fn is_ignored(signal: i32) -> bool {
    // SAFETY: querying a disposition (null new action) changes nothing.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}

/// Prepare the process's signals, in the order the rules ask for, and start
/// the thread that turns signals into events. Call before any other thread
/// exists: threads inherit the signal mask.
pub fn install() -> Result<SignalEvents> {
    // SAFETY: process-wide signal settings, made before other threads exist.
    unsafe {
        // An inherited SIGCHLD=SIG_IGN makes the kernel reap children itself,
        // and then `wait` fails with ECHILD.
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        // A parent may hand us a blocked mask; blocked, these never arrive.
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in TERMINATING.into_iter().chain([
            libc::SIGCHLD,
            libc::SIGALRM,
            libc::SIGTSTP,
            libc::SIGCONT,
        ]) {
            libc::sigaddset(&mut set, signal);
        }
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
    }

    let inherited = Inherited {
        ignores_ttin: is_ignored(libc::SIGTTIN),
        ignores_ttou: is_ignored(libc::SIGTTOU),
    };
    // nohup and `trap '' INT`: what the caller ignores stays ignored, for us
    // and (by inheritance across exec) for the child.
    let mut handled: Vec<i32> = TERMINATING
        .into_iter()
        .filter(|&s| !is_ignored(s))
        .collect();
    handled.push(libc::SIGCHLD);

    let mut signals =
        SignalsInfo::<WithOrigin>::new(&handled).context("installing signal handlers")?;
    // SAFETY: setting dispositions of job-control signals for this process.
    unsafe {
        // Our own messages to a terminal, when we are in the background,
        // must not stop us. The child gets the default back (see `child`).
        libc::signal(libc::SIGTTOU, libc::SIG_IGN);
        libc::signal(libc::SIGTTIN, libc::SIG_IGN);
    }

    let (sender, events) = mpsc::channel();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for origin in signals.forever() {
                let event = if origin.signal == libc::SIGCHLD {
                    Event::ChildChanged
                } else {
                    Event::Signal {
                        signal: origin.signal,
                        from_terminal: origin.cause == Cause::Kernel,
                    }
                };
                if sender.send(event).is_err() {
                    break;
                }
            }
        })
        .context("starting the signal thread")?;
    Ok(SignalEvents { events, inherited })
}

/// Sleep until `until`, unless a terminating signal comes first: then return it.
/// Child state changes that arrive meanwhile are of no interest here.
pub fn sleep_until(events: &Receiver<Event>, until: Instant) -> Option<i32> {
    loop {
        let now = Instant::now();
        if now >= until {
            return None;
        }
        match events.recv_timeout(until - now) {
            Ok(Event::Signal { signal, .. }) => return Some(signal),
            Ok(Event::ChildChanged) => continue,
            Err(RecvTimeoutError::Timeout) => return None,
            // The signal thread is gone: no signal can arrive any more.
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(until.saturating_duration_since(Instant::now()));
                return None;
            }
        }
    }
}
