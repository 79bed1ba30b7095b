//! The program from argv to exit status: parse, configure, then one `match`
//! on the mode. A run goes behind its circuit here: the circuit only
//! answers "may I run?" and records the result; it knows nothing of runs.
//! The status a run ends with is chosen by [`End::exit_status`] (usage
//! errors included); the other modes end 0, or 125 when they fail.

use std::ffi::OsString;
use std::io::Write;

use clap::CommandFactory;
use clap::error::ErrorKind;

use crate::budget::Budget;
use crate::circuit::{self, Gatekeeper};
use crate::cli::config::{Config, Mode, ReportFlags};
use crate::cli::{Cli, Env};
use crate::cli::{early, explain, generate};
use crate::contract::warning;
use crate::exit::ExitStatus;
use crate::outcome::RunOutcome;
use crate::outcome::RunSummary;
use crate::policy::decision::End;
use crate::presets::{self, PresetError, Sources};
use crate::process::{self, signals};
use crate::report::metrics;
use crate::report::{CiSettings, Guard, LogFormat, ReportSettings, Reporter};
use crate::run;
use crate::run::error_text;
use crate::state::Access;
use crate::state::store::Interrupted;

/// Report retry's own error where its messages go (`--log-format`,
/// `--log-file`), and end with `status`. When even that fails, stderr.
fn fail(settings: &ReportSettings, run_id: &str, message: &str, status: ExitStatus) -> ExitStatus {
    match Reporter::new(settings, run_id) {
        Ok(mut reporter) => reporter.error(message),
        Err(err) => {
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "retry: error: {message}");
            let _ = writeln!(stderr, "retry: error: {err:#}");
        }
    }
    status
}

/// A usage error: nothing ran, and retry ends with 125. `terminal` is the
/// message as a person at the terminal reads it, `logged` the same without
/// what helps only there (clap's closing "For more information, try
/// '--help'."), for a log file, JSON events and GitHub annotations. With
/// `--log-file` the error goes there and to stderr as well, so that a
/// mistyped flag in a CI step or a cron job shows where it was typed.
fn refuse(settings: &ReportSettings, run_id: &str, terminal: &str, logged: &str) -> ExitStatus {
    refuse_all(settings, run_id, &[(terminal, logged)])
}

/// [`refuse`] with several errors, each `(terminal, logged)`.
fn refuse_all(settings: &ReportSettings, run_id: &str, errors: &[(&str, &str)]) -> ExitStatus {
    let mut log_trouble = None;
    if settings.log_file.is_some() {
        match Reporter::new(settings, run_id) {
            Ok(mut log) => errors.iter().for_each(|(_, logged)| log.error(logged)),
            Err(err) => log_trouble = Some(format!("{err:#}")),
        }
        // On GitHub the error's annotation went to stderr already.
        if log_trouble.is_none() && settings.format == LogFormat::Github {
            return End::Usage.exit_status(None);
        }
    }
    let on_stderr = ReportSettings {
        verbosity: settings.verbosity,
        format: settings.format,
        log_file: None,
        color: settings.color,
        ci: CiSettings::default(),
    };
    if let Ok(mut reporter) = Reporter::new(&on_stderr, run_id) {
        for (terminal, logged) in errors {
            reporter.error(match settings.format {
                LogFormat::Json | LogFormat::Github => logged,
                LogFormat::Text | LogFormat::Gitlab => terminal,
            });
        }
        if let Some(trouble) = log_trouble {
            reporter.error(&trouble);
        }
    }
    End::Usage.exit_status(None)
}

/// Print `text` on stdout and end well. Output that cannot be delivered is
/// retry's own failure; a reader that went away (EPIPE: `| head -1`) is not.
fn print(settings: &ReportSettings, run_id: &str, text: &[u8]) -> ExitStatus {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text).and_then(|()| stdout.flush()) {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
            let message = format!("writing to stdout: {}", error_text(&err));
            fail(settings, run_id, &message, ExitStatus::RETRY_FAILED)
        }
        _ => ExitStatus::SUCCESS,
    }
}

