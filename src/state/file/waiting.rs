//! Waiting for a record's lock that a thread of its own waits for in the
//! system's queue (`flock`, `LockFileEx`): the wait is watched from here,
//! for the store's time limit and the run's, and for signals to retry. The
//! same on every system.

use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::{Interrupted, Patience, SIGNAL_SLICE};

/// One wait for a lock: for messages, the lock file and the record; when
/// it began, how long the store waits, and the run's patience.
pub(super) struct LockWait<'a> {
    pub(super) lock: &'a Path,
    pub(super) record: &'a Path,
    pub(super) started: Instant,
    pub(super) timeout: Duration,
    pub(super) patience: Patience,
}

impl LockWait<'_> {
    /// The lock (with what holds it) from `waiting`, once the thread has
    /// it; an error at the deadline (the store's time limit or the run's,
    /// whichever comes first) or when a signal to retry arrived (looked at
    /// every [`SIGNAL_SLICE`]).
    pub(super) fn until_locked<T, E>(&self, waiting: &Receiver<Result<T, E>>) -> Result<T>
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        let (deadline, by_run) = self.patience.end(self.started, self.timeout);
        loop {
            let left = deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()));
            let slice = left.map_or(SIGNAL_SLICE, |left| left.min(SIGNAL_SLICE));
            match waiting.recv_timeout(slice) {
                Ok(Ok(held)) => return Ok(held),
                Ok(Err(err)) => {
                    return Err(err).with_context(|| format!("locking {}", self.lock.display()));
                }
                Err(RecvTimeoutError::Timeout) => {}
                // The waiter is gone without an answer: no lock will come,
                // and waiting on would only spin until the deadline.
                Err(RecvTimeoutError::Disconnected) => {
                    bail!(
                        "locking {}: the wait for the lock ended without it",
                        self.lock.display()
                    );
                }
            }
            if self.patience.interrupted() {
                return Err(Interrupted.into());
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                let within = if by_run {
                    format!(
                        "before --max-time ran out ({:.2}s)",
                        self.started.elapsed().as_secs_f64()
                    )
                } else {
                    format!("within {}", crate::values::human(self.timeout))
                };
                bail!(
                    "could not lock {} {within} (held by another process)",
                    self.record.display()
                );
            }
        }
    }
}
