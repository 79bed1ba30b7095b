//! The two files a GitHub Actions step leaves for later steps
//! (`$GITHUB_OUTPUT`: `attempts`, `exit_code`, `outcome`) and for the run's
//! page (`$GITHUB_STEP_SUMMARY`: a headline and a table of the attempts),
//! appended once at the end of the run by the outermost retry, whatever
//! the log format.
//!
//! Every piece of text that others wrote (the command line, an exit's
//! name) is escaped here, so that it can never end an output early or
//! make Markdown of itself. Says nothing on stderr: what goes wrong comes
//! back as words, for the reporter to warn of.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::sys::fs::{Mode, OFlags};
use rand::RngExt;
use rand::rngs::SmallRng;

use super::{AttemptRecord, Sink, SleepRecord};
use crate::outcome::RunOutcome;
use crate::safe_fs::Unopened;
use crate::text::{escape_controls, sanitize_line};
use crate::values::human;

/// The step-files sink: it keeps the command line and the attempts (the
/// first few and the last few) until the end of the run.
pub(crate) struct Steps {
    files: StepFiles,
    log: AttemptLog,
    /// The command line as shown, from the first attempt's start.
    command: String,
}

impl Steps {
    pub(crate) fn new(files: StepFiles) -> Steps {
        Steps {
            files,
            log: AttemptLog::default(),
            command: String::new(),
        }
    }

    /// Append the outputs and the summary of a run that ended so; what
    /// went wrong, in words.
    pub(crate) fn write(
        self,
        exit_code: i32,
        outcome: RunOutcome,
        attempts: u64,
        elapsed: Duration,
    ) -> Vec<String> {
        let result = StepResult {
            attempts,
            exit_code,
            outcome: outcome.as_str(),
            command: &self.command,
            elapsed,
        };
        self.files.write(&result, &self.log)
    }
}

impl Sink for Steps {
    fn attempt_start(&mut self, _attempt: u64, _max_attempts: Option<u64>, command: &str) {
        if self.command.is_empty() {
            self.command = command.to_string();
        }
    }

    fn attempt(&mut self, record: &AttemptRecord, _next: Option<&SleepRecord>) {
        self.log.push(AttemptRow {
            attempt: record.attempt,
            copy: record.copy.filter(|&copy| copy > 0),
            exit: exit_cell(record),
            duration: record.duration,
            verdict: record.outcome_str(),
        });
    }
}

/// The exit column of the summary: the code, a signal's name, or `timeout`.
fn exit_cell(record: &AttemptRecord) -> String {
    if record.timed_out {
        "timeout".to_string()
    } else if let Some(signal) = record.signal {
        crate::outcome::signal_name(signal)
    } else {
        record
            .exit_code
            .map_or_else(|| "-".to_string(), |code| code.to_string())
    }
}

/// GitHub caps a step's summary at 1 MiB; past it, none of it is shown.
pub(crate) const SUMMARY_LIMIT: u64 = 1024 * 1024;

/// Rows of the summary table kept from the start and from the end of a
/// run; the attempts in between are counted, not kept (an unlimited run
/// must not grow without bound).
const FIRST_ROWS: usize = 10;
const LAST_ROWS: usize = 20;

/// One attempt, as the summary table shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AttemptRow {
    pub(crate) attempt: u64,
    /// A hedge of the attempt (`--hedge-after`): its number.
    pub(crate) copy: Option<u64>,
    /// The exit code, a signal's name, or `timeout`.
    pub(crate) exit: String,
    pub(crate) duration: Duration,
    /// `success`, `transient`, `permanent` or `superseded`.
    pub(crate) verdict: &'static str,
}

/// The attempts of a run, bounded: the first few and the last few.
#[derive(Debug, Default)]
pub(crate) struct AttemptLog {
    first: Vec<AttemptRow>,
    last: VecDeque<AttemptRow>,
    /// Attempts neither kept in `first` nor in `last`.
    skipped: u64,
}

