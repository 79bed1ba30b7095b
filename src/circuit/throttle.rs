//! `--circuit-mode adaptive`: the adaptive throttle of `adaptive`, kept in
//! the stores beside the breakers' circuits, under a record of its own
//! (`adaptive@NAME.json`, `retry:adaptive:NAME`): one small JSON document
//! per circuit, updated with the same locking (a file) or compare-and-set
//! (Redis, one key, so one slot of a cluster) as every other record.
//! A run updates it twice: when it asks (a request, and whether it is
//! rejected) and when it ends (its further attempts, and the accepts).

use std::cell::{Cell, RefCell};
use std::time::Duration;

use anyhow::Result;

use super::adaptive::{self, AdaptiveState, Counts, Judged, Settings, Tally};
use crate::state::now_ms;
use crate::state::store::{Kind, Patience, Record, Store, read_record, update_record};
use crate::values::human;

/// Adaptive circuits: `adaptive@NAME.json` in a state directory (a
/// circuit name cannot hold `@`), `retry:adaptive:NAME` in Redis.
pub(crate) const ADAPTIVE: Kind = Kind {
    file_prefix: "adaptive@",
    key_prefix: "retry:adaptive:",
    noun: "adaptive circuit state",
    fallback: "counting afresh",
    // Written twice by every run: not synced to disk. A power cut loses
    // the last counts, which only start the window afresh.
    durable: false,
};

impl Record for AdaptiveState {
    const KIND: Kind = ADAPTIVE;

    fn check(&self) -> Result<(), String> {
        AdaptiveState::check(self)
    }
}

/// A uniform draw in [0, 1): the randomness of the rejections.
pub(crate) type Draw = Box<dyn FnMut() -> f64>;

/// An adaptive circuit in its store.
pub(crate) struct Throttle {
    pub(crate) name: String,
    store: Box<dyn Store>,
    settings: Settings,
    draw: RefCell<Draw>,
    /// When this run was admitted: a run that made no attempt takes its
    /// request back from that bucket.
    admitted_ms: Cell<u64>,
}

/// `0.83`; `0` and `1` bare.
pub(crate) fn share(probability: f64) -> String {
    let text = format!("{probability:.2}");
    match text.as_str() {
        "0.00" if probability > 0.0 => "<0.01".into(),
        "1.00" if probability < 1.0 => ">0.99".into(),
        _ => text.trim_end_matches('0').trim_end_matches('.').to_string(),
    }
}

/// `--circuit-k 2, --circuit-window 2m`.
pub(crate) fn describe(k: f64, window: Duration) -> String {
    format!("--circuit-k {k}, --circuit-window {}", human(window))
}

/// `max(0, (120 - 2 x 10) / (120 + 1))`.
fn formula(counts: Counts, k: f64) -> String {
    format!(
        "max(0, ({r} - {k} x {a}) / ({r} + 1))",
        r = counts.requests,
        a = counts.accepts
    )
}

impl Throttle {
    pub(crate) fn new(
        name: &str,
        store: Box<dyn Store>,
        settings: Settings,
        draw: Draw,
    ) -> Throttle {
        Throttle {
            name: name.to_string(),
            store,
            settings,
            draw: RefCell::new(draw),
            admitted_ms: Cell::new(0),
        }
    }

    fn window(&self) -> String {
        human(self.settings.window)
    }

    /// Count this run as a request, and decide whether it is rejected.
    /// Nothing has run yet: a signal to retry ends the wait at once.
    pub(crate) fn admit(&self) -> Result<(Judged, AdaptiveState, Option<String>)> {
        let now = now_ms();
        let draw = (self.draw.borrow_mut())();
        let mut judged = None;
        let updated = update_record(&*self.store, &self.name, Patience::SIGNALS, &mut |state| {
            judged = Some(adaptive::admit(state, &self.settings, now, draw));
        })?;
        self.admitted_ms.set(now);
        let judged = judged.ok_or_else(|| anyhow::anyhow!("the store never read the circuit"))?;
        Ok((judged, updated.state, updated.warning))
    }

    /// Count the run's further attempts and its accepts.
    pub(crate) fn record(&self, tally: Tally) -> Result<Option<String>> {
        let (settings, admitted) = (&self.settings, self.admitted_ms.get());
        let updated = update_record::<AdaptiveState, _>(
            &*self.store,
            &self.name,
            Patience::default(),
            &mut |state| adaptive::record(state, settings, now_ms(), admitted, tally),
        )?;
        Ok(updated.warning)
    }

