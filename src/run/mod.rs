//! The run: set-up, then attempts until [`decision::next_step`] says the run
//! is done; one exit path reports it.
//!
//! Asks `backoff` for sleeps, `attempt` for the next attempt's ending,
//! `classify` for the verdict, `decision` for what comes next and `report`
//! for the record; `hook` runs `--on-retry` before each retry and
//! `--on-give-up` once a failed run is over. Every wait (the splay, the
//! backoff, a hook) is on the signal self-pipe, so a signal cuts it short at
//! once; the retry budget's store, which cannot watch the pipe, gives way
//! to a signal within 50 ms and never outlasts `--max-time`.

mod attempt;
mod budget;
pub(crate) mod deliver;
mod hint;
mod hook;
mod hooks;
pub(crate) mod stdin;

use std::ffi::OsString;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result, bail};
use rand::rngs::{SmallRng, SysRng};
use rand::{RngExt, SeedableRng};

use crate::budget::Budget;
use crate::cli::config::Config;
use crate::exit::ExitStatus;
use crate::outcome::{Hint, RunSummary};
use crate::outcome::{RunOutcome, SleepSource};
use crate::policy::backoff::{Backoff, Sleep};
use crate::policy::classify::{self, Class, Observation, Verdict};
use crate::policy::decision::{self, Done, Limits, Step};
use crate::presets::advice::Advice;
use crate::process::signals::{self, SignalEvents};
use crate::process::{ChildIo, Ending, Launch};
use crate::report::{AttemptRecord, DoneRecord, Reporter, SleepRecord, Verbosity};
use crate::run::deliver::{HeldStdout, error_text};
use crate::run::stdin::StdinSource;
use crate::scan::ScanResult;
use crate::sys::fd::own_fd;
use crate::text::{escape_controls, sanitize_line};
use crate::values::human;
use attempt::{AttemptSpec, LostOutput, Outcome, OutputPlan, Stream};
use hint::HintFile;

/// Everything a run sets up once, before its first attempt.
struct Run<'a> {
    config: &'a Config,
    /// `--budget`: asked for a token before each retry; `None` without one,
    /// or once its store failed (a warning said so: retries go ahead).
    budget: Option<&'a Budget>,
    started: Instant,
    limits: Limits,
    rng: SmallRng,
    id: String,
    hint: HintFile,
    stdin: StdinSource,
    /// `--buffer-stdout` or `-o`: each attempt's stdout, held apart.
    held: Option<HeldStdout>,
    /// The last attempt's stdout could not all be written on (to our stdout
    /// or into `held`): what went wrong.
    stdout_lost: Option<String>,
    /// Streams whose lost output was already warned about.
    warned_lost: Vec<Stream>,
    own_group: bool,
    /// Output is scanned and stdout and stderr are one open file: they
    /// share one pipe. Retry's own descriptors do not change during a run,
    /// so this is looked at once, not at every attempt.
    one_output_file: bool,
    command_text: String,
    /// What to tell the user about the command line, once (curl's -S, ...).
    advice: Advice,
    /// A failure line said which preset the command's name chose.
    choice_said: bool,
}

/// One attempt, judged.
struct Judged {
    outcome: Outcome,
    hint: Option<Hint>,
    verdict: Verdict,
}

/// A new run's random id: 128 bits, as 32 hex digits.
pub(crate) fn new_run_id() -> String {
    format!("{:032x}", seeded_rng().random::<u128>())
}

/// A generator seeded straight from the kernel (getrandom), not through
/// rand's thread-local generator (a `ChaCha12`), whose set-up (CPU feature
/// detection, a first block) costs a short run of retry more than all
/// its draws do (BENCHMARKS.md).
fn seeded_rng() -> SmallRng {
    SmallRng::try_from_rng(&mut SysRng).expect("getrandom failed")
}

