//! Validated, typed settings built from the command line.
//!
//! Everything the run needs, checked once: durations, code sets, compiled
//! patterns, the preset's rules. No clap type is used past this point.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::budget::bucket::BudgetSettings;
use crate::budget::{BudgetConfig, DEFAULT_SETTINGS};
use crate::circuit::CircuitConfig;
use crate::cli::Cli;
use crate::cli::StdinMode;
use crate::cli::checks::{
    check_exit_lists, check_foreground, check_success_codes, check_successes,
    give_up_exit_collision, hook_command,
};
use crate::cli::deadline::{self, OuterDeadline};
use crate::cli::generate::Kind as GenerateKind;
use crate::policy::backoff::Policy;
use crate::policy::rules::{OutputRule, PatternCompiler, RuleSet, RuleSource, Rules};
use crate::presets::{self, Request};
use crate::report::{CiSettings, LogFormat, ReportSettings, Verbosity};
use crate::state::StateConfig;
use crate::values::CodeSet;

/// How long `--on-give-up` may run when no `--timeout` is given: an alert
/// that hangs must not hold the run (and whatever waits for it) forever.
pub(crate) const GIVE_UP_LIMIT: Duration = Duration::from_secs(60);

/// What this invocation does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Run the command (behind the circuit, when one is named).
    Run,
    /// `--explain`: print the schedule.
    Explain,
    /// `--generate KIND`: print the man page or a completion script.
    Generate(GenerateKind),
    /// `--circuit-status`.
    CircuitStatus,
    /// `--circuit-reset`.
    CircuitReset,
    /// `--budget-status`.
    BudgetStatus,
    /// `--budget-reset`.
    BudgetReset,
    /// `--preset list`: print every preset.
    PresetList,
    /// `--preset show NAME`: print one, in a presets file's form.
    PresetShow(String),
}

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
    /// What the preset choice did besides the rules, for `-v` and
    /// `--explain`: why a wrapped command got none, the command's locale.
    pub(crate) preset_notes: Vec<String>,
    /// Set for the command when a preset's patterns read its output: its
    /// messages in the C locale (see `presets::locale`).
    pub(crate) child_locale: Vec<(&'static str, OsString)>,
}

/// Hooks and the run's shape beyond the backoff (the success conditions
/// are in `rules`).
#[derive(Debug)]
pub(crate) struct Hooks {
    /// `--on-retry`: a shell command run right before each retry.
    pub(crate) on_retry: Option<OsString>,
    /// `--on-give-up`: a shell command run once when the run fails.
    pub(crate) on_give_up: Option<OsString>,
    /// `--until-failure`: repeat while the command succeeds.
    pub(crate) until_failure: bool,
    /// `--reset-after`: a failed attempt that ran this long resets the backoff.
    pub(crate) reset_after: Option<Duration>,
    /// `--successes`: successful attempts in a row the run needs (1 or more).
    pub(crate) successes: u64,
    /// `--give-up-exit`: the status of a run that ends on a transient failure.
    pub(crate) give_up_exit: Option<u8>,
}

/// A bad combination of flags, reported like a bad value: exit 125.
#[derive(Debug)]
pub(crate) struct UsageError(pub String);

/// `RETRY_STATE_URL`, read only when a store is needed: empty is unset,
/// and a value that is not UTF-8 is an error then, not on every run.
fn state_url_from_env() -> Result<Option<String>, UsageError> {
    match std::env::var_os("RETRY_STATE_URL") {
        None => Ok(None),
        Some(value) if value.is_empty() => Ok(None),
        Some(value) => value.into_string().map(Some).map_err(|_| {
            UsageError("RETRY_STATE_URL is not valid UTF-8: a URL is expected".to_string())
        }),
    }
}

