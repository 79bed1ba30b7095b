//! The run's side of `--on-retry` and `--on-give-up`: their environment,
//! their limits, and what their ending means for the run.

use std::ffi::OsStr;
use std::time::Instant;

use super::Run;
use super::one_attempt::child_env;
use crate::cli::config::GIVE_UP_LIMIT;
use crate::contract::warning;
use crate::outcome::Ending;
use crate::policy::decision::{self, End, GiveUpHook};
use crate::process::signals::{self, SignalEvents};
use crate::report::Reporter;
use crate::run::hook_process::{self, Hook, HookRun};
use crate::text::{sanitize_line, shell_word};

impl Run<'_> {
    /// `--on-retry`, before attempt `next` (after the sleep): how it ended
    /// (`None`: no hook). It is bounded like an attempt, by `--timeout` and
    /// `--max-time`; what its ending means is `decision::after_hook`'s.
    pub(super) fn on_retry(
        &mut self,
        next: u64,
        previous: &Ending,
        signals: &mut SignalEvents,
    ) -> Option<HookRun> {
        let setup = &self.setup;
        let config = setup.config;
        let command = config.hooks.on_retry.as_ref()?;
        // The attempt's own variables, but not its hint file: a word the
        // hook left there would be taken for the attempt's.
        let env = child_env(
            setup,
            next,
            Some(previous.exit_status().as_number()),
            &self.files.hint,
        )
        .into_iter()
        .filter(|(name, _)| *name != "RETRY_HINT_FILE")
        .collect();
        let hook = Hook {
            command,
            env,
            own_group: setup.own_group,
            deadline: setup.attempt_deadline(),
            kill_after: config.kill_after,
        };
        Some(hook_process::run(hook, &mut signals.events))
    }

    /// Say how `--on-retry` went; `run_ends`: the decision ends the run on
    /// it.
    pub(super) fn report_on_retry(&self, ran: &HookRun, run_ends: bool, reporter: &mut Reporter) {
        let Some(command) = self.setup.config.hooks.on_retry.as_ref() else {
            return;
        };
        let then = if run_ends {
            "no retry follows: the run ends"
        } else {
            "retrying anyway"
        };
        report_hook("on-retry", command, ran, reporter, then);
    }

    /// `--on-give-up`, once the run has failed (not under `--until-failure`,
    /// whose first failure is what it looks for). It sees the status retry
    /// is about to end with (`end`'s), the outcome and the number of attempts, and is
    /// bounded by `--timeout`, else [`GIVE_UP_LIMIT`]. A signal to
    /// retry before or during it is returned.
    pub(super) fn on_give_up(
        &mut self,
        end: End,
        attempts: u64,
        signals: &mut SignalEvents,
        reporter: &mut Reporter,
    ) -> Option<i32> {
        let config = self.setup.config;
        let command = config.hooks.on_give_up.as_ref()?;
        let outcome = end.outcome()?;
        if !outcome.gave_up() || config.hooks.until_failure {
            return None;
        }
        if let Some(signal) = signals::pending_signal(&mut signals.events) {
            return Some(signal);
        }
        let env = vec![
            (
                "RETRY_EXIT",
                end.exit_status(config.hooks.give_up_exit)
                    .as_number()
                    .to_string()
                    .into(),
            ),
            ("RETRY_OUTCOME", outcome.as_str().into()),
            ("RETRY_ATTEMPTS", attempts.to_string().into()),
            (
                "RETRY_MAX_ATTEMPTS",
                config
                    .attempts
                    .map(|n| n.to_string())
                    .unwrap_or_default()
                    .into(),
            ),
            ("RETRY_RUN_ID", self.setup.id.as_str().into()),
        ];
        let limit = config.timeout.unwrap_or(GIVE_UP_LIMIT);
        let outer = config.outer_deadline.map(|outer| outer.at);
        let GiveUpHook::Runs { until: deadline } =
            decision::give_up_hook(limit, outer, Instant::now())
        else {
            reporter.warning(
                warning::HOOK,
                "--on-give-up not run: the outer run's deadline (RETRY_DEADLINE) has passed",
            );
            return None;
        };
        let hook = Hook {
            command,
            env,
            own_group: self.setup.own_group,
            deadline,
            kill_after: config.kill_after,
        };
        let ran = hook_process::run(hook, &mut signals.events);
        report_hook(
            "on-give-up",
            command,
            &ran,
            reporter,
            "retry ends as it would have",
        );
        ran.ending.interrupted
    }
}

fn report_hook(which: &str, command: &OsStr, ran: &HookRun, reporter: &mut Reporter, then: &str) {
    let text = command.to_string_lossy();
    reporter.hook(which, &text, &ran.ending, ran.duration);
    if ran.ending.succeeded() || ran.ending.interrupted.is_some() {
        return;
    }
    reporter.warning(
        warning::HOOK,
        &format!(
            "--{which} {} failed: {}; {then}",
            sanitize_line(&shell_word(command), 80),
            ran.ending.describe()
        ),
    );
}
