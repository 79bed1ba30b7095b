//! Windows' console control events as the run's events: a Ctrl-C, a
//! Ctrl-Break or the console closing (`sys::signal_pipe`) arrive as the
//! signal each stands for (SIGINT, SIGTERM, SIGHUP), and end the run as
//! those do elsewhere. There is nothing else to hear: no child's change, no
//! stop or continue.

use std::time::Instant;

use anyhow::{Context, Result};

use crate::outcome::signo::{SIGHUP, SIGINT, SIGTERM};
use crate::sys::fd::BorrowedFd;
use crate::sys::signal_pipe::{Arrival, SignalPipe};

/// Whether an event that ends the run has arrived since installation.
pub(crate) fn terminating_arrived() -> bool {
    crate::sys::signal_pipe::ending_arrived()
}

/// Something that reached retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// A console event, by the signal it stands for; from the console
    /// (which gave it to every process attached to it that takes it).
    Signal { signal: i32, from_terminal: bool },
}

impl Event {
    /// The terminating signal it is (every console event is one).
    #[allow(
        clippy::unnecessary_wraps,
        reason = "Unix's events are not all signals"
    )]
    pub(crate) fn terminating(self) -> Option<i32> {
        let Event::Signal { signal, .. } = self;
        Some(signal)
    }
}

/// The run's events.
pub(crate) struct Events {
    pipe: SignalPipe,
    queued: std::collections::VecDeque<Event>,
}

/// The run's events, as the Unix room names them.
pub(crate) struct SignalEvents {
    pub(crate) events: Events,
}

/// Nothing to do on Windows (Unix ignores SIGXFSZ here).
pub(crate) fn survive_file_size_limit() {}

/// Install the console handler.
pub(crate) fn install() -> Result<SignalEvents> {
    let pipe = SignalPipe::install().context("installing the console control handler")?;
    Ok(SignalEvents {
        events: Events {
            pipe,
            queued: std::collections::VecDeque::default(),
        },
    })
}

impl Events {
    /// The next event, waiting until `until` (`None`: for ever).
    pub(crate) fn next(&mut self, until: Option<Instant>) -> Option<Event> {
        loop {
            if let Some(event) = self.queued.pop_front() {
                return Some(event);
            }
            self.collect();
            if !self.queued.is_empty() {
                continue;
            }
            if until.is_some_and(|until| Instant::now() >= until) {
                return None;
            }
            crate::sys::process::wait_any(&[self.wakes()], until)?;
        }
    }

    /// What is set when an event arrives, for a wait elsewhere to give up
    /// on (it is not taken: `next` still hands the event out).
    pub(crate) fn wakes(&self) -> BorrowedFd<'static> {
        self.pipe.readable()
    }

    /// Queue what arrived.
    pub(crate) fn collect(&mut self) {
        for arrival in self.pipe.take() {
            let signal = match arrival {
                Arrival::CtrlC => SIGINT,
                Arrival::CtrlBreak => SIGTERM,
                Arrival::Close => SIGHUP,
            };
            self.queued.push_back(Event::Signal {
                signal,
                from_terminal: true,
            });
        }
    }

    /// The next queued event, without waiting.
    pub(crate) fn pop(&mut self) -> Option<Event> {
        self.collect();
        self.queued.pop_front()
    }
}

/// A signal that arrived and was not yet acted on, without waiting.
pub(crate) fn pending_signal(events: &mut Events) -> Option<i32> {
    sleep_until(events, Instant::now(), || {})
}

/// Sleep until `until`, unless an event that ends the run comes first (its
/// signal). `on_child` has nothing to answer on Windows.
pub(crate) fn sleep_until(
    events: &mut Events,
    until: Instant,
    _on_child: impl FnMut(),
) -> Option<i32> {
    events
        .next(Some(until))
        .map(|Event::Signal { signal, .. }| signal)
}