pub(crate) fn run(
    config: &Config,
    run_id: &str,
    budget: Option<&Budget>,
    signals: &mut SignalEvents,
    reporter: &mut Reporter,
) -> Result<RunSummary> {
    let mut run = Run::set_up(config, run_id, budget)?;
    reporter.set_deadline(run.limits.deadline);
    // Words only `-v` shows: not formatted for nothing on every run.
    if config.report.verbosity == Verbosity::Verbose {
        reporter.policy(&crate::cli::explain::policy_line(config));
        for line in config
            .rules
            .sets
            .iter()
            .filter_map(|s| s.source.preset_line())
        {
            reporter.policy(&line);
        }
    }
    for warning in &config.warnings {
        reporter.warning("policy", warning);
    }
    if let Some(warning) = nested_warning(config.attempts) {
        reporter.warning("nested", &warning);
    }
    let mut attempts = 0;
    let mut last_ending = None;
    let Done {
        mut outcome,
        mut status,
        mut detail,
    } = run.attempts(signals, reporter, &mut attempts, &mut last_ending)?;
    if let Err(problem) = run.deliver(outcome, reporter) {
        // The command succeeded, but its output did not reach its place:
        // retry's own failure. The `done` event keeps the outcome.
        reporter.error(&problem);
        status = ExitStatus::RETRY_FAILED;
        // A signal that cut the delivery short (its reader took nothing)
        // ends the run by it, as anywhere.
        if let Some(signal) = signals::pending_signal(&mut signals.events) {
            let interrupted = Done::interrupted(signal);
            outcome = interrupted.outcome;
            status = interrupted.status;
            detail = format!("{} while delivering the output", interrupted.detail);
        }
    }
    if let Some(signal) = run.on_give_up(outcome, status, attempts, signals, reporter) {
        // A signal to retry ends the run by it, here as anywhere.
        let interrupted = Done::interrupted(signal);
        outcome = interrupted.outcome;
        status = interrupted.status;
        detail = format!("{} during --on-give-up", interrupted.detail);
    }
    let elapsed = run.started.elapsed();
    reporter.done(&DoneRecord {
        outcome,
        attempts,
        max_attempts: config.attempts,
        elapsed,
        exit_code: status.as_number(),
        detail,
        timed_out: last_ending.as_ref().is_some_and(|e: &Ending| e.timed_out),
        signal: last_ending.as_ref().and_then(Ending::signal),
        until_failure: config.hooks.until_failure,
    });
    Ok(RunSummary {
        status,
        outcome,
        attempts,
        elapsed,
    })
}