/// The patterns of one output flag, compiled; a failure names the flag.
fn compile_flag(
    compiler: &mut PatternCompiler,
    flag: &str,
    patterns: Vec<String>,
) -> Result<Vec<OutputRule>, UsageError> {
    patterns
        .into_iter()
        .map(|pattern| match compiler.compile(&pattern) {
            Ok(regex) => Ok(OutputRule::new(regex, pattern)),
            Err(problem) => Err(UsageError(format!(
                "invalid value '{pattern}' for '{flag} <REGEX>': {problem}"
            ))),
        })
        .collect()
}

fn union(sets: &[CodeSet]) -> Option<CodeSet> {
    sets.iter().cloned().reduce(|a, b| a.union(&b))
}

/// `--preset list` and `--preset show NAME` (NAME is the word after it).
fn preset_mode(preset: Option<&str>, command: &[OsString]) -> Result<Option<Mode>, UsageError> {
    match preset {
        Some("list") if command.is_empty() => Ok(Some(Mode::PresetList)),
        Some("list") => Err(UsageError(
            "--preset list runs nothing: no COMMAND after it".to_string(),
        )),
        Some("show") => match command {
            [name] => Ok(Some(Mode::PresetShow(name.to_string_lossy().into_owned()))),
            _ => Err(UsageError(
                "--preset show takes one preset name: retry --preset show NAME".to_string(),
            )),
        },
        _ => Ok(None),
    }
}

