//! The sleep that would follow an attempt, and why, in this order:
//!
//! 1. `--successes`: a success that another must confirm waits the base
//!    delay, steady (and the backoff starts over);
//! 2. the hint file's `retry-after=DURATION`;
//! 3. a wait a response's headers asked for (`Retry-After`, the rate-limit
//!    fields: `server_wait`), when headers are read;
//! 4. the backoff's draw, from the base delay: `--delay`, or after a
//!    throttled failure the larger of `--delay` and `--throttle-delay`
//!    (a server that asks to slow down is never retried faster than one
//!    that failed plainly).
//!
//! 2 and 3 are not clamped by `--cap` (the server knows best), and are
//! never answered by a shorter sleep: a wait longer than
//! `--max-retry-after` (a broken or hostile server could ask for years) is
//! [`Proposal::Refused`], and the decision ends the run on it, naming who
//! asked and the flag that would allow it. Pure: the wall clock and the
//! randomness come in.

use std::time::{Duration, SystemTime};

use rand::Rng;

use crate::outcome::{Hint, SleepSource};
use crate::policy::backoff::{Backoff, Sleep};
use crate::policy::classify::Class;
use crate::policy::server_wait::{ServerWait, server_wait};
use crate::scan::Response;

/// The settings the next sleep depends on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SleepRules {
    /// `--delay`.
    pub(crate) delay: Duration,
    /// `--cap`.
    pub(crate) cap: Duration,
    /// `--throttle-delay`: a floor over `--delay` for throttled failures.
    pub(crate) throttle_delay: Duration,
    /// `--max-retry-after`.
    pub(crate) max_retry_after: Duration,
    /// `--successes`.
    pub(crate) successes: u64,
}

impl SleepRules {
    /// Where the backoff starts after a failure of `class`.
    pub(crate) fn base(&self, class: Class) -> Duration {
        if class == Class::Throttled {
            self.delay.max(self.throttle_delay)
        } else {
            self.delay
        }
    }
}

/// What the attempt left that the next sleep depends on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Left<'a> {
    /// The final verdict's class.
    pub(crate) class: Class,
    /// The hint file's word.
    pub(crate) hint: Option<Hint>,
    /// The response whose headers may ask for a wait (read only when
    /// asked for: `--retry-after`, or the hint file's headers).
    pub(crate) response: Option<&'a Response>,
}

/// The sleep that would follow, if the decision lets a retry come.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Proposal {
    Sleep {
        sleep: Sleep,
        source: SleepSource,
        /// The response header that set it, and how its value was read.
        header: Option<ServerWait>,
    },
    /// A wait asked for, longer than `--max-retry-after`: not to be
    /// answered by a shorter sleep.
    Refused {
        /// `Retry-After`, `X-RateLimit-Reset`, `the hint file`.
        asker: &'static str,
        wait: Duration,
        limit: Duration,
    },
}

impl Proposal {
    /// Who asked for the wait a sleep obeys (`None`: the backoff's own).
    pub(crate) fn asker(&self) -> Option<&'static str> {
        match self {
            Proposal::Sleep {
                source: SleepSource::Hint,
                ..
            } => Some("the hint file"),
            Proposal::Sleep {
                header: Some(wait), ..
            } => Some(wait.header),
            Proposal::Sleep {
                source: SleepSource::RetryAfter,
                ..
            } => Some("Retry-After"),
            Proposal::Refused { asker, .. } => Some(asker),
            Proposal::Sleep { .. } => None,
        }
    }
}

