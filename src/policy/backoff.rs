//! The backoff policy: ceilings and jitter, as pure arithmetic.
//!
//! For the retry after the n-th failure (n counted from 0) the ceiling is
//! `min(cap, delay * multiplier^n)`; the jitter kind draws the sleep from it.
//! Randomness comes in as `&mut impl Rng` so tests seed it; there is no I/O
//! and no clock here. Arithmetic is done so that no attempt number, however
//! large, can overflow or panic: growth that leaves f64's range is the cap.

use std::time::Duration;

use rand::{Rng, RngExt};

use crate::values::Jitter;

#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    pub delay: Duration,
    pub multiplier: f64,
    pub cap: Duration,
    pub jitter: Jitter,
}

/// One drawn sleep and the ceiling it was drawn under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sleep {
    pub delay: Duration,
    pub ceiling: Duration,
}

impl Policy {
    /// `min(cap, delay * multiplier^n)`, without overflow for any `n`.
    pub fn ceiling(&self, n: u64) -> Duration {
        if self.delay.is_zero() {
            return Duration::ZERO;
        }
        // libm's pow, not f64::powf: the C library's would make every start
        // of retry load libm.so for this one function (BENCHMARKS.md).
        let growth = libm::pow(self.multiplier, n as f64);
        let nanos = self.delay.as_nanos() as f64 * growth;
        // Infinity (and NaN, which cannot happen) go to the cap.
        if nanos.is_nan() || nanos >= self.cap.as_nanos() as f64 {
            return self.cap;
        }
        // Truncating a monotone f64 keeps it monotone; it is below the cap here.
        Duration::from_nanos(nanos as u64)
    }

    /// The largest sleep the retry after the n-th failure can draw.
    pub fn worst_sleep(&self, n: u64) -> Duration {
        match self.jitter {
            Jitter::None | Jitter::Full | Jitter::Equal => self.ceiling(n),
            Jitter::Proportional(p) => self.cap.min(scale(self.ceiling(n), 1.0 + p)),
            // Each draw is at most three times the previous one.
            Jitter::Decorrelated => {
                let tripled = Policy {
                    multiplier: 3.0,
                    ..self.clone()
                };
                tripled
                    .ceiling(n.saturating_add(1))
                    .max(self.delay.min(self.cap))
            }
        }
    }

    /// The smallest sleep the retry after the n-th failure can draw.
    pub fn least_sleep(&self, n: u64) -> Duration {
        match self.jitter {
            Jitter::None => self.ceiling(n),
            Jitter::Full => Duration::ZERO,
            Jitter::Equal => self.ceiling(n) / 2,
            Jitter::Proportional(p) => self.cap.min(scale(self.ceiling(n), 1.0 - p)),
            Jitter::Decorrelated => self.delay.min(self.cap),
        }
    }

    /// Expected sleep of the retry after the n-th failure, where a closed form
    /// exists. Decorrelated jitter depends on the previous draw: `None`.
    pub fn mean_sleep(&self, n: u64) -> Option<Duration> {
        let ceiling = self.ceiling(n);
        Some(match self.jitter {
            Jitter::None => ceiling,
            Jitter::Full => ceiling / 2,
            Jitter::Equal => ceiling / 2 + ceiling / 4,
            Jitter::Proportional(p) => {
                let (c, cap) = (ceiling.as_secs_f64(), self.cap.as_secs_f64());
                let (low, high) = (c * (1.0 - p), c * (1.0 + p));
                let mean = if high <= cap {
                    c
                } else {
                    // E[min(cap, U[low, high])]: the part below the cap, plus
                    // the cap times the probability of clamping.
                    ((cap * cap - low * low) / 2.0 + cap * (high - cap)) / (high - low)
                };
                Duration::from_secs_f64(mean)
            }
            Jitter::Decorrelated => return None,
        })
    }

    /// A fresh sequence of sleeps for one run.
    pub fn sleeps(&self) -> Backoff<'_> {
        Backoff {
            policy: self,
            failures: 0,
            previous: self.delay,
        }
    }
}