/// The whole program: parse, configure, run, and the exit status to end with.
pub fn run() -> ExitStatus {
    signals::survive_file_size_limit();
    let args: Vec<OsString> = std::env::args_os().collect();
    let env = |name: &str| std::env::var_os(name);
    let run_id = run::new_run_id();
    match configure(&args, &env, &run_id) {
        Ok(config) => answer(&config, &env, &run_id),
        Err(status) => status,
    }
}

/// argv and the environment as settings, or the status of a usage error
/// (reported as the flags before it say), of `--help` or of `--version`.
fn configure(args: &[OsString], env: Env<'_>, run_id: &str) -> Result<Config, ExitStatus> {
    let cli = match Cli::parse_from_os(args.iter().cloned()) {
        Ok(cli) => cli,
        Err(err) => {
            let settings = early::report_settings(args, env);
            let rendered = err.render().to_string();
            return Err(match err.kind() {
                ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    print(&settings, run_id, rendered.as_bytes())
                }
                _ => {
                    let text = rendered.strip_prefix("error: ").unwrap_or(&rendered);
                    let text = text.trim_end();
                    let logged = text
                        .strip_suffix("For more information, try '--help'.")
                        .map_or(text, str::trim_end);
                    refuse(&settings, run_id, text, logged)
                }
            });
        }
    };
    // A usage error found now is reported as the flags say, as clap's are.
    let flags = ReportFlags::of(&cli);
    Config::from_cli(cli, env).map_err(|err| {
        let settings = flags.settings(env, CiSettings::default());
        let message = err.to_string();
        refuse(&settings, run_id, &message, &message)
    })
}

/// What the mode asks for, and the status to end with.
fn answer(config: &Config, env: Env<'_>, run_id: &str) -> ExitStatus {
    let settings = &config.report;
    match &config.mode {
        Mode::Generate(kind) => {
            let kind = *kind;
            let mut out = Vec::new();
            let mut stdin = std::io::stdin().lock();
            match generate::generate(kind, Cli::command(), &mut stdin, &mut out) {
                Ok(()) => print(settings, run_id, &out),
                Err(err) => fail(
                    settings,
                    run_id,
                    &format!("--generate: {err:#}"),
                    ExitStatus::RETRY_FAILED,
                ),
            }
        }
        Mode::Explain => print(settings, run_id, explain::render(config).as_bytes()),
        Mode::CircuitStatus => match open_circuit(config, Access::Read).and_then(|c| c.status()) {
            Ok(text) => print(settings, run_id, text.as_bytes()),
            Err(err) => fail(
                settings,
                run_id,
                &format!("--circuit-status: {err:#}"),
                ExitStatus::STATE_FAILED,
            ),
        },
        Mode::CircuitReset => match open_circuit(config, Access::Update).and_then(|c| c.reset()) {
            Ok(text) => print(settings, run_id, text.as_bytes()),
            Err(err) => fail(
                settings,
                run_id,
                &format!("--circuit-reset: {err:#}"),
                ExitStatus::STATE_FAILED,
            ),
        },
        Mode::BudgetStatus => match open_budget(config, Access::Read).and_then(|b| b.status()) {
            Ok(text) => print(settings, run_id, text.as_bytes()),
            Err(err) => fail(
                settings,
                run_id,
                &format!("--budget-status: {err:#}"),
                ExitStatus::STATE_FAILED,
            ),
        },
        Mode::BudgetReset => {
            match open_budget(config, Access::Update).and_then(|b| b.reset().map(|w| (b, w))) {
                Ok((budget, warnings)) => {
                    let mut text = String::new();
                    for warning in warnings {
                        text.push_str(&format!("warning: {warning}\n"));
                    }
                    text.push_str(&format!("retry budget {} reset: full\n", budget.name));
                    print(settings, run_id, text.as_bytes())
                }
                Err(err) => fail(
                    settings,
                    run_id,
                    &format!("--budget-reset: {err:#}"),
                    ExitStatus::STATE_FAILED,
                ),
            }
        }
        Mode::PresetList => match presets::list_text(&Sources::from_env(env)) {
            Ok(text) => print(settings, run_id, text.as_bytes()),
            Err(err) => refuse(settings, run_id, &err.to_string(), &err.to_string()),
        },
        Mode::PresetShow(name) => match presets::show_text(name, &Sources::from_env(env)) {
            Ok(text) => print(settings, run_id, text.as_bytes()),
            Err(err) => refuse(settings, run_id, &err.to_string(), &err.to_string()),
        },
        Mode::PresetCheck(path) => match presets::check_file(path) {
            Ok(text) => print(settings, run_id, text.as_bytes()),
            Err(PresetError::Malformed(errors)) => {
                let problems = errors.each();
                let both: Vec<(&str, &str)> = problems.iter().map(|p| (&**p, &**p)).collect();
                refuse_all(settings, run_id, &both)
            }
            Err(err) => refuse(settings, run_id, &err.to_string(), &err.to_string()),
        },
        Mode::Run => run_command(config, run_id),
    }
}

