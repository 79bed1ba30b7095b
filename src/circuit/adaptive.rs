//! Adaptive client-side throttling (`--circuit-mode adaptive`), pure: the
//! clock comes in as `now` (milliseconds since the Unix epoch, shared by
//! every process and host) and the randomness as a draw in [0, 1).
//!
//! Google's SRE book ("Handling Overload", client-side throttling): over
//! the last window (two minutes), count `requests` (every attempt the
//! runs wanted to make, those rejected here included) and `accepts` (those
//! the backend accepted), and reject a new run locally with probability
//! `max(0, (requests - K x accepts) / (requests + 1))`. While the backend
//! accepts, nothing is rejected; once requests pass K times the accepts,
//! the runs beyond that are rejected here, so the backend receives about
//! K times what it accepts. Unlike the breaker, it never shuts the door:
//! some runs always go ahead, and as accepts come back it opens by itself.
//!
//! The counts are a ring of [`BUCKETS`] time buckets over the window, so
//! old counts age out a bucket at a time and the record stays small
//! whatever the traffic.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::breaker::{LATEST_MS, LONGEST_COOLDOWN_MS};
use crate::state::MOST_AHEAD_MS;

/// The window is kept as this many buckets (2m: 10s each).
pub(crate) const BUCKETS: u64 = 12;

/// Most buckets a stored state may hold: the window's, and as many ahead
/// of this host's clock (written by hosts whose clocks are a little fast).
pub(crate) const MOST_BUCKETS: usize = 2 * BUCKETS as usize + 1;

/// More requests in one bucket than any fleet makes (a million a second
/// for ten days).
pub(crate) const MOST_COUNT: u64 = 1_000_000_000_000;

/// `--circuit-k`: the SRE book's K (2; 1.1 throttles sooner, and more).
pub(crate) const DEFAULT_K: f64 = 2.0;
/// The range `--circuit-k` accepts: below 1, healthy traffic is rejected.
pub(crate) const K_RANGE: std::ops::RangeInclusive<f64> = 1.0..=1000.0;
/// `--circuit-window`: the SRE book's two minutes.
pub(crate) const DEFAULT_WINDOW: Duration = Duration::from_secs(120);

/// The adaptive mode's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Settings {
    pub(crate) k: f64,
    pub(crate) window: Duration,
}

impl Settings {
    /// Each bucket's width: the window / [`BUCKETS`], at least 1 ms.
    pub(crate) fn bucket_ms(&self) -> u64 {
        let window = self.window.as_millis().min(u128::from(LONGEST_COOLDOWN_MS)) as u64;
        (window / BUCKETS).max(1)
    }
}

/// What the window holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Attempts the runs wanted to make (those rejected here included).
    pub(crate) requests: u64,
    /// Attempts the backend accepted.
    pub(crate) accepts: u64,
    /// Runs rejected here (counted in `requests` too).
    pub(crate) rejected: u64,
}

/// One bucket: `[start_ms, requests, accepts, rejected]`, its start a
/// multiple of the width.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Bucket(
    pub(crate) u64,
    pub(crate) u64,
    pub(crate) u64,
    pub(crate) u64,
);

impl Bucket {
    fn start(&self) -> u64 {
        self.0
    }

    fn add(&mut self, delta: Counts) {
        let add = |count: &mut u64, more: u64| *count = count.saturating_add(more).min(MOST_COUNT);
        add(&mut self.1, delta.requests);
        add(&mut self.2, delta.accepts);
        add(&mut self.3, delta.rejected);
    }
}

/// What is stored per circuit in the adaptive mode.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct AdaptiveState {
    /// The buckets' width (the window / 12) of the run that last wrote.
    pub(crate) bucket_ms: u64,
    /// Oldest first.
    pub(crate) buckets: Vec<Bucket>,
    /// K of the run that last wrote, for `--circuit-status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) k: Option<f64>,
    pub(crate) updated_ms: u64,
}

/// The answer to "may this run go ahead?", and what it was based on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Judged {
    pub(crate) rejected: bool,
    /// The window before this run was counted.
    pub(crate) counts: Counts,
    pub(crate) probability: f64,
}

