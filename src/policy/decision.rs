//! What the run does after an attempt: end (how) or sleep (how long, and
//! why), the attempt's verdict as final, and the one place retry's exit
//! status for a run is chosen ([`End::exit_status`]). Pure: it gets the
//! attempt's ending and verdict, the limits, the clock and the proposed
//! sleep, and returns a [`Decision`]; the runner carries it out. Tested
//! without a process.

use std::time::{Duration, Instant};

use crate::exit::ExitStatus;
use crate::outcome::{Ending, signal_name};
use crate::outcome::{RunOutcome, SleepSource};
use crate::policy::backoff::Sleep;
use crate::policy::classify::{Class, Verdict};
use crate::policy::next_sleep::Proposal;
use crate::values::human;
pub(crate) use between::{
    BudgetAnswer, GiveUpHook, after_budget, after_hook, before_first_attempt, give_up_hook,
    out_of_time, takes_a_token,
};
use counting::{confirm_success, next_repeat};

mod between;
mod counting;

/// The limits of a run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// `None`: unlimited.
    pub(crate) max_attempts: Option<u64>,
    /// `--max-time` from the run's start.
    pub(crate) deadline: Option<Instant>,
    /// `--until-failure`: repeat while the command succeeds.
    pub(crate) until_failure: bool,
    /// `--successes`: successful attempts in a row that make the run a
    /// success (1: the first success does).
    pub(crate) successes: u64,
}

/// How a run (`retry ... -- COMMAND`) ended: all that its exit status
/// depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// The command succeeded (under `--until-failure`: every run that
    /// finished passed).
    Success,
    /// The command failed for good (`outcome`: permanent, exhausted,
    /// deadline, budget-exhausted); `last` is the status its last attempt
    /// ended with.
    Failed {
        outcome: RunOutcome,
        last: ExitStatus,
    },
    /// A signal to retry ended the run.
    Interrupted(i32),
    /// The command succeeded, but its output could not be delivered
    /// (`--buffer-stdout`, `-o`): retry's own failure.
    Undelivered,
    /// A circuit was open: nothing ran.
    CircuitOpen,
    /// Retry could not set the run up or carry it on (its signal handlers,
    /// its own files): nothing more is known of the command.
    RetryFailed,
    /// A usage error found before anything ran (`--metrics-file` in a
    /// directory where no file can be made).
    Usage,
}

impl End {
    /// The exit status retry ends the run with: chosen here and nowhere
    /// else (`exit` only spells the numbers). `give_up_exit`
    /// (`--give-up-exit`) replaces the status of a run that ended on a
    /// transient failure (out of attempts, time or budget, or refused by an
    /// open circuit), for a CI system to retry the job; a permanent failure
    /// and retry's own errors keep theirs.
    pub(crate) fn exit_status(self, give_up_exit: Option<u8>) -> ExitStatus {
        let transient = matches!(
            self.outcome(),
            Some(
                RunOutcome::Exhausted
                    | RunOutcome::Deadline
                    | RunOutcome::BudgetExhausted
                    | RunOutcome::CircuitOpen
            )
        );
        if let (true, Some(code)) = (transient, give_up_exit) {
            return ExitStatus::Code(code);
        }
        match self {
            End::Success => ExitStatus::SUCCESS,
            // Out of budget: the last attempt's own status, as it is (even
            // the 0 of an attempt that was not ready yet).
            End::Failed {
                outcome: RunOutcome::BudgetExhausted,
                last,
            } => last,
            // A failed run never exits 0: an attempt that exited 0 but never
            // printed an `--until-output` line ends it with 1.
            End::Failed {
                last: ExitStatus::SUCCESS,
                ..
            } => ExitStatus::Code(1),
            End::Failed { last, .. } => last,
            End::Interrupted(signal) => ExitStatus::Signal(signal),
            End::CircuitOpen => ExitStatus::CIRCUIT_OPEN,
            End::Undelivered | End::RetryFailed => ExitStatus::RETRY_FAILED,
            End::Usage => ExitStatus::USAGE,
        }
    }

    /// The `outcome` of the JSON `done` event and the metrics; `None` when
    /// the run never got that far.
    pub(crate) fn outcome(self) -> Option<RunOutcome> {
        match self {
            End::Success | End::Undelivered => Some(RunOutcome::Success),
            End::Failed { outcome, .. } => Some(outcome),
            End::Interrupted(_) => Some(RunOutcome::Interrupted),
            End::CircuitOpen => Some(RunOutcome::CircuitOpen),
            End::RetryFailed | End::Usage => None,
        }
    }

