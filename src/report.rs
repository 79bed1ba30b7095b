//! Retry's own messages: human lines prefixed `retry:`, or JSON events.
//!
//! One line per event, written with a single `write` so it never mixes with
//! other writers mid-line; errors writing (a closed stderr, a full disk) are
//! ignored: reporting must never make retry fail or panic.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anstyle::{AnsiColor, Style};
use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::classify::Class;
use crate::decision::{RunOutcome, SleepSource};
use crate::values::human;

/// Format of retry's own messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    Text,
    Json,
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

pub(crate) struct Reporter {
    verbosity: Verbosity,
    json: bool,
    sink: Sink,
    color: bool,
    /// The child's scanned stderr stopped mid-line: start ours on a new one.
    stderr_mid_line: bool,
    /// The run's id, on every JSON event.
    run_id: String,
}

const FAILURE: Style = AnsiColor::Red.on_default().bold();
const WARNING: Style = AnsiColor::Yellow.on_default();
const SUCCESS: Style = AnsiColor::Green.on_default();
const DIM: Style = Style::new().dimmed();

/// Now, as RFC 3339 in UTC with milliseconds.
fn timestamp_now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
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
        Ok(Reporter {
            verbosity: settings.verbosity,
            json,
            sink,
            color,
            stderr_mid_line: false,
            run_id: run_id.to_string(),
        })
    }

    /// The last attempt's scanned stderr ended without a line end.
    pub(crate) fn child_left_line_open(&mut self, open: bool) {
        self.stderr_mid_line = open;
    }

    fn write_line(&mut self, line: &str) {
        let mut text = String::with_capacity(line.len() + 2);
        if self.stderr_mid_line && matches!(self.sink, Sink::Stderr) {
            text.push('\n');
            self.stderr_mid_line = false;
        }
        if matches!(self.sink, Sink::File(_)) && !self.json {
            // Runs appended to one file are told apart by time.
            text.push_str(&timestamp_now());
            text.push(' ');
        }
        text.push_str(line);
        text.push('\n');
        let _ = match &mut self.sink {
            Sink::Stderr => std::io::stderr().lock().write_all(text.as_bytes()),
            Sink::File(file) => file.write_all(text.as_bytes()),
        };
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
        let line = if self.color {
            format!("{style}retry:{style:#} {message}")
        } else {
            format!("retry: {message}")
        };
        self.write_line(&line);
    }

    /// Retry's own errors: shown even with `-q`.
    pub(crate) fn error(&mut self, message: &str) {
        if self.json {
            self.event(&json!({"event": "error", "message": message}));
        } else {
            self.say(FAILURE, &format!("error: {message}"));
        }
    }

    pub(crate) fn warning(&mut self, kind: &str, message: &str) {
        if self.verbosity == Verbosity::Quiet {
            return;
        }
        if self.json {
            self.event(&json!({"event": "warning", "kind": kind, "message": message}));
        } else {
            self.say(WARNING, &format!("warning: {message}"));
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

    /// `-v`: an attempt begins.
    pub(crate) fn attempt_start(&mut self, attempt: u64, max_attempts: Option<u64>, command: &str) {
        if self.verbosity != Verbosity::Verbose {
            return;
        }
        if self.json {
            self.event(
                &json!({"event": "start", "attempt": attempt, "max_attempts": max_attempts}),
            );
        } else {
            self.say(
                DIM,
                &format!("attempt {}: {command}", of_attempts(attempt, max_attempts)),
            );
        }
    }

    /// An attempt ended; `next` is the sleep before the next one, if any.
    pub(crate) fn attempt(&mut self, record: &AttemptRecord, next: Option<&SleepRecord>) {
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
        let mut line = format!(
            "attempt {} failed: {} ({})",
            of_attempts(record.attempt, record.max_attempts),
            record.reason,
            record.outcome.as_str()
        );
        if let Some(sleep) = next {
            let why = match sleep.source {
                SleepSource::RetryAfter => " as Retry-After asked",
                SleepSource::Hint => " as the hint file asked",
                SleepSource::Backoff | SleepSource::Splay => "",
            };
            line.push_str(&format!("; retrying in {}{why}", human(sleep.delay)));
        }
        self.say(WARNING, &line);
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
        if self.json {
            self.event(&json!({
                "event": "done",
                "outcome": RunOutcome::CircuitOpen.as_str(),
                "attempts": 0,
                "elapsed_ms": millis(elapsed),
                "exit_code": exit_code,
                "message": message,
            }));
        } else {
            self.say(FAILURE, message);
        }
    }

    pub(crate) fn done(&mut self, record: &DoneRecord) {
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
                self.say(FAILURE, &line);
            }
        }
    }

    /// A hook ran: `which` is `on-retry` or `on-give-up`, `command` its
    /// shell command (for display). Its failure is for the caller to warn of.
    pub(crate) fn hook(
        &mut self,
        which: &str,
        command: &str,
        ending: &crate::child::Ending,
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
