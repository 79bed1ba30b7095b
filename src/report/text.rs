//! Human lines: `retry: ...` on stderr, the prefix coloured when colour is
//! on, or `TIMESTAMP retry: ...` in a `--log-file`. Every word retry says
//! about a run's events is here.
//!
//! In a CI log a message is escaped, so that text others wrote (a command
//! line, a reason) cannot make a marker or a workflow command of it; on
//! GitHub a failure becomes an annotation in its line's place (`ci` gives
//! its form). No JSON and no folds: those are other sinks'.

use std::io::Write;
use std::time::{Duration, SystemTime};

use anstyle::{AnsiColor, Style};

use super::ci::{self, Ci, Level};
use super::{AttemptRecord, DoneRecord, Sink, SleepRecord, Throttled, Verbosity, of_attempts};
use crate::outcome::Ending;
use crate::outcome::{RunOutcome, SleepSource};
use crate::policy::classify::Class;
use crate::text::{escape_controls, for_lines};
use crate::values::human;

const FAILURE: Style = AnsiColor::Red.on_default().bold();
const WARNING: Style = AnsiColor::Yellow.on_default();
const SUCCESS: Style = AnsiColor::Green.on_default();
const DIM: Style = Style::new().dimmed();

/// How the lines look.
pub(crate) struct TextSettings {
    pub(crate) verbosity: Verbosity,
    /// Colour the `retry:` prefix.
    pub(crate) color: bool,
    /// The lines go to a `--log-file`: each is timestamped, and a message
    /// of several lines is written as several lines.
    pub(crate) log_file: bool,
    /// The CI log the lines appear in: messages are escaped for it.
    pub(crate) ci: Option<Ci>,
    /// Each attempt is folded under a header that names it: `-v` adds no
    /// line for its start.
    pub(crate) folded: bool,
    /// How deep this retry runs (1 outermost): a nested one's lines read
    /// `retry[N]:`.
    pub(crate) depth: u32,
}

/// The text sink: one `retry:` line per event worth a word at the
/// verbosity chosen.
pub(crate) struct TextSink<W> {
    out: W,
    settings: TextSettings,
    /// On GitHub: where failures go as annotations (retry's stderr).
    annotations: Option<W>,
    /// The command line as shown, from the first attempt's start.
    command: String,
    /// The time stamped on a log file's lines.
    clock: fn() -> SystemTime,
    /// `--until-failure`: the passing runs counted, and when a line last
    /// said so.
    hunt: Option<Hunt>,
    /// An adaptive circuit rejected the run (the annotation's title).
    rejected_locally: bool,
}

/// How long `--until-failure` stays quiet about passing runs between two
/// progress lines (it would print thousands a second).
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

struct Hunt {
    passed: u64,
    since: SystemTime,
    said: SystemTime,
}

/// `2/5`, or `2/5 (hedge 1)` for a copy of a hedged attempt beyond the
/// first (`--hedge-after`).
fn of_copy(record: &AttemptRecord) -> String {
    let of = of_attempts(record.attempt, record.max_attempts);
    match record.copy {
        Some(copy) if copy > 0 => format!("{of} (hedge {copy})"),
        Some(_) => format!("{of} (first copy)"),
        None => of,
    }
}

/// `1 run`, `3 runs`.
fn plural_runs(count: u64) -> String {
    if count == 1 {
        "1 run".to_string()
    } else {
        format!("{count} runs")
    }
}

/// The attempt died of SIGPIPE: its reader went away on purpose
/// (`retry -- yes | head -1`), which is no failure worth a word.
fn reader_went_away(signal: Option<i32>, timed_out: bool) -> bool {
    signal == Some(crate::outcome::signo::SIGPIPE) && !timed_out
}

impl<W: Write> TextSink<W> {
    pub(crate) fn new(out: W, settings: TextSettings, annotations: Option<W>) -> Self {
        TextSink {
            out,
            settings,
            annotations,
            command: String::new(),
            clock: SystemTime::now,
            hunt: None,
            rejected_locally: false,
        }
    }

