//! The retry loop: attempt, classify, decide, sleep; and the exit status.
//!
//! Asks `backoff` for sleeps, `attempt` for the next outcome, `classify` for
//! the verdict and `report` for the record. Every wait (the splay, the
//! backoff) is on the signal self-pipe, so a signal cuts it short at once.

use std::ffi::OsString;
use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use rand::RngExt;
use rand::rngs::SmallRng;

use crate::attempt::{self, AttemptSpec, Outcome, OutputPlan, own_fd};
use crate::backoff::Sleep;
use crate::child::{ChildIo, Finished, Launch};
use crate::classify::{self, Class, Ending, ExitRules, Observation, OutputMatch};
use crate::config::Config;
use crate::exit::ExitStatus;
use crate::hint;
use crate::output::{PatternKind, PatternSet, ScanResult};
use crate::report::{AttemptRecord, DoneRecord, Reporter, RunOutcome, SleepRecord, SleepSource};
use crate::signals::{self, SignalEvents};
use crate::stdin::StdinSource;

/// What a finished run reports, beyond its exit status.
pub struct RunSummary {
    pub status: ExitStatus,
    pub outcome: RunOutcome,
    pub attempts: u64,
    pub elapsed: Duration,
}

/// The status an attempt leaves behind if it is the last one.
fn attempt_status(finished: &Finished) -> ExitStatus {
    if finished.timed_out {
        return if finished.killed {
            ExitStatus::KILLED
        } else {
            ExitStatus::TIMED_OUT
        };
    }
    match &finished.ending {
        Ending::Exited(code) => ExitStatus::from_code(*code),
        Ending::Signaled(signal) => ExitStatus::Signal(*signal),
        Ending::NotStarted { status, .. } => ExitStatus::Code(*status),
    }
}

fn describe_status(finished: &Finished) -> String {
    match (&finished.ending, attempt_status(finished)) {
        (Ending::NotStarted { message, .. }, status) => {
            format!("{message} (exit {})", status.as_number())
        }
        (_, ExitStatus::Signal(signal)) => format!("killed by {}", classify::signal_name(signal)),
        (_, status) if finished.timed_out => format!("timed out (exit {})", status.as_number()),
        (_, status) => format!("exit {}", status.as_number()),
    }
}

/// The number a shell would show for the child: its code, or 128+N.
fn shell_status(ending: &Ending) -> i32 {
    match ending {
        Ending::Exited(code) => *code,
        Ending::Signaled(signal) => 128 + signal,
        Ending::NotStarted { status, .. } => *status as i32,
    }
}

fn in_terminal_foreground() -> bool {
    let stdin = own_fd(0);
    rustix::termios::isatty(stdin)
        && rustix::termios::tcgetpgrp(stdin).is_ok_and(|group| group == rustix::process::getpgrp())
}

/// stdout and stderr lead to the same open file or device.
fn stdout_is_stderr() -> bool {
    match (rustix::fs::fstat(own_fd(1)), rustix::fs::fstat(own_fd(2))) {
        (Ok(out), Ok(err)) => out.st_dev == err.st_dev && out.st_ino == err.st_ino,
        _ => false,
    }
}

