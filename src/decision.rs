//! What the run does after an attempt: end (how, with which status) or
//! sleep (how long, and why). Pure: it gets the attempt's ending and verdict,
//! the limits, the clock and the proposed sleep, and returns a [`Step`]; the
//! runner carries it out. Tested without a process.

use std::time::{Duration, Instant};

use crate::backoff::Sleep;
use crate::child::{Ending, signal_name};
use crate::classify::Class;
use crate::exit::ExitStatus;
use crate::values::human;

/// How a run ended: the `outcome` of the JSON `done` event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RunOutcome {
    Success,
    Permanent,
    Exhausted,
    Deadline,
    Interrupted,
    CircuitOpen,
}

impl RunOutcome {
    pub(crate) const ALL: [RunOutcome; 6] = [
        RunOutcome::Success,
        RunOutcome::Permanent,
        RunOutcome::Exhausted,
        RunOutcome::Deadline,
        RunOutcome::Interrupted,
        RunOutcome::CircuitOpen,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RunOutcome::Success => "success",
            RunOutcome::Permanent => "permanent",
            RunOutcome::Exhausted => "exhausted",
            RunOutcome::Deadline => "deadline",
            RunOutcome::Interrupted => "interrupted",
            RunOutcome::CircuitOpen => "circuit-open",
        }
    }
}

/// Why a sleep is as long as it is: the `source` of the JSON `sleep` event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SleepSource {
    Backoff,
    /// A `Retry-After:` header in the output.
    RetryAfter,
    /// `retry-after=` in the hint file (`retry-after` in JSON too).
    Hint,
    Splay,
}

impl SleepSource {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SleepSource::Backoff => "backoff",
            SleepSource::RetryAfter | SleepSource::Hint => "retry-after",
            SleepSource::Splay => "splay",
        }
    }
}

/// The limits of a run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// `None`: unlimited.
    pub(crate) max_attempts: Option<u64>,
    /// `--max-time` from the run's start.
    pub(crate) deadline: Option<Instant>,
}

/// How the run ends: with `status`; `detail` says why, for humans.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Done {
    pub(crate) outcome: RunOutcome,
    pub(crate) status: ExitStatus,
    pub(crate) detail: String,
}

/// What comes after an attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Done(Done),
    /// Sleep, then try again.
    Sleep {
        sleep: Sleep,
        source: SleepSource,
    },
}

impl Done {
    /// The run ends because retry received `signal`.
    pub(crate) fn interrupted(signal: i32) -> Done {
        Done {
            outcome: RunOutcome::Interrupted,
            status: ExitStatus::Signal(signal),
            detail: format!("interrupted by {}", signal_name(signal)),
        }
    }

    /// The run ends with the attempt's own status.
    fn with(outcome: RunOutcome, ending: &Ending) -> Step {
        Step::Done(Done {
            outcome,
            status: ending.exit_status(),
            detail: ending.describe(),
        })
    }
}

