//! Usage errors found after clap's parse: values that are valid one by
//! one but not together, or that the environment or a file contradicts.
//! Each is reported like a bad flag value (`retry: error: ...`, exit 125)
//! and nothing runs; its words are its [`Display`](std::fmt::Display).

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use humantime::format_duration;

use super::deadline::DeadlineError;
use super::slips::Slip;
use crate::presets::PresetError;
use crate::values::CodeSet;

/// What is wrong with a command line that clap accepted.
#[derive(Debug)]
pub(crate) enum UsageError {
    /// `--splay` not shorter than `--max-time`.
    SplayNotShorter { splay: Duration, max_time: Duration },
    /// A `--success-on-exit` code is also in `flag`'s list.
    SuccessAlsoListed {
        success: Box<CodeSet>,
        code: i32,
        flag: &'static str,
    },
    /// `--retry-on-exit` and `--stop-on-exit` share `code`.
    ExitListsShare {
        retry: Box<CodeSet>,
        stop: Box<CodeSet>,
        code: i32,
    },
    /// A hook's command is empty.
    EmptyHook { flag: &'static str },
    /// `--successes` above the attempt limit.
    SuccessesOverAttempts { successes: u64, limit: u64 },
    /// An output pattern that does not compile (within the run's limit).
    Pattern {
        flag: &'static str,
        pattern: String,
        problem: String,
    },
    /// `--preset list` followed by a command.
    PresetListRunsNothing,
    /// `--preset show` without one name after it.
    PresetShowTakesOneName,
    /// `--preset check` without one file after it.
    PresetCheckTakesOneFile,
    /// No COMMAND where one must be run.
    NoCommand,
    /// `--circuit-max-cooldown` shorter than `--circuit-cooldown`.
    CooldownsReversed { max: Duration, cooldown: Duration },
    /// A flag of one circuit mode given with the other: `flag` and its
    /// value as shown, and the mode that uses it.
    OtherCircuitMode {
        flag: &'static str,
        value: String,
        mode: &'static str,
    },
    /// `--circuit-k` out of range.
    CircuitK(f64),
    /// `--circuit-window` out of range.
    CircuitWindow(Duration),
    /// `RETRY_STATE_URL` is not UTF-8.
    StateUrlNotUtf8,
    /// `--state-ca` with no `rediss://` URL in use.
    StateCaUnused(PathBuf),
    /// A state URL or CA file the state store refuses, in its words.
    State(String),
    /// A preset name, file or pattern.
    Presets(PresetError),
    /// `RETRY_DEADLINE` cannot be read.
    Deadline(DeadlineError),
    /// `--hedge-after` where copies of an attempt cannot run: why.
    Hedging(&'static str),
    /// `--foreground` on a system without terminal process groups: why.
    NoForeground(&'static str),
    /// A command word that is a slip (`retry 3 curl`).
    Slip(Slip),
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UsageError::SplayNotShorter { splay, max_time } => write!(
                f,
                "--splay {} must be shorter than --max-time {}",
                format_duration(*splay),
                format_duration(*max_time)
            ),
            UsageError::SuccessAlsoListed {
                success,
                code,
                flag,
            } => write!(
                f,
                "--success-on-exit {success}: exit code {code} is also in {flag} (a code is either a success or a failure)"
            ),
            UsageError::ExitListsShare { retry, stop, code } => write!(
                f,
                "--retry-on-exit {retry} and --stop-on-exit {stop} both list exit code {code} (a code is either worth retrying or permanent; --retry-on-exit alone already makes every code it does not list permanent)"
            ),
            UsageError::EmptyHook { flag } => write!(
                f,
                "{flag}: the command is empty (a shell command line is expected)"
            ),
            UsageError::SuccessesOverAttempts { successes, limit } => write!(
                f,
                "--successes {successes} can never be met within {limit} attempts (--attempts counts every attempt; the default is 5): raise --attempts or give --max-time"
            ),
            UsageError::Pattern {
                flag,
                pattern,
                problem,
            } => write!(
                f,
                "invalid value '{pattern}' for '{flag} <REGEX>': {problem}"
            ),
            UsageError::PresetListRunsNothing => {
                f.write_str("--preset list runs nothing: no COMMAND after it")
            }
            UsageError::PresetShowTakesOneName => {
                f.write_str("--preset show takes one preset name: retry --preset show NAME")
            }
            UsageError::PresetCheckTakesOneFile => {
                f.write_str("--preset check takes one presets file: retry --preset check FILE")
            }
            UsageError::NoCommand => {
                f.write_str("the following required arguments were not provided: <COMMAND>...")
            }
            UsageError::CooldownsReversed { max, cooldown } => write!(
                f,
                "--circuit-max-cooldown {} is shorter than --circuit-cooldown {}",
                format_duration(*max),
                format_duration(*cooldown)
            ),
            UsageError::OtherCircuitMode { flag, value, mode } => {
                write!(f, "{flag} {value}: only --circuit-mode {mode} uses it")?;
                if *mode == "breaker" {
                    f.write_str(" (adaptive throttling has no threshold or cooldown: it rejects runs with a probability, see --circuit-k and --circuit-window)")?;
                }
                Ok(())
            }
            UsageError::CircuitK(k) => write!(
                f,
                "--circuit-k {k}: K is a number from 1 to 1000 (default 2; below 1, a backend that accepts everything would still be throttled)"
            ),
            UsageError::CircuitWindow(window) => write!(
                f,
                "--circuit-window {}: the window is from 1s to 24h (default 2m)",
                format_duration(*window)
            ),
            UsageError::StateUrlNotUtf8 => {
                f.write_str("RETRY_STATE_URL is not valid UTF-8: a URL is expected")
            }
            UsageError::StateCaUnused(path) => write!(
                f,
                "--state-ca {}: only a rediss:// state URL (--state-url or RETRY_STATE_URL) uses it, and none is in use",
                path.display()
            ),
            UsageError::State(problem) => f.write_str(problem),
            UsageError::Presets(err) => err.fmt(f),
            UsageError::Deadline(err) => err.fmt(f),
            UsageError::Hedging(why) => f.write_str(why),
            UsageError::NoForeground(why) => write!(f, "--foreground: {why}"),
            UsageError::Slip(slip) => slip.fmt(f),
        }
    }
}

impl std::error::Error for UsageError {}

impl From<PresetError> for UsageError {
    fn from(err: PresetError) -> Self {
        UsageError::Presets(err)
    }
}

impl From<DeadlineError> for UsageError {
    fn from(err: DeadlineError) -> Self {
        UsageError::Deadline(err)
    }
}