/// The sleep after an attempt that left `left`, at wall-clock time `now`.
pub(crate) fn propose(
    rules: &SleepRules,
    left: Left<'_>,
    now: SystemTime,
    backoff: &mut Backoff<'_>,
    rng: &mut impl Rng,
) -> Proposal {
    if left.class == Class::Success && rules.successes > 1 {
        // Confirming a success: steady, and a failure after it starts the
        // backoff over (the command was healthy).
        backoff.reset();
        let delay = rules.delay.min(rules.cap);
        return Proposal::Sleep {
            sleep: Sleep {
                delay,
                ceiling: delay,
            },
            source: SleepSource::Backoff,
            header: None,
        };
    }
    let asked = match left.hint {
        Some(Hint::RetryAfter(delay)) => Some((delay, SleepSource::Hint, None)),
        _ => left
            .response
            .and_then(|response| server_wait(response, now))
            .map(|wait| (wait.delay, SleepSource::RetryAfter, Some(wait))),
    };
    match asked {
        Some((wait, source, header)) if wait > rules.max_retry_after => Proposal::Refused {
            asker: match (&header, source) {
                (Some(header), _) => header.header,
                (None, SleepSource::Hint) => "the hint file",
                (None, _) => "Retry-After",
            },
            wait,
            limit: rules.max_retry_after,
        },
        Some((delay, source, header)) => Proposal::Sleep {
            sleep: Sleep {
                delay,
                ceiling: delay,
            },
            source,
            header,
        },
        None => Proposal::Sleep {
            sleep: backoff.next_from(rules.base(left.class), rng),
            source: SleepSource::Backoff,
            header: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    use super::*;
    use crate::policy::backoff::Policy;
    use crate::values::Jitter;

    const RULES: SleepRules = SleepRules {
        delay: Duration::from_millis(100),
        cap: Duration::from_secs(30),
        throttle_delay: Duration::from_secs(1),
        max_retry_after: Duration::from_secs(300),
        successes: 1,
    };

    fn policy() -> Policy {
        Policy {
            delay: RULES.delay,
            cap: RULES.cap,
            multiplier: 2.0,
            jitter: Jitter::None,
        }
    }

    fn response(lines: &[&str]) -> Response {
        Response::from_lines(lines.iter().map(|line| line.as_bytes()))
    }

    /// The proposal for a failure of `class` with `hint` and `lines` of
    /// headers, under `rules`.
    fn proposed(rules: SleepRules, class: Class, hint: Option<Hint>, lines: &[&str]) -> Proposal {
        let policy = Policy {
            delay: rules.delay,
            ..policy()
        };
        let mut backoff = policy.sleeps();
        let response = response(lines);
        let left = Left {
            class,
            hint,
            response: (!lines.is_empty()).then_some(&response),
        };
        propose(
            &rules,
            left,
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_119_200),
            &mut backoff,
            &mut SmallRng::seed_from_u64(7),
        )
    }

    fn delay_and_source(proposal: &Proposal) -> (Duration, SleepSource) {
        match proposal {
            Proposal::Sleep { sleep, source, .. } => (sleep.delay, *source),
            Proposal::Refused { .. } => panic!("refused: {proposal:?}"),
        }
    }

    #[test]
    fn the_hint_comes_first_then_the_headers_then_the_backoff() {
        let secs = Duration::from_secs;
        let headers = ["HTTP/1.1 429", "Retry-After: 7"];
        let table = [
            (
                Some(Hint::RetryAfter(secs(3))),
                &headers[..],
                (secs(3), SleepSource::Hint),
            ),
            (None, &headers[..], (secs(7), SleepSource::RetryAfter)),
            (None, &[][..], (RULES.delay, SleepSource::Backoff)),
        ];
        for (hint, lines, expected) in table {
            let proposal = proposed(RULES, Class::Transient, hint, lines);
            assert_eq!(delay_and_source(&proposal), expected, "{hint:?} {lines:?}");
        }
        // Not clamped by --cap: the server knows best.
        let long = proposed(
            RULES,
            Class::Transient,
            None,
            &["HTTP/1.1 503", "Retry-After: 120"],
        );
        assert_eq!(delay_and_source(&long).0, secs(120));
        assert_eq!(long.asker(), Some("Retry-After"));
    }

    #[test]
    fn a_wait_longer_than_max_retry_after_is_refused_never_shortened() {
        let refused = proposed(
            RULES,
            Class::Throttled,
            None,
            &["HTTP/1.1 429", "Retry-After: 400"],
        );
        assert_eq!(
            refused,
            Proposal::Refused {
                asker: "Retry-After",
                wait: Duration::from_secs(400),
                limit: RULES.max_retry_after
            }
        );
        let reset = proposed(
            RULES,
            Class::Throttled,
            None,
            &[
                "HTTP/1.1 403",
                "X-RateLimit-Remaining: 0",
                "X-RateLimit-Reset: 3000",
            ],
        );
        assert!(
            matches!(
                reset,
                Proposal::Refused {
                    asker: "X-RateLimit-Reset",
                    ..
                }
            ),
            "{reset:?}"
        );
        let hint = proposed(
            RULES,
            Class::Transient,
            Some(Hint::RetryAfter(Duration::from_secs(301))),
            &[],
        );
        assert!(
            matches!(
                hint,
                Proposal::Refused {
                    asker: "the hint file",
                    ..
                }
            ),
            "{hint:?}"
        );
        // At the limit exactly: obeyed.
        let at = proposed(
            RULES,
            Class::Transient,
            None,
            &["HTTP/1.1 503", "Retry-After: 300"],
        );
        assert_eq!(delay_and_source(&at).0, Duration::from_secs(300));
    }

    #[test]
    fn a_throttled_failure_backs_off_from_the_larger_of_the_two_bases() {
        let table = [
            // (--delay, --throttle-delay, class) -> the first sleep (no jitter)
            (100, 1000, Class::Throttled, 1000),
            (5000, 1000, Class::Throttled, 5000),
            (5000, 1000, Class::Transient, 5000),
            (100, 1000, Class::Transient, 100),
        ];
        for (delay, throttle, class, expected) in table {
            let rules = SleepRules {
                delay: Duration::from_millis(delay),
                throttle_delay: Duration::from_millis(throttle),
                ..RULES
            };
            let proposal = proposed(rules, class, None, &[]);
            assert_eq!(
                delay_and_source(&proposal),
                (Duration::from_millis(expected), SleepSource::Backoff),
                "{delay} {throttle} {class:?}"
            );
        }
    }

    #[test]
    fn a_success_to_confirm_waits_the_base_delay_steadily() {
        let rules = SleepRules {
            successes: 3,
            ..RULES
        };
        let proposal = proposed(
            rules,
            Class::Success,
            None,
            &["HTTP/1.1 503", "Retry-After: 9"],
        );
        assert_eq!(
            delay_and_source(&proposal),
            (RULES.delay, SleepSource::Backoff)
        );
    }
}
