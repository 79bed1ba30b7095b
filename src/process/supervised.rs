//! One started attempt under supervision, a step at a time: its time
//! limit (SIGTERM, then SIGKILL after `--kill-after`), the signals retry
//! passes on, job control, and at its end the clean-up of what it left and
//! its reaping. [`Running::supervise`] drives one to its end; a hedged
//! attempt (`Copies`) drives several on the same events.

use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

use super::signals::{Event, Events};
use super::{Running, kept, reap_orphans, tree, watchdog};
use crate::outcome::{Ending, ProcessEnd};

/// A running attempt and what retry did to it so far.
pub(crate) struct Supervised {
    running: Running,
    /// When its time is up (`--timeout`, `--max-time`).
    deadline: Option<Instant>,
    kill_after: Duration,
    timed_out: bool,
    killed: bool,
    /// Ended by retry because another copy won (or the run ended).
    superseded: bool,
    /// A terminating signal retry received while it ran.
    interrupted: Option<i32>,
    kill_at: Option<Instant>,
}

impl Supervised {
    pub(crate) fn new(running: Running, deadline: Option<Instant>, kill_after: Duration) -> Self {
        Supervised {
            running,
            deadline,
            kill_after,
            timed_out: false,
            killed: false,
            superseded: false,
            interrupted: None,
            kill_at: None,
        }
    }

    /// The pid that stays unreaped until the end (its keeper's, if any).
    pub(crate) fn kept_pid(&self) -> Pid {
        self.running
            .keeper
            .as_ref()
            .map_or(self.running.pid, kept::Keeper::pid)
    }

    /// How the attempt's process ended, if it has (looked at, not reaped).
    pub(crate) fn ended(&mut self) -> Option<ProcessEnd> {
        self.running.peek_ending()
    }

    /// Act on the clock: the time limit's SIGTERM, `--kill-after`'s SIGKILL.
    /// True when something was sent (look at the attempt again).
    pub(crate) fn tick(&mut self, now: Instant) -> bool {
        let calm = !self.timed_out && !self.superseded && self.interrupted.is_none();
        if calm && self.deadline.is_some_and(|d| now >= d) {
            self.timed_out = true;
            self.running.send(libc::SIGTERM);
            self.kill_at = Some(now + self.kill_after);
            return true;
        }
        if self.kill_at.is_some_and(|at| now >= at) {
            self.killed = true;
            self.kill_at = None;
            self.running.send(libc::SIGKILL);
            return true;
        }
        false
    }

    /// When [`tick`](Self::tick) has something to do next.
    pub(crate) fn wake(&self) -> Option<Instant> {
        let calm = !self.timed_out && !self.superseded && self.interrupted.is_none();
        [self.deadline.filter(|_| calm), self.kill_at]
            .into_iter()
            .flatten()
            .min()
    }

    /// End it as a time limit does, because another copy won or the run
    /// ends: SIGTERM now, SIGKILL after `--kill-after`.
    pub(crate) fn supersede(&mut self, now: Instant) {
        if self.superseded || self.timed_out || self.interrupted.is_some() {
            return;
        }
        self.superseded = true;
        self.running.send(libc::SIGTERM);
        self.kill_at = Some(now + self.kill_after);
    }

    /// An event that came while it ran: a signal to retry is passed on (not
    /// one a terminal delivered to it already) and ends it after
    /// `--kill-after`; job control stops and continues it with retry.
    pub(crate) fn on_event(&mut self, event: Event) {
        match event {
            Event::Signal {
                signal,
                from_terminal,
            } => {
                if self.running.own_group || !from_terminal {
                    self.running.send(signal);
                }
                if self.interrupted.is_none() {
                    self.interrupted = Some(signal);
                    self.kill_at = self.kill_at.or(Some(Instant::now() + self.kill_after));
                }
            }
            Event::Stop { from_terminal } => self.running.stop_with_us(from_terminal),
            // Continued (`fg`, `bg`): an attempt stopped for the terminal
            // meanwhile may get it now.
            Event::ChildChanged | Event::Continued => self.running.look_for_a_stop(),
        }
    }

    /// It ended as `process`: clean up what it left (a failed or ended
    /// attempt's group: SIGTERM, SIGKILL after `--kill-after`; a success's
    /// is left running) and reap it. The watchdog is not released here:
    /// the caller does once every attempt it guards is over.
    pub(crate) fn finish(self, process: ProcessEnd, events: &mut Events) -> Ending {
        let Supervised {
            mut running,
            kill_after,
            timed_out,
            killed,
            superseded,
            mut interrupted,
            ..
        } = self;
        running.take_terminal_back();
        let succeeded = process == ProcessEnd::Exited(0) && !timed_out && !superseded;
        let clean = !succeeded;
        if clean && running.own_group {
            // The leader is still an unreaped zombie, so its group id cannot
            // have been reused: signal the group before reaping.
            let _ = rustix::process::kill_process_group(running.pid, Signal::TERM);
            let _ = rustix::process::kill_process_group(running.pid, Signal::CONT);
        }
        if clean && !running.own_group && running.keeper.is_none() {
            // Its start time, which finds what it started, can be read only
            // while it is unreaped.
            running.start = running.start.or_else(|| tree::start_of(running.pid));
        }
        // A keeper is kept until what is below it has been ended: let go,
        // it would leave that to us, mixed with what is not the attempt's.
        if !(clean && running.keeper.is_some()) {
            running.reap();
        }
        if clean {
            interrupted = interrupted.or(running.end_leftovers(events, kill_after));
        }
        running.reap();
        Ending {
            process,
            timed_out,
            killed,
            interrupted,
        }
    }

