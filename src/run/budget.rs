//! The run's side of `--budget`: the first attempt's deposit, a token
//! before each retry, and what to do when the store cannot be used (say so
//! once; retries go ahead) or a wait for it is cut short.

use std::time::Instant;

use super::Run;
use super::judge::Judged;
use crate::budget::Withdrawal;
use crate::policy::classify::Class;
use crate::policy::decision::{self, Done};
use crate::process::signals::{self, SignalEvents};
use crate::report::{Guard, Reporter};
use crate::state::store::{Interrupted, Patience};

impl Run<'_> {
    /// How long the budget's store may hold the run up: not past
    /// `--max-time`, and not past a signal to retry.
    fn patience(&self) -> Patience {
        Patience {
            until: self.setup.limits.deadline,
            signals: true,
        }
    }

    /// `--budget`: the run's first attempt deposits its share.
    pub(super) fn deposit(&mut self, reporter: &mut Reporter) {
        let Some(budget) = self.state.budget else {
            return;
        };
        let started = Instant::now();
        match budget.deposit(self.patience()) {
            Ok((tokens, warnings)) => {
                for warning in warnings {
                    reporter.lasting_warning("budget", &warning);
                }
                reporter.budget(&budget.name, "deposit", tokens, started.elapsed());
            }
            Err(err) => self.budget_failed(&err, reporter),
        }
    }

    /// `--budget`, before the retry after `attempt`: `Some` when the run
    /// ends instead: the budget has no whole token, or a signal to retry or
    /// `--max-time` cut the wait for its store short. `--until-failure`
    /// repeats are no retries: they take nothing; nor does an attempt that
    /// confirms a success (`--successes`).
    pub(super) fn budget_refuses(
        &mut self,
        attempt: u64,
        judged: &Judged,
        signals: &mut SignalEvents,
        reporter: &mut Reporter,
    ) -> Option<Done> {
        let budget = self.state.budget?;
        if self.setup.limits.until_failure || judged.verdict.class == Class::Success {
            return None;
        }
        let started = Instant::now();
        let asked = budget.withdraw(self.patience());
        if let Some(signal) = signals::pending_signal(&mut signals.events) {
            return Some(Done::interrupted(signal));
        }
        let ending = &judged.outcome.ending;
        let during = format!("while asking retry budget {}", budget.name);
        if let Some(done) = decision::out_of_time(
            attempt + 1,
            ending,
            self.setup.limits,
            Instant::now(),
            &during,
        ) {
            // Whatever the store said, no retry fits any more.
            return Some(done);
        }
        match asked {
            Ok((withdrawal, warnings)) => {
                for warning in warnings {
                    reporter.lasting_warning("budget", &warning);
                }
                let took = started.elapsed();
                match withdrawal {
                    Withdrawal::Taken { left } => {
                        reporter.budget(&budget.name, "withdraw", left, took);
                        None
                    }
                    Withdrawal::Refused { tokens } => {
                        Some(Done::budget_exhausted(&budget.name, tokens, ending))
                    }
                }
            }
            Err(err) => {
                self.budget_failed(&err, reporter);
                None
            }
        }
    }

    /// The budget's store failed: say so once (also under `-q`); retries
    /// go ahead, without the budget for the rest of the run, as the `done`
    /// event says. (Not for a wait a signal cut short: the run ends on
    /// that signal.)
    fn budget_failed(&mut self, err: &anyhow::Error, reporter: &mut Reporter) {
        if err.is::<Interrupted>() {
            return;
        }
        if let Some(budget) = self.state.budget.take() {
            reporter.guard_lost(
                Guard::Budget,
                &format!(
                    "retry budget {}: {err:#}; retrying as if it allowed",
                    budget.name
                ),
            );
        }
    }
}
