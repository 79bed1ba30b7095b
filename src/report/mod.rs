//! Retry's own messages: one `Reporter` that the run tells what happened
//! (the records below), and the sinks it hands each record to, in turn:
//!
//! - `ci`: in a CI log, each attempt's output folded (a GitHub Actions
//!   group, a GitLab CI section);
//! - `steps`: a GitHub Actions step's outputs and summary;
//! - `text`: human lines prefixed `retry:` (on GitHub, failures as
//!   annotations), or `json`: one JSON event per line;
//! - `metrics`: the `--metrics-file`, which `app` renders from the run's
//!   summary and writes once, at the end.
//!
//! This file holds the settings, the records and the fan-out; it formats
//! nothing itself. `out` is where the lines go (stderr or the log file).
//! Reporting never makes retry fail or panic: a line that cannot be written
//! is dropped. Imports nothing from `run`, `cli` or `app`.

mod ci;
mod in_force;
mod json;
pub(crate) mod metrics;
mod out;
mod steps;
mod text;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::contract::warning;
use crate::outcome::Ending;
use crate::outcome::{RunOutcome, SleepSource};
use crate::policy::classify::Class;
use ci::{Ci, Folds};
pub(crate) use in_force::{Guard, InForce, Throttled};
use json::JsonSink;
use out::{LogFile, Out, Stderr};
use steps::{StepFiles, Steps};
use text::{TextSettings, TextSink};

/// Format of retry's own messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// Lines prefixed 'retry:'
    Text,
    /// One JSON object per line
    Json,
    /// Text, each attempt in a GitHub Actions log group, failures as annotations
    Github,
    /// Text, each attempt in a GitLab CI collapsible section
    Gitlab,
}

impl LogFormat {
    /// `--log-format` if given, else the CI the environment names
    /// (`GITHUB_ACTIONS=true`, `GITLAB_CI=true`), else text.
    pub(crate) fn chosen(flag: Option<LogFormat>, var: impl Fn(&str) -> Option<OsString>) -> Self {
        flag.unwrap_or(match ci::detect(var) {
            Some(Ci::Github) => LogFormat::Github,
            Some(Ci::Gitlab) => LogFormat::Gitlab,
            None => LogFormat::Text,
        })
    }

