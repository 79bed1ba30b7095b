//! Ending what a failed attempt left running: its whole group in the
//! own-group mode; in retry's group each process the attempt started
//! (`tree`, or its keeper's descendants), looked for before each signal
//! and remembered until `--kill-after`.

use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitOptions};

use super::signals::{Event, Events};
use super::{Running, our_group, reap_orphans, tree};

impl Running {
    /// In the shared-group mode, what the attempt started and still runs,
    /// remembered for the next look.
    pub(super) fn shared_leftovers(&mut self) -> Vec<tree::Member> {
        if let Some(keeper) = &self.keeper {
            return keeper.members();
        }
        if self.start.is_none() {
            self.start = tree::start_of(self.pid);
        }
        let Some(start) = self.start else {
            return Vec::new();
        };
        let attempt = tree::SharedAttempt {
            child: (!self.reaped).then(|| self.pid.as_raw_nonzero().get()),
            start,
            group: our_group(),
            adopter: Some(rustix::process::getpid().as_raw_nonzero().get()),
            before: &self.before,
        };
        let left = tree::leftovers(&attempt, &self.found);
        self.found.clone_from(&left);
        left
    }

    /// Wait for what the attempt left running to go, with SIGKILL from
    /// `kill_after` on. Each look reaps what exited and signals what is
    /// left (`signal_leftovers`). Orphans are our children (we are a child
    /// subreaper, see `adopt_orphans`), so their exits wake us through
    /// SIGCHLD; the others are looked at every 50 ms. Returns a terminating
    /// signal received meanwhile.
    pub(super) fn end_leftovers(
        &mut self,
        events: &mut Events,
        kill_after: Duration,
    ) -> Option<i32> {
        let mut interrupted = None;
        let mut kill_at = Instant::now() + kill_after;
        let give_up = kill_at + Duration::from_secs(2);
        let mut terminated = Vec::new();
        loop {
            let now = Instant::now();
            let killing = now >= kill_at;
            if !self.signal_leftovers(killing, &mut terminated) || now >= give_up {
                break;
            }
            let wake = if killing { give_up } else { kill_at };
            let wait = wake
                .saturating_duration_since(now)
                .min(Duration::from_millis(50));
            match events.next(Some(now + wait)) {
                Some(Event::Signal { signal, .. }) => {
                    interrupted = interrupted.or(Some(signal));
                    kill_at = Instant::now();
                }
                Some(Event::Stop { .. }) => crate::sys::signal::stop_as(libc::SIGTSTP),
                _ => {}
            }
        }
        interrupted
    }

    /// One look of `end_leftovers`: reap, then signal what is left, SIGKILL
    /// when `killing` (again at each look: one that ignored SIGTERM may have
    /// forked since). In group mode that is the group, sent SIGTERM before
    /// the leader was reaped; while any member lives the group id stays
    /// reserved, so signalling it is safe. Else each process `tree` finds,
    /// sent SIGTERM and SIGCONT once, as it appears (`terminated`: a second
    /// SIGTERM makes many programs skip their clean shutdown). False when
    /// nothing is left.
    pub(super) fn signal_leftovers(
        &mut self,
        killing: bool,
        terminated: &mut Vec<tree::Member>,
    ) -> bool {
        if self.own_group {
            reap_group(self.pid);
            if rustix::process::test_kill_process_group(self.pid).is_err() {
                return false;
            }
            // Without a subreaper an orphan's zombie waits for init, which
            // may be slow to reap it: a group of zombies alone is empty.
            if !crate::sys::process::ADOPTS_ORPHANS
                && crate::sys::process::group_has_live_members(self.pid.as_raw_nonzero().get())
                    == Some(false)
            {
                return false;
            }
            if killing {
                let _ = rustix::process::kill_process_group(self.pid, Signal::KILL);
            }
            return true;
        }
        match &self.keeper {
            // The keeper stays ours to look below until we let it go.
            Some(keeper) => {
                crate::sys::process::reap_ended_except(&[keeper.pid()]);
            }
            None => reap_orphans(),
        }
        let left = self.shared_leftovers();
        for &member in &left {
            if killing {
                tree::signal(member, Signal::KILL);
            } else if !terminated.contains(&member) {
                tree::signal(member, Signal::TERM);
                tree::signal(member, Signal::CONT);
                terminated.push(member);
            }
        }
        !left.is_empty()
    }
}

/// Reap the exited members of group `group` that are our children.
fn reap_group(group: Pid) {
    while let Ok(Some(_)) = rustix::process::waitpgid(group, WaitOptions::NOHANG) {}
}
