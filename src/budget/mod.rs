//! `--budget NAME`: a retry budget shared by every run that names it, on
//! this machine (the state directory) or on any host (Redis), through the
//! same stores, locking and transactions as circuits. Backoff spreads
//! retries out; a budget bounds how much load they may add at all: when a
//! dependency is down, first attempts still go ahead, but retries stop once
//! the bucket is empty.
//!
//! `bucket` holds the pure arithmetic; this module ties it to a store and
//! to the words for it. A store that cannot be used never stops a job: the
//! caller warns and retries as if the budget allowed it.

pub(crate) mod bucket;

use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::state::store::{Kind, Patience, Record, Store, read_record, update_record};
use crate::state::{Access, StateConfig, now_ms, open_store};
use bucket::{BucketState, BudgetSettings};

/// Budgets: `budget@NAME.json` in a state directory (a circuit name cannot
/// hold `@`, so the two never share a file), `retry:budget:NAME` in Redis.
pub(crate) const BUDGET: Kind = Kind {
    file_prefix: "budget@",
    key_prefix: "retry:budget:",
    noun: "retry budget",
    fallback: "starting it afresh, full",
    // Every run writes it, often all at once: not synced to disk (a power
    // cut can lose the last writes, or leave a record that reads as
    // corrupt: then it starts afresh, with a warning).
    durable: false,
};

/// The defaults, and why: 0.2 as Finagle's and Linkerd's retry budgets
/// (retries add at most 20 % to the load), a floor of one retry a minute
/// for a lone job, and a burst of 10 (a new bucket starts full, as gRPC's
/// retry throttling and the AWS SDK's quota do).
pub(crate) const DEFAULT_SETTINGS: BudgetSettings = BudgetSettings {
    ratio: 0.2,
    min_per_ms: 1.0 / 60_000.0,
    burst: 10.0,
};

/// What is stored: nothing yet, or the bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct StoredBudget(Option<BucketState>);

/// The last moment a stored time may name: the end of the year 9999.
const LAST_MS: u64 = 253_402_300_799_999;

impl Record for StoredBudget {
    const KIND: Kind = BUDGET;

    fn check(&self) -> Result<(), String> {
        let Some(bucket) = &self.0 else { return Ok(()) };
        if !bucket.is_sane() {
            return Err("tokens or settings out of range".to_string());
        }
        if bucket.refilled_ms > LAST_MS {
            return Err("a time past the year 9999".to_string());
        }
        Ok(())
    }
}

/// The budget settings from the command line.
#[derive(Clone, Debug)]
pub(crate) struct BudgetConfig {
    pub(crate) name: String,
    pub(crate) state: StateConfig,
    pub(crate) settings: BudgetSettings,
    /// Some setting was given on the command line (not only the defaults):
    /// a bucket stored with others is then worth a warning.
    pub(crate) explicit: bool,
}

pub(crate) struct Budget {
    pub(crate) name: String,
    store: Box<dyn Store>,
    settings: BudgetSettings,
    explicit: bool,
    /// The stored settings differ from those given: said once a run.
    mismatch_said: std::cell::Cell<bool>,
}

/// What a retry got from the budget.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Withdrawal {
    Taken { left: f64 },
    Refused { tokens: f64 },
}

/// `0.2 per first attempt, 1/min, burst 10`.
pub(crate) fn describe(settings: &BudgetSettings) -> String {
    format!(
        "{} per first attempt, {}, burst {}",
        trim(settings.ratio),
        rate(settings.min_per_ms),
        trim(settings.burst)
    )
}

