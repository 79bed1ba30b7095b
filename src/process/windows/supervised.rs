//! One started attempt under supervision on Windows, a step at a time: its
//! time limit (a Ctrl-Break to its console group, its job ended after
//! `--kill-after`), a console event to retry, and at its end what its job
//! still holds. [`Running::supervise`] drives one to its end; a hedged
//! attempt drives several on the same events, as on Unix.

use std::time::{Duration, Instant};

use super::signals::{Event, Events};
use super::{ENDED_CODE, Running, TIMED_OUT_CODE};
use crate::outcome::{Ending, ProcessEnd};
use crate::sys::fd::{AsFd, BorrowedFd};

/// A running attempt and what retry did to it so far.
pub(crate) struct Supervised {
    running: Running,
    /// When its time is up (`--timeout`, `--max-time`).
    deadline: Option<Instant>,
    kill_after: Duration,
    timed_out: bool,
    /// Ended by retry because another copy won (or the run ended).
    superseded: bool,
    /// A console event retry received while it ran, as its signal.
    interrupted: Option<i32>,
    /// When its job is ended, a Ctrl-Break's grace over.
    end_at: Option<Instant>,
}

impl Supervised {
    pub(crate) fn new(running: Running, deadline: Option<Instant>, kill_after: Duration) -> Self {
        Supervised {
            running,
            deadline,
            kill_after,
            timed_out: false,
            superseded: false,
            interrupted: None,
            end_at: None,
        }
    }

    /// Whether retry has not asked it to end yet.
    fn calm(&self) -> bool {
        !self.timed_out && !self.superseded && self.interrupted.is_none()
    }

    /// How the attempt's process ended, if it has.
    pub(crate) fn ended(&mut self) -> Option<ProcessEnd> {
        self.running.peek_ending()
    }

    /// Act on the clock: the time limit's Ctrl-Break (or the job's end),
    /// the job's end when the grace is over. True when something was done.
    pub(crate) fn tick(&mut self, now: Instant) -> bool {
        if self.calm() && self.deadline.is_some_and(|d| now >= d) {
            self.timed_out = true;
            self.end_at = self.running.ask_to_end(self.kill_after, TIMED_OUT_CODE);
            return true;
        }
        if self.end_at.is_some_and(|at| now >= at) {
            self.end_at = None;
            let code = if self.timed_out {
                TIMED_OUT_CODE
            } else {
                ENDED_CODE
            };
            self.running.end_job(code);
            return true;
        }
        false
    }

    /// When [`tick`](Self::tick) has something to do next.
    pub(crate) fn wake(&self) -> Option<Instant> {
        [self.deadline.filter(|_| self.calm()), self.end_at]
            .into_iter()
            .flatten()
            .min()
    }

    /// End it as a time limit does, because another copy won or the run
    /// ends.
    pub(crate) fn supersede(&mut self, _now: Instant) {
        if !self.calm() {
            return;
        }
        self.superseded = true;
        self.end_at = self.running.ask_to_end(self.kill_after, ENDED_CODE);
    }

    /// A console event to retry ends it (a Ctrl-Break first, where there is
    /// time for one).
    pub(crate) fn on_event(&mut self, event: Event) {
        let Event::Signal { signal, .. } = event;
        if self.interrupted.is_some() {
            return;
        }
        let calm = self.calm();
        self.interrupted = Some(signal);
        if calm {
            self.end_at = self.running.ask_to_end(self.kill_after, ENDED_CODE);
        }
    }

    /// It ended as `process`: a success's job lets what it started go on
    /// (the service it was run to start); a failed or ended attempt's
    /// leftovers end with its job.
    pub(crate) fn finish(mut self, process: ProcessEnd, _events: &mut Events) -> Ending {
        let succeeded = process == ProcessEnd::Exited(0) && !self.timed_out && !self.superseded;
        if succeeded {
            let _ = self.running.started.job.set_kill_on_close(false);
        } else if self.running.started.job.active_processes() > 0 {
            self.running.end_job(ENDED_CODE);
        }
        Ending {
            process,
            timed_out: self.timed_out,
            killed: false,
            interrupted: self.interrupted,
        }
    }

    /// Whether retry ended it because another copy won.
    pub(crate) fn was_superseded(&self) -> bool {
        self.superseded
    }

    /// Nothing to tell: no watchdog (the job's kill-on-close does its work).
    #[allow(clippy::unused_self, reason = "Unix's tells its watchdog")]
    pub(crate) fn guard_again(&mut self) {}

    /// It ended as `process` while other attempts run on: as
    /// [`finish`](Self::finish), which never waits on Windows (what a
    /// failed copy left ends with its job at once), so nothing is left to
    /// end a step at a time.
    pub(crate) fn finish_apart(
        self,
        process: ProcessEnd,
        events: &mut Events,
    ) -> (Ending, Option<Cleanup>) {
        (self.finish(process, events), None)
    }

    /// What is set when its process ends.
    fn handle(&self) -> BorrowedFd<'_> {
        self.running.started.child.as_fd()
    }
}

/// What a copy left, ended a step at a time while others run on: never on
/// Windows, where [`Supervised::finish_apart`] ends it with the job at once
/// (no value of this type exists).
pub(crate) enum Cleanup {}

impl Cleanup {
    pub(crate) fn step(&mut self, _now: Instant) -> bool {
        match *self {}
    }

    pub(crate) fn wake(&self, _now: Instant) -> Instant {
        match *self {}
    }

    pub(crate) fn hurry(&mut self, _now: Instant) {
        match *self {}
    }

    pub(crate) fn guard_again(&mut self) {
        match *self {}
    }
}

/// Wait until one of `attempts` may have ended, `until` passes or an event
/// arrives: the event, if one came.
pub(crate) fn wait_for(
    attempts: &[&Supervised],
    events: &mut Events,
    until: Option<Instant>,
) -> Option<Event> {
    if let Some(event) = events.pop() {
        return Some(event);
    }
    let mut handles: Vec<BorrowedFd<'_>> = attempts.iter().map(|a| a.handle()).collect();
    handles.push(events.wakes());
    crate::sys::process::wait_any(&handles, until);
    events.pop()
}

impl Running {
    /// Wait for the attempt to end, woken by its exit, its deadline or a
    /// console event to retry, whichever comes first. `deadline` is the
    /// attempt's effective limit; `kill_after` the grace a Ctrl-Break gives
    /// before the job is ended.
    pub(crate) fn supervise(
        self,
        events: &mut Events,
        deadline: Option<Instant>,
        kill_after: Duration,
    ) -> Ending {
        let mut attempt = Supervised::new(self, deadline, kill_after);
        let process = loop {
            if let Some(process) = attempt.ended() {
                break process;
            }
            if attempt.tick(Instant::now()) {
                continue;
            }
            if let Some(event) = wait_for(&[&attempt], events, attempt.wake()) {
                attempt.on_event(event);
            }
        };
        attempt.finish(process, events)
    }
}
