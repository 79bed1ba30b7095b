//! How long the sleep after an attempt would be, and why: the hint file's
//! retry-after, else a `Retry-After` header in the output (when asked
//! for), else the backoff's draw. The decision says whether it happens.

use std::time::{Duration, SystemTime};

use super::Run;
use super::judge::Judged;
use crate::outcome::{Hint, SleepSource};
use crate::policy::backoff::{Backoff, Sleep};
use crate::policy::classify::Class;
use crate::run::hint;
use crate::scan::ScanResult;
use crate::values::human;

/// The sleep that would follow an attempt.
pub(super) struct Proposed {
    pub(super) sleep: Sleep,
    pub(super) source: SleepSource,
    /// A request longer than `--max-retry-after`, not obeyed: the warning
    /// that says so (given only when a retry follows).
    pub(super) not_obeyed: Option<String>,
}

impl Run<'_> {
    /// A hint's retry-after, else a Retry-After header (when asked for),
    /// else the backoff. The first two are not clamped by `--cap`: the
    /// server knows. A request longer than `--max-retry-after` is not
    /// obeyed (a broken or hostile server could ask for years): the
    /// backoff's draw is used, and `not_obeyed` says so.
    pub(super) fn proposed_sleep(
        &mut self,
        judged: &Judged,
        backoff: &mut Backoff<'_>,
    ) -> Proposed {
        let config = self.setup.config;
        if judged.verdict.class == Class::Success && config.hooks.successes > 1 {
            return confirming(config.policy.delay.min(config.policy.cap), backoff);
        }
        let told = match judged.hint {
            Some(Hint::RetryAfter(delay)) => Some((delay, SleepSource::Hint)),
            _ if config.rules.retry_after => {
                retry_after_header(&judged.outcome.scan).map(|d| (d, SleepSource::RetryAfter))
            }
            _ => None,
        };
        let limit = config.max_retry_after;
        let mut not_obeyed = None;
        let told = told.filter(|&(delay, source)| {
            let obeyed = delay <= limit;
            if !obeyed {
                let asker = match source {
                    SleepSource::Hint => "the hint file",
                    _ => "Retry-After",
                };
                not_obeyed = Some(format!(
                    "{asker} asked for {}, longer than --max-retry-after {}: not obeyed, backing off instead",
                    human(delay),
                    human(limit)
                ));
            }
            obeyed
        });
        let (sleep, source) = match told {
            Some((delay, source)) => (
                Sleep {
                    delay,
                    ceiling: delay,
                },
                source,
            ),
            None => (backoff.next(&mut self.state.rng), SleepSource::Backoff),
        };
        Proposed {
            sleep,
            source,
            not_obeyed,
        }
    }
}

/// `--successes`: the next attempt confirms a success after the base
/// delay, steady, not backing off; a failure after it starts the backoff
/// over (the command was healthy).
fn confirming(delay: Duration, backoff: &mut Backoff<'_>) -> Proposed {
    backoff.reset();
    Proposed {
        sleep: Sleep {
            delay,
            ceiling: delay,
        },
        source: SleepSource::Backoff,
        not_obeyed: None,
    }
}

/// The delay a `Retry-After` header in the output asked for.
fn retry_after_header(scan: &ScanResult) -> Option<Duration> {
    let value = scan.retry_after.as_deref()?;
    hint::parse_retry_after(value, SystemTime::now())
}