/// How an admitted run went: every attempt it made is a request, those
/// the backend accepted (a success, a permanent failure: an answer) are
/// accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) attempts: u64,
    pub(crate) accepts: u64,
}

/// The SRE book's rejection probability.
pub(crate) fn probability(counts: Counts, k: f64) -> f64 {
    let requests = counts.requests as f64;
    ((requests - k * counts.accepts as f64) / (requests + 1.0)).clamp(0.0, 1.0)
}

impl AdaptiveState {
    /// Values another process wrote must be in range before any arithmetic.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.updated_ms > LATEST_MS {
            return Err(format!(
                "updated_ms {} is past the year 9999",
                self.updated_ms
            ));
        }
        if self.bucket_ms > LONGEST_COOLDOWN_MS / BUCKETS
            || (self.bucket_ms == 0 && !self.buckets.is_empty())
        {
            return Err(format!("bucket_ms {} is out of range", self.bucket_ms));
        }
        if self.buckets.len() > MOST_BUCKETS {
            return Err(format!(
                "{} buckets, more than {MOST_BUCKETS}",
                self.buckets.len()
            ));
        }
        for bucket in &self.buckets {
            if bucket.start() > LATEST_MS {
                return Err(format!(
                    "a bucket at {} is past the year 9999",
                    bucket.start()
                ));
            }
            if [bucket.1, bucket.2, bucket.3]
                .iter()
                .any(|&c| c > MOST_COUNT)
            {
                return Err("a bucket's count is out of range".into());
            }
        }
        if let Some(k) = self.k
            && !K_RANGE.contains(&k)
        {
            return Err(format!("k {k} is out of range"));
        }
        Ok(())
    }

    /// The counts of the window at `now`, in the buckets' own width.
    pub(crate) fn counts(&self, now_ms: u64) -> Counts {
        let mut counts = Counts::default();
        for bucket in self
            .buckets
            .iter()
            .filter(|b| live(b.start(), self.bucket_ms, now_ms))
        {
            counts.requests += bucket.1;
            counts.accepts += bucket.2;
            counts.rejected += bucket.3;
        }
        counts
    }

    /// Bring the buckets to `settings`' width (merging them by their
    /// start), drop those that have aged, and believe a bucket ahead of
    /// `now` only as far as a clock a little fast could have put it: one
    /// further ahead (a host whose clock jumped, or ours that is behind)
    /// is taken as now's, so its counts neither vanish nor last for years.
    fn settle(&mut self, settings: &Settings, now_ms: u64) {
        let width = settings.bucket_ms();
        let old = std::mem::take(&mut self.buckets);
        let old_width = self.bucket_ms.max(1);
        self.bucket_ms = width;
        let latest = now_ms.saturating_add(MOST_AHEAD_MS.min(width.saturating_mul(BUCKETS)));
        for mut bucket in old {
            // A wider bucket's counts move to the narrower bucket of its
            // end, so that they age no sooner than they would have.
            if old_width > width {
                bucket.0 = bucket.0.saturating_add(old_width - 1);
            }
            if bucket.0 > latest {
                bucket.0 = now_ms;
            }
            bucket.0 = bucket.0.min(LATEST_MS);
            bucket.0 -= bucket.0 % width;
            if !live(bucket.start(), width, now_ms) {
                continue;
            }
            match self
                .buckets
                .iter_mut()
                .find(|b| b.start() == bucket.start())
            {
                Some(same) => same.add(Counts {
                    requests: bucket.1,
                    accepts: bucket.2,
                    rejected: bucket.3,
                }),
                None => self.buckets.push(bucket),
            }
        }
        self.buckets.sort_by_key(Bucket::start);
    }

    /// Count `delta` in the bucket of `at_ms` (normally now).
    fn add(&mut self, at_ms: u64, delta: Counts) {
        let width = self.bucket_ms.max(1);
        let start = at_ms - at_ms % width;
        if let Some(bucket) = self.buckets.iter_mut().find(|b| b.start() == start) {
            bucket.add(delta);
        } else {
            let mut bucket = Bucket(start, 0, 0, 0);
            bucket.add(delta);
            self.buckets.push(bucket);
            self.buckets.sort_by_key(Bucket::start);
        }
        // Only a clock far behind the others could add an old bucket
        // beyond the bound: the oldest go first.
        while self.buckets.len() > MOST_BUCKETS {
            self.buckets.remove(0);
        }
    }
}

