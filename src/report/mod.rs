//! Retry's own messages: human lines prefixed `retry:`, or JSON events; in
//! a CI log, each attempt folded (a GitHub Actions group, a GitLab CI
//! section) and, on GitHub, failures as annotations.
//!
//! One line per event, written with a single `write` so it never mixes with
//! other writers mid-line; errors writing (a closed stderr, a full disk) are
//! ignored: reporting must never make retry fail or panic.
//!
//! Fold markers and annotations go to stderr, like every other line of
//! retry's (README: CI logs): stdout is the command's, and often a file.
//! A fold opened is always closed: by the attempt's end, by an error, by
//! the end of the run, or at the latest when the reporter is dropped, which
//! is before retry re-raises a signal.

pub(crate) mod ci;
pub(crate) mod metrics;

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use anstyle::{AnsiColor, Style};
use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::outcome::{RunOutcome, SleepSource};
use crate::policy::classify::Class;
use crate::sys::fd::Outlet;
use crate::text::escape_controls;
use crate::values::human;
use ci::{AttemptLog, AttemptRow, Ci, Level, StepFiles, StepResult};

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
        let nested = ci::nested(&var);
        CiSettings {
            nested,
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
}

pub(crate) struct SleepRecord {
    /// The attempt that just failed (0 before the first: splay).
    pub(crate) attempt: u64,
    pub(crate) delay: Duration,
    pub(crate) ceiling: Duration,
    pub(crate) source: SleepSource,
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
}

/// The attempt died of SIGPIPE: its reader went away on purpose
/// (`retry -- yes | head -1`), which is no failure worth a word.
fn reader_went_away(signal: Option<i32>, timed_out: bool) -> bool {
    signal == Some(libc::SIGPIPE) && !timed_out
}

enum Sink {
    Stderr,
    File(File),
}

/// An attempt's fold, open in the CI log.
enum Fold {
    Group,
    Section(String),
}

pub(crate) struct Reporter {
    verbosity: Verbosity,
    json: bool,
    sink: Sink,
    color: bool,
    /// The child's scanned stderr stopped mid-line: start ours on a new one.
    stderr_mid_line: bool,
    /// The run's id, on every JSON event.
    run_id: String,
    /// `--log-format github` or `gitlab`.
    ci: Option<Ci>,
    /// Fold each attempt: a CI format, not nested, not `-q`.
    folds: bool,
    open_fold: Option<Fold>,
    stderr_tracked: bool,
    /// The command line as shown, from the first attempt's start.
    command: String,
    /// The step files to write at the end, and the attempts for them.
    steps: Option<(StepFiles, AttemptLog)>,
    /// Retry's stderr, written so that a reader that takes nothing holds
    /// retry neither past a signal nor past the run's deadline.
    stderr: Outlet,
    /// The run's deadline (`--max-time`), once the run has started.
    deadline: Option<Instant>,
}

const FAILURE: Style = AnsiColor::Red.on_default().bold();
const WARNING: Style = AnsiColor::Yellow.on_default();
const SUCCESS: Style = AnsiColor::Green.on_default();
const DIM: Style = Style::new().dimmed();

/// Now, as RFC 3339 in UTC with milliseconds.
fn timestamp_now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

fn of_attempts(attempt: u64, max: Option<u64>) -> String {
    match max {
        Some(max) => format!("{attempt}/{max}"),
        None => attempt.to_string(),
    }
}

