//! CI logs: GitHub Actions workflow commands and GitLab CI section markers,
//! and the folds sink that puts each attempt's output under a header of
//! its own (a GitHub Actions group, a GitLab CI section).
//!
//! Pure formatting, and the folds. Every piece of text that others wrote
//! (the command line, a reason, a message) is escaped here, so that it can
//! never end one of our lines early or start a command of its own. Fold
//! markers go to stderr, like every other line of retry's (docs/reporting.md, CI
//! logs): stdout is the command's, and often a file. A fold opened is
//! always closed: by the attempt's end, by an error, by the end of the
//! run, or at the latest when the sink is dropped.

use std::ffi::OsString;
use std::io::Write;
use std::time::{Duration, SystemTime};

use super::{AttemptRecord, DoneRecord, Sink, SleepRecord, of_attempts};
use crate::text::{escape_controls, for_lines};

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

/// The deepest nesting `RETRY_DEPTH` may claim; past it, or not a number,
/// it counts as the one level `RETRY_ATTEMPT` shows.
const MOST_DEPTH: u32 = 99;

/// How deep this retry runs: 1 outermost; inside another retry's attempt,
/// one deeper than the `RETRY_DEPTH` it gave (2 when only `RETRY_ATTEMPT`,
/// set and not empty, says there is one).
pub(crate) fn depth(var: impl Fn(&str) -> Option<OsString>) -> u32 {
    let inside = var("RETRY_ATTEMPT").is_some_and(|value| !value.is_empty());
    let given = var("RETRY_DEPTH")
        .and_then(|value| value.to_str()?.parse::<u32>().ok())
        .filter(|depth| (1..=MOST_DEPTH).contains(depth));
    match given {
        Some(outer) => outer + 1,
        None => 1 + u32::from(inside),
    }
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
    format!("::group::{}", escape_data(&for_lines(title)))
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
        escape_property(&escape_controls(title)),
        escape_data(&for_lines(message))
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

// ---- The folds sink ----

/// An attempt's fold, open in the CI log.
enum Fold {
    Group,
    Section(String),
}

/// The folds sink: each attempt's fold opens at its start, whatever the
/// verbosity, under a header naming it, and closes before anything is said
/// about it.
pub(crate) struct Folds<W: Write> {
    out: W,
    ci: Ci,
    /// The run's id, in GitLab section names.
    run_id: String,
    open: Option<Fold>,
    /// The child's stderr goes through retry, so whether it ended mid-line
    /// is known (and taken care of where the lines go).
    stderr_tracked: bool,
    /// The time in GitLab section markers.
    clock: fn() -> SystemTime,
}

impl<W: Write> Folds<W> {
    pub(crate) fn new(out: W, ci: Ci, run_id: &str, stderr_tracked: bool) -> Self {
        Folds {
            out,
            ci,
            run_id: run_id.to_string(),
            open: None,
            stderr_tracked,
            clock: SystemTime::now,
        }
    }

    fn unix_seconds(&self) -> u64 {
        (self.clock)()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs())
    }

    fn write(&mut self, text: &str) {
        let _ = self.out.write_all(text.as_bytes());
    }

    /// Close the open fold, if any.
    fn close(&mut self) {
        match self.open.take() {
            None => {}
            Some(Fold::Group) => {
                // `::endgroup::` counts only at the start of a line: when
                // the child's stderr is not ours to watch, it may have
                // left one unfinished.
                let lead = if self.stderr_tracked { "" } else { "\n" };
                self.write(&format!("{lead}{GITHUB_END_GROUP}\n"));
            }
            Some(Fold::Section(name)) => {
                let marker = gitlab_section_end(&name, self.unix_seconds());
                self.write(&format!("{marker}\n"));
            }
        }
    }
}

impl<W: Write> Sink for Folds<W> {
    fn error(&mut self, _message: &str) {
        self.close();
    }

    /// An attempt begins: fold what follows under its header.
    fn attempt_start(&mut self, attempt: u64, max_attempts: Option<u64>, command: &str) {
        self.close();
        let header = format!(
            "retry: attempt {}: {command}",
            of_attempts(attempt, max_attempts)
        );
        let (marker, fold) = match self.ci {
            Ci::Github => (github_group(&header), Fold::Group),
            Ci::Gitlab => {
                let name = section_name(&self.run_id, attempt);
                let marker = gitlab_section_start(&name, self.unix_seconds(), &header);
                (marker, Fold::Section(name))
            }
        };
        self.write(&format!("{marker}\n"));
        self.open = Some(fold);
    }

    fn attempt(&mut self, _record: &AttemptRecord, _next: Option<&SleepRecord>) {
        self.close();
    }