fn display_command(command: &[OsString]) -> String {
    command
        .iter()
        .map(|arg| arg.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Which pattern of each rule set matched, for `classify`.
fn output_matches(
    patterns: Option<&PatternSet>,
    scan: &ScanResult,
    rule_sets: usize,
) -> Vec<OutputMatch> {
    let mut matches = vec![OutputMatch::default(); rule_sets];
    let Some(set) = patterns else { return matches };
    for (pattern, matched) in set.patterns.iter().zip(&scan.matched) {
        if !matched {
            continue;
        }
        let slot = &mut matches[pattern.rule_set];
        let source = Some(pattern.shown.clone());
        match pattern.kind {
            PatternKind::Stop => slot.stop = slot.stop.take().or(source),
            PatternKind::Retry => slot.retry = slot.retry.take().or(source),
        }
    }
    matches
}

pub fn describe_policy(config: &Config) -> String {
    let policy = &config.policy;
    let mut text = format!(
        "policy: {} attempts; delay {}, x{} per retry, cap {}, {} jitter",
        config
            .attempts
            .map_or("unlimited".to_string(), |n| n.to_string()),
        crate::report::human(policy.delay),
        policy.multiplier,
        crate::report::human(policy.cap),
        policy.jitter
    );
    if let Some(max_time) = config.max_time {
        text.push_str(&format!("; max-time {}", crate::report::human(max_time)));
    }
    if let Some(timeout) = config.timeout {
        text.push_str(&format!("; timeout {}", crate::report::human(timeout)));
    }
    text
}

struct Run<'a> {
    config: &'a Config,
    reporter: &'a mut Reporter,
    started: Instant,
    deadline: Option<Instant>,
    attempts: u64,
}

impl Run<'_> {
    fn done(&mut self, outcome: RunOutcome, status: ExitStatus, detail: String) -> RunSummary {
        let elapsed = self.started.elapsed();
        self.reporter.done(&DoneRecord {
            outcome,
            attempts: self.attempts,
            max_attempts: self.config.attempts,
            elapsed,
            exit_code: status.as_number(),
            detail,
        });
        RunSummary {
            status,
            outcome,
            attempts: self.attempts,
            elapsed,
        }
    }

    fn interrupted(&mut self, signal: i32) -> RunSummary {
        let detail = format!("interrupted by {}", classify::signal_name(signal));
        self.done(RunOutcome::Interrupted, ExitStatus::Signal(signal), detail)
    }
}