    fn quiet(&self) -> bool {
        self.settings.verbosity == Verbosity::Quiet
    }

    fn verbose(&self) -> bool {
        self.settings.verbosity == Verbosity::Verbose
    }

    /// One line, in one write; a log file's runs are told apart by time.
    fn write_line(&mut self, line: &str) {
        let mut text = String::with_capacity(line.len() + 2);
        if self.settings.log_file {
            text.push_str(&humantime::format_rfc3339_millis((self.clock)()).to_string());
            text.push(' ');
        }
        text.push_str(line);
        text.push('\n');
        let _ = self.out.write_all(text.as_bytes());
    }

    /// `retry:`, or `retry[N]:` in a retry nested N deep.
    fn prefix(&self) -> String {
        match self.settings.depth {
            0 | 1 => "retry:".to_string(),
            depth => format!("retry[{depth}]:"),
        }
    }

    /// `retry: <message>`, the prefix coloured when colour is on.
    fn say(&mut self, style: Style, message: &str) {
        // In a CI log, text that others wrote in a message must not make
        // a marker or a legacy workflow command of it.
        let message = match self.settings.ci {
            Some(Ci::Github) => ci::defuse_legacy(&escape_controls(message)),
            Some(Ci::Gitlab) => escape_controls(message),
            None => for_lines(message),
        };
        if self.settings.log_file {
            // A log file has one `TIMESTAMP retry: ...` line per line, also
            // of a message of several (clap's, a regex error's). Each line
            // gets the prefix, rather than the message being joined into
            // one, so the lines keep their columns: a regex error's caret
            // stays under the character it points at.
            let prefix = self.prefix();
            for part in message.split('\n') {
                self.write_line(format!("{prefix} {part}").trim_end());
            }
            return;
        }
        let prefix = self.prefix();
        let line = if self.settings.color {
            format!("{style}{prefix}{style:#} {message}")
        } else {
            format!("{prefix} {message}")
        };
        self.write_line(&line);
    }

    /// On GitHub, an annotation instead of the line `retry: TEXT` (the log
    /// shows it in its place); the line itself still goes to a
    /// `--log-file`. Elsewhere, the line.
    fn notable(&mut self, style: Style, text: &str, level: Level, title: &str, message: &str) {
        if let Some(annotations) = &mut self.annotations {
            let command = ci::github_annotation(level, title, message);
            let _ = annotations.write_all(format!("{command}\n").as_bytes());
            if !self.settings.log_file {
                return;
            }
        }
        self.say(style, text);
    }

    /// The command line as shown in annotations: one line, not too long.
    fn short_command(&self) -> String {
        crate::text::sanitize_line(&self.command, 200)
    }

    /// A failed attempt: `attempt 2/5 failed: exit 7 (transient)`, and the
    /// sleep that follows, if any.
    fn failed(&mut self, record: &AttemptRecord, next: Option<&SleepRecord>) {
        let of = of_copy(record);
        let mut what = format!("{} ({})", record.reason, record.outcome.as_str());
        let Some(sleep) = next else {
            self.say(WARNING, &format!("attempt {of} failed: {what}"));
            return;
        };
        let why = match (sleep.source, &sleep.header) {
            (SleepSource::RetryAfter, Some((header, reading))) if self.verbose() => {
                format!(" as {header} asked ({header}: {reading})")
            }
            (SleepSource::RetryAfter, Some((header, _))) => format!(" as {header} asked"),
            (SleepSource::RetryAfter, None) => " as Retry-After asked".to_string(),
            (SleepSource::Hint, _) => " as the hint file asked".to_string(),
            (SleepSource::Backoff | SleepSource::Splay, _) => String::new(),
        };
        what.push_str(&format!("; retrying in {}{why}", human(sleep.delay)));
        let line = format!("attempt {of} failed: {what}");
        // On GitHub, a failure that will be retried is a warning annotation.
        let message = format!("{what}\ncommand: {}", self.short_command());
        let title = format!("retry: attempt {of} failed");
        self.notable(WARNING, &line, Level::Warning, &title, &message);
    }