    /// Whether retry ended it because another copy won.
    pub(crate) fn was_superseded(&self) -> bool {
        self.superseded
    }

    /// Tell the watchdog again what to end should retry die now (after a
    /// release that was for another attempt).
    pub(crate) fn guard_again(&mut self) {
        self.running.guard();
    }

    /// It ended as `process` while other attempts run on (the copies of a
    /// hedged attempt): what [`finish`](Self::finish) does, without waiting
    /// for what it left in its group. That group is sent SIGTERM now, and
    /// the [`Cleanup`] returned ends the rest a step at a time, so that
    /// the other copies are looked after meanwhile. In retry's group
    /// (never for copies), the clean-up is [`finish`](Self::finish)'s.
    pub(crate) fn finish_apart(
        self,
        process: ProcessEnd,
        events: &mut Events,
    ) -> (Ending, Option<Cleanup>) {
        if !self.running.own_group {
            return (self.finish(process, events), None);
        }
        let Supervised {
            mut running,
            kill_after,
            timed_out,
            killed,
            superseded,
            interrupted,
            kill_at,
            ..
        } = self;
        running.take_terminal_back();
        let succeeded = process == ProcessEnd::Exited(0) && !timed_out && !superseded;
        if !succeeded {
            // Before the leader is reaped: its group id is still ours.
            let _ = rustix::process::kill_process_group(running.pid, Signal::TERM);
            let _ = rustix::process::kill_process_group(running.pid, Signal::CONT);
        }
        running.reap();
        let ending = Ending {
            process,
            timed_out,
            killed,
            interrupted,
        };
        if succeeded {
            return (ending, None);
        }
        let now = Instant::now();
        // A signal to retry, or an end past its own SIGKILL: no more grace.
        let kill_at = match (interrupted, kill_at) {
            (Some(_), _) => now,
            (None, Some(at)) => at.min(now + kill_after),
            (None, None) => now + kill_after,
        };
        let mut cleanup = Cleanup {
            running,
            kill_at,
            give_up: kill_at + Duration::from_secs(2),
        };
        let left = cleanup.step(now);
        (ending, left.then_some(cleanup))
    }
}

/// What an attempt that ended left in its process group, ended a step at
/// a time while other attempts run on ([`Supervised::finish_apart`]):
/// SIGKILL at `--kill-after` (at once after a signal to retry), given up
/// 2 seconds later (a process the kernel holds, in an uninterruptible
/// wait, cannot be ended), as [`Running::end_leftovers`] does.
pub(crate) struct Cleanup {
    running: Running,
    kill_at: Instant,
    give_up: Instant,
}

impl Cleanup {
    /// One look: reap what ended, SIGKILL what is left when its time has
    /// come. False once nothing is left (or the look is given up).
    pub(crate) fn step(&mut self, now: Instant) -> bool {
        let killing = now >= self.kill_at;
        // Sent SIGTERM when the attempt ended: the group, not one by one.
        let mut terminated = Vec::new();
        self.running.signal_leftovers(killing, &mut terminated) && now < self.give_up
    }

    /// When to look again: SIGKILL's time, else soon (what is left ends
    /// without a word to retry where orphans go to init).
    pub(crate) fn wake(&self, now: Instant) -> Instant {
        let soon = now + Duration::from_millis(50);
        if now < self.kill_at {
            soon.min(self.kill_at)
        } else {
            soon.min(self.give_up)
        }
    }

    /// Retry got a terminating signal: what is left is killed at once.
    pub(crate) fn hurry(&mut self, now: Instant) {
        self.kill_at = self.kill_at.min(now);
    }

    /// Tell the watchdog again to end this group should retry die now.
    pub(crate) fn guard_again(&mut self) {
        self.running.guard();
    }
}

/// Wait until one of `attempts` may have ended, `until` passes or an event
/// arrives: the event, if one came. Adopted orphans that ended are reaped
/// first (the attempts themselves are only looked at).
pub(crate) fn wait_for(
    attempts: &[&Supervised],
    events: &mut Events,
    until: Option<Instant>,
) -> Option<Event> {
    let kept: Vec<Pid> = attempts.iter().map(|a| a.kept_pid()).collect();
    crate::sys::process::reap_ended_except(&kept);
    events.next(until)
}

impl Running {
    /// Wait for the attempt to end, woken by its exit, its deadline or a
    /// signal to retry (all through the one event source), whichever comes
    /// first. `deadline` is the attempt's effective limit; `kill_after` the
    /// grace between SIGTERM and SIGKILL. Then clean up its group and reap
    /// it.
    pub(crate) fn supervise(
        self,
        events: &mut Events,
        deadline: Option<Instant>,
        kill_after: Duration,
    ) -> Ending {
        let mut attempt = Supervised::new(self, deadline, kill_after);
        let process = loop {
            // Adopted orphans are reaped as they end, also while the
            // attempt runs; the attempt itself is only looked at.
            crate::sys::process::reap_ended_except(&[attempt.kept_pid()]);
            if let Some(process) = attempt.ended() {
                break process;
            }
            if attempt.tick(Instant::now()) {
                continue;
            }
            if let Some(event) = events.next(attempt.wake()) {
                attempt.on_event(event);
            }
        };
        let ending = attempt.finish(process, events);
        // Ended (or a success's, left to run): nothing for the watchdog.
        watchdog::release();
        reap_orphans();
        ending
    }
}
