//! Validated, typed settings built from the command line and the
//! environment: everything the run needs, checked once. No clap type is
//! used past this point.
//!
//! Built by parts, each a function of the parsed [`Cli`] (and of the
//! environment, read through one [`Env`](crate::cli::Env) that tests give
//! their own), each
//! answering one question: `mode` (what this invocation does), `limits`
//! (how many attempts, how long, an outer deadline), `rules` (how an
//! attempt is judged: exit codes, patterns, the preset), `hooks`,
//! `hedging` (copies of a slow attempt), `guards` (circuit, budget and
//! their store) and `reporting`.

mod guards;
pub(crate) mod hedging;
mod hooks;
mod limits;
mod mode;
mod reporting;
mod rules;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::budget::BudgetConfig;
use crate::circuit::CircuitConfig;
use crate::cli::StdinMode;
use crate::cli::deadline::OuterDeadline;
use crate::cli::usage::UsageError;
use crate::cli::{Cli, Env};
use crate::policy::backoff::Policy;
use crate::policy::rules::Rules;
use crate::report::ReportSettings;
pub(crate) use hedging::Hedging;
pub(crate) use hooks::{GIVE_UP_LIMIT, Hooks};
pub(crate) use mode::Mode;
pub(crate) use reporting::ReportFlags;

#[derive(Debug)]
pub(crate) struct Config {
    pub(crate) mode: Mode,
    /// Flags that are valid but probably not what was meant, said at start.
    pub(crate) warnings: Vec<String>,
    pub(crate) command: Vec<OsString>,
    pub(crate) policy: Policy,
    /// `--throttle-delay`: the base delay after a throttled failure.
    pub(crate) throttle_delay: Duration,
    /// `None`: unlimited.
    pub(crate) attempts: Option<u64>,
    pub(crate) splay: Duration,
    pub(crate) max_time: Option<Duration>,
    /// `RETRY_DEADLINE`: an outer run's deadline, which this run never passes.
    pub(crate) outer_deadline: Option<OuterDeadline>,
    pub(crate) timeout: Option<Duration>,
    /// `--max-retry-after`: the longest Retry-After obeyed.
    pub(crate) max_retry_after: Duration,
    pub(crate) kill_after: Duration,
    /// Rule sets in precedence order (the command line's, then a preset's),
    /// their patterns compiled.
    pub(crate) rules: Rules,
    pub(crate) scan_stdout: bool,
    pub(crate) stdin: StdinMode,
    pub(crate) buffer_stdout: bool,
    /// `-o FILE`: a successful attempt's stdout replaces FILE.
    pub(crate) output: Option<PathBuf>,
    pub(crate) foreground: bool,
    pub(crate) report: ReportSettings,
    /// `--metrics-file` and the name label for it.
    pub(crate) metrics: Option<(PathBuf, String)>,
    pub(crate) circuit: Option<CircuitConfig>,
    pub(crate) budget: Option<BudgetConfig>,
    /// `--on-retry`, `--on-give-up`, `--until-failure`, `--reset-after`,
    /// `--successes`, `--give-up-exit`.
    pub(crate) hooks: Hooks,
    /// `--hedge-after`, `--hedges`.
    pub(crate) hedging: Option<Hedging>,
    /// What the preset choice did besides the rules, for `-v` and
    /// `--explain`: why a wrapped command got none, the command's locale.
    pub(crate) preset_notes: Vec<String>,
    /// Set for the command when a preset's patterns read its output: its
    /// messages in the C locale (see `presets::locale`).
    pub(crate) child_locale: Vec<(&'static str, OsString)>,
}

impl Config {
    /// The settings `cli` asks for, in the environment `env`.
    pub(crate) fn from_cli(cli: Cli, env: Env<'_>) -> Result<Config, UsageError> {
        let mode = Mode::of(&cli)?;
        if mode.is_about_the_command()
            && let Some(slip) = crate::cli::slips::command_slip(&cli, env)
        {
            return Err(UsageError::Slip(slip));
        }
        let limits = limits::limits(&cli, &mode, env)?;
        let judging = rules::judging(&cli, &mode, env)?;
        let hooks = hooks::hooks(&cli, limits.attempts)?;
        let hedging = hedging::hedging(&cli)?;
        // Windows: every attempt has a job and a console group of its own.
        if let (true, Some(why)) = (cli.foreground, crate::sys::process::NO_FOREGROUND) {
            return Err(UsageError::NoForeground(why));
        }
        let guards = guards::guards(&cli, env)?;
        // Scanned output: the child's stderr goes through retry.
        let scanned = judging.rules.patterns.is_some();
        let report = reporting::report_settings(&cli, scanned, env);
        let metrics = reporting::metrics(&cli);
        // User presets files ignored, curl without -f; then the policy's.
        let mut warnings = judging.warnings;
        warnings.extend(limits::delay_over_cap(&cli));
        warnings.extend(cli.give_up_exit.and_then(hooks::give_up_exit_collision));
        Ok(Config {
            mode,
            warnings,
            policy: Policy {
                delay: cli.delay,
                multiplier: cli.multiplier,
                cap: cli.cap,
                jitter: cli.jitter,
            },
            throttle_delay: cli.throttle_delay,
            attempts: limits.attempts,
            splay: cli.splay,
            max_time: cli.max_time,
            outer_deadline: limits.outer_deadline,
            timeout: cli.timeout,
            max_retry_after: cli.max_retry_after,
            kill_after: cli.kill_after,
            rules: judging.rules,
            scan_stdout: judging.scan_stdout,
            stdin: cli.stdin,
            buffer_stdout: cli.buffer_stdout,
            output: cli.output,
            foreground: cli.foreground,
            report,
            metrics,
            circuit: guards.circuit,
            budget: guards.budget,
            hooks,
            hedging,
            preset_notes: judging.preset_notes,
            child_locale: judging.child_locale,
            command: cli.command,
        })
    }
}

#[cfg(test)]
mod fixtures;

#[cfg(test)]
mod tests {
    use super::fixtures::{cli, env, no_env};
    use super::*;

    #[test]
    fn a_command_line_becomes_its_settings() {
        let config = Config::from_cli(
            cli(&[
                "-n",
                "3",
                "-d",
                "2s",
                "-c",
                "1s",
                "--give-up-exit",
                "124",
                "curl",
                "x",
            ]),
            &no_env,
        )
        .unwrap();
        assert_eq!(config.mode, Mode::Run);
        assert_eq!(config.attempts, Some(3));
        assert_eq!(config.command, ["curl", "x"]);
        // The preset's advice, then the policy's warnings, in that order.
        assert_eq!(config.warnings.len(), 3, "{:?}", config.warnings);
        assert!(config.warnings[1].starts_with("--delay 2s is longer than --cap 1s"));
        assert!(config.warnings[2].starts_with("--give-up-exit 124: "));
        assert!(
            config.report.ci.stderr_tracked,
            "the curl preset scans stderr"
        );
    }

    #[test]
    fn the_environment_is_read_only_through_the_reader_given() {
        let pairs = [("RETRY_DEADLINE", "soon"), ("GITHUB_ACTIONS", "true")];
        let err = Config::from_cli(cli(&["true"]), &env(&pairs)).unwrap_err();
        assert!(matches!(err, UsageError::Deadline(_)), "{err:?}");
        let config = Config::from_cli(cli(&["--explain"]), &env(&pairs[1..])).unwrap();
        assert_eq!(config.report.format, crate::report::LogFormat::Github);
        assert_eq!(config.outer_deadline, None);
    }
}
