//! Job control of an attempt, as a shell gives it to a job: Ctrl-Z stops
//! the attempt with retry and `fg`/`bg` continue both, and an attempt that
//! wants the terminal gets it.
//!
//! In a group of its own (retry not in a terminal's foreground when the
//! attempt started, or stdin redirected), the attempt hears nothing of the
//! terminal: a Ctrl-Z stops retry's group alone, and a read of the terminal
//! stops the attempt's group (SIGTTIN, SIGTTOU for a write under `stty
//! tostop`) with nobody to continue it. So:
//! - SIGTSTP to retry is passed to the attempt, then retry stops itself the
//!   same way; once continued, it continues the attempt.
//! - An attempt stopped by SIGTTIN or SIGTTOU wants the terminal (a read of
//!   `/dev/tty` while stdin is a pipe: ssh, sudo, getpass). When retry's
//!   group is the terminal's foreground, the attempt's group is made the
//!   foreground instead, for as long as the attempt runs (Ctrl-C and Ctrl-Z
//!   then reach it, as they would the command alone), and continued. When
//!   retry is in the background, the job stops as the command alone would
//!   (the shell says "Stopped (tty input)"), and retry says why on the
//!   terminal; `fg` then hands the terminal over.
//! - An attempt that holds the terminal and is stopped (Ctrl-Z reached its
//!   group) stops retry too, which takes the terminal back first, so that
//!   the shell gets it.

use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};

use rustix::process::{WaitId, WaitIdOptions};

use super::Running;
use crate::sys::signal::stop_as;

/// What job control did for one attempt.
#[derive(Debug, Default)]
pub(super) struct Job {
    /// The terminal is the attempt's group's: given back at the end.
    lent: Option<OwnedFd>,
    /// Retry said why the attempt is stopped (once per attempt).
    said: bool,
}

/// The controlling terminal, if retry has one.
fn controlling_terminal() -> Option<OwnedFd> {
    rustix::fs::open(
        "/dev/tty",
        rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC | rustix::fs::OFlags::NOCTTY,
        rustix::fs::Mode::empty(),
    )
    .ok()
}

/// Whether retry's process group is the foreground of its controlling
/// terminal (no terminal: no).
pub(super) fn in_the_terminals_foreground() -> bool {
    controlling_terminal().is_some_and(|tty| ours(&tty))
}

/// Whether retry's process group is `tty`'s foreground.
fn ours(tty: &OwnedFd) -> bool {
    rustix::termios::tcgetpgrp(tty)
        .is_ok_and(|group| group.as_raw_nonzero().get() == crate::sys::process::own_group())
}

impl Running {
    /// SIGTSTP reached retry: stop the attempt (unless the terminal's key
    /// reached it already, in our group), stop retry, and once continued,
    /// continue the attempt (with the terminal, if it had it).
    pub(super) fn stop_with_us(&mut self, from_terminal: bool) {
        let forward = self.own_group || !from_terminal;
        if forward {
            self.deliver(libc::SIGTSTP);
        }
        let lent = self.take_terminal_back();
        stop_as(libc::SIGTSTP);
        if lent {
            self.lend_terminal();
        }
        if forward || lent {
            self.deliver(libc::SIGCONT);
        }
    }

    /// The attempt changed state: if it is stopped because it wants the
    /// terminal, or stopped while holding it, act as a shell would.
    pub(super) fn look_for_a_stop(&mut self) {
        let Some(signal) = self.peek_stop() else {
            return;
        };
        match signal {
            libc::SIGTTIN | libc::SIGTTOU => self.wants_the_terminal(signal),
            // Ctrl-Z reached the attempt's group, which holds the terminal:
            // the job stops; `fg` gives the attempt the terminal again, and
            // `bg` continues it in the background.
            libc::SIGTSTP if self.job.lent.is_some() => {
                self.take_terminal_back();
                stop_as(libc::SIGTSTP);
                self.lend_terminal();
                self.deliver(libc::SIGCONT);
            }
            _ => {}
        }
    }

    /// The attempt is stopped by `signal` (SIGTTIN, SIGTTOU): it reads (or
    /// writes to) the terminal from a process group that is not the
    /// terminal's foreground.
    fn wants_the_terminal(&mut self, signal: i32) {
        if !self.own_group {
            // In our group: the whole group is in the background. Stop as
            // the command alone would; `fg` continues the group, the
            // attempt with it.
            stop_as(signal);
            return;
        }
        if !self.continue_in_front() {
            self.say_why_stopped(signal);
            stop_as(signal);
            self.continue_in_front();
        }
    }

    /// When retry's group holds the terminal: hand it to the attempt's
    /// group and continue that. False when retry does not hold it.
    fn continue_in_front(&mut self) -> bool {
        if !self.lend_terminal() {
            return false;
        }
        self.deliver(libc::SIGCONT);
        true
    }

    /// Make the attempt's group the terminal's foreground, if retry's group
    /// is (in group mode only: else the attempt shares it already). True
    /// when the attempt has it, also when it was lent already (what the
    /// attempt does with it then is its business).
    fn lend_terminal(&mut self) -> bool {
        if !self.own_group || self.reaped {
            return false;
        }
        if self.job.lent.is_some() {
            return true;
        }
        let Some(tty) = controlling_terminal() else {
            return false;
        };
        if !ours(&tty) || rustix::termios::tcsetpgrp(&tty, self.pid).is_err() {
            return false;
        }
        self.job.lent = Some(tty);
        true
    }

    /// Make retry's group the terminal's foreground again, if the attempt's
    /// group had it (retry ignores SIGTTOU: it may, from the background).
    /// Whether it had it.
    pub(super) fn take_terminal_back(&mut self) -> bool {
        let Some(tty) = self.job.lent.take() else {
            return false;
        };
        if let Some(ours) = rustix::process::Pid::from_raw(crate::sys::process::own_group()) {
            let _ = rustix::termios::tcsetpgrp(&tty, ours);
        }
        true
    }

    /// Say, once, on the terminal (the person who can act is there, and a
    /// JSON log on stderr stays JSON), why the attempt is stopped.
    fn say_why_stopped(&mut self, signal: i32) {
        if std::mem::replace(&mut self.job.said, true) {
            return;
        }
        let wants = if signal == libc::SIGTTOU {
            "to write to the terminal (SIGTTOU)"
        } else {
            "the terminal (SIGTTIN)"
        };
        let message = format!(
            "retry: the command is stopped: it wants {wants}, and retry runs in the background; \
             `fg` gives it the terminal. A command that should not use the terminal can be given \
             its input instead (< FILE, --stdin null).\r\n"
        );
        let written = controlling_terminal()
            .is_some_and(|tty| rustix::io::write(tty.as_fd(), message.as_bytes()).is_ok());
        if !written {
            let _ = std::io::stderr().write_all(message.replace('\r', "").as_bytes());
        }
    }

    /// The signal that stopped the attempt, if it is stopped now. Looks
    /// without consuming the stop.
    fn peek_stop(&self) -> Option<i32> {
        if self.reaped {
            return None;
        }
        let options = WaitIdOptions::STOPPED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        match rustix::process::waitid(WaitId::Pid(self.pid), options) {
            Ok(Some(status)) if status.stopped() => status.stopping_signal(),
            _ => None,
        }
    }
}
