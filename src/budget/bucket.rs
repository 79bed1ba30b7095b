//! The retry budget's token bucket, as pure arithmetic on a stored state
//! with the clock passed in (milliseconds since the epoch), in the style of
//! `circuit::breaker`.
//!
//! Deposits: every first attempt of a run adds `ratio` tokens (Finagle's and
//! Linkerd's retry budgets: retries may add at most `ratio` of the first
//! attempts' load, whatever the fleet's size), and time adds `min_per_ms`
//! tokens per millisecond (their floor, so a lone job can still retry now
//! and then). Capacity: `burst`; a new bucket starts full, as gRPC's retry
//! throttling and the AWS SDK's retry quota do. Withdrawal: each retry takes
//! one whole token before it starts, or does not start.

use serde::{Deserialize, Serialize};

use crate::state::MOST_AHEAD_MS;

/// The budget's settings, stored with the bucket when it is created.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct BudgetSettings {
    /// Tokens deposited by each first attempt.
    pub(crate) ratio: f64,
    /// Tokens that flow in per millisecond.
    pub(crate) min_per_ms: f64,
    /// The bucket's capacity.
    pub(crate) burst: f64,
}

/// What is stored for a budget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct BucketState {
    pub(crate) tokens: f64,
    /// When time last flowed in.
    pub(crate) refilled_ms: u64,
    pub(crate) settings: BudgetSettings,
    /// Totals, for `--budget-status` and the fleet experiment.
    #[serde(default)]
    pub(crate) deposits: u64,
    #[serde(default)]
    pub(crate) withdrawals: u64,
    #[serde(default)]
    pub(crate) refusals: u64,
}

impl BucketState {
    /// A new (or reset) bucket: full.
    pub(crate) fn new(settings: BudgetSettings, now_ms: u64) -> BucketState {
        BucketState {
            tokens: settings.burst,
            refilled_ms: now_ms,
            settings,
            deposits: 0,
            withdrawals: 0,
            refusals: 0,
        }
    }

    /// Values another process wrote must make sense before any arithmetic:
    /// settings within what the flags accept (`--budget-ratio` up to 10,
    /// `--budget-min` up to a million a millisecond, `--budget-burst` up to
    /// a million), tokens within the bucket.
    pub(crate) fn is_sane(&self) -> bool {
        let s = &self.settings;
        let finite = [self.tokens, s.ratio, s.min_per_ms, s.burst]
            .iter()
            .all(|v| v.is_finite() && *v >= 0.0);
        finite
            && (1.0..=1e6).contains(&s.burst)
            && self.tokens <= s.burst
            && s.ratio <= 10.0
            && s.min_per_ms <= 1e6
    }

    /// Let time flow in up to `now_ms`. A clock that went back adds
    /// nothing, and a stored time a little ahead of ours (another host's
    /// clock, a few seconds fast) is waited for, so no time is counted
    /// twice. But a stored time more than [`MOST_AHEAD_MS`] ahead is a
    /// clock that jumped (a host set years ahead once, a restored virtual
    /// machine) and is taken as that much ahead only: otherwise nothing
    /// would flow in, on any host, until every clock had caught up with it.
    fn refill(&mut self, now_ms: u64) {
        let from = self.refilled_ms.min(now_ms.saturating_add(MOST_AHEAD_MS));
        let elapsed = now_ms.saturating_sub(from) as f64;
        self.tokens = (self.tokens + elapsed * self.settings.min_per_ms).min(self.settings.burst);
        self.refilled_ms = from.max(now_ms);
    }

    /// A run's first attempt: deposit `ratio`.
    pub(crate) fn deposit_first_attempt(&mut self, now_ms: u64) {
        self.refill(now_ms);
        self.tokens = (self.tokens + self.settings.ratio).min(self.settings.burst);
        self.deposits = self.deposits.saturating_add(1);
    }

