//! The schedule's effects, for real: the run's clock, signals, budget,
//! attempts, hooks and reporter behind [`Effects`].

use std::time::{Instant, SystemTime};

use anyhow::Result;
use rand::rngs::SmallRng;

use super::Run;
use super::hook_process::HookRun;
use super::one_attempt::Judged;
use super::schedule::{Effects, Plan};
use crate::outcome::Ending;
use crate::policy::classify::Class;
use crate::policy::decision::BudgetAnswer;
use crate::policy::next_sleep::SleepRules;
use crate::process::signals::{self, SignalEvents};
use crate::report::{AttemptRecord, Reporter, SleepRecord};

/// A run at work: itself, the signals it listens to, where it reports.
pub(super) struct Working<'r, 'a> {
    pub(super) run: &'r mut Run<'a>,
    pub(super) signals: &'r mut SignalEvents,
    pub(super) reporter: &'r mut Reporter,
}

impl Run<'_> {
    /// What the schedule needs of the run's settings.
    pub(super) fn plan(&self) -> Plan {
        let config = self.setup.config;
        Plan {
            limits: self.setup.limits,
            sleeps: SleepRules {
                delay: config.policy.delay,
                cap: config.policy.cap,
                throttle_delay: config.throttle_delay,
                max_retry_after: config.max_retry_after,
                successes: config.hooks.successes,
            },
            max_attempts: config.attempts,
            splay: config.splay,
            reset_after: config.hooks.reset_after,
        }
    }
}

impl Effects for Working<'_, '_> {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }

    fn rng(&mut self) -> &mut SmallRng {
        &mut self.run.state.rng
    }

    fn pending_signal(&mut self) -> Option<i32> {
        signals::pending_signal(&mut self.signals.events)
    }

    fn sleep_until(&mut self, wake: Instant) -> Option<i32> {
        // Orphans an attempt left are reaped as they end, meanwhile.
        signals::sleep_until(&mut self.signals.events, wake, crate::process::reap_orphans)
    }

    fn deposit(&mut self) {
        self.run.deposit(self.reporter);
    }

    fn withdraw(&mut self) -> Option<(String, BudgetAnswer)> {
        self.run.withdraw(self.signals, self.reporter)
    }

    fn attempt(&mut self, number: u64, previous_exit: Option<i32>) -> Result<Judged> {
        let judged = match self.run.setup.hedge {
            Some(plan) => {
                self.run
                    .hedged_attempt(plan, number, previous_exit, self.signals, self.reporter)?
            }
            None => self
                .run
                .attempt(number, previous_exit, self.signals, self.reporter)?,
        };
        if judged.verdict.class == Class::Success {
            self.run.state.last_success = Some(judged.outcome.duration);
        }
        Ok(judged)
    }

    fn on_retry(&mut self, next: u64, previous: &Ending) -> Option<HookRun> {
        self.run.on_retry(next, previous, self.signals)
    }

    fn report_on_retry(&mut self, ran: &HookRun, run_ends: bool) {
        self.run.report_on_retry(ran, run_ends, self.reporter);
    }

    fn spool_failure(&self) -> Option<String> {
        self.run
            .files
            .stdin
            .spool_failure()
            .is_some()
            .then(|| self.run.spool_problem())
    }

    fn report_attempt(&mut self, record: &AttemptRecord, next: Option<&SleepRecord>) {
        // A failed attempt's final verdict, for the metrics.
        let failures = &mut self.run.state.failures;
        match record.outcome {
            Class::Success => {}
            Class::Transient => failures.transient += 1,
            Class::Throttled => failures.throttled += 1,
            Class::Permanent => failures.permanent += 1,
        }
        self.reporter.attempt(record, next);
    }

    fn report_sleep(&mut self, record: &SleepRecord) {
        self.reporter.sleep(record);
    }

    fn warning(&mut self, kind: &str, message: &str) {
        self.reporter.warning(kind, message);
    }
}