fn scale(duration: Duration, factor: f64) -> Duration {
    let secs = duration.as_secs_f64() * factor;
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
}

fn uniform(rng: &mut impl Rng, low: Duration, high: Duration) -> Duration {
    // Durations are at most ~100 years: 3.2e18 ns fits in u64 with room to spare.
    let low = low.as_nanos().min(u128::from(u64::MAX)) as u64;
    let high = high.as_nanos().min(u128::from(u64::MAX)) as u64;
    if high <= low {
        return Duration::from_nanos(low);
    }
    Duration::from_nanos(rng.random_range(low..=high))
}

/// The sleeps of one run, in order. Stateful only for decorrelated jitter,
/// which draws from the previous sleep.
pub struct Backoff<'a> {
    policy: &'a Policy,
    failures: u64,
    previous: Duration,
}

impl Backoff<'_> {
    /// Start over, as after no failure: the next ceiling is `--delay` again
    /// (and decorrelated jitter draws from `--delay`). For `--reset-after`.
    pub fn reset(&mut self) {
        self.failures = 0;
        self.previous = self.policy.delay;
    }

    /// The sleep after the next failure.
    pub fn next(&mut self, rng: &mut impl Rng) -> Sleep {
        self.next_from(self.policy.delay, rng)
    }

    /// The sleep after the next failure, its ceiling grown from `base`
    /// instead of the policy's delay (a throttled failure's
    /// `--throttle-delay`); multiplier, cap and jitter as usual.
    pub fn next_from(&mut self, base: Duration, rng: &mut impl Rng) -> Sleep {
        let policy = &Policy {
            delay: base,
            ..self.policy.clone()
        };
        let n = self.failures;
        self.failures = self.failures.saturating_add(1);
        let ceiling = policy.ceiling(n);
        match policy.jitter {
            Jitter::None => Sleep {
                delay: ceiling,
                ceiling,
            },
            Jitter::Full => Sleep {
                delay: uniform(rng, Duration::ZERO, ceiling),
                ceiling,
            },
            Jitter::Equal => Sleep {
                delay: ceiling / 2 + uniform(rng, Duration::ZERO, ceiling / 2),
                ceiling,
            },
            Jitter::Proportional(p) => {
                let factor = rng.random_range((1.0 - p)..=(1.0 + p));
                Sleep {
                    delay: policy.cap.min(scale(ceiling, factor)),
                    ceiling,
                }
            }
            Jitter::Decorrelated => {
                let high = policy.cap.min(self.previous.saturating_mul(3));
                let delay =
                    policy
                        .cap
                        .min(uniform(rng, policy.delay, self.previous.saturating_mul(3)));
                self.previous = delay;
                Sleep {
                    delay,
                    ceiling: high.max(delay),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    fn policy(delay_ms: u64, multiplier: f64, cap_ms: u64, jitter: Jitter) -> Policy {
        Policy {
            delay: Duration::from_millis(delay_ms),
            multiplier,
            cap: Duration::from_millis(cap_ms),
            jitter,
        }
    }

    #[test]
    fn ceilings_double_from_the_delay_until_the_cap() {
        let p = policy(1000, 2.0, 30_000, Jitter::Full);
        let ceilings: Vec<u64> = (0..7).map(|n| p.ceiling(n).as_millis() as u64).collect();
        assert_eq!(ceilings, [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
    }

    #[test]
    fn a_throttled_sleep_grows_from_its_own_base_on_the_shared_count() {
        let p = policy(10, 2.0, 5_000, Jitter::None);
        let mut rng = SmallRng::seed_from_u64(1);
        let mut sleeps = p.sleeps();
        let ms = |sleep: Sleep| sleep.delay.as_millis() as u64;
        assert_eq!(ms(sleeps.next(&mut rng)), 10);
        assert_eq!(
            ms(sleeps.next_from(Duration::from_secs(1), &mut rng)),
            2_000
        );
        assert_eq!(ms(sleeps.next(&mut rng)), 40);
        // The cap still bounds it, and a decorrelated draw starts at the base.
        assert_eq!(
            ms(sleeps.next_from(Duration::from_secs(1), &mut rng)),
            5_000
        );
        let d = policy(10, 2.0, 5_000, Jitter::Decorrelated);
        let mut sleeps = d.sleeps();
        assert!(ms(sleeps.next_from(Duration::from_millis(900), &mut rng)) >= 900);
    }

    #[test]
    fn huge_attempt_numbers_neither_panic_nor_wrap() {
        let p = policy(1000, 10.0, 30_000, Jitter::Full);
        assert_eq!(p.ceiling(10_000), Duration::from_secs(30));
        assert_eq!(p.ceiling(u64::MAX), Duration::from_secs(30));
        let mut rng = SmallRng::seed_from_u64(1);
        for jitter in [
            Jitter::None,
            Jitter::Full,
            Jitter::Equal,
            Jitter::Decorrelated,
            Jitter::Proportional(1.0),
        ] {
            let p = Policy {
                jitter,
                ..p.clone()
            };
            let mut sleeps = p.sleeps();
            for _ in 0..10_000 {
                assert!(sleeps.next(&mut rng).delay <= p.cap);
            }
            assert!(p.worst_sleep(u64::MAX) <= p.cap);
        }
    }

    #[test]
    fn a_reset_starts_the_ceilings_over_from_the_delay() {
        let p = policy(1000, 2.0, 30_000, Jitter::None);
        let mut rng = SmallRng::seed_from_u64(1);
        let mut sleeps = p.sleeps();
        let mut ceilings = Vec::new();
        for n in 0..6 {
            if n == 3 {
                sleeps.reset();
            }
            ceilings.push(sleeps.next(&mut rng).ceiling.as_millis() as u64);
        }
        assert_eq!(ceilings, [1000, 2000, 4000, 1000, 2000, 4000]);
        // Decorrelated jitter draws from the delay again: U[delay, 3 * delay].
        let p = policy(1000, 2.0, 1_000_000, Jitter::Decorrelated);
        let mut sleeps = p.sleeps();
        for _ in 0..20 {
            sleeps.next(&mut rng);
        }
        sleeps.reset();
        let first = sleeps.next(&mut rng);
        assert!(
            first.delay >= p.delay && first.delay <= p.delay * 3,
            "{first:?}"
        );
        assert_eq!(first.ceiling, p.delay * 3);
    }

    #[test]
    fn zero_delay_means_zero_sleeps() {
        let p = policy(0, 2.0, 30_000, Jitter::Full);
        let mut rng = SmallRng::seed_from_u64(1);
        let mut sleeps = p.sleeps();
        for _ in 0..100 {
            assert_eq!(sleeps.next(&mut rng).delay, Duration::ZERO);
        }
    }

    /// Mean of `draws` sleeps of the retry after the n-th failure, in ms.
    fn sampled_mean(p: &Policy, n: u64, draws: u32) -> f64 {
        let mut rng = SmallRng::seed_from_u64(42);
        let mut total = 0.0;
        for _ in 0..draws {
            let mut sleeps = p.sleeps();
            for _ in 0..n {
                sleeps.next(&mut rng);
            }
            total += sleeps.next(&mut rng).delay.as_secs_f64() * 1000.0;
        }
        total / f64::from(draws)
    }

    #[test]
    fn each_jitter_kind_averages_where_its_formula_puts_it() {
        // Ceiling 4000 ms at n = 2.
        let cases = [
            (Jitter::None, 4000.0),
            (Jitter::Full, 2000.0),
            (Jitter::Equal, 3000.0),
            (Jitter::Proportional(0.2), 4000.0),
        ];
        for (jitter, expected) in cases {
            let p = policy(1000, 2.0, 30_000, jitter);
            let mean = sampled_mean(&p, 2, 20_000);
            assert!(
                (mean - expected).abs() < expected * 0.02,
                "{jitter}: mean {mean}, expected {expected}"
            );
            let formula = p.mean_sleep(2).unwrap().as_secs_f64() * 1000.0;
            assert!(
                (formula - expected).abs() < 1e-6,
                "{jitter}: formula {formula}"
            );
        }
    }

    #[test]
    fn clamped_proportional_mean_matches_its_closed_form() {
        // Ceiling at the cap: half of the draws clamp.
        let p = policy(1000, 2.0, 4000, Jitter::Proportional(0.5));
        let formula = p.mean_sleep(5).unwrap().as_secs_f64() * 1000.0;
        let mean = sampled_mean(&p, 5, 40_000);
        assert!(
            (mean - formula).abs() < formula * 0.02,
            "mean {mean}, formula {formula}"
        );
        assert!(formula < 4000.0);
    }

    #[test]
    fn decorrelated_first_sleep_is_uniform_between_delay_and_three_delays() {
        // previous_sleep starts at delay: first draw U[delay, 3*delay], mean 2*delay.
        let p = policy(100, 2.0, 30_000, Jitter::Decorrelated);
        let mean = sampled_mean(&p, 0, 20_000);
        assert!((mean - 200.0).abs() < 4.0, "mean {mean}");
    }

    fn jitter_strategy() -> impl Strategy<Value = Jitter> {
        prop_oneof![
            Just(Jitter::None),
            Just(Jitter::Full),
            Just(Jitter::Equal),
            Just(Jitter::Decorrelated),
            (0.001f64..=1.0).prop_map(Jitter::Proportional),
        ]
    }

    proptest! {
        #[test]
        fn ceilings_never_exceed_the_cap_and_grow_monotonically(
            delay_ms in 0u64..100_000,
            multiplier in 1.0f64..20.0,
            cap_ms in 1u64..10_000_000,
            start in 0u64..2000,
        ) {
            let p = policy(delay_ms, multiplier, cap_ms, Jitter::Full);
            let mut previous = Duration::ZERO;
            for n in start..start + 64 {
                let ceiling = p.ceiling(n);
                prop_assert!(ceiling <= p.cap);
                prop_assert!(ceiling >= previous, "n={} {:?} < {:?}", n, ceiling, previous);
                previous = ceiling;
            }
        }

        #[test]
        fn every_sleep_stays_inside_its_jitter_bounds(
            delay_ms in 0u64..100_000,
            multiplier in 1.0f64..20.0,
            cap_ms in 1u64..10_000_000,
            jitter in jitter_strategy(),
            seed in any::<u64>(),
        ) {
            let p = policy(delay_ms, multiplier, cap_ms, jitter);
            let mut rng = SmallRng::seed_from_u64(seed);
            let mut sleeps = p.sleeps();
            let mut previous = p.delay;
            for n in 0..40 {
                let sleep = sleeps.next(&mut rng);
                let ceiling = p.ceiling(n);
                prop_assert!(sleep.delay <= p.cap);
                prop_assert!(sleep.delay >= p.least_sleep(n));
                prop_assert!(sleep.delay <= p.worst_sleep(n));
                match jitter {
                    Jitter::None => prop_assert_eq!(sleep.delay, ceiling),
                    Jitter::Full => prop_assert!(sleep.delay <= ceiling),
                    Jitter::Equal => prop_assert!(sleep.delay >= ceiling / 2 && sleep.delay <= ceiling),
                    Jitter::Proportional(f) => {
                        let low = ceiling.as_secs_f64() * (1.0 - f);
                        let high = (ceiling.as_secs_f64() * (1.0 + f)).min(p.cap.as_secs_f64());
                        let got = sleep.delay.as_secs_f64();
                        prop_assert!(got >= low - 1e-9 && got <= high + 1e-9);
                    }
                    Jitter::Decorrelated => {
                        let high = p.cap.min(previous.saturating_mul(3).max(p.delay));
                        prop_assert!(sleep.delay >= p.delay.min(p.cap) && sleep.delay <= high);
                        previous = sleep.delay;
                    }
                }
            }
        }
    }
}