fn open_budget(config: &Config, access: Access) -> anyhow::Result<Budget> {
    let settings = config
        .budget
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("no --budget given"))?;
    Budget::open(settings, access)
}

fn open_circuit(config: &Config, access: Access) -> anyhow::Result<Gatekeeper> {
    let settings = config
        .circuit
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("no --circuit given"))?;
    circuit::open(settings, access)
}

/// `Mode::Run`: the command behind its circuit, then the metrics.
fn run_command(config: &Config, run_id: &str) -> ExitStatus {
    if let Some((path, _)) = &config.metrics
        && let Err(err) = metrics::check(path)
    {
        let message = format!("{err:#}");
        return refuse(&config.report, run_id, &message, &message);
    }
    let mut reporter = match Reporter::new(&config.report, run_id) {
        Ok(reporter) => reporter,
        Err(err) => {
            let _ = writeln!(std::io::stderr(), "retry: error: {err:#}");
            return End::Usage.exit_status(None);
        }
    };
    let (circuit, budget) = open_guards(config, &mut reporter);
    let mut signals = match signals::install() {
        Ok(signals) => signals,
        Err(err) => {
            reporter.error(&format!("{err:#}"));
            return End::RetryFailed.exit_status(None);
        }
    };
    if let Some(refused) = process::adopt_orphans() {
        reporter.warning(warning::PROCESSES, &refused);
    }
    // While retry has one thread: the watchdog is a fork that runs on.
    if let Err(err) = process::watchdog::start() {
        reporter.warning(
            warning::PROCESSES,
            &format!(
                "no watchdog process ({err}): should retry be killed with SIGKILL, what an attempt started in the background may outlive it"
            ),
        );
    }
    let gate = match &circuit {
        Some(circuit) => admit(circuit, config.hooks.give_up_exit, &mut reporter),
        None => Gate::Unchecked,
    };
    let admitted = matches!(gate, Gate::Admitted { .. });
    let probing = matches!(gate, Gate::Admitted { probing: true });
    let result = match gate {
        Gate::Refused(summary) => Ok(summary),
        Gate::Admitted { .. } | Gate::Unchecked => {
            let guards = (budget.as_ref(), probing);
            run::run(config, run_id, guards, &mut signals, &mut reporter)
        }
    };
    if let (Some(circuit), true) = (&circuit, admitted) {
        record(circuit, result.as_ref().ok(), &mut reporter);
    }
    match result {
        Ok(summary) => {
            reporter.write_step_files(
                summary.status.as_number(),
                summary.outcome,
                summary.attempts,
                summary.elapsed,
            );
            if let Some((path, name)) = &config.metrics {
                let mut text = metrics::render(name, &summary, std::time::SystemTime::now());
                text.push_str(&metrics::render_in_force(name, reporter.in_force()));
                if let Err(err) = metrics::write_atomically(path, &text) {
                    reporter.error(&format!("{err:#}"));
                }
            }
            summary.status
        }
        Err(err) => {
            reporter.error(&format!("{err:#}"));
            End::RetryFailed.exit_status(None)
        }
    }
}