    /// The run failed: `gave up after 3 attempts in 4.2s: exit 7`.
    fn gave_up(&mut self, record: &DoneRecord, plural: &str, elapsed: &str) {
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
        self.notable(FAILURE, &line, Level::Error, &title, &message);
    }
}

impl<W: Write> Sink for TextSink<W> {
    fn error(&mut self, message: &str) {
        let text = format!("error: {message}");
        self.notable(FAILURE, &text, Level::Error, "retry", message);
    }

    fn warning(&mut self, kind: &str, message: &str) {
        if !self.quiet() {
            self.lasting_warning(kind, message);
        }
    }

    fn lasting_warning(&mut self, _kind: &str, message: &str) {
        let text = format!("warning: {message}");
        self.notable(WARNING, &text, Level::Warning, "retry", message);
    }

    fn policy(&mut self, description: &str) {
        if self.verbose() {
            self.say(DIM, description);
        }
    }

    fn budget(&mut self, name: &str, op: &str, tokens: f64, took: Duration) {
        if self.verbose() {
            let line = format!(
                "retry budget {name}: {op}, {tokens:.1} tokens left ({} with the store)",
                human(took)
            );
            self.say(DIM, &line);
        }
    }

    fn attempt_start(&mut self, attempt: u64, max_attempts: Option<u64>, command: &str) {
        if self.command.is_empty() {
            self.command = command.to_string();
        }
        if self.verbose() && !self.settings.folded {
            let line = format!("attempt {}: {command}", of_attempts(attempt, max_attempts));
            self.say(DIM, &line);
        }
    }

    fn hunting(&mut self) {
        let now = (self.clock)();
        self.hunt = Some(Hunt {
            passed: 0,
            since: now,
            said: now,
        });
    }

    fn attempt(&mut self, record: &AttemptRecord, next: Option<&SleepRecord>) {
        let quiet = self.quiet();
        let now = (self.clock)();
        if record.outcome == Class::Success
            && let Some(hunt) = &mut self.hunt
        {
            // A passing run of the hunt: a progress line now and then.
            hunt.passed += 1;
            let due = now.duration_since(hunt.said).unwrap_or_default() >= PROGRESS_EVERY;
            if due && !quiet {
                hunt.said = now;
                let line = format!(
                    "--until-failure: {} passed so far, in {}",
                    plural_runs(hunt.passed),
                    human(now.duration_since(hunt.since).unwrap_or_default())
                );
                self.say(DIM, &line);
            }
            return;
        }
        if self.quiet() || reader_went_away(record.signal, record.timed_out) {
            return;
        }
        if record.superseded {
            // A copy of a hedged attempt that another copy's end made moot.
            let line = format!(
                "attempt {} superseded: another copy decided the attempt ({})",
                of_copy(record),
                record.reason
            );
            self.say(DIM, &line);
            return;
        }
        if record.outcome != Class::Success {
            self.failed(record, next);
        } else if let Some(next) = next {
            // --successes: a success that another must confirm.
            let line = format!(
                "attempt {} succeeded: {}; again in {}",
                of_attempts(record.attempt, record.max_attempts),
                record.reason,
                human(next.delay)
            );
            self.say(SUCCESS, &line);
        } else if self.verbose() {
            let line = format!(
                "attempt {} succeeded in {}",
                of_attempts(record.attempt, record.max_attempts),
                human(record.duration)
            );
            self.say(SUCCESS, &line);
        }
    }

    fn sleep(&mut self, sleep: &SleepRecord) {
        if self.verbose() {
            let line = format!(
                "sleeping {} ({}) before the first attempt",
                human(sleep.delay),
                sleep.source.as_str()
            );
            self.say(DIM, &line);
        }
    }