/// Decide after attempt number `attempt`, which ended as `ending` and was
/// judged `class`, at time `now`; `proposed` is the sleep that would come
/// next (a Retry-After request or the backoff's draw).
pub(crate) fn next_step(
    attempt: u64,
    ending: &Ending,
    class: Class,
    limits: Limits,
    now: Instant,
    proposed: (Sleep, SleepSource),
) -> Step {
    if let Some(signal) = ending.interrupted {
        return Step::Done(Done::interrupted(signal));
    }
    match class {
        Class::Success => {
            return Step::Done(Done {
                outcome: RunOutcome::Success,
                status: ExitStatus::SUCCESS,
                detail: ending.describe(),
            });
        }
        Class::Permanent => return Done::with(RunOutcome::Permanent, ending),
        Class::Transient => {}
    }
    let past_deadline = |at: Instant| limits.deadline.is_some_and(|deadline| at >= deadline);
    if ending.timed_out && past_deadline(now) {
        return Done::with(RunOutcome::Deadline, ending);
    }
    if limits.max_attempts.is_some_and(|max| attempt >= max) {
        return Done::with(RunOutcome::Exhausted, ending);
    }
    let (sleep, source) = proposed;
    if past_deadline(now + sleep.delay.min(Duration::from_secs(u32::MAX.into()))) {
        return Step::Done(Done {
            outcome: RunOutcome::Deadline,
            status: ending.exit_status(),
            detail: format!(
                "the next sleep ({}) would end past it; {}",
                human(sleep.delay),
                ending.describe()
            ),
        });
    }
    Step::Sleep { sleep, source }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::child::ProcessEnd;

    fn exited(code: i32) -> Ending {
        Ending::not_started(ProcessEnd::Exited(code))
    }

    fn sleep(ms: u64, source: SleepSource) -> (Sleep, SleepSource) {
        let delay = Duration::from_millis(ms);
        (
            Sleep {
                delay,
                ceiling: delay,
            },
            source,
        )
    }

    struct Case {
        name: &'static str,
        attempt: u64,
        ending: Ending,
        class: Class,
        max_attempts: Option<u64>,
        /// Milliseconds from now to the deadline (negative: already past).
        deadline_ms: Option<i64>,
        proposed: (Sleep, SleepSource),
        expected: Result<RunOutcome, SleepSource>,
        status: Option<ExitStatus>,
    }

    fn case(name: &'static str, ending: Ending, class: Class) -> Case {
        Case {
            name,
            attempt: 1,
            ending,
            class,
            max_attempts: Some(5),
            deadline_ms: None,
            proposed: sleep(100, SleepSource::Backoff),
            expected: Err(SleepSource::Backoff),
            status: None,
        }
    }

    #[test]
    fn the_decision_table() {
        let timed_out = Ending {
            timed_out: true,
            ..exited(143)
        };
        let killed = Ending {
            killed: true,
            ..timed_out.clone()
        };
        let interrupted = Ending {
            interrupted: Some(libc::SIGTERM),
            ..exited(0)
        };
        let cases = [
            Case {
                expected: Ok(RunOutcome::Success),
                status: Some(ExitStatus::SUCCESS),
                ..case("success ends the run", exited(0), Class::Success)
            },
            Case {
                expected: Ok(RunOutcome::Permanent),
                status: Some(ExitStatus::Code(3)),
                ..case("a permanent failure ends it", exited(3), Class::Permanent)
            },
            Case {
                ..case("a transient failure sleeps", exited(3), Class::Transient)
            },
            Case {
                attempt: 5,
                expected: Ok(RunOutcome::Exhausted),
                status: Some(ExitStatus::Code(3)),
                ..case("the last attempt exhausts", exited(3), Class::Transient)
            },
            Case {
                attempt: 1000,
                max_attempts: None,
                ..case(
                    "unlimited attempts never exhaust",
                    exited(3),
                    Class::Transient,
                )
            },
            Case {
                deadline_ms: Some(-1),
                expected: Ok(RunOutcome::Deadline),
                status: Some(ExitStatus::TIMED_OUT),
                ..case(
                    "a timeout at the deadline",
                    timed_out.clone(),
                    Class::Transient,
                )
            },
            Case {
                deadline_ms: Some(-1),
                expected: Ok(RunOutcome::Deadline),
                status: Some(ExitStatus::KILLED),
                ..case("a killed attempt at the deadline", killed, Class::Transient)
            },
            Case {
                deadline_ms: Some(60_000),
                ..case("a timeout before the deadline", timed_out, Class::Transient)
            },
            Case {
                deadline_ms: Some(1_000),
                proposed: sleep(120_000, SleepSource::RetryAfter),
                expected: Ok(RunOutcome::Deadline),
                status: Some(ExitStatus::Code(3)),
                ..case("Retry-After past the deadline", exited(3), Class::Transient)
            },
            Case {
                deadline_ms: Some(1_000),
                proposed: sleep(500, SleepSource::RetryAfter),
                expected: Err(SleepSource::RetryAfter),
                ..case(
                    "Retry-After within the deadline",
                    exited(3),
                    Class::Transient,
                )
            },
            Case {
                expected: Ok(RunOutcome::Interrupted),
                status: Some(ExitStatus::Signal(libc::SIGTERM)),
                ..case("a signal to retry wins", interrupted, Class::Success)
            },
        ];
        let now = Instant::now();
        for case in cases {
            let deadline = case.deadline_ms.map(|ms| {
                if ms < 0 {
                    now.checked_sub(Duration::from_millis(ms.unsigned_abs()))
                        .unwrap_or(now)
                } else {
                    now + Duration::from_millis(ms.unsigned_abs())
                }
            });
            let limits = Limits {
                max_attempts: case.max_attempts,
                deadline,
            };
            let step = next_step(
                case.attempt,
                &case.ending,
                case.class,
                limits,
                now,
                case.proposed,
            );
            match (step, case.expected) {
                (
                    Step::Done(Done {
                        outcome, status, ..
                    }),
                    Ok(expected),
                ) => {
                    assert_eq!(outcome, expected, "{}", case.name);
                    assert_eq!(Some(status), case.status, "{}", case.name);
                }
                (Step::Sleep { sleep, source }, Err(expected)) => {
                    assert_eq!(source, expected, "{}", case.name);
                    assert_eq!(sleep, case.proposed.0, "{}", case.name);
                }
                (step, expected) => panic!("{}: got {step:?}, expected {expected:?}", case.name),
            }
        }
    }

    #[test]
    fn the_detail_says_why_the_sleep_did_not_fit() {
        let now = Instant::now();
        let limits = Limits {
            max_attempts: None,
            deadline: Some(now + Duration::from_secs(5)),
        };
        let step = next_step(
            1,
            &exited(7),
            Class::Transient,
            limits,
            now,
            sleep(120_000, SleepSource::RetryAfter),
        );
        let Step::Done(Done { detail, .. }) = step else {
            panic!("expected the run to end")
        };
        assert_eq!(detail, "the next sleep (2m) would end past it; exit 7");
    }

    #[test]
    fn an_interrupt_names_the_signal() {
        assert_eq!(
            Done::interrupted(libc::SIGINT).detail,
            "interrupted by SIGINT"
        );
    }
}