/// The run's circuit and budget, in their stores. A store that cannot be
/// used never stops the job: retry warns (also under -q), and runs as if
/// there were no circuit or budget (as when Redis is down); the `done`
/// event and the metrics say they were not in force.
fn open_guards(config: &Config, reporter: &mut Reporter) -> (Option<Gatekeeper>, Option<Budget>) {
    let circuit = config.circuit.as_ref().and_then(|settings| {
        reporter.guarded_by(Guard::Circuit, &settings.name);
        circuit::open(settings, Access::Update)
            .map_err(|err| {
                let name = &settings.name;
                let why = format!("circuit {name}: {err:#}; running as if it were closed");
                reporter.guard_lost(Guard::Circuit, &why);
            })
            .ok()
    });
    let budget = config.budget.as_ref().and_then(|settings| {
        reporter.guarded_by(Guard::Budget, &settings.name);
        Budget::open(settings, Access::Update)
            .map_err(|err| {
                let name = &settings.name;
                let why = format!("retry budget {name}: {err:#}; retrying as if it allowed");
                reporter.guard_lost(Guard::Budget, &why);
            })
            .ok()
    });
    (circuit, budget)
}

/// What the circuit said about a run.
enum Gate {
    /// Run, and record the result; `probing`: as the half-open circuit's
    /// one probe (no hedge may double it).
    Admitted { probing: bool },
    /// No circuit, or its store could not be used: run as if it were closed.
    Unchecked,
    /// The circuit is open: nothing runs (exit 75, `EX_TEMPFAIL`).
    Refused(RunSummary),
}

/// Ask the circuit whether the run may go ahead; `give_up_exit` is
/// `--give-up-exit`, the status of a refusal when given.
fn admit(circuit: &Gatekeeper, give_up_exit: Option<u8>, reporter: &mut Reporter) -> Gate {
    let started = std::time::Instant::now();
    match circuit.admit() {
        Ok(verdict) => {
            if let Some(warning) = &verdict.store_warning {
                reporter.lasting_warning(warning::CIRCUIT, warning);
            }
            if let Some(warning) = &verdict.mismatch {
                reporter.warning(warning::CIRCUIT, warning);
            }
            reporter.policy(&verdict.summary);
            if let Some(throttled) = verdict.throttled {
                reporter.throttled(throttled);
            }
            if let Some(message) = verdict.refusal {
                let status = End::CircuitOpen.exit_status(give_up_exit);
                reporter.circuit_open(&message, status.as_number(), started.elapsed());
                return Gate::Refused(RunSummary {
                    status,
                    outcome: RunOutcome::CircuitOpen,
                    attempts: 0,
                    elapsed: started.elapsed(),
                    failures: crate::outcome::Failures::default(),
                });
            }
            Gate::Admitted {
                probing: verdict.probing,
            }
        }
        // A signal cut the wait short: the run ends on it before anything
        // starts, and the store was not at fault.
        Err(err) if err.is::<Interrupted>() => Gate::Unchecked,
        Err(err) => {
            reporter.guard_lost(
                Guard::Circuit,
                &format!(
                    "circuit {}: {err:#}; running as if it were closed",
                    circuit.name()
                ),
            );
            Gate::Unchecked
        }
    }
}

/// Tell the circuit how the admitted run ended (`None`: retry failed on
/// its own, which says nothing about the dependency).
fn record(circuit: &Gatekeeper, summary: Option<&RunSummary>, reporter: &mut Reporter) {
    match circuit.record(summary) {
        Ok(Some(warning)) => reporter.lasting_warning(warning::CIRCUIT, &warning),
        Ok(None) => {}
        Err(err) => reporter.lasting_warning(
            warning::CIRCUIT,
            &format!(
                "circuit {}: cannot record the result: {err:#}",
                circuit.name()
            ),
        ),
    }
}
