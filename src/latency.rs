//! What `--hedge-after p95` learns: how long the last successful attempts
//! of a name (the run's `--circuit`, else its `--budget`) took, kept in the
//! same store as that circuit or budget, as a record of its own kind, so
//! that every run of the machine (or of the fleet, through Redis) hedges at
//! the 95th percentile of what succeeding takes (`policy::hedging::p95`).
//! Bounded: the last [`KEPT`] durations, each at most a day.

use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::state::store::{Kind, Patience, Record, Store, read_record, update_record};
use crate::state::{Access, StateConfig, open_store};

pub(crate) const LATENCY: Kind = Kind {
    file_prefix: "latency@",
    key_prefix: "retry:latency:",
    noun: "record of successful attempts' durations",
    fallback: "learning afresh",
    // Losing the last few durations to a power cut only makes a run learn
    // them again.
    durable: false,
};

/// How many durations are kept: the newest replace the oldest.
pub(crate) const KEPT: usize = 100;

/// The longest duration kept, in milliseconds (a day).
const MOST_MS: u64 = 24 * 3600 * 1000;

/// The stored durations, oldest first, in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Learned {
    durations_ms: Vec<u64>,
}

impl Record for Learned {
    const KIND: Kind = LATENCY;

    fn check(&self) -> Result<(), String> {
        if self.durations_ms.len() > KEPT {
            return Err(format!("more than {KEPT} durations"));
        }
        if self.durations_ms.iter().any(|&ms| ms > MOST_MS) {
            return Err("a duration over a day".to_string());
        }
        Ok(())
    }
}

impl Learned {
    /// Add one duration, keeping the last [`KEPT`].
    fn add(&mut self, took: Duration) {
        let ms = u64::try_from(took.as_millis())
            .unwrap_or(u64::MAX)
            .min(MOST_MS);
        self.durations_ms.push(ms);
        let extra = self.durations_ms.len().saturating_sub(KEPT);
        self.durations_ms.drain(..extra);
    }

    fn durations(&self) -> Vec<Duration> {
        self.durations_ms
            .iter()
            .map(|&ms| Duration::from_millis(ms))
            .collect()
    }
}

/// The learned durations of one name, in its store.
pub(crate) struct Latency {
    name: String,
    store: Box<dyn Store>,
}

impl Latency {
    pub(crate) fn open(name: &str, state: &StateConfig) -> Result<Latency> {
        // Forgotten after a month without a run.
        let ttl = Duration::from_secs(30 * 24 * 3600);
        Ok(Latency {
            name: name.to_string(),
            store: open_store(state, ttl, Access::Update)?,
        })
    }

    /// The durations learned so far, oldest first, and a warning if the
    /// record was unusable.
    pub(crate) fn durations(&self) -> Result<(Vec<Duration>, Option<String>)> {
        let read = read_record::<Learned, _>(self.store.as_ref(), &self.name)?;
        Ok((read.state.durations(), read.warning))
    }

    /// A successful attempt took `took`: learn it.
    pub(crate) fn learn(&self, took: Duration) -> Result<Option<String>> {
        let updated = update_record::<Learned, _>(
            self.store.as_ref(),
            &self.name,
            Patience::SIGNALS,
            &mut |learned| learned.add(took),
        )?;
        Ok(updated.warning)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_durations_are_kept_and_bounded() {
        let mut learned = Learned::default();
        for ms in 0..150 {
            learned.add(Duration::from_millis(ms));
        }
        assert_eq!(learned.durations_ms.len(), KEPT);
        assert_eq!(learned.durations_ms[0], 50);
        learned.add(Duration::from_secs(3 * 24 * 3600));
        assert_eq!(*learned.durations_ms.last().unwrap(), MOST_MS);
        assert!(learned.check().is_ok());
        let absurd = Learned {
            durations_ms: vec![MOST_MS + 1],
        };
        assert!(absurd.check().is_err());
    }
}
