//! A circuit in either mode, as a run and `--circuit-status` see it: the
//! breaker (`Circuit`) or the adaptive throttle (`Throttle`). It answers
//! "may this run go ahead?" in words a reporter can say, and is told how
//! the run ended; it knows nothing of runs beyond their summary.

use anyhow::Result;

use super::Circuit;
use super::adaptive::Tally;
use super::breaker::{Admission, RunResult};
use super::throttle::Throttle;
use crate::outcome::{RunOutcome, RunSummary};
use crate::report::Throttled;

pub(crate) enum Gatekeeper {
    Breaker(Circuit),
    Adaptive(Throttle),
}

/// What the circuit said before a run.
pub(crate) struct Verdict {
    /// About the store (a corrupt record read as new): said even under -q.
    pub(crate) store_warning: Option<String>,
    /// The settings given differ from those stored.
    pub(crate) mismatch: Option<String>,
    /// `-v`: the circuit as admission found it.
    pub(crate) summary: String,
    /// The run may not go ahead: why.
    pub(crate) refusal: Option<String>,
    /// An adaptive circuit's counts, for the `done` event and the metrics.
    pub(crate) throttled: Option<Throttled>,
    /// The run is a half-open breaker's one probe: no hedge may double it.
    pub(crate) probing: bool,
}

/// What a run's outcome says about the dependency, for the breaker.
fn run_result(summary: &RunSummary) -> RunResult {
    // A run that started no attempt (its deadline had passed) learned
    // nothing about the dependency.
    if summary.attempts == 0 {
        return RunResult::Aborted;
    }
    match summary.outcome {
        RunOutcome::Success => RunResult::Success,
        RunOutcome::Interrupted | RunOutcome::CircuitOpen => RunResult::Aborted,
        RunOutcome::Permanent
        | RunOutcome::Exhausted
        | RunOutcome::Deadline
        | RunOutcome::BudgetExhausted => RunResult::Failure,
    }
}

/// What a run's attempts say, for the adaptive throttle: each one a
/// request (each copy of a hedged attempt too); accepted unless it failed
/// transiently (throttled and overloaded answers, timeouts, a connection
/// refused) or was ended before an answer (a hedge's copy another beat),
/// so a success and a permanent failure (a 404: the backend answered) are
/// accepts.
pub(crate) fn tally(summary: &RunSummary) -> Tally {
    let failures = summary.failures;
    let requests = summary.attempts.saturating_add(failures.hedges);
    let refused = failures
        .transient
        .saturating_add(failures.throttled)
        .saturating_add(failures.side_copies_unanswered);
    Tally {
        attempts: requests,
        accepts: requests.saturating_sub(refused),
    }
}

impl Gatekeeper {
    pub(crate) fn name(&self) -> &str {
        match self {
            Gatekeeper::Breaker(circuit) => &circuit.name,
            Gatekeeper::Adaptive(throttle) => &throttle.name,
        }
    }

    /// May the run go ahead? Updates the circuit (a breaker's probe is
    /// claimed; an adaptive circuit counts the request).
    pub(crate) fn admit(&self) -> Result<Verdict> {
        match self {
            Gatekeeper::Breaker(circuit) => {
                let decision = circuit.admit()?;
                let refusal = match decision.admission {
                    Admission::Refuse { until_ms, probing } => {
                        Some(circuit.refusal(until_ms, probing, &decision.state))
                    }
                    Admission::Run | Admission::Probe => None,
                };
                Ok(Verdict {
                    store_warning: decision.warning,
                    mismatch: circuit.settings_mismatch(&decision.state),
                    summary: circuit.summary(&decision.state),
                    refusal,
                    throttled: None,
                    probing: decision.admission == Admission::Probe,
                })
            }
            Gatekeeper::Adaptive(throttle) => {
                let (judged, state, warning) = throttle.admit()?;
                Ok(Verdict {
                    store_warning: warning,
                    mismatch: throttle.mismatch(&state),
                    summary: throttle.summary(&judged),
                    refusal: judged.rejected.then(|| throttle.refusal(&judged)),
                    throttled: Some(Throttled {
                        requests: judged.counts.requests,
                        accepts: judged.counts.accepts,
                        probability: judged.probability,
                        rejected: judged.rejected,
                    }),
                    probing: false,
                })
            }
        }
    }

    /// Tell the circuit how the admitted run ended; `None`: retry failed
    /// on its own (not the command), which says nothing about the
    /// dependency (and gives back a probe it claimed).
    pub(crate) fn record(&self, summary: Option<&RunSummary>) -> Result<Option<String>> {
        match self {
            Gatekeeper::Breaker(circuit) => {
                circuit.record(summary.map_or(RunResult::Aborted, run_result))
            }
            Gatekeeper::Adaptive(throttle) => {
                // Retry's own failure: what ran is not known; the request
                // counted when it asked stays.
                let unknown = Tally {
                    attempts: 1,
                    accepts: 0,
                };
                throttle.record(summary.map_or(unknown, tally))
            }
        }
    }

    /// `--circuit-reset`: the line to print.
    pub(crate) fn reset(&self) -> Result<String> {
        Ok(match self {
            Gatekeeper::Breaker(circuit) => {
                circuit.reset()?;
                format!("circuit {} reset: closed\n", circuit.name)
            }
            Gatekeeper::Adaptive(throttle) => {
                throttle.reset()?;
                format!(
                    "circuit {} reset: no requests or accepts counted (adaptive)\n",
                    throttle.name
                )
            }
        })
    }

    /// `--circuit-status`.
    pub(crate) fn status(&self) -> Result<String> {
        match self {
            Gatekeeper::Breaker(circuit) => circuit.status(),
            Gatekeeper::Adaptive(throttle) => throttle.status(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::ExitStatus;
    use crate::outcome::Failures;

    #[test]
    fn accepts_are_answers_and_transient_failures_are_not() {
        let summary = |outcome, attempts, transient, throttled, permanent| RunSummary {
            status: ExitStatus::SUCCESS,
            outcome,
            attempts,
            elapsed: std::time::Duration::ZERO,
            failures: Failures {
                transient,
                throttled,
                permanent,
                ..Failures::default()
            },
        };
        for (run, attempts, accepts) in [
            // Two 503s, then a success.
            (summary(RunOutcome::Success, 3, 2, 0, 0), 3, 1),
            // A 429, then a 404: the backend answered the second.
            (summary(RunOutcome::Permanent, 2, 0, 1, 1), 2, 1),
            // Five timeouts or refused connections.
            (summary(RunOutcome::Exhausted, 5, 5, 0, 0), 5, 0),
            // --successes 3: three answers.
            (summary(RunOutcome::Success, 3, 0, 0, 0), 3, 3),
            // Nothing ran.
            (summary(RunOutcome::Deadline, 0, 0, 0, 0), 0, 0),
        ] {
            assert_eq!(tally(&run), Tally { attempts, accepts });
        }
        // Hedged: two copies of attempt 1 failed (one counted as the
        // attempt, one unanswered beside it), then attempt 2's hedge won
        // and its first copy was superseded: four requests, one answer.
        let mut hedged = summary(RunOutcome::Success, 2, 1, 0, 0);
        hedged.failures.hedges = 2;
        hedged.failures.superseded = 1;
        hedged.failures.side_copies_unanswered = 2;
        assert_eq!(
            tally(&hedged),
            Tally {
                attempts: 4,
                accepts: 1
            }
        );
    }
}
