//! How long the sleep after an attempt would be, and why: the hint file's
//! retry-after, else a wait a response header in the output asked for
//! (`Retry-After`, the rate-limit fields; when asked for), else the
//! backoff's draw, from `--throttle-delay` after a throttled failure. The
//! decision says whether it happens.

use std::time::{Duration, SystemTime};

use super::Run;
use super::judge::Judged;
use crate::outcome::{Hint, SleepSource};
use crate::policy::backoff::{Backoff, Sleep};
use crate::policy::classify::Class;
use crate::policy::server_wait::{ServerWait, server_wait};
use crate::values::human;

/// The sleep that would follow an attempt.
pub(super) struct Proposed {
    pub(super) sleep: Sleep,
    pub(super) source: SleepSource,
    /// A request longer than `--max-retry-after`, not obeyed: the warning
    /// that says so (given only when a retry follows).
    pub(super) not_obeyed: Option<String>,
    /// The response header that set the sleep, and how its value was read.
    pub(super) header: Option<ServerWait>,
}

impl Run<'_> {
    /// A hint's retry-after, else a wait a response's headers asked for
    /// (the hint file's, or the output's when asked for), else the
    /// backoff. The first two are not clamped by `--cap`: the server
    /// knows. A request longer than `--max-retry-after` is not obeyed (a
    /// broken or hostile server could ask for years): the backoff's draw is
    /// used, and `not_obeyed` says so.
    pub(super) fn proposed_sleep(
        &mut self,
        judged: &Judged,
        backoff: &mut Backoff<'_>,
    ) -> Proposed {
        let config = self.setup.config;
        if judged.verdict.class == Class::Success && config.hooks.successes > 1 {
            return confirming(config.policy.delay.min(config.policy.cap), backoff);
        }
        let mut header = None;
        let told = if let Some(Hint::RetryAfter(delay)) = judged.hint {
            Some((delay, SleepSource::Hint))
        } else {
            header = judged
                .response
                .as_ref()
                .and_then(|response| server_wait(response, SystemTime::now()));
            header
                .as_ref()
                .map(|wait| (wait.delay, SleepSource::RetryAfter))
        };
        let limit = config.max_retry_after;
        let mut not_obeyed = None;
        let told = told.filter(|&(delay, source)| {
            let obeyed = delay <= limit;
            if !obeyed {
                let asker = match (&header, source) {
                    (Some(wait), SleepSource::RetryAfter) => wait.header,
                    _ => "the hint file",
                };
                not_obeyed = Some(format!(
                    "{asker} asked for {}, longer than --max-retry-after {}: not obeyed, backing off instead",
                    human(delay),
                    human(limit)
                ));
            }
            obeyed
        });
        if told.is_none() {
            header = None;
        }
        let (sleep, source) = if let Some((delay, source)) = told {
            let sleep = Sleep {
                delay,
                ceiling: delay,
            };
            (sleep, source)
        } else {
            let base = if judged.verdict.class == Class::Throttled {
                config.throttle_delay
            } else {
                config.policy.delay
            };
            let sleep = backoff.next_from(base, &mut self.state.rng);
            (sleep, SleepSource::Backoff)
        };
        Proposed {
            sleep,
            source,
            not_obeyed,
            header,
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
        header: None,
    }
}