    /// The CI log this format writes for, if any.
    fn ci(self) -> Option<Ci> {
        match self {
            LogFormat::Github => Some(Ci::Github),
            LogFormat::Gitlab => Some(Ci::Gitlab),
            LogFormat::Text | LogFormat::Json => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verbosity {
    Quiet,
    Normal,
    Verbose,
}

/// `--color`: when retry's own lines are coloured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ColorWhen {
    Auto,
    Always,
    Never,
}

/// Where and how retry's own messages go.
#[derive(Debug)]
pub(crate) struct ReportSettings {
    pub(crate) verbosity: Verbosity,
    pub(crate) format: LogFormat,
    pub(crate) log_file: Option<PathBuf>,
    pub(crate) color: ColorWhen,
    /// What the environment says about CI and nesting.
    pub(crate) ci: CiSettings,
}

/// Read from the environment once: where a GitHub Actions step's files
/// are, whether this retry runs inside another, and whether the child's
/// stderr is pumped (its line ends known), which `config` knows.
#[derive(Debug, Default)]
pub(crate) struct CiSettings {
    /// `RETRY_ATTEMPT` is set: no folds (they do not nest), no step files
    /// (the outermost retry writes them).
    pub(crate) nested: bool,
    /// How deep this retry runs (1 outermost): its lines say it, its
    /// command gets it (`RETRY_DEPTH`).
    pub(crate) depth: u32,
    /// `$GITHUB_OUTPUT` and `$GITHUB_STEP_SUMMARY`, whatever the format.
    pub(crate) step_files: StepFiles,
    /// The child's stderr goes through retry (output is scanned), so
    /// whether it ended mid-line is known.
    pub(crate) stderr_tracked: bool,
}

impl CiSettings {
    pub(crate) fn from_env(
        var: impl Fn(&str) -> Option<OsString>,
        stderr_tracked: bool,
    ) -> CiSettings {
        let depth = ci::depth(&var);
        let nested = depth > 1;
        CiSettings {
            nested,
            depth,
            step_files: if nested {
                StepFiles::default()
            } else {
                StepFiles::from_env(&var)
            },
            stderr_tracked,
        }
    }
}

pub(crate) struct AttemptRecord {
    pub(crate) attempt: u64,
    pub(crate) max_attempts: Option<u64>,
    pub(crate) exit_code: Option<i32>,
    pub(crate) signal: Option<i32>,
    pub(crate) timed_out: bool,
    pub(crate) duration: Duration,
    pub(crate) outcome: Class,
    pub(crate) reason: String,
    /// `--hedge-after`: which copy of the attempt this was (0 the first).
    pub(crate) copy: Option<u64>,
    /// The copy was ended because another won (or the run ended): its
    /// outcome is `superseded`.
    pub(crate) superseded: bool,
}

impl AttemptRecord {
    /// The `outcome` words: the verdict's, or `superseded`.
    pub(crate) fn outcome_str(&self) -> &'static str {
        if self.superseded {
            "superseded"
        } else {
            self.outcome.as_str()
        }
    }
}

pub(crate) struct SleepRecord {
    /// The attempt that just failed (0 before the first: splay).
    pub(crate) attempt: u64,
    pub(crate) delay: Duration,
    pub(crate) ceiling: Duration,
    pub(crate) source: SleepSource,
    /// The response header that set a `retry-after` sleep (`X-RateLimit-Reset`)
    /// and how its value was read; `None` for a hint or a backoff.
    pub(crate) header: Option<(&'static str, String)>,
}

pub(crate) struct DoneRecord {
    pub(crate) outcome: RunOutcome,
    pub(crate) attempts: u64,
    pub(crate) max_attempts: Option<u64>,
    pub(crate) elapsed: Duration,
    /// Retry's own exit status (128+N for a signal).
    pub(crate) exit_code: i32,
    /// For humans: how the last attempt ended, or why the run stopped.
    pub(crate) detail: String,
    /// The last attempt was ended by a time limit.
    pub(crate) timed_out: bool,
    /// The signal the last attempt died of.
    pub(crate) signal: Option<i32>,
    /// `--until-failure`: success means every counted run passed, as the
    /// detail says.
    pub(crate) until_failure: bool,
    /// Successful attempts in a row at the end (`--successes`).
    pub(crate) successes: u64,
    /// The status the last attempt ended with, as retry reports it (128+N
    /// for a signal): retry's own differs under `--give-up-exit`. `None`:
    /// no attempt ran.
    pub(crate) command_exit_code: Option<i32>,
    /// Whether `--circuit` and `--budget` were in force.
    pub(crate) in_force: InForce,
}

/// `3/5`, or `3` when attempts are unlimited.
fn of_attempts(attempt: u64, max: Option<u64>) -> String {
    match max {
        Some(max) => format!("{attempt}/{max}"),
        None => attempt.to_string(),
    }
}

/// What every sink is told, in the words of the [`Reporter`]'s methods.
/// Each sink keeps what it shows and ignores the rest: a method does
/// nothing unless a sink says otherwise.
trait Sink {
    fn error(&mut self, _message: &str) {}
    fn warning(&mut self, _kind: &str, _message: &str) {}
    /// A warning `-q` does not silence; by default, as any other.
    fn lasting_warning(&mut self, kind: &str, message: &str) {
        self.warning(kind, message);
    }
    fn policy(&mut self, _description: &str) {}
    fn budget(&mut self, _name: &str, _op: &str, _tokens: f64, _took: Duration) {}
    fn attempt_start(&mut self, _attempt: u64, _max_attempts: Option<u64>, _command: &str) {}
    fn attempt(&mut self, _record: &AttemptRecord, _next: Option<&SleepRecord>) {}
    /// A copy of a hedged attempt that did not decide it (`--hedge-after`),
    /// told before the attempt's own record; by default, as an attempt.
    fn side_copy(&mut self, record: &AttemptRecord) {
        self.attempt(record, None);
    }
    fn sleep(&mut self, _sleep: &SleepRecord) {}
    /// An adaptive circuit decided: said before the run (or its refusal).
    fn throttled(&mut self, _throttled: &Throttled) {}
    fn circuit_open(&mut self, _message: &str, _exit_code: i32, _elapsed: Duration) {}
    fn done(&mut self, _record: &DoneRecord) {}
    fn hook(&mut self, _which: &str, _command: &str, _ending: &Ending, _duration: Duration) {}
    /// The run is `--until-failure`: its passing runs are counted, not
    /// said one by one.
    fn hunting(&mut self) {}
}

/// Retry's own messages, handed to every sink that the settings call for.
pub(crate) struct Reporter {
    /// Told first, so that an attempt's fold closes before anything is
    /// said about the attempt; dropped first, so that a fold still open
    /// (retry failed on its own mid-run) is closed, which is before retry
    /// re-raises a signal.
    folds: Option<Folds<Stderr>>,
    /// Taken (and written) at the end of the run.
    steps: Option<Steps>,
    /// Text or JSON.
    lines: Box<dyn Sink>,
    stderr: Stderr,
    /// Whether the run's circuit and budget were in force.
    in_force: InForce,
}

impl Reporter {
    pub(crate) fn new(settings: &ReportSettings, run_id: &str) -> Result<Reporter> {
        let stderr = Stderr::new();
        let out = match &settings.log_file {
            Some(path) => {
                let file = crate::safe_fs::open_append_log(path).with_context(|| {
                    format!("--log-file {}: cannot open for appending", path.display())
                })?;
                Out::File(LogFile::new(file, path, stderr.clone()))
            }
            None => Out::Stderr(stderr.clone()),
        };
        let ci = settings.format.ci();
        let folds = ci
            .filter(|_| !settings.ci.nested && settings.verbosity != Verbosity::Quiet)
            .map(|ci| Folds::new(stderr.clone(), ci, run_id, settings.ci.stderr_tracked));
        let lines: Box<dyn Sink> = if settings.format == LogFormat::Json {
            Box::new(JsonSink::new(out, settings.verbosity, run_id))
        } else {
            let log_file = matches!(out, Out::File(_));
            let text = TextSettings {
                verbosity: settings.verbosity,
                color: !log_file && color_stderr(settings.color),
                log_file,
                ci,
                folded: folds.is_some(),
                depth: settings.ci.depth,
            };
            let annotations = (ci == Some(Ci::Github)).then(|| Out::Stderr(stderr.clone()));
            Box::new(TextSink::new(out, text, annotations))
        };
        let files = &settings.ci.step_files;
        Ok(Reporter {
            folds,
            steps: (!files.is_empty()).then(|| Steps::new(files.clone())),
            lines,
            stderr,
            in_force: InForce::default(),
        })
    }