fn millis(duration: Duration) -> u64 {
    duration.as_millis().min(u128::from(u64::MAX)) as u64
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// The exit column of the step summary.
fn exit_cell(record: &AttemptRecord) -> String {
    if record.timed_out {
        "timeout".to_string()
    } else if let Some(signal) = record.signal {
        crate::process::signal_name(signal)
    } else {
        record
            .exit_code
            .map_or_else(|| "-".to_string(), |code| code.to_string())
    }
}

impl Reporter {
    pub(crate) fn new(settings: &ReportSettings, run_id: &str) -> Result<Reporter> {
        let sink = match &settings.log_file {
            Some(path) => Sink::File(crate::safe_fs::open_append_log(path).with_context(|| {
                format!("--log-file {}: cannot open for appending", path.display())
            })?),
            None => Sink::Stderr,
        };
        let json = settings.format == LogFormat::Json;
        let color = !json
            && matches!(sink, Sink::Stderr)
            && match settings.color {
                ColorWhen::Always => true,
                ColorWhen::Never => false,
                ColorWhen::Auto => {
                    anstream::AutoStream::choice(&std::io::stderr()) != anstream::ColorChoice::Never
                }
            };
        let ci = settings.format.ci();
        let step_files = settings.ci.step_files.clone();
        Ok(Reporter {
            verbosity: settings.verbosity,
            json,
            sink,
            color,
            stderr_mid_line: false,
            run_id: run_id.to_string(),
            ci,
            folds: ci.is_some() && !settings.ci.nested && settings.verbosity != Verbosity::Quiet,
            open_fold: None,
            stderr_tracked: settings.ci.stderr_tracked,
            command: String::new(),
            steps: (!step_files.is_empty()).then(|| (step_files, AttemptLog::default())),
            stderr: Outlet::new(2),
            deadline: None,
        })
    }

    /// The run's deadline: past it (or a signal), a line that a stalled
    /// stderr does not take is dropped rather than waited on.
    pub(crate) fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
    }

    /// The last attempt's scanned stderr ended without a line end.
    pub(crate) fn child_left_line_open(&mut self, open: bool) {
        self.stderr_mid_line = open;
    }

    fn write_line(&mut self, line: &str) {
        let mut text = String::with_capacity(line.len() + 2);
        if matches!(self.sink, Sink::File(_)) && !self.json {
            // Runs appended to one file are told apart by time.
            text.push_str(&timestamp_now());
            text.push(' ');
        }
        text.push_str(line);
        text.push('\n');
        match &mut self.sink {
            Sink::Stderr => self.write_stderr(&text),
            Sink::File(file) => {
                let _ = file.write_all(text.as_bytes());
            }
        }
    }

    /// `text` on stderr, on a line of its own.
    fn write_stderr(&mut self, text: &str) {
        let mut lead = "";
        if self.stderr_mid_line {
            lead = "\n";
            self.stderr_mid_line = false;
        }
        let deadline = self.deadline;
        let give_up = || {
            crate::process::signals::terminating_arrived()
                || deadline.is_some_and(|deadline| Instant::now() >= deadline)
        };
        let _ = self
            .stderr
            .write_all(format!("{lead}{text}").as_bytes(), &give_up);
    }

    /// A CI format: an attempt begins; fold what follows under its header.
    fn open_fold(&mut self, attempt: u64, max_attempts: Option<u64>, command: &str) -> bool {
        if !self.folds {
            return false;
        }
        self.close_fold();
        let header = format!(
            "retry: attempt {}: {command}",
            of_attempts(attempt, max_attempts)
        );
        let (marker, fold) = match self.ci {
            Some(Ci::Github) => (ci::github_group(&header), Fold::Group),
            Some(Ci::Gitlab) => {
                let name = ci::section_name(&self.run_id, attempt);
                let marker = ci::gitlab_section_start(&name, unix_seconds(), &header);
                (marker, Fold::Section(name))
            }
            None => return false,
        };
        self.write_stderr(&format!("{marker}\n"));
        self.open_fold = Some(fold);
        true
    }

    /// Close the open fold, if any.
    fn close_fold(&mut self) {
        match self.open_fold.take() {
            None => {}
            Some(Fold::Group) => {
                // `::endgroup::` counts only at the start of a line: when
                // the child's stderr is not ours to watch, it may have
                // left one unfinished.
                let lead = if self.stderr_tracked { "" } else { "\n" };
                self.write_stderr(&format!("{lead}{}\n", ci::GITHUB_END_GROUP));
            }
            Some(Fold::Section(name)) => {
                let marker = ci::gitlab_section_end(&name, unix_seconds());
                self.write_stderr(&format!("{marker}\n"));
            }
        }
    }

    /// On GitHub, an annotation instead of the line `retry: TEXT`
    /// (the log shows it in its place); the line itself still goes to a
    /// `--log-file`. Elsewhere, the line.
    fn annotate(&mut self, level: Level, title: &str, message: &str, style: Style, text: &str) {
        if self.ci != Some(Ci::Github) {
            self.say(style, text);
            return;
        }
        let command = ci::github_annotation(level, title, message);
        self.write_stderr(&format!("{command}\n"));
        if matches!(self.sink, Sink::File(_)) {
            self.say(style, text);
        }
    }

    /// The command line as shown in annotations: one line, not too long.
    fn short_command(&self) -> String {
        crate::text::sanitize_line(&self.command, 200)
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
        let Some((files, log)) = self.steps.take() else {
            return;
        };
        let result = StepResult {
            attempts,
            exit_code,
            outcome: outcome.as_str(),
            command: &self.command,
            elapsed,
        };
        for problem in files.write(&result, &log) {
            self.warning("ci", &problem);
        }
    }

    /// One JSON event, with the time and the run's id added.
    fn event(&mut self, value: &Value) {
        let mut value = value.clone();
        if let Value::Object(fields) = &mut value {
            fields.insert("ts".into(), Value::from(timestamp_now()));
            fields.insert("run_id".into(), Value::from(self.run_id.as_str()));
        }
        self.write_line(&value.to_string());
    }

    /// `retry: <message>`, the prefix coloured when colour is on.
    fn say(&mut self, style: Style, message: &str) {
        // In a CI log, text that others wrote in a message must not make
        // a marker or a legacy workflow command of it.
        let message = match self.ci {
            Some(Ci::Github) => ci::defuse_legacy(&escape_controls(message)),
            Some(Ci::Gitlab) => escape_controls(message),
            None => message.to_string(),
        };
        if matches!(self.sink, Sink::File(_)) {
            // A log file has one `TIMESTAMP retry: ...` line per line, also
            // of a message of several (clap's, a regex error's). Each line
            // gets the prefix, rather than the message being joined into
            // one, so the lines keep their columns: a regex error's caret
            // stays under the character it points at.
            for part in message.split('\n') {
                self.write_line(format!("retry: {part}").trim_end());
            }
            return;
        }
        let line = if self.color {
            format!("{style}retry:{style:#} {message}")
        } else {
            format!("retry: {message}")
        };
        self.write_line(&line);
    }

    /// Retry's own errors: shown even with `-q`.
    pub(crate) fn error(&mut self, message: &str) {
        self.close_fold();
        if self.json {
            self.event(&json!({"event": "error", "message": message}));
        } else {
            let text = format!("error: {message}");
            self.annotate(Level::Error, "retry", message, FAILURE, &text);
        }
    }

    pub(crate) fn warning(&mut self, kind: &str, message: &str) {
        if self.verbosity == Verbosity::Quiet {
            return;
        }
        if self.json {
            self.event(&json!({"event": "warning", "kind": kind, "message": message}));
        } else {
            let text = format!("warning: {message}");
            self.annotate(Level::Warning, "retry", message, WARNING, &text);
        }
    }

    /// `-v`: the policy at start.
    pub(crate) fn policy(&mut self, description: &str) {
        if self.verbosity != Verbosity::Verbose {
            return;
        }
        if self.json {
            self.event(&json!({"event": "policy", "message": description}));
        } else {
            self.say(DIM, description);
        }
    }

    /// `-v`: the retry budget after a deposit or a withdrawal, and how long
    /// the exchange with its store took (JSON `budget` events).
    pub(crate) fn budget(&mut self, name: &str, op: &str, tokens: f64, took: Duration) {
        if self.verbosity != Verbosity::Verbose {
            return;
        }
        if self.json {
            self.event(&json!({
                "event": "budget",
                "name": name,
                "op": op,
                "tokens": (tokens * 1000.0).round() / 1000.0,
                "store_ms": took.as_secs_f64() * 1000.0,
            }));
        } else {
            self.say(
                DIM,
                &format!(
                    "retry budget {name}: {op}, {tokens:.1} tokens left ({} with the store)",
                    human(took)
                ),
            );
        }
    }

    /// An attempt begins: in a CI format its fold opens (whatever the
    /// verbosity, its header naming the attempt); `-v` says so.
    pub(crate) fn attempt_start(&mut self, attempt: u64, max_attempts: Option<u64>, command: &str) {
        if self.command.is_empty() {
            self.command = command.to_string();
        }
        let folded = self.open_fold(attempt, max_attempts, command);
        if self.verbosity != Verbosity::Verbose {
            return;
        }
        if self.json {
            self.event(
                &json!({"event": "start", "attempt": attempt, "max_attempts": max_attempts}),
            );
        } else if !folded {
            self.say(
                DIM,
                &format!("attempt {}: {command}", of_attempts(attempt, max_attempts)),
            );
        }
    }

    /// An attempt ended; `next` is the sleep before the next one, if any.
    /// Its fold closes first, so what is said about it shows outside.
    pub(crate) fn attempt(&mut self, record: &AttemptRecord, next: Option<&SleepRecord>) {
        self.close_fold();
        if let Some((_, log)) = &mut self.steps {
            log.push(AttemptRow {
                attempt: record.attempt,
                exit: exit_cell(record),
                duration: record.duration,
                verdict: record.outcome.as_str(),
            });
        }
        if self.json {
            if self.verbosity != Verbosity::Quiet {
                self.event(&json!({
                    "event": "attempt",
                    "attempt": record.attempt,
                    "max_attempts": record.max_attempts,
                    "exit_code": record.exit_code,
                    "signal": record.signal,
                    "timed_out": record.timed_out,
                    "duration_ms": millis(record.duration),
                    "outcome": record.outcome.as_str(),
                    "reason": record.reason,
                }));
                if let Some(sleep) = next {
                    self.sleep(sleep);
                }
            }
            return;
        }
        if self.verbosity == Verbosity::Quiet || reader_went_away(record.signal, record.timed_out) {
            return;
        }
        if record.outcome == Class::Success {
            if self.verbosity == Verbosity::Verbose {
                self.say(
                    SUCCESS,
                    &format!(
                        "attempt {} succeeded in {}",
                        of_attempts(record.attempt, record.max_attempts),
                        human(record.duration)
                    ),
                );
            }
            return;
        }
        let of = of_attempts(record.attempt, record.max_attempts);
        let mut what = format!("{} ({})", record.reason, record.outcome.as_str());
        let Some(sleep) = next else {
            self.say(WARNING, &format!("attempt {of} failed: {what}"));
            return;
        };
        let why = match sleep.source {
            SleepSource::RetryAfter => " as Retry-After asked",
            SleepSource::Hint => " as the hint file asked",
            SleepSource::Backoff | SleepSource::Splay => "",
        };
        what.push_str(&format!("; retrying in {}{why}", human(sleep.delay)));
        let line = format!("attempt {of} failed: {what}");
        // On GitHub, a failure that will be retried is a warning annotation.
        let message = format!("{what}\ncommand: {}", self.short_command());
        let title = format!("retry: attempt {of} failed");
        self.annotate(Level::Warning, &title, &message, WARNING, &line);
    }

    pub(crate) fn sleep(&mut self, sleep: &SleepRecord) {
        if self.verbosity == Verbosity::Quiet {
            return;
        }
        if self.json {
            self.event(&json!({
                "event": "sleep",
                "attempt": sleep.attempt,
                "delay_ms": millis(sleep.delay),
                "ceiling_ms": millis(sleep.ceiling),
                "source": sleep.source.as_str(),
            }));
        } else if self.verbosity == Verbosity::Verbose {
            self.say(
                DIM,
                &format!(
                    "sleeping {} ({}) before the first attempt",
                    human(sleep.delay),
                    sleep.source.as_str()
                ),
            );
        }
    }

    /// A run refused by an open circuit: said even with `-q`, since nothing ran.
    pub(crate) fn circuit_open(&mut self, message: &str, exit_code: i32, elapsed: Duration) {
        self.close_fold();
        if self.json {
            self.event(&json!({
                "event": "done",
                "outcome": RunOutcome::CircuitOpen.as_str(),
                "attempts": 0,
                "elapsed_ms": millis(elapsed),
                "exit_code": exit_code,
                "timed_out": false,
                "signal": null,
                "message": message,
            }));
        } else {
            self.annotate(
                Level::Error,
                "retry: circuit open",
                message,
                FAILURE,
                message,
            );
        }
    }

    pub(crate) fn done(&mut self, record: &DoneRecord) {
        self.close_fold();
        if self.json {
            if self.verbosity != Verbosity::Quiet || record.outcome != RunOutcome::Success {
                self.event(&json!({
                    "event": "done",
                    "outcome": record.outcome.as_str(),
                    "attempts": record.attempts,
                    "elapsed_ms": millis(record.elapsed),
                    "exit_code": record.exit_code,
                    "timed_out": record.timed_out,
                    "signal": record.signal,
                }));
            }
            return;
        }
        if self.verbosity == Verbosity::Quiet {
            return;
        }
        if reader_went_away(record.signal, record.timed_out) {
            if self.verbosity == Verbosity::Verbose {
                let line = format!(
                    "the command's reader went away (SIGPIPE): ending as the shell would, with {}",
                    record.exit_code
                );
                self.say(DIM, &line);
            }
            return;
        }
        let elapsed = human(record.elapsed);
        let plural = if record.attempts == 1 {
            "attempt"
        } else {
            "attempts"
        };
        match record.outcome {
            RunOutcome::Success if record.until_failure => {
                let line = format!("--until-failure: {} in {elapsed}", record.detail);
                self.say(SUCCESS, &line);
            }
            RunOutcome::Success => {
                if record.attempts > 1 || self.verbosity == Verbosity::Verbose {
                    let line = format!(
                        "succeeded on attempt {} after {elapsed}",
                        of_attempts(record.attempts, record.max_attempts)
                    );
                    self.say(SUCCESS, &line);
                }
            }
            RunOutcome::Interrupted => {
                let line = format!(
                    "{} after {} {plural} in {elapsed}",
                    record.detail, record.attempts
                );
                self.say(FAILURE, &line);
            }
            RunOutcome::CircuitOpen => {}
            _ => {
                let why = match record.outcome {
                    RunOutcome::Permanent => "permanent failure, ",
                    RunOutcome::Deadline => "--max-time reached, ",
                    _ => "",
                };
                let line = format!(
                    "gave up after {} {plural} in {elapsed}: {why}{}",
                    record.attempts, record.detail
                );
                // On GitHub, the give-up is an error annotation.
                let title = format!("retry: gave up after {} {plural}", record.attempts);
                let message = format!(
                    "{why}{} ({elapsed} in all)\ncommand: {}",
                    record.detail,
                    self.short_command()
                );
                self.annotate(Level::Error, &title, &message, FAILURE, &line);
            }
        }
    }

    /// A hook ran: `which` is `on-retry` or `on-give-up`, `command` its
    /// shell command (for display). Its failure is for the caller to warn of.
    pub(crate) fn hook(
        &mut self,
        which: &str,
        command: &str,
        ending: &crate::process::Ending,
        duration: Duration,
    ) {
        if self.verbosity == Verbosity::Quiet {
            return;
        }
        if self.json {
            self.event(&json!({
                "event": "hook",
                "hook": which,
                "command": command,
                "exit_code": ending.exit_code(),
                "signal": ending.signal(),
                "timed_out": ending.timed_out,
                "duration_ms": millis(duration),
            }));
        } else if self.verbosity == Verbosity::Verbose {
            let line = format!("--{which}: {} in {}", ending.describe(), human(duration));
            self.say(DIM, &line);
        }
    }
}

impl Drop for Reporter {
    /// The last exit: a fold still open (retry failed on its own mid-run)
    /// is closed, so the CI log stays balanced.
    fn drop(&mut self) {
        self.close_fold();
    }
}
