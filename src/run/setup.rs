//! What a run sets up once, before its first attempt: its id, limits,
//! files and process model, and what it says before it starts (the policy
//! under `-v`, the configuration's warnings, a nested retry).

use std::time::{Instant, SystemTime};

use anyhow::{Context, Result};
use rand::rngs::{SmallRng, SysRng};
use rand::{RngExt, SeedableRng};

use super::{Files, Run, Setup, State};
use crate::budget::Budget;
use crate::cli::config::Config;
use crate::cli::deadline;
use crate::contract::warning;
use crate::outcome::Failures;
use crate::policy::decision::Limits;
use crate::presets::advice::Advice;
use crate::report::{Reporter, Verbosity};
use crate::run::deliver::HeldStdout;
use crate::run::hint::HintFile;
use crate::run::output::Lost;
use crate::run::stdin::StdinSource;
use crate::sys::fd::own_fd;
use crate::text::sanitize_line;

/// A new run's random id: 128 bits, as 32 hex digits.
pub(crate) fn new_run_id() -> String {
    format!("{:032x}", seeded_rng().random::<u128>())
}

/// A generator seeded straight from the kernel (getrandom), not through
/// rand's thread-local generator (a `ChaCha12`), whose set-up (CPU feature
/// detection, a first block) costs a short run of retry more than all
/// its draws do (BENCHMARKS.md).
fn seeded_rng() -> SmallRng {
    SmallRng::try_from_rng(&mut SysRng).expect("getrandom failed")
}

impl<'a> Run<'a> {
    pub(super) fn set_up(
        config: &'a Config,
        run_id: &str,
        budget: Option<&'a Budget>,
    ) -> Result<Run<'a>> {
        let started = Instant::now();
        let wall_clock = SystemTime::now();
        let rng = seeded_rng();
        // `-o` holds stdout apart too; with both flags, FILE gets it.
        let held = match &config.output {
            Some(path) => Some(HeldStdout::output(path)?),
            None if config.buffer_stdout => Some(HeldStdout::spool()?),
            None => None,
        };
        let (deadline, deadline_ms) = run_deadline(config, started, wall_clock);
        let setup = Setup {
            config,
            id: run_id.to_string(),
            started,
            limits: Limits {
                max_attempts: config.attempts,
                deadline,
                until_failure: config.hooks.until_failure,
                successes: config.hooks.successes,
            },
            deadline_ms,
            own_group: !(config.foreground || in_terminal_foreground()),
            // Not on a terminal: there one pipe would take the terminal
            // from a stdout that nothing scans (colours, progress bars).
            one_output_file: config.rules.patterns.is_some()
                && crate::sys::fd::same_file(own_fd(1), own_fd(2))
                && !std::io::IsTerminal::is_terminal(&own_fd(1)),
            command_text: crate::text::shell_command(&config.command),
            hedge: None,
            probing: false,
        };
        let files = Files {
            hint: HintFile::for_run().context("setting up the hint file")?,
            stdin: StdinSource::new(config.stdin)?,
            held,
            hedge_hints: Vec::new(),
        };
        let state = State {
            budget,
            rng,
            lost: Lost::default(),
            advice: Advice::new(&config.rules, &config.command, config.scan_stdout),
            choice_said: false,
            failures: Failures::default(),
            latency: None,
            last_success: None,
        };
        Ok(Run {
            setup,
            files,
            state,
        })
    }

    /// Before the first attempt: the run's deadline to the reporter, the
    /// policy (`-v`), the configuration's warnings, a run without a hint
    /// file, a nested retry.
    pub(super) fn announce(&self, reporter: &mut Reporter) {
        let config = self.setup.config;
        reporter.set_deadline(self.setup.limits.deadline);
        if config.hooks.until_failure {
            reporter.hunting();
        }
        // Words only `-v` shows: not formatted for nothing on every run.
        if config.report.verbosity == Verbosity::Verbose {
            reporter.policy(&crate::cli::explain::policy_line(config));
            if let Some(line) = crate::cli::explain::deadline_line(config) {
                reporter.policy(&line);
            }
            for line in config
                .rules
                .sets
                .iter()
                .filter_map(|s| s.source.preset_line())
                .chain(config.preset_notes.iter().cloned())
            {
                reporter.policy(&line);
            }
        }
        // Settings that do not take effect as given: said also under -q.
        for warning in &config.warnings {
            reporter.lasting_warning(warning::POLICY, warning);
        }
        if let Some(warning) = self.files.hint.missing() {
            reporter.warning(warning::HINT, &warning);
        }
        // An outer deadline bounds a nested run: what the warning feared
        // (retries layered on retries, without end) cannot happen.
        if config.outer_deadline.is_none()
            && let Some(warning) = nested_warning(config.attempts)
        {
            reporter.warning(warning::NESTED, &warning);
        }
        // Said once, rather than leaving an attempt's processes running
        // without a word each time one is terminated.
        if !self.setup.own_group && !crate::process::can_find_processes() {
            reporter.warning(
                warning::PROCESSES,
                &format!(
                    "the process table cannot be read ({}): in retry's process group (a \
                     terminal's foreground, --foreground) only the command itself is \
                     terminated, not what it started",
                    crate::sys::process::UNREADABLE_TABLE
                ),
            );
        }
    }
}

/// The run's deadline, and as Unix time in milliseconds: `--max-time`
/// from `started` (the wall clock saying `wall_clock` then), or the outer
/// run's deadline (`RETRY_DEADLINE`) if that comes first, passed on as it
/// came.
fn run_deadline(
    config: &Config,
    started: Instant,
    wall_clock: SystemTime,
) -> (Option<Instant>, Option<u64>) {
    let own = config.max_time.and_then(|limit| started.checked_add(limit));
    match (own, config.outer_deadline) {
        (Some(own), Some(outer)) if own < outer.at => (
            Some(own),
            Some(deadline::unix_ms_of(own, wall_clock, started)),
        ),
        (_, Some(outer)) => (Some(outer.at), Some(outer.unix_ms)),
        (Some(own), None) => (
            Some(own),
            Some(deadline::unix_ms_of(own, wall_clock, started)),
        ),
        (None, None) => (None, None),
    }
}

fn in_terminal_foreground() -> bool {
    crate::sys::process::in_terminals_foreground(own_fd(0))
}

/// Retries layered on retries multiply: say so once, with the numbers,
/// when no outer deadline bounds them (an outer `--max-time` would).
/// The outer attempt comes from the environment: shown as a number, or
/// quoted on one short line, so it cannot forge lines of ours. An empty
/// `RETRY_ATTEMPT` counts as unset (as for the CI folds).
fn nested_warning(inner: Option<u64>) -> Option<String> {
    let outer_attempt = std::env::var_os("RETRY_ATTEMPT").filter(|v| !v.is_empty())?;
    let outer_attempt = outer_attempt.to_string_lossy();
    let outer_attempt = match outer_attempt.trim().parse::<u64>() {
        Ok(n) => n.to_string(),
        Err(_) => format!("'{}'", sanitize_line(&outer_attempt, 40)),
    };
    let outer = std::env::var("RETRY_MAX_ATTEMPTS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok());
    let show = |limit: Option<u64>| limit.map_or("unlimited".to_string(), |n| n.to_string());
    let product = match (outer, inner) {
        (Some(a), Some(b)) => a.saturating_mul(b).to_string(),
        _ => "unlimited".to_string(),
    };
    Some(format!(
        "running inside another retry (its attempt {outer_attempt}): retries multiply, {} outer x {} inner = {product} runs of the command at most (an outer --max-time would bound them)",
        show(outer),
        show(inner)
    ))
}