    /// Every sink, in the order they hear of an event.
    fn each(&mut self, mut tell: impl FnMut(&mut dyn Sink)) {
        if let Some(folds) = &mut self.folds {
            tell(folds);
        }
        if let Some(steps) = &mut self.steps {
            tell(steps);
        }
        tell(self.lines.as_mut());
    }

    /// The run's deadline: past it (or a signal), a line that a stalled
    /// stderr does not take is dropped rather than waited on.
    pub(crate) fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.stderr.set_deadline(deadline);
    }

    /// The last attempt's scanned stderr ended without a line end.
    pub(crate) fn child_left_line_open(&mut self, open: bool) {
        self.stderr.set_mid_line(open);
    }

    /// The outermost retry in a GitHub Actions step: append the step's
    /// outputs (`attempts`, `exit_code`, `outcome`) and a summary table.
    pub(crate) fn write_step_files(
        &mut self,
        exit_code: i32,
        outcome: RunOutcome,
        attempts: u64,
        elapsed: Duration,
    ) {
        let Some(steps) = self.steps.take() else {
            return;
        };
        for problem in steps.write(exit_code, outcome, attempts, elapsed) {
            self.warning(warning::CI, &problem);
        }
    }

    /// The run is `--until-failure` (before its first attempt).
    pub(crate) fn hunting(&mut self) {
        self.each(|sink| sink.hunting());
    }

    /// Retry's own errors: shown even with `-q`.
    pub(crate) fn error(&mut self, message: &str) {
        self.each(|sink| sink.error(message));
    }

    pub(crate) fn warning(&mut self, kind: &str, message: &str) {
        self.each(|sink| sink.warning(kind, message));
    }

    /// A warning that `-q` does not silence: a setting that does not take
    /// effect as given (configuration), a circuit or budget store that
    /// cannot be used, a record of theirs that was lost.
    pub(crate) fn lasting_warning(&mut self, kind: &str, message: &str) {
        self.each(|sink| sink.lasting_warning(kind, message));
    }

    /// The run is given `guard` (`--circuit`, `--budget`) named `name`.
    pub(crate) fn guarded_by(&mut self, guard: Guard, name: &str) {
        self.in_force.given(guard, name);
    }

    /// `guard`'s store cannot be used: say so (also under `-q`), and the
    /// run goes on without it, which its `done` event and the metrics file
    /// say too.
    pub(crate) fn guard_lost(&mut self, guard: Guard, message: &str) {
        self.in_force.lost(guard);
        self.lasting_warning(guard.as_str(), message);
    }

    /// An adaptive circuit counted this when it decided (for the `done`
    /// event and the metrics).
    pub(crate) fn throttled(&mut self, throttled: Throttled) {
        self.each(|sink| sink.throttled(&throttled));
        self.in_force.throttled = Some(throttled);
    }

    /// Whether the run's circuit and budget were in force, so far.
    pub(crate) fn in_force(&self) -> &InForce {
        &self.in_force
    }

    /// `-v`: the policy at start.
    pub(crate) fn policy(&mut self, description: &str) {
        self.each(|sink| sink.policy(description));
    }

    /// `-v`: the retry budget after a deposit or a withdrawal, and how long
    /// the exchange with its store took (JSON `budget` events).
    pub(crate) fn budget(&mut self, name: &str, op: &str, tokens: f64, took: Duration) {
        self.each(|sink| sink.budget(name, op, tokens, took));
    }