impl AttemptLog {
    pub(crate) fn push(&mut self, row: AttemptRow) {
        if self.first.len() < FIRST_ROWS {
            self.first.push(row);
            return;
        }
        if self.last.len() == LAST_ROWS {
            self.last.pop_front();
            self.skipped += 1;
        }
        self.last.push_back(row);
    }
}

/// How the run ended, for the step files.
pub(crate) struct StepResult<'a> {
    pub(crate) attempts: u64,
    /// Retry's own exit status (128+N for a signal).
    pub(crate) exit_code: i32,
    /// The `done` outcome: `success`, `exhausted`, ...
    pub(crate) outcome: &'a str,
    /// The command line as retry shows it (control characters escaped);
    /// empty when nothing ran.
    pub(crate) command: &'a str,
    pub(crate) elapsed: Duration,
}

/// `$GITHUB_OUTPUT` and `$GITHUB_STEP_SUMMARY`, when set (not empty).
#[derive(Clone, Debug, Default)]
pub(crate) struct StepFiles {
    pub(crate) output: Option<PathBuf>,
    pub(crate) summary: Option<PathBuf>,
}

impl StepFiles {
    pub(crate) fn from_env(var: impl Fn(&str) -> Option<OsString>) -> StepFiles {
        let path = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        StepFiles {
            output: path("GITHUB_OUTPUT"),
            summary: path("GITHUB_STEP_SUMMARY"),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.output.is_none() && self.summary.is_none()
    }

    /// Append the outputs and the summary; what went wrong, in words.
    pub(crate) fn write(&self, result: &StepResult<'_>, log: &AttemptLog) -> Vec<String> {
        let mut problems = Vec::new();
        if let Some(path) = &self.output {
            let mut rng: SmallRng = rand::make_rng();
            let text = outputs(result, || {
                format!("ghadelimiter_{:032x}", rng.random::<u128>())
            });
            if let Err(problem) = append(path, &text, None) {
                problems.push(format!(
                    "$GITHUB_OUTPUT {}: {problem}; the step's outputs are not set",
                    escape_controls(&path.display().to_string())
                ));
            }
        }
        if let Some(path) = &self.summary {
            let text = summary(result, log);
            if let Err(problem) = append(path, &text, Some(SUMMARY_LIMIT)) {
                problems.push(format!(
                    "$GITHUB_STEP_SUMMARY {}: {problem}; no summary written",
                    escape_controls(&path.display().to_string())
                ));
            }
        }
        problems
    }
}

/// `attempts`, `exit_code` and `outcome` as `$GITHUB_OUTPUT` lines.
fn outputs(result: &StepResult<'_>, delimiter: impl FnMut() -> String) -> String {
    let mut delimiter = delimiter;
    let mut text = String::new();
    for (name, value) in [
        ("attempts", result.attempts.to_string()),
        ("exit_code", result.exit_code.to_string()),
        ("outcome", result.outcome.to_string()),
    ] {
        text.push_str(&output_entry(name, &value, &mut delimiter));
    }
    text
}

/// `name=value`, or the heredoc form `name<<DELIMITER` when the value
/// holds a line end (a `name=value` line would end there, and the rest be
/// read as lines of their own). The delimiter is drawn until it is no line
/// of the value.
fn output_entry(name: &str, value: &str, delimiter: &mut impl FnMut() -> String) -> String {
    if !value.contains(['\n', '\r']) {
        return format!("{name}={value}\n");
    }
    let mut mark = delimiter();
    while value
        .lines()
        .any(|line| line.trim_end_matches('\r') == mark)
    {
        mark = delimiter();
    }
    format!("{name}<<{mark}\n{value}\n{mark}\n")
}

/// Markdown text: every ASCII punctuation character backslash-escaped (so
/// none starts a link, an emphasis, a table cell or HTML), on one line.
fn markdown_text(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in sanitize_line(text, 200).chars() {
        if c.is_ascii_punctuation() {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// The run as a short Markdown section: a headline and a table of its
/// attempts.
fn summary(result: &StepResult<'_>, log: &AttemptLog) -> String {
    let mut text = String::from("### retry");
    if !result.command.is_empty() {
        text.push_str(": ");
        text.push_str(&markdown_text(result.command));
    }
    let plural = if result.attempts == 1 {
        "attempt"
    } else {
        "attempts"
    };
    text.push_str(&format!(
        "\n\n**{}** after {} {plural} in {}, exit status {}\n",
        result.outcome,
        result.attempts,
        human(result.elapsed),
        result.exit_code
    ));
    if log.first.is_empty() {
        return text + "\n";
    }
    text.push_str("\n| attempt | exit | duration | verdict |\n|---:|---:|---:|---|\n");
    let row = |row: &AttemptRow| {
        format!(
            "| {}{} | {} | {} | {} |\n",
            row.attempt,
            row.copy
                .map_or(String::new(), |copy| format!(" (hedge {copy})")),
            markdown_text(&row.exit),
            human(row.duration),
            row.verdict
        )
    };
    for kept in &log.first {
        text.push_str(&row(kept));
    }
    if log.skipped > 0 {
        text.push_str(&format!(
            "| ... | | | {} attempts not shown |\n",
            log.skipped
        ));
    }
    for kept in &log.last {
        text.push_str(&row(kept));
    }
    text.push('\n');
    text
}

/// Append `text` to the file at `path` in one write. The runner creates
/// these files; anything but a regular file there is refused (a FIFO is
/// opened without blocking, then refused), and so is a write that would
/// take the file past `limit` bytes.
fn append(path: &Path, text: &str, limit: Option<u64>) -> Result<(), String> {
    let flags =
        OFlags::WRONLY | OFlags::APPEND | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
    // A symlink another user planted in a sticky directory is not followed.
    let fd = crate::safe_fs::open_trusted(path, flags, Mode::empty()).map_err(|err| match err {
        Unopened::Untrusted(err) => format!("{err:#}"),
        // A FIFO without a reader: ENXIO, rather than a wait for one.
        Unopened::Failed(_) if std::fs::metadata(path).is_ok_and(|m| !m.file_type().is_file()) => {
            "not a regular file".to_string()
        }
        Unopened::Failed(err) => std::io::Error::from(err).to_string(),
    })?;
    let mut file = std::fs::File::from(fd);
    let meta = file.metadata().map_err(|err| err.to_string())?;
    if !meta.file_type().is_file() {
        return Err("not a regular file".to_string());
    }
    if let Some(limit) = limit
        && meta.len().saturating_add(text.len() as u64) > limit
    {
        return Err(format!(
            "it would grow past GitHub's limit of {} KiB for one step",
            limit / 1024
        ));
    }
    file.write_all(text.as_bytes())
        .map_err(|err| err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::classify::Class;
    use crate::report::fixtures::{attempt_record, env};

    #[test]
    fn the_environment_names_the_files_and_empty_is_unset() {
        let files =
            StepFiles::from_env(env(&[("GITHUB_OUTPUT", ""), ("GITHUB_STEP_SUMMARY", "/s")]));
        assert_eq!(files.output, None);
        assert_eq!(files.summary, Some(PathBuf::from("/s")));
        assert!(StepFiles::from_env(env(&[])).is_empty());
    }

    #[test]
    fn outputs_use_the_heredoc_form_only_for_a_line_end() {
        let mut draws = ["x", "EOF", "EOF2"].into_iter().map(String::from);
        let mut next = move || draws.next().unwrap();
        assert_eq!(output_entry("a", "1", &mut next), "a=1\n");
        // "x" is a line of the value: drawn again.
        assert_eq!(output_entry("b", "x\ny", &mut next), "b<<EOF\nx\ny\nEOF\n");
        let result = StepResult {
            attempts: 3,
            exit_code: 0,
            outcome: "success",
            command: "make test",
            elapsed: Duration::from_millis(4200),
        };
        assert_eq!(
            outputs(&result, || unreachable!()),
            "attempts=3\nexit_code=0\noutcome=success\n"
        );
    }

    #[test]
    fn the_summary_is_a_bounded_table_with_the_command_escaped() {
        let mut log = AttemptLog::default();
        for attempt in 1..=100 {
            log.push(AttemptRow {
                attempt,
                copy: None,
                exit: "1".into(),
                duration: Duration::from_millis(5),
                verdict: "transient",
            });
        }
        let result = StepResult {
            attempts: 100,
            exit_code: 1,
            outcome: "exhausted",
            command: "sh -c 'a|b' <x>",
            elapsed: Duration::from_secs(2),
        };
        let text = summary(&result, &log);
        assert!(
            text.starts_with("### retry: sh \\-c \\'a\\|b\\' \\<x\\>\n"),
            "{text}"
        );
        let rows = text.lines().filter(|l| l.starts_with("| ")).count();
        // The header, 10 first, the gap, 20 last.
        assert_eq!(rows, 1 + FIRST_ROWS + 1 + LAST_ROWS, "{text}");
        assert!(
            text.contains("| ... | | | 70 attempts not shown |"),
            "{text}"
        );
        assert!(text.contains("| 100 | 1 | 5ms | transient |"), "{text}");
    }

    #[test]
    #[cfg(unix)]
    fn appending_refuses_a_fifo_and_a_summary_past_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        crate::sys::fs::make_fifo(&fifo).unwrap();
        assert!(append(&fifo, "x\n", None).is_err());
        let missing = dir.path().join("missing");
        assert!(append(&missing, "x\n", None).is_err());
        assert!(!missing.exists());
        let file = dir.path().join("summary");
        std::fs::write(&file, "a\n").unwrap();
        append(&file, "b\n", Some(4)).unwrap();
        assert!(append(&file, "c\n", Some(4)).is_err());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "a\nb\n");
    }

    #[test]
    fn the_sink_writes_what_the_run_told_it() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("output");
        let summary_path = dir.path().join("summary");
        std::fs::write(&output, "").unwrap();
        std::fs::write(&summary_path, "").unwrap();
        let mut steps = Steps::new(StepFiles {
            output: Some(output.clone()),
            summary: Some(summary_path.clone()),
        });
        steps.attempt_start(1, Some(3), "make test");
        steps.attempt(&attempt_record(1, Class::Transient), None);
        steps.attempt_start(2, Some(3), "ignored: the first is kept");
        let mut killed = attempt_record(2, Class::Transient);
        killed.exit_code = None;
        killed.signal = Some(crate::outcome::signo::SIGKILL);
        steps.attempt(&killed, None);
        let mut timed_out = attempt_record(3, Class::Transient);
        timed_out.timed_out = true;
        steps.attempt(&timed_out, None);
        let problems = steps.write(7, RunOutcome::Exhausted, 3, Duration::from_millis(4210));
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            std::fs::read_to_string(&output).unwrap(),
            "attempts=3\nexit_code=7\noutcome=exhausted\n"
        );
        assert_eq!(
            std::fs::read_to_string(&summary_path).unwrap(),
            "### retry: make test\n\n\
             **exhausted** after 3 attempts in 4.2s, exit status 7\n\n\
             | attempt | exit | duration | verdict |\n|---:|---:|---:|---|\n\
             | 1 | 7 | 123ms | transient |\n\
             | 2 | SIGKILL | 123ms | transient |\n\
             | 3 | timeout | 123ms | transient |\n\n"
        );
    }

    #[test]
    fn a_file_that_cannot_be_written_comes_back_in_words() {
        let dir = tempfile::tempdir().unwrap();
        let steps = Steps::new(StepFiles {
            output: Some(dir.path().join("missing/output")),
            summary: Some(dir.path().to_path_buf()),
        });
        let problems = steps.write(0, RunOutcome::Success, 1, Duration::ZERO);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].starts_with("$GITHUB_OUTPUT "), "{problems:?}");
        assert!(
            problems[0].ends_with("; the step's outputs are not set"),
            "{problems:?}"
        );
        assert!(
            problems[1].starts_with("$GITHUB_STEP_SUMMARY "),
            "{problems:?}"
        );
        assert!(
            problems[1].ends_with("; no summary written"),
            "{problems:?}"
        );
    }
}
