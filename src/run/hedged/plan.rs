//! How a run hedges: `--hedge-after`'s delay settled at the run's start
//! (fixed, or `p95` of what the name learned), and what a successful run
//! teaches `p95`.

use std::time::Duration;

use anyhow::Result;

use crate::contract::warning;
use crate::policy::hedging::{self, HedgeAfter};
use crate::report::Reporter;
use crate::run::Run;

/// How a run hedges its attempts, settled at its start.
#[derive(Clone, Copy, Debug)]
pub(in crate::run) struct HedgePlan {
    /// How long a copy runs before the next starts.
    pub(in crate::run) delay: Duration,
    /// Copies beyond the first, at most.
    pub(in crate::run) hedges: u64,
}

impl Run<'_> {
    /// `--hedge-after`: check that copies can run (their stdin), and settle
    /// the delay: a fixed one, or `p95` of what the name's earlier
    /// successful attempts took (not hedged until enough are known).
    pub(in crate::run) fn plan_hedging(&mut self, reporter: &mut Reporter) -> Result<()> {
        let config = self.setup.config;
        let Some(hedging) = &config.hedging else {
            return Ok(());
        };
        if let Some(why) = self.files.stdin.unshareable(config.stdin) {
            anyhow::bail!("--hedge-after: {why}");
        }
        if self.files.stdin.is_terminal() {
            reporter.policy(
                "--hedge-after: stdin is a terminal, which copies cannot share: they read nothing (as --stdin null)",
            );
        }
        let state = config
            .circuit
            .as_ref()
            .map(|c| &c.state)
            .or_else(|| config.budget.as_ref().map(|b| &b.state));
        let delay = match hedging.after {
            HedgeAfter::Fixed(delay) => Some(delay),
            HedgeAfter::P95 => {
                let (Some(name), Some(state)) = (&hedging.learn_as, state) else {
                    return Ok(());
                };
                let learned = crate::latency::Latency::open(name, state).and_then(|latency| {
                    let (durations, warning) = latency.durations()?;
                    Ok((latency, durations, warning))
                });
                match learned {
                    Ok((latency, durations, warning)) => {
                        if let Some(warning) = warning {
                            reporter.warning(warning::HEDGING, &warning);
                        }
                        self.state.latency = Some(latency);
                        let p95 = hedging::p95(&durations);
                        reporter.policy(&match p95 {
                            Some(p95) => format!(
                                "--hedge-after p95: {} (the 95th percentile of the last {} successful attempts of {name})",
                                crate::values::human(p95),
                                durations.len()
                            ),
                            None => format!(
                                "--hedge-after p95: not hedging yet: {} successful attempts of {name} known, {} needed",
                                durations.len(),
                                hedging::P95_SAMPLES
                            ),
                        });
                        p95
                    }
                    Err(err) => {
                        reporter.warning(
                            warning::HEDGING,
                            &format!("--hedge-after p95: cannot read what {name} learned ({err:#}); not hedging"),
                        );
                        None
                    }
                }
            }
        };
        if let (Some(delay), Some(timeout)) = (delay, config.timeout)
            && delay >= timeout
        {
            reporter.warning(
                warning::HEDGING,
                &format!(
                    "--hedge-after {} is not under --timeout {}: copies never run together; each copy that times out is followed at once by the next, without a sleep",
                    crate::values::human(delay),
                    crate::values::human(timeout)
                ),
            );
        }
        self.setup.hedge = delay.map(|delay| HedgePlan {
            delay,
            hedges: hedging.hedges,
        });
        Ok(())
    }

    /// Before the first attempt of a hedged run: a replayed input read to
    /// its end, so that each copy can be given all of it. An input that
    /// does not end is read until a signal to retry or `--max-time`; the
    /// run then ends on that, before any attempt.
    pub(in crate::run) fn read_input_for_copies(&mut self) -> Result<()> {
        if self.setup.hedge.is_none() {
            return Ok(());
        }
        let deadline = self.setup.limits.deadline;
        let give_up = || {
            crate::process::signals::terminating_arrived()
                || deadline.is_some_and(|d| std::time::Instant::now() >= d)
        };
        self.files.stdin.read_whole(&give_up)?;
        Ok(())
    }

    /// After a successful run under `--hedge-after p95`: learn how long its
    /// successful attempt took.
    pub(in crate::run) fn learn_latency(&mut self, reporter: &mut Reporter) {
        let (Some(latency), Some(took)) = (&self.state.latency, self.state.last_success) else {
            return;
        };
        match latency.learn(took) {
            Ok(Some(warning)) => reporter.warning(warning::HEDGING, &warning),
            Ok(None) => {}
            Err(err) => reporter.warning(
                warning::HEDGING,
                &format!("--hedge-after p95: cannot keep what this run learned ({err:#})"),
            ),
        }
    }
}
