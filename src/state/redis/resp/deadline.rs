//! The time limit of one exchange with Redis: one [`Deadline`] covers it
//! all, and every blocking call asks it how long it may wait.

use std::io;
use std::time::{Duration, Instant};

use crate::process::signals::terminating_arrived;
use crate::state::store::{Interrupted, Patience, SIGNAL_SLICE};

/// The time limit of one exchange, from its start: the store's own, or the
/// run's deadline when that comes first; and whether a signal to retry
/// ends it (see [`Patience`]).
#[derive(Clone, Copy, Debug)]
pub(in crate::state::redis) struct Deadline {
    pub(in crate::state::redis) started: Instant,
    end: Option<Instant>,
    /// `end` is the run's deadline, not the store's limit.
    pub(in crate::state::redis) by_run: bool,
    signals: bool,
}

impl Deadline {
    pub(in crate::state::redis) fn new(limit: Duration, patience: Patience) -> Deadline {
        let started = Instant::now();
        let (end, by_run) = patience.end(started, limit);
        Deadline {
            started,
            end,
            by_run,
            signals: patience.signals,
        }
    }

    /// This deadline, or sooner: a `ways`-th of the time left, for one of
    /// `ways` servers tried in turn (a seed node, a sentinel), so that one
    /// that never answers leaves time for the others.
    pub(in crate::state::redis) fn share(&self, ways: usize) -> Deadline {
        let now = Instant::now();
        let end = self.end.map(|end| {
            let left = end.saturating_duration_since(now);
            now + left / ways.clamp(1, 1024) as u32
        });
        Deadline { end, ..*self }
    }

    /// The time left (`None`: no limit), or a timeout once none is, or
    /// [`Interrupted`] once a signal to retry ends the exchange.
    pub(in crate::state::redis) fn left(&self) -> io::Result<Option<Duration>> {
        if self.signals && terminating_arrived() {
            return Err(io::Error::other(Interrupted));
        }
        match self.end {
            None => Ok(None),
            Some(end) => {
                let left = end.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    Err(io::ErrorKind::TimedOut.into())
                } else {
                    Ok(Some(left))
                }
            }
        }
    }

    /// How long the next blocking call may wait: the time left, cut into
    /// slices when a signal must be noticed meanwhile.
    pub(super) fn slice(&self) -> io::Result<Option<Duration>> {
        let left = self.left()?;
        if !self.signals {
            return Ok(left);
        }
        Ok(Some(
            left.map_or(SIGNAL_SLICE, |left| left.min(SIGNAL_SLICE)),
        ))
    }

    /// `pause`, cut short so that it ends by the deadline at the latest.
    pub(in crate::state::redis) fn clamp(&self, pause: Duration) -> Duration {
        match self.end {
            None => pause,
            Some(end) => pause.min(end.saturating_duration_since(Instant::now())),
        }
    }

    /// Sleep `pause`, ending by the deadline at the latest, and at once
    /// (with [`Interrupted`]) when a signal to retry ends the exchange.
    pub(in crate::state::redis) fn pause(&self, pause: Duration) -> io::Result<()> {
        let wake = Instant::now() + self.clamp(pause);
        loop {
            if self.signals && terminating_arrived() {
                return Err(io::Error::other(Interrupted));
            }
            let left = wake.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            std::thread::sleep(left.min(SIGNAL_SLICE));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_never_outlasts_the_deadline() {
        let second = Duration::from_secs(1);
        let deadline = Deadline::new(Duration::from_millis(100), Patience::default());
        assert!(deadline.clamp(second) <= Duration::from_millis(100));
        assert_eq!(deadline.clamp(Duration::ZERO), Duration::ZERO);
        let spent = Deadline::new(Duration::ZERO, Patience::default());
        assert_eq!(spent.clamp(second), Duration::ZERO);
        let unlimited = Deadline {
            started: Instant::now(),
            end: None,
            by_run: false,
            signals: false,
        };
        assert_eq!(unlimited.clamp(second), second);
        assert_eq!(unlimited.share(3).end, None);
    }

    #[test]
    fn a_share_is_a_part_of_the_time_left() {
        let deadline = Deadline::new(Duration::from_secs(3), Patience::default());
        let share = deadline.share(3);
        let left = share.left().unwrap().unwrap();
        assert!(left <= Duration::from_secs(1), "{left:?}");
        assert!(left > Duration::from_millis(900), "{left:?}");
        assert!(deadline.share(0).end <= deadline.end);
        assert!(deadline.share(1).end <= deadline.end);
    }
}