    /// A retry asks for one whole token: `Ok` when taken, else the tokens
    /// there are (less than one).
    pub(crate) fn withdraw_retry(&mut self, now_ms: u64) -> Result<(), f64> {
        self.refill(now_ms);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            self.withdrawals = self.withdrawals.saturating_add(1);
            Ok(())
        } else {
            self.refusals = self.refusals.saturating_add(1);
            Err(self.tokens)
        }
    }

    /// The tokens there would be at `now_ms`, without changing anything.
    pub(crate) fn tokens_at(&self, now_ms: u64) -> f64 {
        let mut copy = self.clone();
        copy.refill(now_ms);
        copy.tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MIN: u64 = 60_000;

    fn defaults() -> BudgetSettings {
        BudgetSettings {
            ratio: 0.2,
            min_per_ms: 1.0 / MIN as f64,
            burst: 10.0,
        }
    }

    #[test]
    fn a_new_bucket_is_full_and_a_retry_takes_one_whole_token() {
        let mut bucket = BucketState::new(defaults(), 0);
        assert!((bucket.tokens - 10.0).abs() < 1e-9);
        for _ in 0..10 {
            assert_eq!(bucket.withdraw_retry(0), Ok(()));
        }
        let Err(left) = bucket.withdraw_retry(0) else {
            panic!("an empty bucket refused nothing")
        };
        assert!(left.abs() < 1e-9);
        assert_eq!((bucket.withdrawals, bucket.refusals), (10, 1));
    }

    #[test]
    fn first_attempts_deposit_the_ratio_and_time_the_floor() {
        let mut bucket = BucketState::new(defaults(), 0);
        bucket.tokens = 0.0;
        for _ in 0..5 {
            bucket.deposit_first_attempt(0);
        }
        assert!((bucket.tokens - 1.0).abs() < 1e-9, "{}", bucket.tokens);
        assert_eq!(bucket.withdraw_retry(0), Ok(()));
        assert!(bucket.withdraw_retry(0).is_err());
        // One minute later one token has flowed in.
        assert_eq!(bucket.withdraw_retry(MIN), Ok(()));
        assert!(bucket.withdraw_retry(MIN).is_err());
    }

    #[test]
    fn the_bucket_never_passes_its_capacity() {
        let mut bucket = BucketState::new(defaults(), 0);
        for _ in 0..1000 {
            bucket.deposit_first_attempt(0);
        }
        assert!((bucket.tokens - 10.0).abs() < 1e-9);
        assert!((bucket.tokens_at(1000 * MIN) - 10.0).abs() < 1e-9);
    }

    #[test]
    fn a_clock_that_goes_back_adds_nothing() {
        let mut bucket = BucketState::new(defaults(), 10 * MIN);
        bucket.tokens = 0.5;
        assert!(bucket.withdraw_retry(5 * MIN).is_err());
        assert!((bucket.tokens - 0.5).abs() < 1e-9);
    }

    #[test]
    fn a_clock_that_jumped_ahead_once_does_not_stop_time_for_everyone() {
        // A host whose clock was ten years ahead stored its time; every
        // host after it is back to the true time. Before: nothing flowed
        // in for ten years.
        let now = 1_800_000_000_000;
        let mut bucket = BucketState::new(defaults(), now + 10 * 365 * 24 * 60 * MIN);
        bucket.tokens = 0.0;
        assert!(bucket.withdraw_retry(now).is_err());
        assert!(bucket.refilled_ms <= now + MOST_AHEAD_MS);
        // Two minutes later: the minute it was believed ahead, then one
        // token's worth.
        assert_eq!(bucket.withdraw_retry(now + 2 * MIN), Ok(()));
        assert!(bucket.tokens.abs() < 1e-9, "{}", bucket.tokens);
        // A clock a little ahead is waited for: no time counts twice.
        let mut bucket = BucketState::new(defaults(), now + MIN / 2);
        bucket.tokens = 0.0;
        assert!(bucket.tokens_at(now + MIN / 2).abs() < 1e-9);
        assert!((bucket.tokens_at(now + MIN + MIN / 2) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn insane_stored_values_are_caught() {
        let mut bucket = BucketState::new(defaults(), 0);
        assert!(bucket.is_sane());
        for bad in [f64::NAN, f64::INFINITY, -1.0, 11.0] {
            bucket.tokens = bad;
            assert!(!bucket.is_sane(), "{bad}");
        }
        // Settings no flag can give: a rate that fills any bucket at once
        // (shown as "inf/s" before), a ratio or burst past the flags' range.
        let mut bucket = BucketState::new(defaults(), 0);
        bucket.settings.min_per_ms = 1e308;
        assert!(!bucket.is_sane());
        let mut bucket = BucketState::new(defaults(), 0);
        bucket.settings.ratio = 1e5;
        assert!(!bucket.is_sane());
        let mut bucket = BucketState::new(defaults(), 0);
        bucket.settings.burst = 1e7;
        assert!(!bucket.is_sane());
    }

    proptest! {
        /// Whatever the order of deposits and withdrawals and however time
        /// moves, tokens stay within [0, burst], and retries taken never
        /// exceed what came in: the start, the deposits and the time.
        #[test]
        fn retries_never_spend_more_than_came_in(
            steps in proptest::collection::vec((any::<bool>(), 0u64..10 * MIN), 1..300),
            ratio in 0.0f64..2.0,
            burst in 1.0f64..50.0,
        ) {
            let settings = BudgetSettings { ratio, min_per_ms: 1.0 / MIN as f64, burst };
            let mut bucket = BucketState::new(settings, 0);
            let mut now = 0;
            let mut deposits = 0.0;
            for (is_first, advance) in steps {
                now += advance;
                if is_first {
                    bucket.deposit_first_attempt(now);
                    deposits += ratio;
                } else {
                    let _ = bucket.withdraw_retry(now);
                }
                prop_assert!(bucket.tokens >= 0.0 && bucket.tokens <= burst + 1e-9);
            }
            let came_in = burst + deposits + now as f64 / MIN as f64;
            prop_assert!(bucket.withdrawals as f64 <= came_in + 1e-6);
        }
    }
}