impl<'a> Run<'a> {
    fn set_up(config: &'a Config, run_id: &str, budget: Option<&'a Budget>) -> Result<Run<'a>> {
        let started = Instant::now();
        let rng = seeded_rng();
        // `-o` holds stdout apart too; with both flags, FILE gets it.
        let held = match &config.output {
            Some(path) => Some(HeldStdout::output(path)?),
            None if config.buffer_stdout => Some(HeldStdout::spool()?),
            None => None,
        };
        Ok(Run {
            config,
            budget,
            started,
            limits: Limits {
                max_attempts: config.attempts,
                deadline: config.max_time.map(|limit| started + limit),
                until_failure: config.hooks.until_failure,
            },
            hint: HintFile::for_run().context("setting up the hint file")?,
            rng,
            id: run_id.to_string(),
            stdin: StdinSource::new(config.stdin)?,
            held,
            stdout_lost: None,
            warned_lost: Vec::new(),
            own_group: !(config.foreground || in_terminal_foreground()),
            one_output_file: config.rules.patterns.is_some()
                && crate::sys::fd::same_file(own_fd(1), own_fd(2)),
            command_text: display_command(&config.command),
            advice: Advice::new(&config.rules, &config.command, config.scan_stdout),
            choice_said: false,
        })
    }

    /// The splay, then attempts and sleeps until the decision is `Done`.
    fn attempts(
        &mut self,
        signals: &mut SignalEvents,
        reporter: &mut Reporter,
        attempts: &mut u64,
        last_ending: &mut Option<Ending>,
    ) -> Result<Done> {
        if let Some(signal) = self.splay(signals, reporter) {
            return Ok(Done::interrupted(signal));
        }
        self.deposit(reporter);
        let mut backoff = self.config.policy.sleeps();
        let mut previous_exit: Option<i32> = None;
        loop {
            // A signal that came in since the last wait stops us before we
            // start anything new.
            if let Some(signal) = signals::pending_signal(&mut signals.events) {
                return Ok(Done::interrupted(signal));
            }
            *attempts += 1;
            let attempt = *attempts;
            let judged = self.attempt(attempt, previous_exit, signals, reporter)?;
            let ending = &judged.outcome.ending;
            previous_exit = Some(ending.exit_status().as_number());
            self.reset_after(&judged, &mut backoff);
            let (sleep, source, not_obeyed) = self.proposed_sleep(&judged, &mut backoff);
            let step = decision::next_step(
                attempt,
                ending,
                judged.verdict.class,
                self.limits,
                Instant::now(),
                (sleep, source),
            );
            let mut record = AttemptRecord::new(attempt, self.config.attempts, &judged);
            *last_ending = Some(judged.outcome.ending.clone());
            match step {
                Step::Done(done) => {
                    // The attempt that ended the run (a signal, or the first
                    // failure of --until-failure) is no longer transient.
                    let ended_it = matches!(
                        done.outcome,
                        RunOutcome::Interrupted | RunOutcome::Permanent
                    );
                    if ended_it && record.outcome != Class::Success {
                        record.outcome = Class::Permanent;
                    }
                    let cut_short = self.limits.until_failure
                        && done.outcome == RunOutcome::Success
                        && record.outcome != Class::Success;
                    if cut_short {
                        // --until-failure: a run cut short by --max-time.
                        record
                            .reason
                            .push_str("; cut short by --max-time, not counted");
                    }
                    reporter.attempt(&record, None);
                    if self.stdin.spool_failure().is_some() {
                        let problem = self.spool_problem();
                        reporter.warning(
                            "stdin",
                            &format!(
                                "{problem}; the last attempt was given all of it as it came, but it could not have been replayed"
                            ),
                        );
                    }
                    return Ok(done);
                }
                Step::Sleep { .. } if self.stdin.spool_failure().is_some() => {
                    // The next attempt cannot be given the whole input.
                    reporter.attempt(&record, None);
                    bail!(
                        "{}; attempt {} cannot be given the whole input",
                        self.spool_problem(),
                        attempt + 1
                    );
                }
                Step::Sleep { sleep, source } => {
                    // Said only when a retry follows: after the last
                    // attempt there is no backoff to fall back on.
                    if let Some(warning) = &not_obeyed {
                        reporter.warning("retry-after", warning);
                    }
                    // The sleep ends when it was due: asking the budget's
                    // store is part of the wait, not added to it.
                    let wake = Instant::now() + sleep.delay;
                    if let Some(done) = self.budget_refuses(attempt, &judged, signals, reporter) {
                        reporter.attempt(&record, None);
                        return Ok(done);
                    }
                    reporter.attempt(
                        &record,
                        Some(&SleepRecord {
                            attempt,
                            delay: sleep.delay,
                            ceiling: sleep.ceiling,
                            source,
                        }),
                    );
                    if let Some(signal) = signals::sleep_until(
                        &mut signals.events,
                        wake,
                        crate::process::reap_orphans,
                    ) {
                        return Ok(Done::interrupted(signal));
                    }
                    let previous = &judged.outcome.ending;
                    if let Some(done) = self.on_retry(attempt + 1, previous, signals, reporter) {
                        return Ok(done);
                    }
                }
            }
        }
    }

    /// `--reset-after`: a failed attempt that ran at least that long (the
    /// command was healthy for a while) starts the backoff over.
    fn reset_after(&self, judged: &Judged, backoff: &mut Backoff<'_>) {
        let ran_long = self
            .config
            .hooks
            .reset_after
            .is_some_and(|limit| judged.outcome.duration >= limit);
        if ran_long && judged.verdict.class != Class::Success {
            backoff.reset();
        }
    }

    /// `--splay`: a random sleep before the first attempt; a signal that
    /// cuts it short is returned.
    fn splay(&mut self, signals: &mut SignalEvents, reporter: &mut Reporter) -> Option<i32> {
        let splay = self.config.splay;
        if splay.is_zero() {
            return None;
        }
        let nanos = u64::try_from(splay.as_nanos()).unwrap_or(u64::MAX);
        let delay = Duration::from_nanos(self.rng.random_range(0..nanos));
        reporter.sleep(&SleepRecord {
            attempt: 0,
            delay,
            ceiling: splay,
            source: SleepSource::Splay,
        });
        signals::sleep_until(&mut signals.events, Instant::now() + delay, || {})
    }

    /// Run attempt number `attempt` and judge it.
    fn attempt(
        &mut self,
        attempt: u64,
        previous_exit: Option<i32>,
        signals: &mut SignalEvents,
        reporter: &mut Reporter,
    ) -> Result<Judged> {
        let config = self.config;
        if attempt == 2 && self.stdin.is_shared_pipe() {
            reporter.warning(
                "stdin",
                "stdin is a pipe: attempt 2 and later read only what earlier attempts left (--stdin replay gives each the whole input)",
            );
        }
        if let Some(held) = &self.held {
            held.reset()?;
        }
        reporter.attempt_start(attempt, config.attempts, &self.command_text);
        if let Err(problem) = self.hint.prepare() {
            reporter.warning("hint", &problem);
        }
        let deadline = [
            config.timeout.map(|t| Instant::now() + t),
            self.limits.deadline,
        ]
        .into_iter()
        .flatten()
        .min();
        let spec = AttemptSpec {
            launch: Launch {
                argv: &config.command,
                env: child_env(
                    attempt,
                    config.attempts,
                    &self.id,
                    previous_exit,
                    &self.hint,
                ),
                own_group: self.own_group,
                inherited: signals.inherited,
                stdin: ChildIo::Inherit,
                stdout: ChildIo::Inherit,
                stderr: ChildIo::Inherit,
            },
            deadline,
            kill_after: config.kill_after,
        };
        let output = OutputPlan {
            patterns: config.rules.patterns.as_ref(),
            scan_stdout: config.scan_stdout,
            same_file: self.one_output_file,
            stdout_spool: self.held.as_ref().map(HeldStdout::file),
        };
        let stdin = self.stdin.for_attempt()?;
        let outcome = attempt::run(spec, &output, stdin, &mut signals.events)?;
        reporter.child_left_line_open(outcome.stderr_mid_line);
        if let Some(problem) = &outcome.stdin_error {
            reporter.warning("stdin", problem);
        }
        self.note_lost_output(&outcome.lost, reporter);
        let hint = self.hint.take().unwrap_or_else(|problem| {
            reporter.warning("hint", &problem);
            None
        });
        let verdict = judge(&outcome, hint, config, !self.choice_said);
        self.choice_said |= verdict.class != Class::Success;
        for advice in self
            .advice
            .after_attempt(&outcome.ending, &outcome.scan, &config.rules)
        {
            reporter.warning("preset", &advice);
        }
        Ok(Judged {
            outcome,
            hint,
            verdict,
        })
    }

    /// Output the attempt's pumps could not write on: warn once per
    /// stream, and remember what happened to stdout (delivering it after a
    /// success then fails).
    fn note_lost_output(&mut self, lost: &[LostOutput], reporter: &mut Reporter) {
        self.stdout_lost = None;
        for LostOutput { stream, error } in lost {
            let what = match (stream, &self.held) {
                (Stream::Stdout, Some(held)) => {
                    format!("holding the command's stdout in {}", held.describe())
                }
                (Stream::Stdout, None) => "writing the command's stdout".to_string(),
                (Stream::Stderr, _) => "writing the command's stderr".to_string(),
                (Stream::Both, _) => "writing the command's stdout and stderr".to_string(),
            };
            let what = format!("{what}: {}", error_text(error));
            if !self.warned_lost.contains(stream) {
                self.warned_lost.push(*stream);
                reporter.warning(
                    "output",
                    &format!("{what}; the rest of the attempt's output is lost (the command itself saw no error)"),
                );
            }
            if *stream != Stream::Stderr {
                self.stdout_lost = Some(what);
            }
        }
    }

    /// The stdin spool's failure, in words.
    fn spool_problem(&self) -> String {
        match self.stdin.spool_failure() {
            Some((dir, error)) => format!(
                "--stdin replay: the spool in {} (TMPDIR) could not hold the whole input: {}",
                dir.display(),
                error_text(error)
            ),
            None => String::new(),
        }
    }

    /// The run is over: a successful run's held stdout goes to its place;
    /// otherwise it is dropped, and the number of bytes said. An error is
    /// the output that could not be delivered.
    fn deliver(&mut self, outcome: RunOutcome, reporter: &mut Reporter) -> Result<(), String> {
        let held = self.held.take();
        if outcome != RunOutcome::Success {
            if let Some(message) = held.as_ref().and_then(HeldStdout::dropped) {
                reporter.warning("output", &message);
            }
            return Ok(());
        }
        if let Some(lost) = self.stdout_lost.take() {
            let consequence = match (&held, &self.config.output) {
                (_, Some(path)) => format!(
                    "the successful attempt's output was not delivered, {} is left as it was",
                    path.display()
                ),
                (Some(_), None) => "the successful attempt's output was not delivered".to_string(),
                (None, None) => {
                    "the successful attempt's output did not all reach stdout".to_string()
                }
            };
            return Err(format!("{lost}; {consequence}"));
        }
        // The delivery is part of the run: a stdout that takes nothing
        // holds it neither past a signal nor past --max-time.
        let deadline = self.limits.deadline;
        let give_up =
            || signals::terminating_arrived() || deadline.is_some_and(|d| Instant::now() >= d);
        match held {
            Some(held) => held.deliver(&give_up).map_err(|err| format!("{err:#}")),
            None => Ok(()),
        }
    }

    /// A hint's retry-after, else a Retry-After header (when asked for),
    /// else the backoff. The first two are not clamped by `--cap`: the
    /// server knows.
    /// A request longer than `--max-retry-after` is not obeyed (a broken or
    /// hostile server could ask for years): the backoff's draw is used, and
    /// the third value is the warning that says so.
    fn proposed_sleep(
        &mut self,
        judged: &Judged,
        backoff: &mut Backoff<'_>,
    ) -> (Sleep, SleepSource, Option<String>) {
        let told = match judged.hint {
            Some(Hint::RetryAfter(delay)) => Some((delay, SleepSource::Hint)),
            _ if self.config.rules.retry_after => {
                retry_after_header(&judged.outcome.scan).map(|d| (d, SleepSource::RetryAfter))
            }
            _ => None,
        };
        let limit = self.config.max_retry_after;
        let mut not_obeyed = None;
        let told = told.filter(|&(delay, source)| {
            let obeyed = delay <= limit;
            if !obeyed {
                let asker = match source {
                    SleepSource::Hint => "the hint file",
                    _ => "Retry-After",
                };
                not_obeyed = Some(format!(
                    "{asker} asked for {}, longer than --max-retry-after {}: not obeyed, backing off instead",
                    human(delay),
                    human(limit)
                ));
            }
            obeyed
        });
        match told {
            Some((delay, source)) => (
                Sleep {
                    delay,
                    ceiling: delay,
                },
                source,
                not_obeyed,
            ),
            None => (
                backoff.next(&mut self.rng),
                SleepSource::Backoff,
                not_obeyed,
            ),
        }
    }
}