pub fn run(
    config: &Config,
    signals: &mut SignalEvents,
    reporter: &mut Reporter,
) -> Result<RunSummary> {
    let started = Instant::now();
    let mut rng: SmallRng = rand::make_rng();
    let run_id = format!("{:032x}", rng.random::<u128>());
    // The hint file's name holds the run's random id, so nobody can guess
    // it in advance; no directory is needed (and none is left behind).
    let hint = HintFile(std::env::temp_dir().join(format!("retry-{run_id}.hint")));
    let hint_path = &hint.0;
    let mut stdin = StdinSource::new(config.stdin)?;
    let patterns = if config.patterns.is_empty() && !config.retry_after {
        None
    } else {
        Some(
            PatternSet::new(config.patterns.clone(), config.retry_after)
                .context("compiling the output patterns")?,
        )
    };
    let stdout_spool = if config.buffer_stdout {
        Some(tempfile::tempfile().context("creating the --buffer-stdout spool")?)
    } else {
        None
    };
    let output = OutputPlan {
        patterns: patterns.as_ref(),
        scan_stdout: config.scan_stdout,
        same_file: config.scan_stdout && stdout_is_stderr(),
        stdout_spool: stdout_spool.as_ref(),
    };
    let own_group = !(config.foreground || in_terminal_foreground());
    let command_text = display_command(&config.command);

    let mut run = Run {
        config,
        reporter,
        started,
        deadline: config.max_time.map(|limit| started + limit),
        attempts: 0,
    };
    run.reporter.policy(&describe_policy(config));
    if let Some(warning) = nested_warning(config.attempts) {
        run.reporter.warning("nested", &warning);
    }

    if !config.splay.is_zero() {
        let delay = Duration::from_nanos(
            rng.random_range(0..config.splay.as_nanos().min(u64::MAX as u128) as u64),
        );
        run.reporter.sleep(&SleepRecord {
            attempt: 0,
            delay,
            ceiling: config.splay,
            source: SleepSource::Splay,
        });
        if let Some(signal) =
            signals::sleep_until(&mut signals.events, Instant::now() + delay, || {})
        {
            return Ok(run.interrupted(signal));
        }
    }

    let mut backoff = config.policy.sleeps();
    let mut previous_exit: Option<i32> = None;
    loop {
        // A signal that came in since the last wait stops us before we
        // start anything new.
        if let Some(signal) = signals::pending_signal(&mut signals.events) {
            return Ok(run.interrupted(signal));
        }
        run.attempts += 1;
        let attempt = run.attempts;
        if attempt == 2 && stdin.is_shared_pipe() {
            run.reporter.warning(
                "stdin",
                "stdin is a pipe: attempt 2 and later read only what earlier attempts left (--stdin replay gives each the whole input)",
            );
        }
        if let Some(spool) = &stdout_spool {
            truncate(spool)?;
        }
        run.reporter
            .attempt_start(attempt, config.attempts, &command_text);
        let attempt_deadline = [config.timeout.map(|t| Instant::now() + t), run.deadline]
            .into_iter()
            .flatten()
            .min();
        let env = child_env(attempt, config.attempts, &run_id, previous_exit, hint_path);
        let spec = AttemptSpec {
            launch: Launch {
                argv: &config.command,
                env,
                own_group,
                inherited: signals.inherited,
                stdin: ChildIo::Inherit,
                stdout: ChildIo::Inherit,
                stderr: ChildIo::Inherit,
            },
            deadline: attempt_deadline,
            kill_after: config.kill_after,
        };
        let stdin_now = stdin.for_attempt()?;
        let outcome = attempt::run(spec, &output, stdin_now, &mut signals.events)?;
        run.reporter.child_left_line_open(outcome.stderr_mid_line);
        if let Some(problem) = &outcome.stdin_error {
            run.reporter.warning("stdin", problem);
        }

        let hint_word = read_hint(hint_path, run.reporter);
        let verdict = judge(&outcome, hint_word, &config.exit_rules, patterns.as_ref());
        let finished = &outcome.finished;
        previous_exit = Some(shell_status(&finished.ending));
        let status = attempt_status(finished);
        let mut record = attempt_record(attempt, config.attempts, &outcome, &verdict);

        if let Some(signal) = finished.interrupted {
            if verdict.class != Class::Success {
                record.outcome = Class::Permanent;
            }
            run.reporter.attempt(&record, None);
            return Ok(run.interrupted(signal));
        }
        let deadline_hit = finished.timed_out && run.deadline.is_some_and(|d| Instant::now() >= d);
        let exhausted = config.attempts.is_some_and(|max| attempt >= max);
        let end = match verdict.class {
            Class::Success => Some((
                RunOutcome::Success,
                ExitStatus::SUCCESS,
                "exit 0".to_string(),
            )),
            Class::Permanent => Some((RunOutcome::Permanent, status, describe_status(finished))),
            Class::Transient if deadline_hit => {
                Some((RunOutcome::Deadline, status, describe_status(finished)))
            }
            Class::Transient if exhausted => {
                Some((RunOutcome::Exhausted, status, describe_status(finished)))
            }
            Class::Transient => None,
        };
        if let Some((run_outcome, status, detail)) = end {
            run.reporter.attempt(&record, None);
            emit_spool(stdout_spool.as_ref());
            return Ok(run.done(run_outcome, status, detail));
        }

        let (sleep, source) = next_sleep(hint_word, config.retry_after, &outcome.scan, || {
            backoff.next(&mut rng)
        });
        let wake = Instant::now() + sleep.delay;
        if run.deadline.is_some_and(|deadline| wake >= deadline) {
            run.reporter.attempt(&record, None);
            emit_spool(stdout_spool.as_ref());
            let detail = format!(
                "the next sleep ({}) would end past it; {}",
                crate::report::human(sleep.delay),
                describe_status(finished)
            );
            return Ok(run.done(RunOutcome::Deadline, status, detail));
        }
        run.reporter.attempt(
            &record,
            Some(&SleepRecord {
                attempt,
                delay: sleep.delay,
                ceiling: sleep.ceiling,
                source,
            }),
        );
        if let Some(signal) =
            signals::sleep_until(&mut signals.events, wake, crate::child::reap_orphans)
        {
            return Ok(run.interrupted(signal));
        }
    }
}

