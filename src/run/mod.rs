//! The run: set-up, then the schedule of attempts until the policy's
//! decision ends it; one exit path reports it, with the exit status
//! [`End::exit_status`] chooses.
//!
//! `policy` decides, this room carries out. A file per seam:
//! - `setup`: what a run sets up once, and says before its first attempt;
//! - `schedule`: the loop (splay, attempt, decision, sleep), which carries
//!   out `policy`'s decisions through `Effects`, unit-tested with a script
//!   of attempts on a fake clock; `effects`: those effects, for real;
//! - `one_attempt`: one attempt started and judged (`classify`);
//!   `wiring`: its process and pipes; `pump`: a stream passed on and fed to
//!   the scanner; `stdin`, `hint`, `deliver` (`--buffer-stdout`, `-o`),
//!   `output` (lost output, the delivery at the end);
//! - `budget` and `hooks`: the run's side of `--budget`, `--on-retry` and
//!   `--on-give-up`; `hook_process`: a hook's process.
//!
//! Every wait (the splay, the backoff, a hook) is on the signal self-pipe,
//! so a signal cuts it short at once; the retry budget's store, which
//! cannot watch the pipe, gives way to a signal within 50 ms and never
//! outlasts `--max-time`.

mod budget;
mod copy_stdin;
pub(crate) mod deliver;
mod effects;
mod hedged;
mod hint;
mod hook_process;
mod hooks;
mod io_error;
mod one_attempt;
mod output;
mod pump;
mod schedule;
mod setup;
pub(crate) mod stdin;
mod wiring;

use std::time::Instant;

use anyhow::Result;
use rand::rngs::SmallRng;

use crate::budget::Budget;
use crate::cli::config::Config;
use crate::outcome::{Failures, RunOutcome, RunSummary};
use crate::policy::decision::{Done, End, Limits};
use crate::presets::advice::Advice;
use crate::process::signals::{self, SignalEvents};
use crate::report::{DoneRecord, Reporter};
use crate::run::deliver::HeldStdout;
use crate::run::stdin::StdinSource;
use hint::HintFile;
pub(crate) use io_error::error_text;
use output::Lost;
use schedule::Ended;
pub(crate) use setup::new_run_id;

/// A run: what it set up once, the files its attempts use, and what
/// changes from one attempt to the next.
struct Run<'a> {
    setup: Setup<'a>,
    files: Files,
    state: State<'a>,
}

/// What a run sets up once, before its first attempt, and then only reads.
struct Setup<'a> {
    config: &'a Config,
    id: String,
    started: Instant,
    limits: Limits,
    /// The run's deadline (`--max-time`, or an outer run's if that comes
    /// first) as Unix time in milliseconds: the command's `RETRY_DEADLINE`.
    deadline_ms: Option<u64>,
    /// Attempts and hooks lead process groups of their own (outside a
    /// terminal's foreground, or without `--foreground`).
    own_group: bool,
    /// Output is scanned and stdout and stderr are one open file, not a
    /// terminal: they share one pipe. Retry's own descriptors do not change during a run,
    /// so this is looked at once, not at every attempt.
    one_output_file: bool,
    /// The command, for the `attempt` event.
    command_text: String,
    /// `--hedge-after`: how the run hedges its attempts (`None`: it does
    /// not, or `p95` has not learned enough yet).
    hedge: Option<hedged::HedgePlan>,
    /// The run is its circuit's half-open probe: no hedge doubles it.
    probing: bool,
}

/// The files a run holds for its attempts.
struct Files {
    hint: HintFile,
    stdin: StdinSource,
    /// `--buffer-stdout` or `-o`: each attempt's stdout, held apart.
    held: Option<HeldStdout>,
    /// The hint files of a hedged attempt's copies beyond the first.
    hedge_hints: Vec<HintFile>,
}