/// Whether a bucket starting at `start` (of `width`) still counts at
/// `now`: it started within the last [`BUCKETS`] widths, or later.
fn live(start: u64, width: u64, now_ms: u64) -> bool {
    start.saturating_add(width.saturating_mul(BUCKETS)) > now_ms
}

/// Decide whether a run may go ahead, with `draw` uniform in [0, 1), and
/// count it as a request (and, if rejected, as rejected).
pub(crate) fn admit(
    state: &mut AdaptiveState,
    settings: &Settings,
    now_ms: u64,
    draw: f64,
) -> Judged {
    state.settle(settings, now_ms);
    let counts = state.counts(now_ms);
    let probability = probability(counts, settings.k);
    let rejected = draw < probability;
    state.add(
        now_ms,
        Counts {
            requests: 1,
            accepts: 0,
            rejected: u64::from(rejected),
        },
    );
    state.k = Some(settings.k);
    state.updated_ms = now_ms;
    Judged {
        rejected,
        counts,
        probability,
    }
}

/// Record how a run admitted at `admitted_ms` went. Its first attempt was
/// counted when it was admitted; a run that made none (its deadline had
/// passed, retry failed on its own) takes that request back.
pub(crate) fn record(
    state: &mut AdaptiveState,
    settings: &Settings,
    now_ms: u64,
    admitted_ms: u64,
    tally: Tally,
) {
    state.settle(settings, now_ms);
    if tally.attempts == 0 {
        let width = state.bucket_ms.max(1);
        let start = admitted_ms - admitted_ms % width;
        if let Some(bucket) = state.buckets.iter_mut().find(|b| b.start() == start) {
            bucket.1 = bucket.1.saturating_sub(1);
        }
    } else {
        state.add(
            now_ms,
            Counts {
                requests: tally.attempts - 1,
                accepts: tally.accepts.min(tally.attempts),
                rejected: 0,
            },
        );
    }
    state.k = Some(settings.k);
    state.updated_ms = now_ms;
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: u64 = 60_000;

    fn settings() -> Settings {
        Settings {
            k: 2.0,
            window: Duration::from_secs(120),
        }
    }

    fn counts(requests: u64, accepts: u64) -> Counts {
        Counts {
            requests,
            accepts,
            rejected: 0,
        }
    }

    #[test]
    fn the_probability_is_the_sre_books() {
        for (requests, accepts, k, expected) in [
            // Nothing yet, or everything accepted: nothing rejected.
            (0, 0, 2.0, 0.0),
            (100, 100, 2.0, 0.0),
            // Up to K x accepts, nothing rejected.
            (100, 50, 2.0, 0.0),
            (100, 60, 2.0, 0.0),
            // Beyond it, the excess over K x accepts.
            (100, 10, 2.0, 80.0 / 101.0),
            (100, 10, 1.1, 89.0 / 101.0),
            (100, 40, 2.0, 20.0 / 101.0),
            // Nothing accepted: almost everything, never all.
            (1, 0, 2.0, 0.5),
            (9, 0, 2.0, 0.9),
            (999, 0, 2.0, 0.999),
            // A large K throttles only a backend that accepts next to nothing.
            (100, 1, 1000.0, 0.0),
            (
                MOST_COUNT,
                0,
                2.0,
                MOST_COUNT as f64 / (MOST_COUNT as f64 + 1.0),
            ),
        ] {
            let p = probability(counts(requests, accepts), k);
            assert!(
                (p - expected).abs() < 1e-12,
                "{requests} {accepts} {k}: {p} != {expected}"
            );
            assert!((0.0..1.0).contains(&p));
        }
    }

    #[test]
    fn a_run_is_rejected_when_the_draw_falls_under_the_probability() {
        let s = settings();
        // 9 requests, none accepted: p = 0.9.
        let nine = || {
            let mut state = AdaptiveState::default();
            state.settle(&s, 0);
            state.add(0, counts(9, 0));
            state
        };
        for (draw, rejected) in [(0.0, true), (0.899, true), (0.9, false), (0.999, false)] {
            let mut state = nine();
            let judged = admit(&mut state, &s, 1000, draw);
            assert_eq!(judged.rejected, rejected, "{draw}");
            assert!((judged.probability - 0.9).abs() < 1e-12);
            assert_eq!(judged.counts, counts(9, 0));
            // Counted as a request either way; a rejection as one too.
            let after = state.counts(1000);
            assert_eq!(after.requests, 10);
            assert_eq!(after.rejected, u64::from(rejected));
        }
    }

    #[test]
    fn successes_never_reject_and_failures_throttle() {
        let s = settings();
        let mut state = AdaptiveState::default();
        for i in 0..100 {
            let judged = admit(&mut state, &s, i * 100, 0.0);
            assert!(!judged.rejected, "{i}");
            let tally = Tally {
                attempts: 1,
                accepts: 1,
            };
            record(&mut state, &s, i * 100 + 50, i * 100, tally);
        }
        assert_eq!(state.counts(10_000), counts(100, 100));
        // Then every attempt fails: nothing is rejected until the requests
        // pass K x accepts (200), and then (draw 0) the next run is.
        let mut now = 10_000;
        let failed = Tally {
            attempts: 1,
            accepts: 0,
        };
        for _ in 0..101 {
            assert!(!admit(&mut state, &s, now, 0.0).rejected);
            record(&mut state, &s, now, now, failed);
            now += 10;
        }
        let judged = admit(&mut state, &s, now, 0.0);
        assert_eq!(judged.counts, counts(201, 100));
        assert!(judged.rejected);
        assert!((judged.probability - 1.0 / 202.0).abs() < 1e-12);
    }

    #[test]
    fn retries_count_as_requests_and_a_run_that_made_no_attempt_takes_its_back() {
        let s = settings();
        let mut state = AdaptiveState::default();
        admit(&mut state, &s, 0, 0.5);
        record(
            &mut state,
            &s,
            5_000,
            0,
            Tally {
                attempts: 3,
                accepts: 1,
            },
        );
        assert_eq!(state.counts(5_000), counts(3, 1));
        // Admitted in the first bucket, recorded in the second.
        admit(&mut state, &s, 9_000, 0.5);
        let none = Tally {
            attempts: 0,
            accepts: 0,
        };
        record(&mut state, &s, 12_000, 9_000, none);
        assert_eq!(state.counts(12_000), counts(3, 1));
        // Never more accepts than attempts.
        let odd = Tally {
            attempts: 1,
            accepts: 5,
        };
        admit(&mut state, &s, 13_000, 0.5);
        record(&mut state, &s, 13_000, 13_000, odd);
        assert_eq!(state.counts(13_000), counts(4, 2));
    }

    #[test]
    fn counts_age_out_a_bucket_at_a_time() {
        let s = settings();
        let mut state = AdaptiveState::default();
        // 10s buckets: one request at 0s, 30s, 60s and 90s.
        for at in [0, 30_000, 60_000, 90_000] {
            admit(&mut state, &s, at, 0.99);
        }
        assert_eq!(state.bucket_ms, 10_000);
        assert_eq!(state.counts(90_000).requests, 4);
        // The bucket of 0s counts until 2m after its start.
        assert_eq!(state.counts(2 * MIN - 1).requests, 4);
        assert_eq!(state.counts(2 * MIN).requests, 3);
        assert_eq!(state.counts(2 * MIN + 30_000).requests, 2);
        assert_eq!(state.counts(3 * MIN + 30_000).requests, 0);
        // An update drops what has aged: the record stays small.
        admit(&mut state, &s, 2 * MIN + 35_000, 0.99);
        assert_eq!(state.buckets.len(), 3);
        for i in 0..1000 {
            admit(&mut state, &s, 3 * MIN + i * 997, 0.99);
        }
        assert!(
            state.buckets.len() <= BUCKETS as usize,
            "{}",
            state.buckets.len()
        );
        assert_eq!(state.check(), Ok(()));
    }

    #[test]
    fn another_window_rebuckets_what_is_stored() {
        let mut state = AdaptiveState::default();
        let wide = settings();
        for at in [0, 10_000, 20_000, 115_000] {
            admit(&mut state, &wide, at, 0.99);
        }
        // A run with a 1m window: 5s buckets; what is older than a minute
        // has aged, the rest is kept.
        let narrow = Settings {
            k: 2.0,
            window: Duration::from_secs(60),
        };
        let judged = admit(&mut state, &narrow, 119_000, 0.99);
        assert_eq!(state.bucket_ms, 5_000);
        assert_eq!(judged.counts.requests, 1);
        assert_eq!(state.counts(119_000).requests, 2);
        // And back: the counts are kept.
        admit(&mut state, &wide, 119_500, 0.99);
        assert_eq!(state.bucket_ms, 10_000);
        assert_eq!(state.counts(119_500).requests, 3);
        assert_eq!(state.check(), Ok(()));
    }

    #[test]
    fn a_clock_far_ahead_counts_as_now_a_little_ahead_is_believed() {
        let s = settings();
        let now = 1_800_000_000_000;
        let mut state = AdaptiveState::default();
        // Written by a host whose clock is ten years ahead: taken as now's.
        admit(&mut state, &s, now + 10 * 365 * 24 * 60 * MIN, 0.99);
        let judged = admit(&mut state, &s, now, 0.99);
        assert_eq!(judged.counts.requests, 1);
        assert_eq!(state.buckets, [Bucket(now, 2, 0, 0)]);
        assert_eq!(state.counts(now + 2 * MIN).requests, 0, "it ages");
        // Fifteen seconds ahead: its own bucket, believed.
        admit(&mut state, &s, now + 15_000, 0.99);
        assert_eq!(state.buckets.len(), 2);
        assert_eq!(admit(&mut state, &s, now, 0.99).counts.requests, 3);
        // Our clock ten minutes behind: the others' counts are not lost.
        let judged = admit(&mut state, &s, now - 10 * MIN, 0.99);
        assert_eq!(judged.counts.requests, 4);
        assert_eq!(state.check(), Ok(()));
    }

    #[test]
    fn out_of_range_states_are_refused() {
        let good = AdaptiveState {
            bucket_ms: 10_000,
            buckets: vec![Bucket(LATEST_MS - LATEST_MS % 10_000, MOST_COUNT, 0, 0)],
            k: Some(2.0),
            updated_ms: LATEST_MS,
        };
        assert_eq!(good.check(), Ok(()));
        let bad = [
            AdaptiveState {
                updated_ms: LATEST_MS + 1,
                ..good.clone()
            },
            AdaptiveState {
                bucket_ms: 0,
                ..good.clone()
            },
            AdaptiveState {
                bucket_ms: u64::MAX,
                ..good.clone()
            },
            AdaptiveState {
                buckets: vec![Bucket(0, MOST_COUNT + 1, 0, 0)],
                ..good.clone()
            },
            AdaptiveState {
                buckets: vec![Bucket(LATEST_MS + 1, 0, 0, 0)],
                ..good.clone()
            },
            AdaptiveState {
                buckets: vec![Bucket(0, 0, 0, 0); MOST_BUCKETS + 1],
                ..good.clone()
            },
            AdaptiveState {
                k: Some(0.5),
                ..good.clone()
            },
            AdaptiveState {
                k: Some(f64::NAN),
                ..good.clone()
            },
        ];
        for state in bad {
            assert!(state.check().is_err(), "{state:?}");
        }
        // Whatever is in range, every use of it works.
        let mut state = good;
        for now in [0, LATEST_MS, u64::MAX] {
            admit(&mut state, &settings(), now, 0.5);
            let tally = Tally {
                attempts: u64::MAX,
                accepts: u64::MAX,
            };
            record(&mut state, &settings(), now, now, tally);
        }
    }

    /// Numbers a hostile or broken writer might store.
    fn extreme() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        use serde_json::json;
        prop_oneof![
            Just(json!(0)),
            Just(json!(1)),
            Just(json!(-1)),
            Just(json!(LATEST_MS)),
            Just(json!(LATEST_MS + 1)),
            Just(json!(MOST_COUNT)),
            Just(json!(MOST_COUNT + 1)),
            Just(json!(u64::MAX)),
            Just(json!(1e300)),
            Just(json!(f64::NAN.to_string())),
            Just(json!(null)),
            any::<u64>().prop_map(|n| json!(n)),
            (0..=LATEST_MS).prop_map(|n| json!(n)),
            (0..=1000u64).prop_map(|n| json!(n)),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// Whatever is stored, what decodes is in range, and every use of
        /// it (at any time, with any settings) never panics and gives a
        /// probability in [0, 1).
        #[test]
        fn whatever_is_stored_never_panics(
            width in extreme(),
            buckets in proptest::collection::vec(
                proptest::collection::vec(extreme(), 0..6), 0..30),
            k in extreme(),
            updated in extreme(),
            window_s in 1u64..=86_400,
            given_k in 1.0f64..=1000.0,
        ) {
            let bytes = serde_json::to_vec(&serde_json::json!({
                "bucket_ms": width, "buckets": buckets, "k": k, "updated_ms": updated,
            })).unwrap();
            let Ok(state) = crate::state::store::decode::<AdaptiveState>(&bytes) else {
                return Ok(());
            };
            proptest::prop_assert_eq!(state.check(), Ok(()));
            let s = Settings { k: given_k, window: Duration::from_secs(window_s) };
            for now in [0, 1, LATEST_MS, u64::MAX] {
                let mut state = state.clone();
                let p = probability(state.counts(now), given_k);
                proptest::prop_assert!((0.0..1.0).contains(&p));
                let judged = admit(&mut state, &s, now, 0.5);
                proptest::prop_assert!((0.0..1.0).contains(&judged.probability));
                let tally = Tally { attempts: 3, accepts: 1 };
                record(&mut state, &s, now, now, tally);
                record(&mut state, &s, now, 0, Tally { attempts: 0, accepts: 0 });
                proptest::prop_assert!(state.buckets.len() <= MOST_BUCKETS);
                if now <= LATEST_MS {
                    proptest::prop_assert_eq!(state.check(), Ok(()), "{:?}", state);
                }
            }
        }
    }

    /// The SRE book's steady state, simulated: a backend that can accept
    /// only `capacity` requests a second, and clients that want four
    /// times as many. The backend receives about K times what it accepts.
    #[test]
    fn the_backend_receives_about_k_times_what_it_accepts() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(37);
        for k in [2.0, 1.5] {
            let s = Settings {
                k,
                window: Duration::from_secs(120),
            };
            let mut state = AdaptiveState::default();
            let (capacity, wanted) = (10, 40);
            let (mut sent, mut accepted) = (0u64, 0u64);
            for second in 0..1200u64 {
                let mut room = capacity;
                for i in 0..wanted {
                    let now = second * 1000 + i * 1000 / wanted;
                    if admit(&mut state, &s, now, rng.random::<f64>()).rejected {
                        continue;
                    }
                    let accept = room > 0;
                    room -= u64::from(accept);
                    // After the first four minutes: the steady state.
                    if second >= 240 {
                        sent += 1;
                        accepted += u64::from(accept);
                    }
                    let tally = Tally {
                        attempts: 1,
                        accepts: u64::from(accept),
                    };
                    record(&mut state, &s, now, now, tally);
                }
            }
            let ratio = sent as f64 / accepted as f64;
            assert!(
                (ratio - k).abs() < 0.1 * k,
                "K {k}: {sent} / {accepted} = {ratio}"
            );
        }
    }
}