    /// A failed run with `ending` as its last attempt.
    fn failed(outcome: RunOutcome, ending: &Ending) -> End {
        End::Failed {
            outcome,
            last: ending.exit_status(),
        }
    }
}

/// How the run ends; `detail` says why, for humans.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Done {
    pub(crate) end: End,
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

/// One attempt, as the policy sees it.
pub(crate) struct Attempt<'a> {
    pub(crate) number: u64,
    pub(crate) ending: &'a Ending,
    /// What `classify` made of it.
    pub(crate) verdict: Verdict,
    /// The reader of retry's stdout or stderr went away during it.
    pub(crate) downstream_closed: bool,
    /// Successful attempts in a row up to this one (0: it failed).
    pub(crate) in_a_row: u64,
}

/// What follows an attempt: the attempt's verdict as final (what its
/// record says) and the run's next step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Decision {
    pub(crate) verdict: Verdict,
    pub(crate) step: Step,
}

impl Done {
    /// The retry budget `name` had no whole token (`tokens` left) for the
    /// retry after `ending`: the run ends with that attempt's status.
    pub(crate) fn budget_exhausted(name: &str, tokens: f64, ending: &Ending) -> Done {
        Done {
            end: End::failed(RunOutcome::BudgetExhausted, ending),
            detail: format!(
                "retry budget {name} exhausted ({:.1} tokens): not retrying; {}",
                (tokens * 10.0).floor() / 10.0,
                ending.describe()
            ),
        }
    }

    /// The run ends because retry received `signal`.
    pub(crate) fn interrupted(signal: i32) -> Done {
        Done {
            end: End::Interrupted(signal),
            detail: format!("interrupted by {}", signal_name(signal)),
        }
    }

    /// The run was over when retry received `signal` `during` what follows
    /// it ("while delivering the output", "during --on-give-up"): it ends
    /// by the signal.
    pub(crate) fn interrupted_during(signal: i32, during: &str) -> Done {
        let Done { end, detail } = Done::interrupted(signal);
        Done {
            end,
            detail: format!("{detail} {during}"),
        }
    }

    /// The run fails with the attempt's own status.
    fn with(outcome: RunOutcome, ending: &Ending) -> Step {
        Step::Done(Done {
            end: End::failed(outcome, ending),
            detail: failure_detail(ending),
        })
    }

    /// `--until-failure`: every run that finished passed.
    fn passed(detail: String) -> Done {
        Done {
            end: End::Success,
            detail,
        }
    }
}

/// How the last attempt of a failed run ended, and the status it gives
/// when that is not the attempt's own.
fn failure_detail(ending: &Ending) -> String {
    let status = End::failed(RunOutcome::Exhausted, ending).exit_status(None);
    if status == ending.exit_status() {
        ending.describe()
    } else {
        format!(
            "{}, but no line matched --until-output (exit {})",
            ending.describe(),
            status.as_number()
        )
    }
}

/// `1 run`, `3 runs`.
fn runs(count: u64) -> String {
    if count == 1 {
        "1 run".to_string()
    } else {
        format!("{count} runs")
    }
}