/// What a run learns as its attempts go.
struct State<'a> {
    /// `--budget`: asked for a token before each retry; `None` without one,
    /// or once its store failed (a warning said so: retries go ahead).
    budget: Option<&'a Budget>,
    rng: SmallRng,
    /// Output the attempts' pumps could not write on.
    lost: Lost,
    /// What to tell the user about the command line, once (curl's -S, ...).
    advice: Advice,
    /// A failure line said which preset the command's name chose.
    choice_said: bool,
    /// Failed attempts so far, by final verdict.
    failures: Failures,
    /// `--hedge-after p95`: where successful attempts' durations are
    /// learned, and the last one's.
    latency: Option<crate::latency::Latency>,
    last_success: Option<std::time::Duration>,
}

/// A run of `config`'s command. `budget`: the retry budget in force;
/// `probing`: the run is its circuit's one half-open probe.
pub(crate) fn run(
    config: &Config,
    run_id: &str,
    (budget, probing): (Option<&Budget>, bool),
    signals: &mut SignalEvents,
    reporter: &mut Reporter,
) -> Result<RunSummary> {
    let mut run = Run::set_up(config, run_id, budget)?;
    run.setup.probing = probing;
    run.announce(reporter);
    run.plan_hedging(reporter)?;
    run.read_input_for_copies()?;
    let plan = run.plan();
    let mut backoff = config.policy.sleeps();
    let Ended {
        done,
        attempts,
        last_ending,
        in_a_row,
    } = schedule::run(
        &plan,
        &mut backoff,
        &mut effects::Working {
            run: &mut run,
            signals,
            reporter,
        },
    )?;
    let Done {
        mut end,
        mut detail,
    } = done;
    if end == End::Success {
        run.learn_latency(reporter);
    }
    if let Err(problem) = run.deliver(end, reporter) {
        // The command succeeded, but its output did not reach its place:
        // retry's own failure. The `done` event keeps the outcome.
        reporter.error(&problem);
        end = End::Undelivered;
        // A signal that cut the delivery short (its reader took nothing)
        // ends the run by it, as anywhere.
        if let Some(signal) = signals::pending_signal(&mut signals.events) {
            Done { end, detail } = Done::interrupted_during(signal, "while delivering the output");
        }
    }
    if let Some(signal) = run.on_give_up(end, attempts, signals, reporter) {
        // A signal to retry ends the run by it, here as anywhere.
        Done { end, detail } = Done::interrupted_during(signal, "during --on-give-up");
    }
    let outer = config.outer_deadline.map(|outer| outer.at);
    if end.outcome() == Some(RunOutcome::Deadline)
        && outer.is_some()
        && run.setup.limits.deadline == outer
    {
        // "--max-time reached" of a run that had only the outer one.
        detail.push_str(" (the deadline was the outer run's, RETRY_DEADLINE)");
    }
    let status = end.exit_status(config.hooks.give_up_exit);
    if status != end.exit_status(None) {
        // The summary still says how the command ended (the detail), and
        // then why retry's status is another.
        detail.push_str(&format!("; exit {} (--give-up-exit)", status.as_number()));
    }
    let outcome = end.outcome().expect("a run that was set up has an outcome");
    let elapsed = run.setup.started.elapsed();
    reporter.done(&DoneRecord {
        outcome,
        attempts,
        max_attempts: config.attempts,
        elapsed,
        exit_code: status.as_number(),
        detail,
        timed_out: last_ending.as_ref().is_some_and(|e| e.timed_out),
        signal: last_ending
            .as_ref()
            .and_then(crate::outcome::Ending::signal),
        until_failure: config.hooks.until_failure,
        successes: in_a_row,
        command_exit_code: last_ending.as_ref().map(|e| e.exit_status().as_number()),
        in_force: reporter.in_force().clone(),
    });
    Ok(RunSummary {
        status,
        outcome,
        attempts,
        elapsed,
        failures: run.state.failures,
    })
}