    /// An attempt begins: in a CI format its fold opens (whatever the
    /// verbosity, its header naming the attempt); `-v` says so.
    pub(crate) fn attempt_start(&mut self, attempt: u64, max_attempts: Option<u64>, command: &str) {
        self.each(|sink| sink.attempt_start(attempt, max_attempts, command));
    }

    /// An attempt ended; `next` is the sleep before the next one, if any.
    /// Its fold closes first, so what is said about it shows outside.
    pub(crate) fn attempt(&mut self, record: &AttemptRecord, next: Option<&SleepRecord>) {
        self.each(|sink| sink.attempt(record, next));
    }

    pub(crate) fn side_copy(&mut self, record: &AttemptRecord) {
        self.each(|sink| sink.side_copy(record));
    }

    pub(crate) fn sleep(&mut self, sleep: &SleepRecord) {
        self.each(|sink| sink.sleep(sleep));
    }

    /// A run refused by an open circuit: said even with `-q`, since nothing ran.
    pub(crate) fn circuit_open(&mut self, message: &str, exit_code: i32, elapsed: Duration) {
        self.each(|sink| sink.circuit_open(message, exit_code, elapsed));
    }

    pub(crate) fn done(&mut self, record: &DoneRecord) {
        self.each(|sink| sink.done(record));
    }

    /// A hook ran: `which` is `on-retry` or `on-give-up`, `command` its
    /// shell command (for display). Its failure is for the caller to warn of.
    pub(crate) fn hook(&mut self, which: &str, command: &str, ending: &Ending, duration: Duration) {
        self.each(|sink| sink.hook(which, command, ending, duration));
    }
}

/// `--color` for lines on stderr (auto: a terminal, unless `NO_COLOR` and
/// the like say otherwise).
fn color_stderr(when: ColorWhen) -> bool {
    let color = match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => {
            anstream::AutoStream::choice(&std::io::stderr()) != anstream::ColorChoice::Never
        }
    };
    // A Windows console takes the escapes once asked to.
    if color {
        crate::sys::fd::prepare_colour();
    }
    color
}

#[cfg(test)]
pub(crate) mod fixtures;

#[cfg(test)]
mod tests {
    use super::fixtures::{attempt_record, done_record, env, sleep_record};
    use super::*;

    #[test]
    fn the_format_is_the_flag_else_the_ci_the_environment_names() {
        let github = env(&[("GITHUB_ACTIONS", "true")]);
        assert_eq!(LogFormat::chosen(None, &github), LogFormat::Github);
        assert_eq!(
            LogFormat::chosen(Some(LogFormat::Json), &github),
            LogFormat::Json
        );
        let gitlab = env(&[("GITLAB_CI", "true")]);
        assert_eq!(LogFormat::chosen(None, gitlab), LogFormat::Gitlab);
        assert_eq!(LogFormat::chosen(None, env(&[])), LogFormat::Text);
        // A nested retry leaves the step files to the outermost one.
        let nested = env(&[("RETRY_ATTEMPT", "1"), ("GITHUB_OUTPUT", "/o")]);
        let ci = CiSettings::from_env(nested, true);
        assert!(ci.nested && ci.step_files.is_empty());
        let outer = CiSettings::from_env(env(&[("GITHUB_OUTPUT", "/o")]), false);
        assert!(!outer.nested && !outer.step_files.is_empty());
    }

    fn logged(format: LogFormat, verbosity: Verbosity, tell: impl FnOnce(&mut Reporter)) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let settings = ReportSettings {
            verbosity,
            format,
            log_file: Some(path.clone()),
            color: ColorWhen::Always,
            ci: CiSettings::default(),
        };
        tell(&mut Reporter::new(&settings, "r1").unwrap());
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn a_reporter_hands_each_record_to_its_format_in_the_log_file() {
        let run = |reporter: &mut Reporter| {
            reporter.attempt_start(1, Some(5), "make test");
            reporter.attempt(&attempt_record(1, Class::Transient), Some(&sleep_record(1)));
            reporter.done(&done_record(RunOutcome::Exhausted, 1));
        };
        let text = logged(LogFormat::Text, Verbosity::Normal, run);
        let lines: Vec<&str> = text.lines().map(|line| &line[25..]).collect();
        // No colour in a file, whatever --color says.
        assert_eq!(
            lines,
            [
                "retry: attempt 1/5 failed: exit 7 (transient); retrying in 734ms",
                "retry: gave up after 1 attempt in 4.2s: exit 7",
            ]
        );
        let json = logged(LogFormat::Json, Verbosity::Normal, run);
        let events: Vec<String> = json
            .lines()
            .map(|line| {
                serde_json::from_str::<serde_json::Value>(line).unwrap()["event"].to_string()
            })
            .collect();
        assert_eq!(events, [r#""attempt""#, r#""sleep""#, r#""done""#]);
    }
}