/// Retries layered on retries multiply: say so once, with the numbers.
fn nested_warning(inner: Option<u64>) -> Option<String> {
    let outer_attempt = std::env::var("RETRY_ATTEMPT").ok()?;
    let outer = std::env::var("RETRY_MAX_ATTEMPTS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok());
    let show = |limit: Option<u64>| limit.map_or("unlimited".to_string(), |n| n.to_string());
    let product = match (outer, inner) {
        (Some(a), Some(b)) => a.saturating_mul(b).to_string(),
        _ => "unlimited".to_string(),
    };
    Some(format!(
        "running inside another retry (its attempt {outer_attempt}): retries multiply, {} outer x {} inner = {product} runs of the command at most",
        show(outer),
        show(inner)
    ))
}

fn attempt_record(
    attempt: u64,
    max_attempts: Option<u64>,
    outcome: &Outcome,
    verdict: &classify::Verdict,
) -> AttemptRecord {
    let ending = &outcome.finished.ending;
    AttemptRecord {
        attempt,
        max_attempts,
        exit_code: match ending {
            Ending::Exited(code) => Some(*code),
            Ending::NotStarted { status, .. } => Some(*status as i32),
            Ending::Signaled(_) => None,
        },
        signal: match ending {
            Ending::Signaled(signal) => Some(*signal),
            _ => None,
        },
        timed_out: outcome.finished.timed_out,
        duration: outcome.duration,
        outcome: verdict.class,
        reason: verdict.reason.clone(),
    }
}

fn judge(
    outcome: &Outcome,
    hint: Option<classify::Hint>,
    rules: &[ExitRules],
    patterns: Option<&PatternSet>,
) -> classify::Verdict {
    let observation = Observation {
        ending: outcome.finished.ending.clone(),
        timed_out: outcome.finished.timed_out,
        hint,
        output: output_matches(patterns, &outcome.scan, rules.len()),
    };
    let mut verdict = classify::classify(&observation, rules);
    // The reader of our output is gone (`retry ... | head -1`): another
    // attempt would have nowhere to write either.
    if outcome.downstream_closed && verdict.class == Class::Transient {
        verdict.class = Class::Permanent;
        verdict
            .reason
            .push_str("; the reader of the output went away");
    }
    verdict
}

/// A hint's retry-after, else a Retry-After header (when asked for), else
/// the backoff. The first two are not clamped by `--cap`: the server knows.
fn next_sleep(
    hint: Option<classify::Hint>,
    use_header: bool,
    scan: &ScanResult,
    backoff: impl FnOnce() -> Sleep,
) -> (Sleep, SleepSource) {
    let told = match hint {
        Some(classify::Hint::RetryAfter(delay)) => Some(delay),
        _ if use_header => scan
            .retry_after
            .as_deref()
            .and_then(|value| hint::parse_retry_after(value, SystemTime::now())),
        _ => None,
    };
    match told {
        Some(delay) => (
            Sleep {
                delay,
                ceiling: delay,
            },
            SleepSource::RetryAfter,
        ),
        None => (backoff(), SleepSource::Backoff),
    }
}

fn child_env(
    attempt: u64,
    max: Option<u64>,
    run_id: &str,
    previous: Option<i32>,
    hint: &Path,
) -> Vec<(&'static str, OsString)> {
    vec![
        ("RETRY_ATTEMPT", attempt.to_string().into()),
        (
            "RETRY_MAX_ATTEMPTS",
            max.map(|n| n.to_string()).unwrap_or_default().into(),
        ),
        ("RETRY_RUN_ID", run_id.into()),
        (
            "RETRY_PREVIOUS_EXIT",
            previous.map(|c| c.to_string()).unwrap_or_default().into(),
        ),
        ("RETRY_HINT_FILE", hint.as_os_str().to_owned()),
    ]
}

/// The hint file of a run: removed when the run ends, however it ends.
struct HintFile(PathBuf);

impl Drop for HintFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Read the attempt's hint and remove the file, so the next attempt starts
/// without one.
fn read_hint(path: &Path, reporter: &mut Reporter) -> Option<classify::Hint> {
    let bytes = std::fs::read(path);
    let _ = std::fs::remove_file(path);
    let bytes = bytes.ok()?;
    match hint::parse_hint(&String::from_utf8_lossy(&bytes)) {
        Ok(hint) => hint,
        Err(problem) => {
            reporter.warning("hint", &problem);
            None
        }
    }
}

fn truncate(spool: &File) -> Result<()> {
    spool.set_len(0).context("resetting the stdout spool")?;
    let mut handle = spool;
    handle
        .seek(SeekFrom::Start(0))
        .context("resetting the stdout spool")?;
    Ok(())
}

/// `--buffer-stdout`: pass on the final attempt's stdout.
fn emit_spool(spool: Option<&File>) {
    let Some(spool) = spool else { return };
    let mut handle = spool;
    if handle.seek(SeekFrom::Start(0)).is_err() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = std::io::copy(&mut handle, &mut out);
    let _ = std::io::Write::flush(&mut out);
}