/// Decide after `attempt`, at time `now`; `proposed` is the sleep that
/// would come next (a Retry-After request or the backoff's draw). The
/// verdict comes back final:
///
/// - an attempt whose reader went away (`retry ... | head -1`) is
///   permanent: another attempt would have nowhere to write either;
/// - the attempt that ended the run (a signal, or the first failure of
///   `--until-failure`) is no longer transient;
/// - under `--until-failure`, a run cut short by `--max-time` says it was
///   not counted.
pub(crate) fn after_attempt(
    attempt: Attempt<'_>,
    limits: Limits,
    now: Instant,
    proposed: &Proposal,
) -> Decision {
    let mut verdict = attempt.verdict;
    if attempt.downstream_closed && verdict.class.is_transient() {
        verdict.class = Class::Permanent;
        verdict
            .reason
            .push_str("; the reader of the output went away");
    }
    let not_ready = verdict.class == Class::Success
        && attempt.in_a_row < limits.successes
        && attempt.ending.interrupted.is_none();
    if verdict.class == Class::Success && limits.successes > 1 && !limits.until_failure {
        verdict.reason.push_str(&format!(
            "; {} of {} successes in a row",
            attempt.in_a_row, limits.successes
        ));
    }
    let step = if not_ready {
        confirm_success(
            (attempt.number, attempt.in_a_row),
            attempt.ending,
            limits,
            now,
            proposed,
        )
    } else {
        next_step(
            attempt.number,
            attempt.ending,
            verdict.class,
            limits,
            now,
            proposed,
        )
    };
    if let Step::Done(done) = &step {
        let outcome = done.end.outcome();
        let ended_it = matches!(
            outcome,
            Some(RunOutcome::Interrupted | RunOutcome::Permanent)
        );
        if ended_it && verdict.class != Class::Success {
            verdict.class = Class::Permanent;
        }
        let passed = outcome == Some(RunOutcome::Success);
        if limits.until_failure && passed && verdict.class != Class::Success {
            verdict
                .reason
                .push_str("; cut short by --max-time, not counted");
        }
    }
    Decision { verdict, step }
}

/// Decide after attempt number `attempt`, which ended as `ending` and was
/// judged `class`, at time `now`; `proposed` is the sleep that would come
/// next.
fn next_step(
    attempt: u64,
    ending: &Ending,
    class: Class,
    limits: Limits,
    now: Instant,
    proposed: &Proposal,
) -> Step {
    if let Some(signal) = ending.interrupted {
        return Step::Done(Done::interrupted(signal));
    }
    if limits.until_failure {
        return next_repeat(attempt, ending, class, limits, now, proposed);
    }
    match class {
        Class::Success => {
            return Step::Done(Done {
                end: End::Success,
                detail: ending.describe(),
            });
        }
        Class::Permanent => return Done::with(RunOutcome::Permanent, ending),
        Class::Transient | Class::Throttled => {}
    }
    let past_deadline = |at: Instant| limits.deadline.is_some_and(|deadline| at >= deadline);
    if ending.timed_out && past_deadline(now) {
        return Done::with(RunOutcome::Deadline, ending);
    }
    if limits.max_attempts.is_some_and(|max| attempt >= max) {
        return Done::with(RunOutcome::Exhausted, ending);
    }
    let (sleep, source) = match (wait_not_waited_for(limits, now, proposed), proposed) {
        (None, &Proposal::Sleep { sleep, source, .. }) => (sleep, source),
        (why, _) => {
            return Step::Done(Done {
                end: End::failed(RunOutcome::Exhausted, ending),
                detail: format!("{}; {}", why.unwrap_or_default(), failure_detail(ending)),
            });
        }
    };
    let wake = now + sleep.delay.min(Duration::from_secs(u32::MAX.into()));
    if past_deadline(wake) {
        return Step::Done(Done {
            end: End::failed(RunOutcome::Deadline, ending),
            detail: format!(
                "the next sleep ({}) would end past it; {}",
                human(sleep.delay),
                failure_detail(ending)
            ),
        });
    }
    Step::Sleep { sleep, source }
}

/// Why the wait a server (or the hint file) asked for after an attempt
/// that is to be retried is not waited for, if it is not: longer than
/// `--max-retry-after`, or ending past `--max-time`. It is never answered
/// by a shorter sleep: the run ends on it (exhausted, the command's
/// status), and says so, naming who asked and the flag that would allow
/// it. `None`: the proposal is slept (or is the backoff's own).
pub(crate) fn wait_not_waited_for(
    limits: Limits,
    now: Instant,
    proposed: &Proposal,
) -> Option<String> {
    match *proposed {
        Proposal::Refused { asker, wait, limit } => Some(refused(asker, wait, limit)),
        Proposal::Sleep { sleep, .. } => {
            let asker = proposed.asker()?;
            let deadline = limits.deadline?;
            let wake = now + sleep.delay.min(Duration::from_secs(u32::MAX.into()));
            (wake >= deadline).then(|| {
                format!(
                    "{asker} asked for {}, which would end {} past --max-time: not retrying (a --max-time that much longer would wait for it)",
                    human(sleep.delay),
                    human(wake.saturating_duration_since(deadline))
                )
            })
        }
    }
}

