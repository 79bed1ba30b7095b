//! Validated, typed settings built from the command line.
//!
//! Everything the run needs, checked once: durations, code sets, compiled
//! patterns, the preset's rules. No clap type is used past this point.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::backoff::Policy;
use crate::circuit::CircuitConfig;
use crate::cli::Cli;
use crate::generate::Kind as GenerateKind;
use crate::presets::{self, Request, Sources};
use crate::report::{ReportSettings, Verbosity};
use crate::rules::{OutputRule, RuleSet, RuleSource, Rules};
use crate::stdin::StdinMode;
use crate::values::CodeSet;

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
    /// `--preset list`: print every preset.
    PresetList,
    /// `--preset show NAME`: print one, in a presets file's form.
    PresetShow(String),
}

#[derive(Debug)]
pub(crate) struct Config {
    pub(crate) mode: Mode,
    pub(crate) command: Vec<OsString>,
    pub(crate) policy: Policy,
    /// `None`: unlimited.
    pub(crate) attempts: Option<u64>,
    pub(crate) splay: Duration,
    pub(crate) max_time: Option<Duration>,
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
    pub(crate) foreground: bool,
    pub(crate) report: ReportSettings,
    /// `--metrics-file` and the name label for it.
    pub(crate) metrics: Option<(PathBuf, String)>,
    pub(crate) circuit: Option<CircuitConfig>,
}

/// A bad combination of flags, reported like a bad value: exit 125.
#[derive(Debug)]
pub(crate) struct UsageError(pub String);

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
            None if cli.max_time.is_some() => None,
            None => Some(5),
        };

        let mut sets = vec![RuleSet {
            stop_on_exit: union(&cli.stop_on_exit),
            retry_on_exit: union(&cli.retry_on_exit),
            stop_on_output: cli
                .stop_on_output
                .into_iter()
                .map(OutputRule::from_regex)
                .collect(),
            retry_on_output: cli
                .retry_on_output
                .into_iter()
                .map(OutputRule::from_regex)
                .collect(),
            ..RuleSet::empty(RuleSource::CommandLine)
        }];
        let mut retry_after = cli.retry_after;
        let preset_mode = preset_mode(cli.preset.as_deref(), &cli.command)?;
        let resolving = !(cli.generate.is_some()
            || cli.circuit_status
            || cli.circuit_reset
            || preset_mode.is_some());
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
            let chosen = presets::choose(
                &request,
                cli.command.first().map(OsString::as_os_str),
                &Sources::from_env(),
            )
            .map_err(UsageError)?;
            if let Some(chosen) = chosen {
                sets.push(presets::rule_set(&chosen).map_err(UsageError)?);
                retry_after |= chosen.preset.retry_after;
            }
        }
        let mut rules = Rules::new(sets, retry_after).map_err(UsageError)?;
        rules.stop_on_timeout = cli.stop_on_timeout;

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
        } else {
            Mode::Run
        };
        let circuit = cli.circuit.map(|name| CircuitConfig {
            name,
            state_dir: cli.state_dir.clone(),
            state_url: cli.state_url.clone(),
            store_timeout: cli.state_timeout,
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

        Ok(Config {
            mode,
            command: cli.command,
            policy: Policy {
                delay: cli.delay,
                multiplier: cli.multiplier,
                cap: cli.cap,
                jitter: cli.jitter,
            },
            attempts,
            splay: cli.splay,
            max_time: cli.max_time,
            timeout: cli.timeout,
            max_retry_after: cli.max_retry_after,
            kill_after: cli.kill_after,
            rules,
            scan_stdout: cli.scan_stdout,
            stdin: cli.stdin,
            buffer_stdout: cli.buffer_stdout,
            foreground: cli.foreground,
            report: ReportSettings {
                verbosity,
                format: cli.log_format,
                log_file: cli.log_file,
                color: cli.color,
            },
            metrics,
            circuit,
        })
    }
}