fn trim(value: f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Tokens per millisecond as the flag writes them: `1/min`, `10/s`.
fn rate(per_ms: f64) -> String {
    for (unit, ms) in [("s", 1000.0), ("min", 60_000.0), ("h", 3_600_000.0)] {
        let count = per_ms * ms;
        if count >= 1.0 || unit == "h" {
            return format!("{}/{unit}", trim(count));
        }
    }
    unreachable!("the last unit always answers")
}

impl Budget {
    /// Open budget `config` names, in its store, for `access`.
    pub(crate) fn open(config: &BudgetConfig, access: Access) -> Result<Budget> {
        // A bucket nobody touched for a week is forgotten: a new one starts
        // full, which is where time would have filled it anyway.
        let ttl = Duration::from_secs(7 * 24 * 3600);
        let store = open_store(&config.state, ttl, access)?;
        Ok(Budget {
            name: config.name.clone(),
            store,
            settings: config.settings,
            explicit: config.explicit,
            mismatch_said: std::cell::Cell::new(false),
        })
    }

    /// Load the bucket (a new one full, with our settings), change it, and
    /// store it; warnings on the way. `change` may run more than once (a
    /// shared store repeats a transaction another host got in between):
    /// only its last run counts.
    fn update<T>(
        &self,
        patience: Patience,
        mut change: impl FnMut(&mut BucketState) -> T,
    ) -> Result<(T, Vec<String>)> {
        let now = now_ms();
        let mut result = None;
        let mut mismatch = None;
        let updated =
            update_record::<StoredBudget, _>(&*self.store, &self.name, patience, &mut |stored| {
                let bucket = stored
                    .0
                    .get_or_insert_with(|| BucketState::new(self.settings, now));
                mismatch =
                    (self.explicit && bucket.settings != self.settings).then_some(bucket.settings);
                result = Some(change(bucket));
            })?;
        let mut warnings: Vec<String> = updated.warning.into_iter().collect();
        if let Some(stored) = mismatch.filter(|_| !self.mismatch_said.replace(true)) {
            warnings.push(self.mismatch(&stored));
        }
        let result = result.ok_or_else(|| anyhow::anyhow!("the store never read the budget"))?;
        Ok((result, warnings))
    }

    /// The bucket was stored with other settings than those given.
    fn mismatch(&self, stored: &BudgetSettings) -> String {
        format!(
            "retry budget {} was created with {}; using those, not {} (--budget-reset changes them)",
            self.name,
            describe(stored),
            describe(&self.settings)
        )
    }

    /// A run's first attempt: deposit the ratio. Returns the tokens after.
    /// Asked during a run: `patience` carries its deadline, and a signal
    /// ends the wait ([`Interrupted`](crate::state::store::Interrupted)).
    pub(crate) fn deposit(&self, patience: Patience) -> Result<(f64, Vec<String>)> {
        self.update(patience, |bucket| {
            bucket.deposit_first_attempt(now_ms());
            bucket.tokens
        })
    }

    /// A retry asks for one whole token (within `patience`, as `deposit`).
    pub(crate) fn withdraw(&self, patience: Patience) -> Result<(Withdrawal, Vec<String>)> {
        self.update(patience, |bucket| match bucket.withdraw_retry(now_ms()) {
            Ok(()) => Withdrawal::Taken {
                left: bucket.tokens,
            },
            Err(tokens) => Withdrawal::Refused { tokens },
        })
    }

    /// `--budget-reset`: a full bucket with the settings given.
    pub(crate) fn reset(&self) -> Result<Vec<String>> {
        let settings = self.settings;
        let ((), warnings) = self.update(Patience::default(), |bucket| {
            *bucket = BucketState::new(settings, now_ms());
        })?;
        // A mismatch with what was stored is what a reset is for.
        Ok(warnings
            .into_iter()
            .filter(|w| !w.contains("--budget-reset"))
            .collect())
    }

    /// `--budget-status`: tokens, settings, totals and where it is kept.
    /// Only read: a missing bucket is shown as a new one would start, and
    /// nothing is written (a read-only state directory will do).
    pub(crate) fn status(&self) -> Result<String> {
        let now = now_ms();
        let read = read_record::<StoredBudget, _>(&*self.store, &self.name)?;
        let bucket = read
            .state
            .0
            .unwrap_or_else(|| BucketState::new(self.settings, now));
        let tokens = bucket.tokens_at(now);
        let mismatch = (self.explicit && bucket.settings != self.settings)
            .then(|| self.mismatch(&bucket.settings));
        let mut text = String::new();
        for warning in read.warning.into_iter().chain(mismatch) {
            text.push_str(&format!("warning: {warning}\n"));
        }
        text.push_str(&format!(
            "retry budget {}: {} of {} tokens (a retry takes 1)\n",
            self.name,
            trim((tokens * 10.0).floor() / 10.0),
            trim(bucket.settings.burst)
        ));
        text.push_str(&format!("settings: {}\n", describe(&bucket.settings)));
        text.push_str(&format!(
            "since created: {} first attempts, {} retries allowed, {} refused\n",
            bucket.deposits, bucket.withdrawals, bucket.refusals
        ));
        text.push_str(&format!(
            "stored in: {}\n",
            self.store.describe_record(&BUDGET, &self.name)
        ));
        Ok(text)
    }
}

/// For `--explain`: what the budget allows.
pub(crate) fn explain(name: &str, settings: &BudgetSettings) -> String {
    let share = settings.ratio * 100.0;
    format!(
        "Retry budget {name}: each run's first attempt deposits {} tokens and {} flows in with time, up to {} (a new bucket starts full); each retry takes 1 token or does not happen. With many runs, retries add at most {}% to the first attempts' load; with the bucket full, {} retries may go at once. These are the settings given here: a bucket stored with others keeps its own (--budget-status shows them).",
        trim(settings.ratio),
        rate(settings.min_per_ms),
        trim(settings.burst),
        trim(share),
        trim(settings.burst.floor())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_as_the_flags_write_them() {
        assert_eq!(
            describe(&DEFAULT_SETTINGS),
            "0.2 per first attempt, 1/min, burst 10"
        );
        let fast = BudgetSettings {
            ratio: 0.05,
            min_per_ms: 0.01,
            burst: 3.0,
        };
        assert_eq!(describe(&fast), "0.05 per first attempt, 10/s, burst 3");
        let none = BudgetSettings {
            min_per_ms: 0.0,
            ..fast
        };
        assert_eq!(rate(none.min_per_ms), "0/h");
    }

    #[test]
    fn stored_values_out_of_range_are_refused() {
        let mut bucket = BucketState::new(DEFAULT_SETTINGS, 0);
        assert!(StoredBudget(Some(bucket.clone())).check().is_ok());
        bucket.refilled_ms = u64::MAX;
        assert!(StoredBudget(Some(bucket.clone())).check().is_err());
        bucket.refilled_ms = 0;
        bucket.tokens = f64::NAN;
        assert!(StoredBudget(Some(bucket)).check().is_err());
        let garbage: Result<StoredBudget, _> =
            serde_json::from_str(r#"{"tokens": 1e400, "refilled_ms": 1, "settings": {}}"#);
        assert!(garbage.is_err());
    }
}