    fn throttled(&mut self, throttled: &Throttled) {
        self.rejected_locally = throttled.rejected;
    }

    fn circuit_open(&mut self, message: &str, _exit_code: i32, _elapsed: Duration) {
        let title = if self.rejected_locally {
            "retry: throttled locally"
        } else {
            "retry: circuit open"
        };
        self.notable(FAILURE, message, Level::Error, title, message);
    }

    fn done(&mut self, record: &DoneRecord) {
        // A hunt's result is what it was run for: said under -q too.
        if self.quiet() && !record.until_failure {
            return;
        }
        if reader_went_away(record.signal, record.timed_out) {
            if self.verbose() {
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
            RunOutcome::Success if record.successes > 1 => {
                let line = format!(
                    "succeeded {} times in a row, the last on attempt {}, after {elapsed}",
                    record.successes,
                    of_attempts(record.attempts, record.max_attempts)
                );
                self.say(SUCCESS, &line);
            }
            RunOutcome::Success => {
                if record.attempts > 1 || self.verbose() {
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
            _ => self.gave_up(record, plural, &elapsed),
        }
    }

    fn hook(&mut self, which: &str, _command: &str, ending: &Ending, duration: Duration) {
        if self.verbose() {
            let line = format!("--{which}: {} in {}", ending.describe(), human(duration));
            self.say(DIM, &line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::ProcessEnd;
    use crate::report::fixtures::{attempt_record, done_record, noon, sleep_record};

    fn sink(verbosity: Verbosity) -> TextSink<Vec<u8>> {
        TextSink::new(Vec::new(), settings(verbosity, None), None)
    }

    fn settings(verbosity: Verbosity, ci: Option<Ci>) -> TextSettings {
        TextSettings {
            verbosity,
            color: false,
            log_file: false,
            ci,
            folded: false,
            depth: 1,
        }
    }

    #[test]
    fn a_nested_retrys_lines_say_how_deep_it_runs() {
        for (depth, log_file, expected) in [
            (1, false, "retry: warning: w\n"),
            (2, false, "retry[2]: warning: w\n"),
            (3, true, "2023-11-14T22:13:20.000Z retry[3]: warning: w\n"),
        ] {
            let mut settings = settings(Verbosity::Normal, None);
            settings.depth = depth;
            settings.log_file = log_file;
            let mut sink = TextSink::new(Vec::new(), settings, None);
            sink.clock = noon;
            sink.warning("kind", "w");
            assert_eq!(written(&sink.out), expected);
        }
    }

    fn written(bytes: &[u8]) -> &str {
        std::str::from_utf8(bytes).unwrap()
    }

    #[test]
    fn a_throttled_attempt_names_the_header_that_set_its_sleep_and_v_how_it_was_read() {
        let mut asked = sleep_record(1);
        asked.source = SleepSource::RetryAfter;
        asked.delay = Duration::from_secs(42);
        asked.header = Some((
            "X-RateLimit-Reset",
            "1796119242, read as Unix time (epoch seconds)".to_string(),
        ));
        let mut normal = sink(Verbosity::Normal);
        normal.attempt(&attempt_record(1, Class::Throttled), Some(&asked));
        assert_eq!(
            written(&normal.out),
            "retry: attempt 1/5 failed: exit 7 (throttled); retrying in 42s as X-RateLimit-Reset asked\n"
        );
        let mut verbose = sink(Verbosity::Verbose);
        verbose.attempt(&attempt_record(1, Class::Throttled), Some(&asked));
        assert!(
            written(&verbose.out).contains(
                "(throttled); retrying in 42s as X-RateLimit-Reset asked (X-RateLimit-Reset: 1796119242, read as Unix time (epoch seconds))"
            ),
            "{}",
            written(&verbose.out)
        );
    }

    #[test]
    fn no_control_character_of_others_reaches_a_line_whatever_the_sink() {
        // Text a server, a command or a file wrote, in every field a
        // message carries: OSC and CSI sequences, CR, a bell, C1.
        let hostile = "v\x1b]0;owned\x07\x1b[2J\r\u{9b}31m\u{202e}x";
        let mut asked = sleep_record(1);
        asked.source = SleepSource::RetryAfter;
        asked.header = Some(("RateLimit", hostile.to_string()));
        let mut record = attempt_record(1, Class::Throttled);
        record.reason = hostile.to_string();
        let mut done = done_record(RunOutcome::Exhausted, 2);
        done.detail = hostile.to_string();
        for ci in [None, Some(Ci::Github), Some(Ci::Gitlab)] {
            for (color, log_file) in [(false, false), (true, false), (false, true)] {
                let settings = TextSettings {
                    verbosity: Verbosity::Verbose,
                    color,
                    log_file,
                    ci,
                    folded: false,
                    depth: 1,
                };
                let annotations = (ci == Some(Ci::Github)).then(Vec::new);
                let mut sink = TextSink::new(Vec::new(), settings, annotations);
                sink.clock = noon;
                sink.attempt_start(1, Some(5), hostile);
                sink.error(hostile);
                sink.warning("kind", hostile);
                sink.lasting_warning("kind", hostile);
                sink.policy(hostile);
                sink.budget(hostile, hostile, 1.0, Duration::ZERO);
                sink.attempt(&record, Some(&asked));
                sink.attempt(&record, None);
                sink.circuit_open(hostile, 1, Duration::ZERO);
                sink.done(&done);
                let not_started = ProcessEnd::NotStarted {
                    status: 127,
                    message: hostile.to_string(),
                    transient: false,
                };
                sink.hook(
                    hostile,
                    hostile,
                    &Ending::not_started(not_started),
                    Duration::ZERO,
                );
                let mut out = sink.out.clone();
                out.extend(sink.annotations.clone().unwrap_or_default());
                let text = String::from_utf8(out).unwrap();
                // retry's own colour around its prefix is the only escape.
                let text = text
                    .replace(&format!("{FAILURE}"), "")
                    .replace(&format!("{WARNING}"), "");
                let text = text
                    .replace(&format!("{SUCCESS}"), "")
                    .replace(&format!("{DIM}"), "");
                let text = text.replace("\x1b[0m", "");
                assert!(text.contains("owned"), "{text}");
                let bad: Vec<char> = text
                    .chars()
                    .filter(|&c| {
                        c != '\n' && (c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c))
                    })
                    .collect();
                assert!(
                    bad.is_empty(),
                    "{ci:?} color={color} log={log_file}: {bad:?} in {text:?}"
                );
            }
        }
    }

    #[test]
    fn a_hunt_counts_its_passing_runs_quietly_and_says_its_result_even_under_quiet() {
        for verbosity in [Verbosity::Normal, Verbosity::Quiet] {
            let mut sink = sink(verbosity);
            sink.clock = noon;
            sink.hunting();
            for n in 1..=1000 {
                sink.attempt(&attempt_record(n, Class::Success), Some(&sleep_record(n)));
            }
            assert_eq!(sink.hunt.as_ref().unwrap().passed, 1000);
            assert_eq!(written(&sink.out), "", "{verbosity:?}");
            let mut hunted = done_record(RunOutcome::Success, 1000);
            hunted.until_failure = true;
            hunted.detail = "all 1000 runs passed".into();
            sink.done(&hunted);
            assert!(
                written(&sink.out).contains("--until-failure: all 1000 runs passed"),
                "{verbosity:?}"
            );
        }
    }

    #[test]
    fn a_failed_attempt_is_one_line_with_the_sleep_that_follows() {
        let mut sink = sink(Verbosity::Normal);
        sink.attempt(&attempt_record(1, Class::Transient), Some(&sleep_record(1)));
        let mut asked = sleep_record(2);
        asked.source = SleepSource::RetryAfter;
        asked.delay = Duration::from_secs(3);
        sink.attempt(&attempt_record(2, Class::Transient), Some(&asked));
        sink.attempt(&attempt_record(3, Class::Permanent), None);
        assert_eq!(
            written(&sink.out),
            "retry: attempt 1/5 failed: exit 7 (transient); retrying in 734ms\n\
             retry: attempt 2/5 failed: exit 7 (transient); retrying in 3s as Retry-After asked\n\
             retry: attempt 3/5 failed: exit 7 (permanent)\n"
        );
    }

    #[test]
    fn the_end_of_a_run_is_said_as_it_ended() {
        let mut sink = sink(Verbosity::Normal);
        // A first attempt that succeeds is no news.
        sink.done(&done_record(RunOutcome::Success, 1));
        sink.done(&done_record(RunOutcome::Success, 3));
        sink.done(&done_record(RunOutcome::Exhausted, 5));
        sink.done(&done_record(RunOutcome::Permanent, 1));
        sink.done(&done_record(RunOutcome::Deadline, 2));
        let mut interrupted = done_record(RunOutcome::Interrupted, 2);
        interrupted.detail = "interrupted by SIGTERM".into();
        sink.done(&interrupted);
        let mut hunted = done_record(RunOutcome::Success, 4);
        hunted.until_failure = true;
        hunted.detail = "all 4 runs passed".into();
        sink.done(&hunted);
        assert_eq!(
            written(&sink.out),
            "retry: succeeded on attempt 3/5 after 4.2s\n\
             retry: gave up after 5 attempts in 4.2s: exit 7\n\
             retry: gave up after 1 attempt in 4.2s: permanent failure, exit 7\n\
             retry: gave up after 2 attempts in 4.2s: --max-time reached, exit 7\n\
             retry: interrupted by SIGTERM after 2 attempts in 4.2s\n\
             retry: --until-failure: all 4 runs passed in 4.2s\n"
        );
    }

    #[test]
    fn quiet_says_only_errors_and_verbose_says_more() {
        let mut quiet = sink(Verbosity::Quiet);
        quiet.warning("nested", "careful");
        quiet.attempt(&attempt_record(1, Class::Transient), Some(&sleep_record(1)));
        quiet.done(&done_record(RunOutcome::Exhausted, 5));
        quiet.error("boom");
        quiet.circuit_open("circuit c is open", 75, Duration::ZERO);
        assert_eq!(
            written(&quiet.out),
            "retry: error: boom\nretry: circuit c is open\n"
        );

        let mut verbose = sink(Verbosity::Verbose);
        verbose.policy("policy: 5 attempts");
        let mut splay = sleep_record(0);
        splay.source = SleepSource::Splay;
        verbose.sleep(&splay);
        verbose.attempt_start(1, Some(5), "make test");
        verbose.attempt(&attempt_record(1, Class::Success), None);
        verbose.budget("api", "deposit", 9.25, Duration::from_millis(3));
        let ending = Ending::not_started(ProcessEnd::Exited(1));
        verbose.hook("on-retry", "exit 1", &ending, Duration::from_millis(5));
        verbose.done(&done_record(RunOutcome::Success, 1));
        assert_eq!(
            written(&verbose.out),
            "retry: policy: 5 attempts\n\
             retry: sleeping 734ms (splay) before the first attempt\n\
             retry: attempt 1/5: make test\n\
             retry: attempt 1/5 succeeded in 123ms\n\
             retry: retry budget api: deposit, 9.2 tokens left (3ms with the store)\n\
             retry: --on-retry: exit 1 in 5ms\n\
             retry: succeeded on attempt 1/5 after 4.2s\n"
        );
    }

    #[test]
    fn a_reader_that_went_away_is_no_failure() {
        let mut sink = sink(Verbosity::Verbose);
        let mut piped = attempt_record(1, Class::Permanent);
        piped.signal = Some(crate::outcome::signo::SIGPIPE);
        sink.attempt(&piped, None);
        let mut done = done_record(RunOutcome::Permanent, 1);
        done.signal = Some(crate::outcome::signo::SIGPIPE);
        done.exit_code = 141;
        sink.done(&done);
        assert_eq!(
            written(&sink.out),
            "retry: the command's reader went away (SIGPIPE): ending as the shell would, with 141\n"
        );
    }

    #[test]
    fn colour_is_on_the_prefix_only() {
        let mut settings = settings(Verbosity::Normal, None);
        settings.color = true;
        let mut sink = TextSink::new(Vec::new(), settings, None);
        sink.error("boom");
        sink.warning("nested", "careful");
        assert_eq!(
            written(&sink.out),
            "\x1b[1m\x1b[31mretry:\x1b[0m error: boom\n\x1b[33mretry:\x1b[0m warning: careful\n"
        );
    }

    #[test]
    fn a_log_file_has_a_timestamp_and_a_prefix_on_every_line() {
        let mut settings = settings(Verbosity::Normal, None);
        settings.log_file = true;
        settings.color = false;
        let mut sink = TextSink::new(Vec::new(), settings, None);
        sink.clock = noon;
        sink.error("regex parse error:\n    a(b\n     ^\n");
        assert_eq!(
            written(&sink.out),
            "2023-11-14T22:13:20.000Z retry: error: regex parse error:\n\
             2023-11-14T22:13:20.000Z retry:     a(b\n\
             2023-11-14T22:13:20.000Z retry:      ^\n\
             2023-11-14T22:13:20.000Z retry:\n"
        );
    }

    #[test]
    fn on_github_failures_are_annotations_in_their_lines_place() {
        let mut sink = TextSink::new(
            Vec::new(),
            settings(Verbosity::Normal, Some(Ci::Github)),
            Some(Vec::new()),
        );
        sink.attempt_start(1, Some(5), "make test");
        sink.attempt(&attempt_record(1, Class::Transient), Some(&sleep_record(1)));
        sink.attempt(&attempt_record(2, Class::Transient), None);
        sink.done(&done_record(RunOutcome::Exhausted, 2));
        sink.warning("nested", "echo ##[error]x");
        assert_eq!(
            written(&sink.out),
            "retry: attempt 2/5 failed: exit 7 (transient)\n"
        );
        assert_eq!(
            written(sink.annotations.as_ref().unwrap()),
            "::warning title=retry%3A attempt 1/5 failed::\
             exit 7 (transient); retrying in 734ms%0Acommand: make test\n\
             ::error title=retry%3A gave up after 2 attempts::\
             exit 7 (4.2s in all)%0Acommand: make test\n\
             ::warning title=retry::echo ##\\[error]x\n"
        );
    }

    #[test]
    fn on_github_with_a_log_file_the_line_is_logged_as_well() {
        let mut settings = settings(Verbosity::Normal, Some(Ci::Github));
        settings.log_file = true;
        let mut sink = TextSink::new(Vec::new(), settings, Some(Vec::new()));
        sink.clock = noon;
        sink.error("boom ##[x]");
        assert_eq!(
            written(&sink.out),
            "2023-11-14T22:13:20.000Z retry: error: boom ##\\[x]\n"
        );
        assert_eq!(
            written(sink.annotations.as_ref().unwrap()),
            "::error title=retry::boom ##\\[x]\n"
        );
    }

    #[test]
    fn in_a_ci_log_control_characters_are_escaped() {
        let mut sink = TextSink::new(
            Vec::new(),
            settings(Verbosity::Normal, Some(Ci::Gitlab)),
            None,
        );
        sink.warning("x", "a\rb\x1b[0Kc");
        assert_eq!(written(&sink.out), "retry: warning: a\\rb\\e[0Kc\n");
    }

    #[test]
    fn a_folded_attempt_is_named_by_its_fold_alone() {
        let mut settings = settings(Verbosity::Verbose, Some(Ci::Gitlab));
        settings.folded = true;
        let mut sink = TextSink::new(Vec::new(), settings, None);
        sink.attempt_start(1, None, "make test");
        assert_eq!(written(&sink.out), "");
    }
}
