//! CI logs: GitHub Actions workflow commands and GitLab CI section markers,
//! and the two files a GitHub Actions step leaves for later steps
//! (`$GITHUB_OUTPUT`) and for the run's page (`$GITHUB_STEP_SUMMARY`).
//!
//! Pure formatting, and one careful append. Every piece of text that others
//! wrote (the command line, a reason, a message) is escaped here, so that it
//! can never end one of our lines early or start a command of its own.
//! Imports only `text` and `values`.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rand::RngExt;
use rand::rngs::SmallRng;
use rustix::fs::{Mode, OFlags};

use crate::safe_fs::Unopened;
use crate::text::{escape_controls, sanitize_line};
use crate::values::human;

/// The CI an environment variable names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ci {
    /// `GITHUB_ACTIONS=true`.
    Github,
    /// `GITLAB_CI=true`.
    Gitlab,
}

/// `name` is set to `true` (an empty or other value counts as unset).
fn is_true(var: &impl Fn(&str) -> Option<OsString>, name: &str) -> bool {
    var(name).is_some_and(|value| value.to_string_lossy().trim().eq_ignore_ascii_case("true"))
}

/// The CI the environment names: GitHub Actions first, then GitLab CI.
pub(crate) fn detect(var: impl Fn(&str) -> Option<OsString>) -> Option<Ci> {
    if is_true(&var, "GITHUB_ACTIONS") {
        Some(Ci::Github)
    } else if is_true(&var, "GITLAB_CI") {
        Some(Ci::Gitlab)
    } else {
        None
    }
}

/// Retry runs inside another retry's attempt: `RETRY_ATTEMPT` is set and
/// not empty.
pub(crate) fn nested(var: impl Fn(&str) -> Option<OsString>) -> bool {
    var("RETRY_ATTEMPT").is_some_and(|value| !value.is_empty())
}

// ---- GitHub Actions workflow commands ----

/// A workflow command's message: `%`, CR and LF escaped (the runner
/// unescapes them), so the message stays on our line.
pub(crate) fn escape_data(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in defuse_legacy(text).chars() {
        match c {
            '%' => escaped.push_str("%25"),
            '\r' => escaped.push_str("%0D"),
            '\n' => escaped.push_str("%0A"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// A workflow command's property value (`title=`): the message's escapes,
/// and `:` and `,`, which end a property or the properties.
pub(crate) fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// The runner also obeys the legacy form `##[command]data` anywhere in a
/// line that is not a `::` command: `##[` in text of ours becomes `##\[`.
pub(crate) fn defuse_legacy(text: &str) -> String {
    text.replace("##[", "##\\[")
}

/// `::group::TITLE`: the lines up to `::endgroup::` fold under TITLE.
pub(crate) fn github_group(title: &str) -> String {
    format!("::group::{}", escape_data(title))
}

pub(crate) const GITHUB_END_GROUP: &str = "::endgroup::";

/// An annotation's level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    Warning,
    Error,
}

/// `::warning title=TITLE::MESSAGE` (or `::error`): shown in the log and
/// on the run's page. A newline in MESSAGE is kept as a line break there.
pub(crate) fn github_annotation(level: Level, title: &str, message: &str) -> String {
    let level = match level {
        Level::Warning => "warning",
        Level::Error => "error",
    };
    format!(
        "::{level} title={}::{}",
        escape_property(title),
        escape_data(message)
    )
}

// ---- GitLab CI collapsible sections ----

/// A section name unique in the job log: the run's id and the attempt.
/// GitLab accepts only `[a-zA-Z0-9_.-]` there.
pub(crate) fn section_name(run_id: &str, attempt: u64) -> String {
    let id: String = run_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        .collect();
    format!("retry_{id}_attempt_{attempt}")
}

/// The start marker, collapsed, with HEADER shown on the section's line.
/// HEADER's control characters are escaped: a CR or an escape in it could
/// otherwise complete a marker of its own.
pub(crate) fn gitlab_section_start(name: &str, unix_seconds: u64, header: &str) -> String {
    format!(
        "\x1b[0Ksection_start:{unix_seconds}:{name}[collapsed=true]\r\x1b[0K{}",
        escape_controls(header)
    )
}

pub(crate) fn gitlab_section_end(name: &str, unix_seconds: u64) -> String {
    format!("\x1b[0Ksection_end:{unix_seconds}:{name}\r\x1b[0K")
}

// ---- GitHub Actions step files ----

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
    /// The exit code, a signal's name, or `timeout`.
    pub(crate) exit: String,
    pub(crate) duration: Duration,
    /// `success`, `transient` or `permanent`.
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
            "| {} | {} | {} | {} |\n",
            row.attempt,
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

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| OsString::from(value))
        }
    }

    #[test]
    fn the_environment_names_the_ci_and_empty_is_unset() {
        assert_eq!(detect(env(&[("GITHUB_ACTIONS", "true")])), Some(Ci::Github));
        assert_eq!(detect(env(&[("GITLAB_CI", "true")])), Some(Ci::Gitlab));
        assert_eq!(detect(env(&[("GITHUB_ACTIONS", "")])), None);
        assert_eq!(detect(env(&[("GITHUB_ACTIONS", "false")])), None);
        assert_eq!(detect(env(&[])), None);
        assert!(nested(env(&[("RETRY_ATTEMPT", "2")])));
        assert!(!nested(env(&[("RETRY_ATTEMPT", "")])));
        let files =
            StepFiles::from_env(env(&[("GITHUB_OUTPUT", ""), ("GITHUB_STEP_SUMMARY", "/s")]));
        assert_eq!(files.output, None);
        assert_eq!(files.summary, Some(PathBuf::from("/s")));
    }

    #[test]
    fn workflow_command_values_cannot_end_the_line_or_the_properties() {
        assert_eq!(escape_data("100%\r\n::error::x"), "100%25%0D%0A::error::x");
        assert_eq!(escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
        // Already escaped text is escaped again: the runner unescapes once.
        assert_eq!(escape_data("%0A::error::x"), "%250A::error::x");
        assert_eq!(
            github_annotation(Level::Warning, "retry: attempt 1/2 failed", "exit 1\nnext"),
            "::warning title=retry%3A attempt 1/2 failed::exit 1%0Anext"
        );
        assert_eq!(github_group("a\nb"), "::group::a%0Ab");
        assert_eq!(escape_data("echo ##[error]x"), "echo ##\\[error]x");
    }

    #[test]
    fn gitlab_markers_have_the_documented_shape_and_safe_names() {
        assert_eq!(section_name("ab12", 3), "retry_ab12_attempt_3");
        assert_eq!(section_name("a b:c", 1), "retry_abc_attempt_1");
        assert_eq!(
            gitlab_section_start("n", 7, "retry: x\r\x1b[0Ky"),
            "\x1b[0Ksection_start:7:n[collapsed=true]\r\x1b[0Kretry: x\\r\\e[0Ky"
        );
        assert_eq!(
            gitlab_section_end("n", 8),
            "\x1b[0Ksection_end:8:n\r\x1b[0K"
        );
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
    fn appending_refuses_a_fifo_and_a_summary_past_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, Mode::from_raw_mode(0o600)).unwrap();
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
}
