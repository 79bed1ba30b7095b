//! The run's side of `--budget`: the first attempt's deposit, a token
//! before each retry, and what to do when the store cannot be used (say so
//! once; retries go ahead) or a wait for it is cut short.

use std::time::Instant;

use super::Run;
use crate::budget::Withdrawal;
use crate::contract::warning;
use crate::policy::decision::BudgetAnswer;
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
                    reporter.lasting_warning(warning::BUDGET, &warning);
                }
                reporter.budget(&budget.name, "deposit", tokens, started.elapsed());
            }
            Err(err) => self.budget_failed(&err, reporter),
        }
    }

    /// `--budget`: a token for the retry to come, as the store answered
    /// (`None`: no budget in force, or its store failed earlier). A signal
    /// to retry that arrived while the store was asked is the answer: the
    /// store's own is moot then. What the answer means is `decision`'s.
    pub(super) fn withdraw(
        &mut self,
        signals: &mut SignalEvents,
        reporter: &mut Reporter,
    ) -> Option<(String, BudgetAnswer)> {
        let budget = self.state.budget?;
        let started = Instant::now();
        let asked = budget.withdraw(self.patience());
        let answer = if let Some(signal) = signals::pending_signal(&mut signals.events) {
            BudgetAnswer::Interrupted(signal)
        } else {
            match asked {
                Ok((withdrawal, warnings)) => {
                    for warning in warnings {
                        reporter.lasting_warning(warning::BUDGET, &warning);
                    }
                    match withdrawal {
                        Withdrawal::Taken { left } => {
                            reporter.budget(&budget.name, "withdraw", left, started.elapsed());
                            BudgetAnswer::Taken { left }
                        }
                        Withdrawal::Refused { tokens } => BudgetAnswer::Refused { tokens },
                    }
                }
                Err(err) => {
                    self.budget_failed(&err, reporter);
                    BudgetAnswer::Unusable
                }
            }
        };
        Some((budget.name.clone(), answer))
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
