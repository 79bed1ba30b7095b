//! Validated, typed settings built from the command line.
//!
//! Everything the run needs, checked once: durations, code sets, compiled
//! patterns, the preset's rules. No clap type is used past this point.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::backoff::Policy;
use crate::classify::ExitRules;
use crate::cli::{Cli, LogFormat, Preset, StdinMode};
use crate::output::{Pattern, PatternKind};
use crate::preset;
use crate::values::CodeSet;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verbosity {
    Quiet,
    Normal,
    Verbose,
}

#[derive(Debug)]
pub struct ReportSettings {
    pub verbosity: Verbosity,
    pub format: LogFormat,
    pub log_file: Option<PathBuf>,
}

#[derive(Debug)]
pub struct Config {
    pub command: Vec<OsString>,
    pub policy: Policy,
    /// `None`: unlimited.
    pub attempts: Option<u64>,
    pub splay: Duration,
    pub max_time: Option<Duration>,
    pub timeout: Option<Duration>,
    pub kill_after: Duration,
    /// Rule sets in precedence order: the command line's, then a preset's.
    pub exit_rules: Vec<ExitRules>,
    pub patterns: Vec<Pattern>,
    pub retry_after: bool,
    pub scan_stdout: bool,
    pub stdin: StdinMode,
    pub buffer_stdout: bool,
    pub foreground: bool,
    pub report: ReportSettings,
    pub explain: bool,
    pub generate: Option<crate::generate::Kind>,
    /// `--metrics-file` and the name label for it.
    pub metrics: Option<(PathBuf, String)>,
    pub circuit: Option<crate::circuit::CircuitConfig>,
}

/// A bad combination of flags, reported like a bad value: exit 125.
#[derive(Debug)]
pub struct UsageError(pub String);

fn union(sets: &[CodeSet]) -> Option<CodeSet> {
    sets.iter().cloned().reduce(|a, b| a.union(&b))
}

impl Config {
    pub fn from_cli(cli: Cli) -> Result<Config, UsageError> {
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

        let mut exit_rules = vec![ExitRules {
            source: String::new(),
            stop_on_exit: union(&cli.stop_on_exit),
            retry_on_exit: union(&cli.retry_on_exit),
        }];
        let mut patterns: Vec<Pattern> = Vec::new();
        for (regexes, kind) in [
            (&cli.stop_on_output, PatternKind::Stop),
            (&cli.retry_on_output, PatternKind::Retry),
        ] {
            patterns.extend(regexes.iter().map(|regex| Pattern {
                regex: regex.clone(),
                rule_set: 0,
                kind,
                shown: regex.as_str().to_string(),
            }));
        }
        let mut retry_after = cli.retry_after;
        if cli.preset == Some(Preset::Curl) {
            exit_rules.push(preset::curl_exit_rules());
            patterns.extend(preset::curl_patterns(1));
            retry_after = true;
        }

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
        let circuit = cli.circuit.map(|name| crate::circuit::CircuitConfig {
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
            status: cli.circuit_status,
            reset: cli.circuit_reset,
        });

        Ok(Config {
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
            kill_after: cli.kill_after,
            exit_rules,
            patterns,
            retry_after,
            scan_stdout: cli.scan_stdout,
            stdin: cli.stdin,
            buffer_stdout: cli.buffer_stdout,
            foreground: cli.foreground,
            report: ReportSettings {
                verbosity,
                format: cli.log_format,
                log_file: cli.log_file,
            },
            explain: cli.explain,
            generate: cli.generate,
            metrics,
            circuit,
        })
    }
}