/// A wait longer than `--max-retry-after`, in words.
fn refused(asker: &str, wait: Duration, limit: Duration) -> String {
    format!(
        "{asker} asked for {}, longer than --max-retry-after {}: not retrying (--max-retry-after {} would wait for it)",
        human(wait),
        human(limit),
        human(wait)
    )
}

/// The sleep of `proposed` for the runs that count successes; a refused
/// wait is the detail of the run's end.
fn sleep_of(proposed: &Proposal) -> Result<(Sleep, SleepSource), String> {
    match *proposed {
        Proposal::Sleep { sleep, source, .. } => Ok((sleep, source)),
        Proposal::Refused { asker, wait, limit } => Err(refused(asker, wait, limit)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::ProcessEnd;

    fn exited(code: i32) -> Ending {
        Ending::not_started(ProcessEnd::Exited(code))
    }

    fn sleep(ms: u64, source: SleepSource) -> Proposal {
        let delay = Duration::from_millis(ms);
        Proposal::Sleep {
            sleep: Sleep {
                delay,
                ceiling: delay,
            },
            source,
            header: None,
        }
    }

    struct Case {
        name: &'static str,
        attempt: u64,
        ending: Ending,
        class: Class,
        max_attempts: Option<u64>,
        /// Milliseconds from now to the deadline (negative: already past).
        deadline_ms: Option<i64>,
        proposed: Proposal,
        expected: Result<RunOutcome, SleepSource>,
        status: Option<ExitStatus>,
        until_failure: bool,
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
            until_failure: false,
        }
    }

    /// A case of `--until-failure`.
    fn hunt(name: &'static str, ending: Ending, class: Class) -> Case {
        Case {
            until_failure: true,
            ..case(name, ending, class)
        }
    }

    #[test]
    #[allow(clippy::too_many_lines, reason = "a table of cases")]
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
            interrupted: Some(crate::outcome::signo::SIGTERM),
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
                ..case("a throttled failure sleeps", exited(3), Class::Throttled)
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
                ..case(
                    "a timeout before the deadline",
                    timed_out.clone(),
                    Class::Transient,
                )
            },
            Case {
                deadline_ms: Some(1_000),
                proposed: sleep(120_000, SleepSource::RetryAfter),
                // A server's wait is never shortened: the run gives up.
                expected: Ok(RunOutcome::Exhausted),
                status: Some(ExitStatus::Code(3)),
                ..case("Retry-After past the deadline", exited(3), Class::Transient)
            },
            Case {
                deadline_ms: Some(1_000),
                proposed: sleep(120_000, SleepSource::Backoff),
                expected: Ok(RunOutcome::Deadline),
                status: Some(ExitStatus::Code(3)),
                ..case("a backoff past the deadline", exited(3), Class::Transient)
            },
            Case {
                proposed: Proposal::Refused {
                    asker: "Retry-After",
                    wait: Duration::from_secs(400),
                    limit: Duration::from_secs(300),
                },
                expected: Ok(RunOutcome::Exhausted),
                status: Some(ExitStatus::Code(3)),
                ..case(
                    "Retry-After past --max-retry-after",
                    exited(3),
                    Class::Throttled,
                )
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
                status: Some(ExitStatus::Signal(crate::outcome::signo::SIGTERM)),
                ..case(
                    "a signal to retry wins",
                    interrupted.clone(),
                    Class::Success,
                )
            },
            Case {
                attempt: 5,
                expected: Ok(RunOutcome::Exhausted),
                status: Some(ExitStatus::Code(1)),
                ..case(
                    "a failed run never exits 0 (exit 0, not ready)",
                    exited(0),
                    Class::Transient,
                )
            },
            Case {
                deadline_ms: Some(1_000),
                proposed: sleep(120_000, SleepSource::Backoff),
                expected: Ok(RunOutcome::Deadline),
                status: Some(ExitStatus::Code(1)),
                ..case(
                    "nor at the deadline (exit 0, not ready)",
                    exited(0),
                    Class::Transient,
                )
            },
            // --until-failure: repeat while it succeeds.
            Case {
                ..hunt("hunt: a success repeats", exited(0), Class::Success)
            },
            Case {
                attempt: 1000,
                max_attempts: None,
                ..hunt("hunt: unlimited repeats", exited(0), Class::Success)
            },
            Case {
                attempt: 4,
                expected: Ok(RunOutcome::Permanent),
                status: Some(ExitStatus::Code(3)),
                ..hunt(
                    "hunt: a transient failure ends it",
                    exited(3),
                    Class::Transient,
                )
            },
            Case {
                expected: Ok(RunOutcome::Permanent),
                status: Some(ExitStatus::Code(127)),
                ..hunt(
                    "hunt: a permanent failure ends it",
                    Ending::not_started(ProcessEnd::NotStarted {
                        status: 127,
                        message: "x: command not found".into(),
                        transient: false,
                    }),
                    Class::Permanent,
                )
            },
            Case {
                deadline_ms: Some(60_000),
                expected: Ok(RunOutcome::Permanent),
                status: Some(ExitStatus::TIMED_OUT),
                ..hunt(
                    "hunt: a run over --timeout failed",
                    timed_out.clone(),
                    Class::Transient,
                )
            },
            Case {
                attempt: 5,
                expected: Ok(RunOutcome::Success),
                status: Some(ExitStatus::SUCCESS),
                ..hunt("hunt: all runs passed", exited(0), Class::Success)
            },
            Case {
                deadline_ms: Some(1_000),
                proposed: sleep(120_000, SleepSource::Backoff),
                expected: Ok(RunOutcome::Success),
                status: Some(ExitStatus::SUCCESS),
                ..hunt(
                    "hunt: no room for another run: all passed",
                    exited(0),
                    Class::Success,
                )
            },
            Case {
                attempt: 3,
                deadline_ms: Some(-1),
                expected: Ok(RunOutcome::Success),
                status: Some(ExitStatus::SUCCESS),
                ..hunt(
                    "hunt: a run cut by --max-time is not counted",
                    timed_out.clone(),
                    Class::Transient,
                )
            },
            Case {
                deadline_ms: Some(-1),
                expected: Ok(RunOutcome::Deadline),
                status: Some(ExitStatus::TIMED_OUT),
                ..hunt(
                    "hunt: the first run cut by --max-time: nothing learned",
                    timed_out.clone(),
                    Class::Transient,
                )
            },
            Case {
                expected: Ok(RunOutcome::Interrupted),
                status: Some(ExitStatus::Signal(crate::outcome::signo::SIGTERM)),
                ..hunt("hunt: a signal to retry wins", interrupted, Class::Success)
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
                until_failure: case.until_failure,
                successes: 1,
            };
            let step = next_step(
                case.attempt,
                &case.ending,
                case.class,
                limits,
                now,
                &case.proposed,
            );
            match (step, case.expected) {
                (Step::Done(Done { end, .. }), Ok(expected)) => {
                    assert_eq!(end.outcome(), Some(expected), "{}", case.name);
                    assert_eq!(Some(end.exit_status(None)), case.status, "{}", case.name);
                }
                (Step::Sleep { sleep, source }, Err(expected)) => {
                    assert_eq!(source, expected, "{}", case.name);
                    assert_eq!(
                        Ok((sleep, source)),
                        sleep_of(&case.proposed),
                        "{}",
                        case.name
                    );
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
            until_failure: false,
            successes: 1,
        };
        let step = next_step(
            1,
            &exited(7),
            Class::Transient,
            limits,
            now,
            &sleep(120_000, SleepSource::Backoff),
        );
        let Step::Done(Done { detail, .. }) = step else {
            panic!("expected the run to end")
        };
        assert_eq!(detail, "the next sleep (2m) would end past it; exit 7");
        let asked = next_step(
            1,
            &exited(7),
            Class::Transient,
            limits,
            now,
            &sleep(120_000, SleepSource::RetryAfter),
        );
        let Step::Done(Done { detail, .. }) = asked else {
            panic!("expected the run to end")
        };
        assert!(
            detail.starts_with("Retry-After asked for 2m, which would end ")
                && detail.ends_with(" past --max-time: not retrying (a --max-time that much longer would wait for it); exit 7"),
            "{detail}"
        );
    }

    #[test]
    fn an_interrupt_names_the_signal() {
        assert_eq!(
            Done::interrupted(crate::outcome::signo::SIGINT).detail,
            "interrupted by SIGINT"
        );
    }

    #[test]
    fn a_hunt_says_which_run_failed_and_how_many_passed() {
        let now = Instant::now();
        let limits = Limits {
            max_attempts: None,
            deadline: None,
            until_failure: true,
            successes: 1,
        };
        let proposed = sleep(0, SleepSource::Backoff);
        let detail = |step: Step| match step {
            Step::Done(done) => done.detail,
            Step::Sleep { .. } => panic!("expected the run to end"),
        };
        let failed = next_step(7, &exited(2), Class::Transient, limits, now, &proposed);
        assert_eq!(detail(failed), "exit 2 on run 7, after 6 runs that passed");
        let limits = Limits {
            max_attempts: Some(1),
            ..limits
        };
        let passed = next_step(1, &exited(0), Class::Success, limits, now, &proposed);
        assert_eq!(detail(passed), "all 1 run passed");
    }

    #[test]
    fn after_the_on_retry_hook_the_retry_goes_ahead_unless_a_signal_or_the_deadline_ends_it() {
        let now = Instant::now();
        let open = Limits {
            max_attempts: Some(5),
            deadline: Some(now + Duration::from_secs(60)),
            until_failure: false,
            successes: 1,
        };
        let past = Limits {
            deadline: now.checked_sub(Duration::from_millis(1)),
            ..open
        };
        let previous = exited(7);
        // A failed hook only warns.
        assert_eq!(after_hook(2, &previous, &exited(1), open, now), None);
        let signalled = Ending {
            interrupted: Some(crate::outcome::signo::SIGTERM),
            ..exited(143)
        };
        let done = after_hook(2, &previous, &signalled, open, now).unwrap();
        assert_eq!(done.end.outcome(), Some(RunOutcome::Interrupted));
        assert_eq!(
            done.end.exit_status(None),
            ExitStatus::Signal(crate::outcome::signo::SIGTERM)
        );
        let done = after_hook(2, &previous, &exited(0), past, now).unwrap();
        assert_eq!(done.end.outcome(), Some(RunOutcome::Deadline));
        assert_eq!(done.end.exit_status(None), ExitStatus::Code(7));
        assert_eq!(done.detail, "--max-time ran out during --on-retry; exit 7");
        let hunting = Limits {
            until_failure: true,
            ..past
        };
        let done = after_hook(4, &exited(0), &exited(0), hunting, now).unwrap();
        assert_eq!(done.end.outcome(), Some(RunOutcome::Success));
        assert_eq!(done.end.exit_status(None), ExitStatus::SUCCESS);
        assert_eq!(
            done.detail,
            "all 3 runs passed; --max-time ran out during --on-retry"
        );
    }

    #[test]
    fn a_run_that_never_got_ready_says_so_and_exits_1() {
        let limits = Limits {
            max_attempts: Some(2),
            deadline: None,
            until_failure: false,
            successes: 1,
        };
        let proposed = sleep(0, SleepSource::Backoff);
        let step = next_step(
            2,
            &exited(0),
            Class::Transient,
            limits,
            Instant::now(),
            &proposed,
        );
        let Step::Done(done) = step else {
            panic!("expected the run to end")
        };
        assert_eq!(done.end.exit_status(None), ExitStatus::Code(1));
        assert_eq!(
            done.detail,
            "exit 0, but no line matched --until-output (exit 1)"
        );
    }

    #[test]
    fn the_end_of_a_run_maps_to_one_exit_status() {
        let failed = |outcome, last| End::Failed { outcome, last };
        let table = [
            (End::Success, ExitStatus::SUCCESS, Some(RunOutcome::Success)),
            (
                failed(RunOutcome::Permanent, ExitStatus::Code(3)),
                ExitStatus::Code(3),
                Some(RunOutcome::Permanent),
            ),
            (
                failed(
                    RunOutcome::Exhausted,
                    ExitStatus::Signal(crate::outcome::signo::SIGKILL),
                ),
                ExitStatus::Signal(crate::outcome::signo::SIGKILL),
                Some(RunOutcome::Exhausted),
            ),
            (
                failed(RunOutcome::Deadline, ExitStatus::TIMED_OUT),
                ExitStatus::TIMED_OUT,
                Some(RunOutcome::Deadline),
            ),
            // A failed run never exits 0 ...
            (
                failed(RunOutcome::Exhausted, ExitStatus::SUCCESS),
                ExitStatus::Code(1),
                Some(RunOutcome::Exhausted),
            ),
            (
                failed(RunOutcome::Deadline, ExitStatus::SUCCESS),
                ExitStatus::Code(1),
                Some(RunOutcome::Deadline),
            ),
            // ... but out of budget, the last attempt's status is kept as is.
            (
                failed(RunOutcome::BudgetExhausted, ExitStatus::SUCCESS),
                ExitStatus::SUCCESS,
                Some(RunOutcome::BudgetExhausted),
            ),
            (
                failed(RunOutcome::BudgetExhausted, ExitStatus::Code(7)),
                ExitStatus::Code(7),
                Some(RunOutcome::BudgetExhausted),
            ),
            (
                End::Interrupted(crate::outcome::signo::SIGINT),
                ExitStatus::Signal(crate::outcome::signo::SIGINT),
                Some(RunOutcome::Interrupted),
            ),
            // The command succeeded; retry could not deliver its output.
            (
                End::Undelivered,
                ExitStatus::Code(125),
                Some(RunOutcome::Success),
            ),
            (
                End::CircuitOpen,
                ExitStatus::Code(75),
                Some(RunOutcome::CircuitOpen),
            ),
            (End::RetryFailed, ExitStatus::Code(125), None),
            (End::Usage, ExitStatus::Code(125), None),
        ];
        for (end, status, outcome) in table {
            assert_eq!(end.exit_status(None), status, "{end:?}");
            assert_eq!(end.outcome(), outcome, "{end:?}");
            // --give-up-exit: a transient failure hands off with its code;
            // everything else keeps its status.
            let handed_off = matches!(
                outcome,
                Some(
                    RunOutcome::Exhausted
                        | RunOutcome::Deadline
                        | RunOutcome::BudgetExhausted
                        | RunOutcome::CircuitOpen
                )
            );
            let expected = if handed_off {
                ExitStatus::Code(3)
            } else {
                status
            };
            assert_eq!(end.exit_status(Some(3)), expected, "{end:?}");
        }
        // Even a code of 0: the CI job passes, the JSON still says why.
        let exhausted = failed(RunOutcome::Exhausted, ExitStatus::Code(7));
        assert_eq!(exhausted.exit_status(Some(0)), ExitStatus::SUCCESS);
    }

    #[test]
    fn a_success_short_of_the_streak_is_confirmed_after_the_base_delay() {
        let limits = Limits {
            max_attempts: Some(4),
            deadline: None,
            until_failure: false,
            successes: 3,
        };
        let decide_at = |number, in_a_row, limits| {
            let ending = exited(0);
            after_attempt(
                Attempt {
                    number,
                    ending: &ending,
                    verdict: judged(Class::Success, "exit 0"),
                    downstream_closed: false,
                    in_a_row,
                },
                limits,
                Instant::now(),
                &sleep(250, SleepSource::Backoff),
            )
        };
        // 1 and 2 in a row: another attempt, after the proposed delay; the
        // attempt itself stays a success.
        for in_a_row in [1, 2] {
            let decision = decide_at(2, in_a_row, limits);
            assert_eq!(decision.verdict.class, Class::Success);
            assert_eq!(
                decision.step,
                Step::Sleep {
                    sleep: sleep_of(&sleep(250, SleepSource::Backoff)).unwrap().0,
                    source: SleepSource::Backoff
                }
            );
        }
        // The third in a row ends it.
        let Step::Done(done) = decide_at(3, 3, limits).step else {
            panic!("expected the run to end")
        };
        assert_eq!(done.end, End::Success);
        // Out of attempts first: failed, never 0.
        let Step::Done(done) = decide_at(4, 2, limits).step else {
            panic!("expected the run to end")
        };
        assert_eq!(done.end.outcome(), Some(RunOutcome::Exhausted));
        assert_eq!(done.end.exit_status(None), ExitStatus::Code(1));
        assert_eq!(
            done.detail,
            "exit 0, but only 2 of the 3 successes in a row --successes asks for (exit 1)"
        );
        // No room for the delay before the deadline: failed too.
        let tight = Limits {
            max_attempts: None,
            deadline: Some(Instant::now() + Duration::from_millis(100)),
            ..limits
        };
        let Step::Done(done) = decide_at(2, 1, tight).step else {
            panic!("expected the run to end")
        };
        assert_eq!(done.end.outcome(), Some(RunOutcome::Deadline));
        assert!(
            done.detail.starts_with(
                "the next sleep (250ms) would end past it; exit 0, but only 1 of the 3"
            ),
            "{}",
            done.detail
        );
    }

    #[test]
    fn a_deadline_already_past_starts_no_attempt() {
        let now = Instant::now();
        let limits = Limits {
            max_attempts: None,
            deadline: Some(now),
            until_failure: false,
            successes: 1,
        };
        let done = before_first_attempt(limits, now).unwrap();
        assert_eq!(done.end.outcome(), Some(RunOutcome::Deadline));
        assert_eq!(done.end.exit_status(None), ExitStatus::TIMED_OUT);
        let ahead = Limits {
            deadline: Some(now + Duration::from_millis(1)),
            ..limits
        };
        assert_eq!(before_first_attempt(ahead, now), None);
        let none = Limits {
            deadline: None,
            ..limits
        };
        assert_eq!(before_first_attempt(none, now), None);
    }

    fn judged(class: Class, reason: &str) -> Verdict {
        Verdict {
            class,
            reason: reason.to_string(),
        }
    }

    fn decide(
        number: u64,
        ending: &Ending,
        verdict: Verdict,
        downstream_closed: bool,
        limits: Limits,
    ) -> Decision {
        let attempt = Attempt {
            number,
            ending,
            verdict,
            downstream_closed,
            in_a_row: u64::from(ending.succeeded()),
        };
        after_attempt(
            attempt,
            limits,
            Instant::now(),
            &sleep(0, SleepSource::Backoff),
        )
    }

    #[test]
    fn the_verdict_comes_back_final() {
        let limits = Limits {
            max_attempts: Some(5),
            deadline: None,
            until_failure: false,
            successes: 1,
        };
        // A transient failure that retries is left as it was.
        let decision = decide(
            1,
            &exited(3),
            judged(Class::Transient, "exit 3"),
            false,
            limits,
        );
        assert_eq!(decision.verdict, judged(Class::Transient, "exit 3"));
        assert!(matches!(decision.step, Step::Sleep { .. }));

        // The reader went away: permanent, and the run ends on it.
        let decision = decide(
            1,
            &exited(3),
            judged(Class::Transient, "exit 3"),
            true,
            limits,
        );
        assert_eq!(
            decision.verdict,
            judged(
                Class::Permanent,
                "exit 3; the reader of the output went away"
            )
        );
        let Step::Done(done) = decision.step else {
            panic!("expected the run to end")
        };
        assert_eq!(done.end.outcome(), Some(RunOutcome::Permanent));
        // A success stays one.
        let decision = decide(
            1,
            &exited(0),
            judged(Class::Success, "exit 0"),
            true,
            limits,
        );
        assert_eq!(decision.verdict, judged(Class::Success, "exit 0"));

        // A signal to retry ends the run: its attempt is no longer transient.
        let interrupted = Ending {
            interrupted: Some(crate::outcome::signo::SIGTERM),
            ..exited(143)
        };
        let decision = decide(
            1,
            &interrupted,
            judged(Class::Transient, "x"),
            false,
            limits,
        );
        assert_eq!(decision.verdict.class, Class::Permanent);

        // --until-failure: the failure it found is permanent; a run cut
        // short by --max-time is not counted, and says so.
        let hunting = Limits {
            until_failure: true,
            ..limits
        };
        let decision = decide(
            2,
            &exited(3),
            judged(Class::Transient, "exit 3"),
            false,
            hunting,
        );
        assert_eq!(decision.verdict, judged(Class::Permanent, "exit 3"));
        let now = Instant::now();
        let past = Limits {
            deadline: now.checked_sub(Duration::from_millis(1)),
            ..hunting
        };
        let timed_out = Ending {
            timed_out: true,
            ..exited(143)
        };
        let decision = decide(
            3,
            &timed_out,
            judged(Class::Transient, "timed out"),
            false,
            past,
        );
        assert_eq!(
            decision.verdict,
            judged(
                Class::Transient,
                "timed out; cut short by --max-time, not counted"
            )
        );
    }

    #[test]
    fn only_a_failed_run_gives_up() {
        let gave_up: Vec<&str> = RunOutcome::ALL
            .into_iter()
            .filter(|o| o.gave_up())
            .map(RunOutcome::as_str)
            .collect();
        assert_eq!(
            gave_up,
            ["permanent", "exhausted", "deadline", "budget-exhausted"]
        );
    }
}