    /// The other copies of a hedged attempt stay in its fold.
    fn side_copy(&mut self, _record: &AttemptRecord) {}

    fn circuit_open(&mut self, _message: &str, _exit_code: i32, _elapsed: Duration) {
        self.close();
    }

    fn done(&mut self, _record: &DoneRecord) {
        self.close();
    }
}

impl<W: Write> Drop for Folds<W> {
    /// The last exit: a fold still open (retry failed on its own mid-run)
    /// is closed, so the CI log stays balanced.
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::outcome::RunOutcome;
    use crate::policy::classify::Class;
    use crate::report::fixtures::{attempt_record, done_record, env, noon};

    #[test]
    fn the_environment_names_the_ci_and_empty_is_unset() {
        assert_eq!(detect(env(&[("GITHUB_ACTIONS", "true")])), Some(Ci::Github));
        assert_eq!(detect(env(&[("GITLAB_CI", "true")])), Some(Ci::Gitlab));
        assert_eq!(detect(env(&[("GITHUB_ACTIONS", "")])), None);
        assert_eq!(detect(env(&[("GITHUB_ACTIONS", "false")])), None);
        assert_eq!(detect(env(&[])), None);
        assert_eq!(depth(env(&[("RETRY_ATTEMPT", "2")])), 2);
        assert_eq!(depth(env(&[("RETRY_ATTEMPT", "")])), 1);
        assert_eq!(depth(env(&[])), 1);
        assert_eq!(
            depth(env(&[("RETRY_DEPTH", "2"), ("RETRY_ATTEMPT", "1")])),
            3
        );
        for garbage in ["0", "100", "-1", "2x", ""] {
            let vars = [("RETRY_DEPTH", garbage), ("RETRY_ATTEMPT", "1")];
            assert_eq!(depth(env(&vars)), 2, "{garbage:?}");
        }
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

    fn folds(ci: Ci, stderr_tracked: bool) -> Folds<Vec<u8>> {
        let mut folds = Folds::new(Vec::new(), ci, "r1", stderr_tracked);
        folds.clock = noon;
        folds
    }

    fn written(folds: &Folds<Vec<u8>>) -> &str {
        std::str::from_utf8(&folds.out).unwrap()
    }

    #[test]
    fn each_attempt_is_a_github_group_closed_before_its_end_is_said() {
        let mut sink = folds(Ci::Github, true);
        sink.attempt_start(1, Some(3), "make test");
        assert_eq!(written(&sink), "::group::retry: attempt 1/3: make test\n");
        sink.attempt(&attempt_record(1, Class::Transient), None);
        sink.attempt_start(2, None, "make test");
        sink.attempt(&attempt_record(2, Class::Success), None);
        sink.done(&done_record(RunOutcome::Success, 2));
        assert_eq!(
            written(&sink),
            "::group::retry: attempt 1/3: make test\n::endgroup::\n\
             ::group::retry: attempt 2: make test\n::endgroup::\n"
        );
    }

    #[test]
    fn an_untracked_stderr_gets_a_line_end_before_the_end_of_a_group() {
        let mut sink = folds(Ci::Github, false);
        sink.attempt_start(1, Some(3), "a\nb");
        sink.error("boom");
        sink.error("a second error closes nothing");
        assert_eq!(
            written(&sink),
            "::group::retry: attempt 1/3: a%0Ab\n\n::endgroup::\n"
        );
    }

    #[test]
    fn each_attempt_is_a_gitlab_section_named_by_the_run_and_the_attempt() {
        let mut sink = folds(Ci::Gitlab, true);
        sink.attempt_start(1, Some(2), "make test");
        // A second start closes the first fold before it opens its own.
        sink.attempt_start(2, Some(2), "make test");
        sink.circuit_open("circuit open", 75, Duration::ZERO);
        assert_eq!(
            written(&sink),
            "\x1b[0Ksection_start:1700000000:retry_r1_attempt_1[collapsed=true]\r\x1b[0K\
             retry: attempt 1/2: make test\n\
             \x1b[0Ksection_end:1700000000:retry_r1_attempt_1\r\x1b[0K\n\
             \x1b[0Ksection_start:1700000000:retry_r1_attempt_2[collapsed=true]\r\x1b[0K\
             retry: attempt 2/2: make test\n\
             \x1b[0Ksection_end:1700000000:retry_r1_attempt_2\r\x1b[0K\n"
        );
    }

    #[test]
    fn a_fold_left_open_is_closed_when_the_sink_is_dropped() {
        let mut out = Vec::new();
        {
            let mut sink = Folds::new(&mut out, Ci::Github, "r1", true);
            sink.attempt_start(1, Some(3), "make test");
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "::group::retry: attempt 1/3: make test\n::endgroup::\n"
        );
    }
}
