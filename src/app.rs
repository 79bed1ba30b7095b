//! The program from argv to exit status: parse, configure, dispatch
//! (`--generate`, `--explain`, circuit status), run behind the circuit,
//! write the metrics.

use std::io::Write;

use clap::error::ErrorKind;

use crate::cli::Cli;
use crate::config::Config;
use crate::exit::ExitStatus;
use crate::{child, circuit, explain, generate, metrics, report, runner, signals};

fn usage_error(message: &str) -> ExitStatus {
    let _ = writeln!(std::io::stderr(), "retry: error: {message}");
    ExitStatus::USAGE
}

/// The whole program: parse, configure, run, and the exit status to end with.
pub fn run() -> ExitStatus {
    let cli = match Cli::parse_from_os(std::env::args_os()) {
        Ok(cli) => cli,
        Err(err) => {
            return match err.kind() {
                ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    let _ = write!(std::io::stdout(), "{}", err.render());
                    ExitStatus::SUCCESS
                }
                _ => {
                    let rendered = err.render().to_string();
                    let text = rendered.strip_prefix("error: ").unwrap_or(&rendered);
                    let _ = write!(std::io::stderr(), "retry: error: {text}");
                    ExitStatus::USAGE
                }
            };
        }
    };
    let config = match Config::from_cli(cli) {
        Ok(config) => config,
        Err(err) => return usage_error(&err.0),
    };
    if let Some(kind) = config.generate {
        let mut out = Vec::new();
        return match generate::generate(kind, &mut out) {
            Ok(()) => {
                let _ = std::io::stdout().write_all(&out);
                ExitStatus::SUCCESS
            }
            Err(err) => usage_error(&format!("--generate: {err}")),
        };
    }
    if config.explain {
        let _ = std::io::stdout().write_all(explain::render(&config).as_bytes());
        return ExitStatus::SUCCESS;
    }
    let mut reporter = match report::Reporter::new(&config.report) {
        Ok(reporter) => reporter,
        Err(err) => return usage_error(&format!("{err:#}")),
    };
    let circuit = match config.circuit.as_ref().map(circuit::open).transpose() {
        Ok(circuit) => circuit,
        Err(err) => return usage_error(&format!("--circuit: {err:#}")),
    };
    if let (Some(circuit), Some(settings)) = (&circuit, &config.circuit) {
        if settings.status {
            return match circuit.status() {
                Ok(text) => {
                    let _ = std::io::stdout().write_all(text.as_bytes());
                    ExitStatus::SUCCESS
                }
                Err(err) => usage_error(&format!("--circuit-status: {err:#}")),
            };
        }
        if settings.reset {
            return match circuit.reset() {
                Ok(_) => {
                    let _ = writeln!(std::io::stdout(), "circuit {} reset: closed", circuit.name);
                    ExitStatus::SUCCESS
                }
                Err(err) => usage_error(&format!("--circuit-reset: {err:#}")),
            };
        }
    }
    let mut signals = match signals::install() {
        Ok(signals) => signals,
        Err(err) => {
            reporter.error(&format!("{err:#}"));
            return ExitStatus::USAGE;
        }
    };
    child::adopt_orphans();
    let result = match &circuit {
        Some(circuit) => circuit::guard(circuit, &mut reporter, |reporter| {
            runner::run(&config, &mut signals, reporter)
        }),
        None => runner::run(&config, &mut signals, &mut reporter),
    };
    match result {
        Ok(summary) => {
            if let Some((path, name)) = &config.metrics {
                let text = metrics::render(name, &summary, std::time::SystemTime::now());
                if let Err(err) = metrics::write_atomically(path, &text) {
                    reporter.error(&format!("{err:#}"));
                }
            }
            summary.status
        }
        Err(err) => {
            reporter.error(&format!("{err:#}"));
            ExitStatus::USAGE
        }
    }
}
