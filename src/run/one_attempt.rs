//! One attempt, started and judged: its environment, its limits, its
//! output's wiring, then what `classify` makes of how it ended.

use std::ffi::OsString;
use std::time::{Instant, SystemTime};

use anyhow::Result;

use super::{Run, Setup};
use crate::contract::warning;
use crate::outcome::Hint;
use crate::policy::classify::{self, Class, Observation, Verdict};
use crate::policy::server_wait;
use crate::process::signals::SignalEvents;
use crate::process::{ChildIo, Launch};
use crate::report::Reporter;
use crate::run::deliver::HeldStdout;
use crate::run::hint::{HintContent, HintFile};
use crate::run::wiring::{self, AttemptSpec, Outcome, OutputPlan};
use crate::scan::Response;

/// One attempt, judged.
pub(super) struct Judged {
    pub(super) outcome: Outcome,
    pub(super) hint: Option<Hint>,
    /// What `classify` made of it (the decision makes it final).
    pub(super) verdict: Verdict,
    /// The HTTP response whose headers may set the next sleep.
    pub(super) response: Option<Response>,
    /// `--hedge-after`: which copy of the attempt it was.
    pub(super) copy: Option<u64>,
}

impl Run<'_> {
    /// Run attempt number `attempt` and judge it.
    pub(super) fn attempt(
        &mut self,
        attempt: u64,
        previous_exit: Option<i32>,
        signals: &mut SignalEvents,
        reporter: &mut Reporter,
    ) -> Result<Judged> {
        let setup = &self.setup;
        let config = setup.config;
        let files = &mut self.files;
        if attempt == 2 && files.stdin.is_shared_pipe() {
            reporter.warning(warning::STDIN,
                "stdin is a pipe: attempt 2 and later read only what earlier attempts left (--stdin replay gives each the whole input)",
            );
        }
        if let Some(held) = &files.held {
            held.reset()?;
        }
        reporter.attempt_start(attempt, config.attempts, &setup.command_text);
        if let Err(problem) = files.hint.prepare() {
            reporter.warning(warning::HINT, &problem);
        }
        let spec = AttemptSpec {
            launch: Launch {
                argv: &config.command,
                env: child_env(setup, attempt, previous_exit, &files.hint),
                own_group: setup.own_group,
                stdin: ChildIo::Inherit,
                stdout: ChildIo::Inherit,
                stderr: ChildIo::Inherit,
            },
            deadline: setup.attempt_deadline(),
            kill_after: config.kill_after,
        };
        let output = OutputPlan {
            patterns: config.rules.patterns.as_ref(),
            scan_stdout: config.scan_stdout,
            same_file: setup.one_output_file,
            stdout_spool: files.held.as_ref().map(HeldStdout::file),
            stderr_spool: None,
        };
        let stdin = files.stdin.for_attempt()?;
        let outcome = wiring::run(spec, &output, stdin, &mut signals.events)?;
        reporter.child_left_line_open(outcome.stderr_mid_line);
        let taken = self.files.hint.take();
        Ok(self.judge(outcome, taken, reporter))
    }

    /// What `classify` makes of an attempt that ended as `outcome` and left
    /// `taken` in its hint file; the warnings it is worth.
    pub(super) fn judge(
        &mut self,
        outcome: Outcome,
        taken: Result<Option<HintContent>, String>,
        reporter: &mut Reporter,
    ) -> Judged {
        let config = self.setup.config;
        if let Some(problem) = &outcome.stdin_error {
            reporter.warning(warning::STDIN, problem);
        }
        self.note_lost_output(&outcome.lost, reporter);
        let taken = taken.unwrap_or_else(|problem| {
            reporter.warning(warning::HINT, &problem);
            None
        });
        let (hint, hint_headers) = match taken {
            Some(HintContent::Word(hint)) => (Some(hint), None),
            Some(HintContent::Headers(response)) => (None, Some(*response)),
            None => (None, None),
        };
        // The response headers read: the hint file's, else the output's
        // when asked for (--retry-after, the curl and wget presets).
        let response = hint_headers.or_else(|| {
            config
                .rules
                .retry_after
                .then(|| outcome.scan.response.clone())
        });
        let observation = Observation {
            ending: &outcome.ending,
            hint,
            matched: &outcome.scan.matched,
            lines: &outcome.scan.lines,
            name_the_choice: !self.state.choice_said,
            throttling: response
                .as_ref()
                .and_then(|response| server_wait::throttling(response, SystemTime::now())),
        };
        let verdict = classify::classify(&observation, &config.rules);
        self.state.choice_said |= verdict.class != Class::Success;
        for advice in self
            .state
            .advice
            .after_attempt(&outcome.ending, &outcome.scan, &config.rules)
        {
            reporter.warning(warning::PRESET, &advice);
        }
        Judged {
            outcome,
            hint,
            verdict,
            response,
            copy: None,
        }
    }
}

impl Setup<'_> {
    /// When an attempt (or `--on-retry`) starting now is ended: at
    /// `--timeout`, or at `--max-time` if that comes first.
    pub(super) fn attempt_deadline(&self) -> Option<Instant> {
        [
            self.config.timeout.map(|t| Instant::now() + t),
            self.limits.deadline,
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

/// The variables attempt number `attempt` (and the `--on-retry` before it)
/// gets.
pub(super) fn child_env(
    setup: &Setup<'_>,
    attempt: u64,
    previous: Option<i32>,
    hint: &HintFile,
) -> Vec<(&'static str, OsString)> {
    let mut env = vec![
        ("RETRY_ATTEMPT", attempt.to_string().into()),
        (
            "RETRY_MAX_ATTEMPTS",
            setup
                .config
                .attempts
                .map(|n| n.to_string())
                .unwrap_or_default()
                .into(),
        ),
        ("RETRY_RUN_ID", setup.id.as_str().into()),
        (
            "RETRY_PREVIOUS_EXIT",
            previous.map(|c| c.to_string()).unwrap_or_default().into(),
        ),
        ("RETRY_HINT_FILE", hint.env_value()),
        (
            "RETRY_DEPTH",
            setup.config.report.ci.depth.to_string().into(),
        ),
    ];
    // Only a run with a deadline sets it (one without was given none).
    if let Some(ms) = setup.deadline_ms {
        env.push((crate::cli::deadline::VARIABLE, ms.to_string().into()));
    }
    // A preset's English patterns read the command's messages in C.
    env.extend(setup.config.child_locale.iter().cloned());
    env
}
