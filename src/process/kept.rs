//! An attempt under a keeper (`sys::spawn::start_kept`), in the shared-group
//! mode: its processes are the keeper's descendants, exactly, and the
//! command's end comes as a wait status on the keeper's report pipe.

use std::os::fd::OwnedFd;

use rustix::event::{PollFd, PollFlags};
use rustix::process::{Pid, WaitId, WaitIdOptions, WaitOptions};

use super::ProcessEnd;
use super::tree;

pub(super) struct Keeper {
    pid: Pid,
    report: OwnedFd,
    /// Closed to let the keeper go (`release`).
    hold: Option<OwnedFd>,
    ended: Option<ProcessEnd>,
    reaped: bool,
}

impl Keeper {
    pub(super) fn new(kept: crate::sys::spawn::Kept) -> Keeper {
        Keeper {
            pid: kept.keeper,
            report: kept.report,
            hold: Some(kept.hold),
            ended: None,
            reaped: false,
        }
    }

    /// The keeper's pid: retry's child, reaped last.
    pub(super) fn pid(&self) -> Pid {
        self.pid
    }

    /// How the command ended, once the keeper has said so; also when the
    /// keeper itself is gone without a word (killed: 255, as for a child
    /// whose status cannot be read).
    pub(super) fn ending(&mut self) -> Option<ProcessEnd> {
        if self.ended.is_some() {
            return self.ended.clone();
        }
        let mut fds = [PollFd::new(&self.report, PollFlags::IN)];
        let ready = rustix::event::poll(&mut fds, Some(&rustix::event::Timespec::default()));
        if !matches!(ready, Ok(n) if n > 0) {
            return None;
        }
        let mut word = [0u8; 4];
        let Ok(4) = rustix::io::read(&self.report, &mut word) else {
            self.ended = Some(ProcessEnd::Exited(255));
            return self.ended.clone();
        };
        let status = i32::from_ne_bytes(word);
        self.ended = Some(if libc::WIFEXITED(status) {
            ProcessEnd::Exited(libc::WEXITSTATUS(status))
        } else if libc::WIFSIGNALED(status) {
            ProcessEnd::Signaled(libc::WTERMSIG(status))
        } else {
            ProcessEnd::Exited(255)
        });
        self.ended.clone()
    }

    /// The attempt's processes: everything below the keeper.
    pub(super) fn members(&self) -> Vec<tree::Member> {
        if self.reaped {
            return Vec::new();
        }
        tree::descendants(self.pid)
    }

    /// Let the keeper go, and reap it: what is left below it runs on,
    /// adopted by retry.
    pub(super) fn reap(&mut self) {
        // The byte says "let go"; the pipe's end alone would say that
        // retry died, and the keeper would end everything below it.
        // (Not to a keeper that has exited already: nobody would read it.)
        if let Some(hold) = self.hold.take() {
            let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
            if let Ok(None) = rustix::process::waitid(WaitId::Pid(self.pid), options) {
                let _ = rustix::io::write(&hold, b"x");
            }
        }
        while !self.reaped {
            match rustix::process::waitpid(Some(self.pid), WaitOptions::empty()) {
                Err(rustix::io::Errno::INTR) => {}
                _ => self.reaped = true,
            }
        }
    }
}