/// The `hook` event, and a warning when the hook failed (`then`: what retry
/// does all the same). A hook cut short by a signal to retry is no failure
/// of its own: the run's end says why.
fn retry_after_header(scan: &ScanResult) -> Option<Duration> {
    let value = scan.retry_after.as_deref()?;
    hint::parse_retry_after(value, SystemTime::now())
}

fn judge(outcome: &Outcome, hint: Option<Hint>, config: &Config, first_failure: bool) -> Verdict {
    let observation = Observation {
        ending: &outcome.ending,
        hint,
        matched: &outcome.scan.matched,
        lines: &outcome.scan.lines,
        name_the_choice: first_failure,
    };
    let mut verdict = classify::classify(&observation, &config.rules);
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

impl AttemptRecord {
    fn new(attempt: u64, max_attempts: Option<u64>, judged: &Judged) -> AttemptRecord {
        let ending = &judged.outcome.ending;
        AttemptRecord {
            attempt,
            max_attempts,
            exit_code: ending.exit_code(),
            signal: ending.signal(),
            timed_out: ending.timed_out,
            duration: judged.outcome.duration,
            outcome: judged.verdict.class,
            reason: judged.verdict.reason.clone(),
        }
    }
}

fn in_terminal_foreground() -> bool {
    let stdin = own_fd(0);
    rustix::termios::isatty(stdin)
        && rustix::termios::tcgetpgrp(stdin).is_ok_and(|group| group == rustix::process::getpgrp())
}

fn display_command(command: &[OsString]) -> String {
    command
        .iter()
        .map(|arg| escape_controls(&arg.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Retries layered on retries multiply: say so once, with the numbers.
/// The outer attempt comes from the environment: shown as a number, or
/// quoted on one short line, so it cannot forge lines of ours. An empty
/// `RETRY_ATTEMPT` counts as unset (as for the CI folds).
fn nested_warning(inner: Option<u64>) -> Option<String> {
    let outer_attempt = std::env::var_os("RETRY_ATTEMPT").filter(|v| !v.is_empty())?;
    let outer_attempt = outer_attempt.to_string_lossy();
    let outer_attempt = match outer_attempt.trim().parse::<u64>() {
        Ok(n) => n.to_string(),
        Err(_) => format!("'{}'", sanitize_line(&outer_attempt, 40)),
    };
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

fn child_env(
    attempt: u64,
    max: Option<u64>,
    run_id: &str,
    previous: Option<i32>,
    hint: &HintFile,
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
        ("RETRY_HINT_FILE", hint.path().into_os_string()),
    ]
}