impl Config {
    pub(crate) fn from_cli(cli: Cli) -> Result<Config, UsageError> {
        if let Some(max_time) = cli.max_time
            && !cli.splay.is_zero()
            && cli.splay >= max_time
        {
            return Err(UsageError(format!(
                "--splay {} must be shorter than --max-time {}",
                humantime::format_duration(cli.splay),
                humantime::format_duration(max_time)
            )));
        }
        let attempts = match cli.attempts {
            Some(limit) => limit.0,
            // A hunt for a rare failure runs until it finds one, or until
            // --max-time; -n bounds it by count.
            None if cli.max_time.is_some() || cli.until_failure => None,
            None => Some(5),
        };

        let success_on_exit = union(&cli.success_on_exit);
        check_success_codes(
            success_on_exit.as_ref(),
            [
                ("--stop-on-exit", union(&cli.stop_on_exit).as_ref()),
                ("--retry-on-exit", union(&cli.retry_on_exit).as_ref()),
            ],
        )?;
        check_exit_lists(
            union(&cli.retry_on_exit).as_ref(),
            union(&cli.stop_on_exit).as_ref(),
        )?;
        check_foreground(cli.foreground)?;
        let hooks = Hooks {
            on_retry: hook_command("--on-retry", cli.on_retry)?,
            on_give_up: hook_command("--on-give-up", cli.on_give_up)?,
            until_failure: cli.until_failure,
            reset_after: cli.reset_after,
            successes: cli.successes,
            give_up_exit: cli.give_up_exit,
        };
        check_successes(cli.successes, attempts)?;
        // --until-output looks at stdout too.
        let scan_stdout = cli.scan_stdout || !cli.until_output.is_empty();
        // The flags' patterns first, then the preset's, under one limit.
        let mut compiler = PatternCompiler::default();
        let stop_on_output = compile_flag(&mut compiler, "--stop-on-output", cli.stop_on_output)?;
        let retry_on_output =
            compile_flag(&mut compiler, "--retry-on-output", cli.retry_on_output)?;
        let until_output = compile_flag(&mut compiler, "--until-output", cli.until_output)?;

        let mut sets = vec![RuleSet {
            stop_on_exit: union(&cli.stop_on_exit),
            retry_on_exit: union(&cli.retry_on_exit),
            stop_on_output,
            retry_on_output,
            ..RuleSet::empty(RuleSource::CommandLine)
        }];
        let mut retry_after = cli.retry_after;
        let preset_mode = preset_mode(cli.preset.as_deref(), &cli.command)?;
        let resolving = !(cli.generate.is_some()
            || cli.circuit_status
            || cli.circuit_reset
            || cli.budget_status
            || cli.budget_reset
            || preset_mode.is_some());
        let mut found = presets::ForRun::default();
        if resolving {
            if cli.command.is_empty() && !cli.explain {
                return Err(UsageError(
                    "the following required arguments were not provided: <COMMAND>...".to_string(),
                ));
            }
            let request = match cli.preset.as_deref() {
                None => Request::Auto,
                Some("none") => Request::Off,
                Some(name) => Request::Named(name.to_string()),
            };
            found = presets::for_run(&request, &cli.command, &mut compiler).map_err(UsageError)?;
            sets.extend(found.set.take());
            retry_after |= found.retry_after;
        }
        let mut rules = Rules::new(sets, until_output, retry_after);
        rules.stop_on_timeout = cli.stop_on_timeout;
        rules.success_on_exit = success_on_exit;
        // Scanned output: the child's stderr goes through retry.
        let scanned = rules.patterns.is_some();

        let verbosity = if cli.quiet {
            Verbosity::Quiet
        } else if cli.verbose {
            Verbosity::Verbose
        } else {
            Verbosity::Normal
        };

        let metrics = cli.metrics_file.map(|path| {
            let name = cli.name.unwrap_or_else(|| {
                cli.command
                    .first()
                    .map(|program| {
                        std::path::Path::new(program)
                            .file_name()
                            .unwrap_or(program)
                            .to_string_lossy()
                            .into_owned()
                    })
                    .unwrap_or_default()
            });
            (path, name)
        });

        if cli.circuit_max_cooldown < cli.circuit_cooldown {
            return Err(UsageError(format!(
                "--circuit-max-cooldown {} is shorter than --circuit-cooldown {}",
                humantime::format_duration(cli.circuit_max_cooldown),
                humantime::format_duration(cli.circuit_cooldown)
            )));
        }
        let mode = if let Some(kind) = cli.generate {
            Mode::Generate(kind)
        } else if let Some(mode) = preset_mode {
            mode
        } else if cli.explain {
            Mode::Explain
        } else if cli.circuit_status {
            Mode::CircuitStatus
        } else if cli.circuit_reset {
            Mode::CircuitReset
        } else if cli.budget_status {
            Mode::BudgetStatus
        } else if cli.budget_reset {
            Mode::BudgetReset
        } else {
            Mode::Run
        };
        // Flags beat the environment: an explicit --state-dir wins over
        // RETRY_STATE_URL, which is read only when a circuit or a budget
        // needs a store.
        let needs_state = cli.circuit.is_some() || cli.budget.is_some();
        // The error names where the URL came from (`--state-url` has no
        // clap `env`: the variable is read here).
        let url = match (needs_state, cli.state_url.is_empty(), &cli.state_dir) {
            (true, false, _) => Some((
                crate::state::seeds_as_one_url(&cli.state_url).map_err(UsageError)?,
                "--state-url",
            )),
            (true, true, None) => state_url_from_env()?.map(|url| (url, "RETRY_STATE_URL")),
            _ => None,
        };
        if let Some((url, origin)) = &url {
            crate::state::check_state_url(url, origin).map_err(UsageError)?;
        }
        // --state-ca, else RETRY_STATE_CA, for a rediss:// URL: read now,
        // so that a bad file stops the run before anything runs. On the
        // command line without one it would be ignored silently: refused,
        // as a state flag without a circuit or a budget is; the variable
        // is read only by the runs that use TLS.
        let tls = url
            .as_ref()
            .is_some_and(|(url, _)| crate::state::state_url_uses_tls(url));
        let ca = match (&cli.state_ca, tls) {
            (Some(path), true) => {
                crate::state::read_state_ca(path, "--state-ca").map_err(UsageError)?
            }
            (Some(path), false) => {
                return Err(UsageError(format!(
                    "--state-ca {}: only a rediss:// state URL (--state-url or RETRY_STATE_URL) uses it, and none is in use",
                    path.display()
                )));
            }
            // Empty counts as unset.
            (None, true) => match std::env::var_os("RETRY_STATE_CA").filter(|v| !v.is_empty()) {
                Some(path) => crate::state::read_state_ca(&PathBuf::from(path), "RETRY_STATE_CA")
                    .map_err(UsageError)?,
                None => Vec::new(),
            },
            (None, false) => Vec::new(),
        };
        let url = url.map(|(url, _)| url);
        let state = StateConfig {
            dir: cli.state_dir.clone(),
            url,
            ca,
            timeout: cli.state_timeout,
        };
        let budget = cli.budget.map(|name| BudgetConfig {
            name,
            state: state.clone(),
            settings: BudgetSettings {
                ratio: cli.budget_ratio.unwrap_or(DEFAULT_SETTINGS.ratio),
                min_per_ms: cli.budget_min.unwrap_or(DEFAULT_SETTINGS.min_per_ms),
                burst: cli.budget_burst.map_or(DEFAULT_SETTINGS.burst, f64::from),
            },
            explicit: cli.budget_ratio.is_some()
                || cli.budget_min.is_some()
                || cli.budget_burst.is_some(),
        });
        let circuit = cli.circuit.map(|name| CircuitConfig {
            name,
            state,
            settings: crate::circuit::breaker::Settings {
                threshold: cli.circuit_threshold,
                cooldown: cli.circuit_cooldown,
                max_cooldown: cli.circuit_max_cooldown,
                // A probe that never reports back holds its claim this long
                // (a dead probe on this machine loses it at once).
                probe_lease: cli
                    .max_time
                    .unwrap_or(cli.circuit_max_cooldown)
                    .max(cli.circuit_cooldown),
            },
        });

        // User presets files ignored (not ours to use); curl without -f.
        let mut warnings = std::mem::take(&mut found.warnings);
        if mode == Mode::Run {
            warnings.extend(presets::advice::at_start(&rules, &cli.command));
        }
        if cli.delay > cli.cap {
            warnings.push(format!(
                "--delay {} is longer than --cap {}: the cap wins, every sleep is at most {}",
                humantime::format_duration(cli.delay),
                humantime::format_duration(cli.cap),
                humantime::format_duration(cli.cap)
            ));
        }
        warnings.extend(cli.give_up_exit.and_then(give_up_exit_collision));
        // Only what runs the command (or explains it) is bound by it.
        let outer_deadline = match mode {
            Mode::Run | Mode::Explain => deadline::from_env().map_err(UsageError)?,
            _ => None,
        };
        Ok(Config {
            mode,
            warnings,
            command: cli.command,
            policy: Policy {
                delay: cli.delay,
                multiplier: cli.multiplier,
                cap: cli.cap,
                jitter: cli.jitter,
            },
            throttle_delay: cli.throttle_delay,
            attempts,
            splay: cli.splay,
            max_time: cli.max_time,
            outer_deadline,
            timeout: cli.timeout,
            max_retry_after: cli.max_retry_after,
            kill_after: cli.kill_after,
            rules,
            scan_stdout,
            stdin: cli.stdin,
            buffer_stdout: cli.buffer_stdout,
            output: cli.output,
            foreground: cli.foreground,
            report: ReportSettings {
                verbosity,
                // Flags beat the environment: an explicit --log-format wins
                // over GITHUB_ACTIONS / GITLAB_CI.
                format: LogFormat::chosen(cli.log_format, |name| std::env::var_os(name)),
                log_file: cli.log_file,
                color: cli.color,
                ci: CiSettings::from_env(|name| std::env::var_os(name), scanned),
            },
            metrics,
            circuit,
            budget,
            hooks,
            preset_notes: found.said,
            child_locale: found.child_locale,
        })
    }
}