    /// Forget every count.
    pub(crate) fn reset(&self) -> Result<Option<String>> {
        let k = self.settings.k;
        let bucket_ms = self.settings.bucket_ms();
        let updated = update_record::<AdaptiveState, _>(
            &*self.store,
            &self.name,
            Patience::default(),
            &mut |state| {
                *state = AdaptiveState {
                    bucket_ms,
                    buckets: Vec::new(),
                    k: Some(k),
                    updated_ms: now_ms(),
                }
            },
        )?;
        Ok(updated.warning)
    }

    /// `--circuit-status`: the window's counts and the probability now.
    /// Only read; counted in the stored buckets (the window of the run that
    /// stored them), with this command line's K.
    pub(crate) fn status(&self) -> Result<String> {
        let read = read_record::<AdaptiveState, _>(&*self.store, &self.name)?;
        let state = read.state;
        let counts = state.counts(now_ms());
        let k = self.settings.k;
        let probability = adaptive::probability(counts, k);
        let mut text = String::new();
        if let Some(warning) = read.warning {
            text.push_str(&format!("warning: {warning}\n"));
        }
        if let Some((stored, given)) = self.differs(&state) {
            text.push_str(&format!(
                "warning: circuit {} was stored with {stored}; counted in its window, with this command line's K ({given})\n",
                self.name
            ));
        }
        let doing = if probability > 0.0 {
            format!(
                "throttling: rejects a run with probability {}",
                share(probability)
            )
        } else {
            "not throttling".to_string()
        };
        text.push_str(&format!("circuit {} (adaptive): {doing}\n", self.name));
        // Counted in the stored buckets: the window they make.
        let window = match state.bucket_ms {
            0 => self.window(),
            width => human(Duration::from_millis(width * adaptive::BUCKETS)),
        };
        text.push_str(&format!(
            "in the last {window}: {} requests, {} accepts, {} runs rejected locally\n",
            counts.requests, counts.accepts, counts.rejected
        ));
        text.push_str(&format!(
            "rejection probability: {} = {} (K {k})\n",
            formula(counts, k),
            share(probability)
        ));
        text.push_str(&format!(
            "stored in: {}\n",
            self.store.describe_record(&ADAPTIVE, &self.name)
        ));
        Ok(text)
    }

    /// `-v`, at the start of a run: the window as admission found it.
    pub(crate) fn summary(&self, judged: &Judged) -> String {
        format!(
            "circuit {} (adaptive, K {}): {} requests, {} accepts in the last {}; rejection probability {}; kept in {}",
            self.name,
            self.settings.k,
            judged.counts.requests,
            judged.counts.accepts,
            self.window(),
            share(judged.probability),
            self.store.describe_record(&ADAPTIVE, &self.name)
        )
    }

    /// The settings `stored` was written with, when they differ from
    /// those given: (stored, given), as the flags write them.
    fn differs(&self, stored: &AdaptiveState) -> Option<(String, String)> {
        let k = stored.k?;
        let window = Duration::from_millis(stored.bucket_ms * adaptive::BUCKETS);
        let given = &self.settings;
        let differs = (k - given.k).abs() > f64::EPSILON || stored.bucket_ms != given.bucket_ms();
        differs.then(|| (describe(k, window), describe(given.k, given.window)))
    }

    /// Said at the start of a run whose K or window differ from those the
    /// last run stored: this run's apply (its window rebuckets the counts).
    pub(crate) fn mismatch(&self, stored: &AdaptiveState) -> Option<String> {
        let (stored, given) = self.differs(stored)?;
        Some(format!(
            "circuit {} was stored with {stored}; this run uses {given} and stores them (give every run that names the circuit the same settings)",
            self.name
        ))
    }

    /// The message for a run rejected locally.
    pub(crate) fn refusal(&self, judged: &Judged) -> String {
        format!(
            "circuit {} throttled this run locally (adaptive): {} requests, {} accepts in the last {}, rejection probability {} = {}; not running the command",
            self.name,
            judged.counts.requests,
            judged.counts.accepts,
            self.window(),
            formula(judged.counts, self.settings.k),
            share(judged.probability)
        )
    }
}

/// For `--explain`.
pub(crate) fn explain(name: &str, settings: &Settings) -> String {
    format!(
        "Circuit {name} (adaptive): each run counts as a request, each further attempt as another, and each attempt the backend answered (a success, a permanent failure) as an accept; over the last {} a run is rejected locally (exit 75, nothing run) with probability max(0, (requests - {} x accepts) / (requests + 1)), so the backend receives about {} times what it accepts.",
        human(settings.window),
        settings.k,
        settings.k
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_short_and_never_round_to_a_lie() {
        assert_eq!(share(0.0), "0");
        assert_eq!(share(0.826), "0.83");
        assert_eq!(share(0.5), "0.5");
        assert_eq!(share(0.001), "<0.01");
        assert_eq!(share(0.999), ">0.99");
        assert_eq!(share(1.0), "1");
    }
}
