//! The command line: clap definitions and help text; the value parsers
//! of its own flags are in `parsers` (those of values shared with config
//! files are in `values`).
//!
//! Only syntax lives here. `config` turns a parsed [`Cli`] into validated,
//! typed settings (its errors are `usage`'s); no clap type is seen past
//! that boundary. `early` finds where a usage error is reported, from the
//! same clap definition; `contract_text` renders the contract's tables
//! for `--help`, `generate` (man page, completions) and the guide.

// Doc comments here are the help text users read, not rustdoc.
#![allow(clippy::doc_markdown)]

pub(crate) mod config;
mod contract_text;
pub(crate) mod deadline;
pub(crate) mod early;
pub(crate) mod explain;
mod explain_rules;
pub(crate) mod generate;
mod natural;
mod needs_a_store;
mod parsers;
mod peers;
pub(crate) mod slips;
mod unknown;
pub(crate) mod usage;
mod words;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches, Parser};

use crate::cli::generate::Kind as GenerateKind;
use crate::report::{ColorWhen, LogFormat};
use crate::values::{self, AttemptLimit, CodeSet, Jitter};
use parsers::{JITTERS, PRESETS, PatternParser, parse_state_name};

/// The environment, one variable at a time: `std::env::var_os`, or a
/// test's own. Configuration reads it through this alone.
pub(crate) type Env<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// `--stdin`: what each attempt reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum StdinMode {
    /// A terminal is inherited, a file is re-read from the offset it had when retry started, a pipe is inherited (never read ahead)
    Auto,
    /// Every attempt reads the same complete input (a pipe is spooled to disk)
    Replay,
    /// Handed to the child as it is
    Inherit,
    /// /dev/null
    Null,
}

/// `--circuit-mode`: how a circuit decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum CircuitMode {
    /// Open after --circuit-threshold failed runs in a row; refuse every run until a cooldown has passed, then probe with one
    Breaker,
    /// Client-side throttling: reject a run locally with probability max(0, (requests - K x accepts) / (requests + 1)) over --circuit-window
    Adaptive,
}

const BACKOFF: &str = "Backoff";
const LIMITS: &str = "Limits";
const CLASSIFY: &str = "Classifying an attempt";
const IO: &str = "Input and output";
const PROCESS: &str = "Processes";
const REPORTING: &str = "Reporting";
const CIRCUIT: &str = "Circuit: breaker or adaptive throttling (across runs)";
const BUDGET: &str = "Retry budget (across runs and hosts)";
const STATE: &str = "Shared state (circuits and budgets)";
const HOOKS: &str = "Hooks and conditions";

/// `--help`'s epilogue: the contract's exit statuses and environment,
/// then examples.
fn after_help() -> String {
    format!("{}\n\n{EXAMPLES}", contract_text::help_epilogue())
}

const EXAMPLES: &str = "\
Examples:
  retry --cap 30s --max-time 2m -- curl -fsS https://example.com/health
  retry -- curl -fsS -D /dev/stderr -o out.json https://api.example.com/items
  retry --preset list
  retry -n 10 --retry-on-exit 75 --timeout 30s -- ./sync.sh
  retry --until-output '^Running$' -t 5m -- kubectl get pod web -o jsonpath='{.status.phase}'
  retry --until-failure -d 0 -t 10m -- ./flaky-test.sh
  retry --explain --delay 1s --cap 30s --attempts 5";

#[derive(Parser, Debug)]
#[command(
    name = "retry",
    version,
    about = "Run a command until it succeeds, with capped exponential backoff and jitter",
    long_about = "Run COMMAND until it succeeds, a failure is permanent, or a limit is \
                  reached. Between attempts retry sleeps a random time under a ceiling that \
                  grows from --delay by --multiplier up to --cap (full jitter by default), \
                  so many clients retrying at once spread out instead of arriving together.",
    after_help = after_help(),
    override_usage = "retry [OPTIONS] [--] COMMAND [ARG]...\n       retry --explain [OPTIONS] [-- COMMAND [ARG]...]\n       retry --preset list | --preset show NAME | --preset check FILE\n       retry --generate KIND\n       retry --circuit NAME [--state-dir DIR | --state-url URL] --circuit-status | --circuit-reset",
    max_term_width = 100
)]
pub(crate) struct Cli {
    // ---- Backoff ----
    /// Most attempts, the first included: N >= 1 or 'unlimited' [default: 5; unlimited with --max-time or --until-failure]
    #[arg(short = 'n', long, value_name = "N", value_parser = values::parse_attempts, allow_hyphen_values = true, help_heading = BACKOFF)]
    pub(crate) attempts: Option<AttemptLimit>,

    /// Base delay: the ceiling before the first retry
    #[arg(short = 'd', long, value_name = "DURATION", default_value = "1s", value_parser = values::parse_duration, allow_hyphen_values = true, help_heading = BACKOFF)]
    pub(crate) delay: Duration,

    /// A floor over --delay for a failure judged throttled (HTTP 429, a 503 with a wait, a preset's rate-limit message): its backoff grows from the larger of the two, so a throttled failure never backs off faster than another; jitter and --cap apply as usual
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = values::parse_duration, allow_hyphen_values = true, help_heading = BACKOFF)]
    pub(crate) throttle_delay: Duration,

    /// Growth factor of the ceiling per retry (finite, >= 1)
    #[arg(short = 'm', long, value_name = "X", default_value = "2", value_parser = values::parse_multiplier, allow_hyphen_values = true, help_heading = BACKOFF)]
    pub(crate) multiplier: f64,

    /// Largest single delay; growth stops here
    #[arg(short = 'c', long, value_name = "DURATION", default_value = "30s", value_parser = values::parse_positive_duration, allow_hyphen_values = true, help_heading = BACKOFF)]
    pub(crate) cap: Duration,

    /// How a sleep is drawn under its ceiling: full, equal, decorrelated, none, or a proportion P in (0,1] (also 20%)
    #[arg(short = 'j', long, value_name = "KIND", default_value = "full", value_parser = JITTERS, hide_possible_values = true, allow_hyphen_values = true, help_heading = BACKOFF)]
    pub(crate) jitter: Jitter,

    /// Sleep a random time in [0, DURATION) before the first attempt (spreads out fleets of cron jobs)
    #[arg(long, value_name = "DURATION", default_value = "0", value_parser = values::parse_duration, allow_hyphen_values = true, help_heading = BACKOFF)]
    pub(crate) splay: Duration,

    // ---- Limits ----
    /// Budget for the whole run from retry's start: no sleep starts that would end past it, and a running attempt is terminated when it expires. Given to the command as RETRY_DEADLINE; a retry that finds RETRY_DEADLINE cuts its own --max-time to what is left
    #[arg(short = 't', long, value_name = "DURATION", value_parser = values::parse_limit, allow_hyphen_values = true, help_heading = LIMITS)]
    pub(crate) max_time: Option<Duration>,

    /// Limit for each attempt; an attempt over it is terminated and counts as a transient failure (permanent with --stop-on-timeout)
    #[arg(short = 'T', long, value_name = "DURATION", value_parser = values::parse_limit, allow_hyphen_values = true, help_heading = LIMITS)]
    pub(crate) timeout: Option<Duration>,

    /// After terminating an attempt with SIGTERM, wait this long, then SIGKILL its process group
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = values::parse_duration, allow_hyphen_values = true, help_heading = LIMITS)]
    pub(crate) kill_after: Duration,

    // ---- Classification ----
    /// Exit codes that are worth retrying (e.g. 1,7,28,52-56); any other failing code is then permanent. A death by signal N counts as code 128+N; a timed-out attempt is judged only as timed out (see --stop-on-timeout)
    #[arg(long, value_name = "CODES", value_parser = values::parse_codes, allow_hyphen_values = true, help_heading = CLASSIFY)]
    pub(crate) retry_on_exit: Vec<CodeSet>,

    /// Exit codes that are permanent failures: stop at once (a death by signal N counts as 128+N)
    #[arg(long, value_name = "CODES", value_parser = values::parse_codes, allow_hyphen_values = true, help_heading = CLASSIFY)]
    pub(crate) stop_on_exit: Vec<CodeSet>,

    /// A failed attempt whose output has a line matching REGEX is transient (repeatable)
    #[arg(long, value_name = "REGEX", value_parser = PatternParser, help_heading = CLASSIFY)]
    pub(crate) retry_on_output: Vec<String>,

    /// A failed attempt whose output has a line matching REGEX is permanent (repeatable)
    #[arg(long, value_name = "REGEX", value_parser = PatternParser, help_heading = CLASSIFY)]
    pub(crate) stop_on_output: Vec<String>,

    /// An attempt ended by --timeout or --max-time is a permanent failure (by default it is transient, whatever the exit-code lists say)
    #[arg(long, help_heading = CLASSIFY)]
    pub(crate) stop_on_timeout: bool,

    /// Scan stdout as well as stderr for the output patterns (when stdout and stderr are the same file or pipe, not a terminal, both are always scanned: they share one pipe to keep their order)
    #[arg(long, help_heading = CLASSIFY)]
    pub(crate) scan_stdout: bool,

    /// Rules for a known command (curl, wget, git, ssh, scp, rsync, apt, pip, npm, docker, kubectl, aws, terraform, or one of a presets file), below your own rules. Without --preset, the command's file name chooses one. 'none': no preset; 'list': print every preset and exit; 'show NAME': print one in the presets-file form and exit; 'check FILE': check a presets file and exit (0, or 125 naming each problem's line). User presets: $RETRY_PRESETS, else $XDG_CONFIG_HOME/retry/presets.toml (~/.config/retry/presets.toml), over /etc/retry/presets.toml
    #[arg(long, value_name = "NAME", value_parser = PRESETS, hide_possible_values = true, help_heading = CLASSIFY)]
    pub(crate) preset: Option<String>,

    /// Sleep as long as a 'Retry-After:' header line in the scanned output says (implied by the curl and wget presets)
    #[arg(long, help_heading = CLASSIFY)]
    pub(crate) retry_after: bool,

    /// Longest wait a server (Retry-After, the rate-limit headers) or the hint file may ask for; a longer one, or one that would end past --max-time, ends the run at once (exhausted, the command's status; --give-up-exit applies), never answered by a shorter sleep
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = values::parse_duration, allow_hyphen_values = true, help_heading = CLASSIFY)]
    pub(crate) max_retry_after: Duration,

    // ---- Input and output ----
    /// What each attempt reads: auto, replay (every attempt gets the whole input), inherit, null
    #[arg(long, value_name = "MODE", default_value = "auto", help_heading = IO)]
    pub(crate) stdin: StdinMode,

    /// Hold each attempt's stdout apart and emit only a successful attempt's; on give-up nothing is emitted, and the number of bytes dropped is said
    #[arg(long, help_heading = IO)]
    pub(crate) buffer_stdout: bool,

    /// A successful attempt's stdout replaces FILE atomically (mode like the file it replaces, or 0644 under the umask); a failed or interrupted run leaves FILE as it was, and no temporary file behind. FILE must be a regular file or not exist, in a writable directory
    #[arg(short = 'o', long, value_name = "FILE", help_heading = IO)]
    pub(crate) output: Option<PathBuf>,

    // ---- Processes ----
    /// Keep the child in retry's process group even when not in a terminal's foreground
    #[arg(long, help_heading = PROCESS)]
    pub(crate) foreground: bool,

    // ---- Hooks and conditions ----
    /// Run CMD (with /bin/sh -c) after each backoff sleep, right before the retry. It sees the RETRY_* variables of the attempt to come (RETRY_PREVIOUS_EXIT too), its output goes to retry's stderr, it is bounded by --timeout and --max-time, and its failure is only a warning
    #[arg(long, value_name = "CMD", help_heading = HOOKS)]
    pub(crate) on_retry: Option<OsString>,

    /// Run CMD (with /bin/sh -c) once when the run fails: never on success, nor when retry is interrupted by a signal. It sees RETRY_EXIT, RETRY_OUTCOME and RETRY_ATTEMPTS, its output goes to retry's stderr, and it is bounded by --timeout, else 60s
    #[arg(long, value_name = "CMD", help_heading = HOOKS)]
    pub(crate) on_give_up: Option<OsString>,

    /// Exit codes that count as success (retry exits 0), decided before every other rule; a code may not also be in --stop-on-exit or --retry-on-exit
    #[arg(long, value_name = "CODES", value_parser = values::parse_codes, allow_hyphen_values = true, help_heading = HOOKS)]
    pub(crate) success_on_exit: Vec<CodeSet>,

    /// Success also needs a line of the output (stdout and stderr, both scanned) matching REGEX; a success code without one is a transient failure, "not ready yet" (repeatable: one match is enough)
    #[arg(long, value_name = "REGEX", value_parser = PatternParser, help_heading = HOOKS)]
    pub(crate) until_output: Vec<String>,

    /// The inverse run, to hunt a flaky failure: repeat while the command succeeds, stop at its first failure and exit with its status; exit 0 when every run passed. Attempts are unlimited unless --attempts is given
    #[arg(long, conflicts_with_all = ["on_give_up", "until_output"], help_heading = HOOKS)]
    pub(crate) until_failure: bool,

    /// The run succeeds only after N successful attempts in a row, --delay apart (a service that answers once is not ready yet); a failure starts the count over. --attempts counts every attempt
    #[arg(long, value_name = "N", default_value = "1", value_parser = clap::value_parser!(u64).range(1..=1_000_000), allow_hyphen_values = true, conflicts_with = "until_failure", help_heading = HOOKS)]
    pub(crate) successes: u64,

    /// Exit CODE (0-255) when the run ends on a transient failure (attempts exhausted, --max-time, the budget refused, a circuit open), for a CI system's own retry (75 is EX_TEMPFAIL); a permanent failure keeps the command's status, retry's own errors theirs
    #[arg(long, value_name = "CODE", value_parser = clap::value_parser!(u8), allow_hyphen_values = true, help_heading = LIMITS)]
    pub(crate) give_up_exit: Option<u8>,

    /// Start one more copy of an attempt that has run DURATION without ending (p95: the 95th percentile of the --circuit's or --budget's earlier successful attempts, at least 100ms, once 5 are known); the first success wins and the others are ended as a time limit ends an attempt (superseded). For idempotent commands only: copies run at once, each with the whole input (--stdin replay) or none
    #[arg(long, value_name = "DURATION|p95", value_parser = parsers::parse_hedge_after, help_heading = LIMITS)]
    pub(crate) hedge_after: Option<crate::policy::hedging::HedgeAfter>,

    /// With --hedge-after: how many copies beyond the first at most (1 to 5, as gRPC's hedging allows); each costs a --budget token
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=crate::policy::hedging::MOST_HEDGES), requires = "hedge_after", help_heading = LIMITS)]
    pub(crate) hedges: Option<u64>,

    /// An attempt that ran at least DURATION before failing starts the backoff over from --delay (a command that was healthy for a while is not punished for old failures)
    #[arg(long, value_name = "DURATION", value_parser = values::parse_positive_duration, allow_hyphen_values = true, help_heading = BACKOFF)]
    pub(crate) reset_after: Option<Duration>,

    // ---- Reporting ----
    /// Only retry's own errors, and warnings about settings not taken as given or a circuit or budget store that cannot be used; nothing per attempt
    #[arg(short = 'q', long, conflicts_with = "verbose", help_heading = REPORTING)]
    pub(crate) quiet: bool,

    /// Also the policy at start and every attempt's start
    #[arg(short = 'v', long, help_heading = REPORTING)]
    pub(crate) verbose: bool,

    /// Format of retry's own messages [default: github when GITHUB_ACTIONS=true, gitlab when GITLAB_CI=true, else text]
    #[arg(long, value_name = "FORMAT", help_heading = REPORTING)]
    pub(crate) log_format: Option<LogFormat>,

    /// When to colour retry's own lines: auto (a terminal, unless NO_COLOR, CLICOLOR=0 or TERM=dumb; CLICOLOR_FORCE forces it), always, never
    #[arg(long, value_name = "WHEN", default_value = "auto", help_heading = REPORTING)]
    pub(crate) color: ColorWhen,

    /// Append retry's own messages to PATH instead of stderr
    #[arg(long, value_name = "PATH", help_heading = REPORTING)]
    pub(crate) log_file: Option<PathBuf>,

    /// Print the schedule this policy produces and exit without running anything
    #[arg(long, help_heading = REPORTING)]
    pub(crate) explain: bool,

    /// At the end of the run, write a Prometheus text file (for node_exporter's textfile collector) to PATH, atomically
    #[arg(long, value_name = "PATH", help_heading = REPORTING)]
    pub(crate) metrics_file: Option<PathBuf>,

    /// The name label of --metrics-file [default: the command's file name]
    #[arg(long, value_name = "NAME", requires = "metrics_file", help_heading = REPORTING)]
    pub(crate) name: Option<String>,

    /// Print the man page (man) or a completion script (bash, zsh, fish, elvish, powershell) and exit
    #[arg(long, value_name = "KIND", exclusive = true, help_heading = REPORTING)]
    pub(crate) generate: Option<GenerateKind>,

    // ---- Circuit breaker ----
    /// Keep a circuit breaker NAME across runs: after --circuit-threshold failed runs in a row, refuse to run (exit 75) until a cooldown has passed (--circuit-mode adaptive: throttle instead)
    #[arg(long, value_name = "NAME", value_parser = parse_state_name, allow_hyphen_values = true, help_heading = CIRCUIT)]
    pub(crate) circuit: Option<String>,

    /// How the circuit decides: breaker (open, cooldown, one probe) or adaptive (reject runs locally with a probability that grows as the backend's accepts fall behind the requests, Google SRE's client-side throttling) [default: breaker]
    #[arg(long, value_name = "MODE", help_heading = CIRCUIT)]
    pub(crate) circuit_mode: Option<CircuitMode>,

    /// Failed runs in a row that open the circuit (breaker) [default: 3]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), help_heading = CIRCUIT)]
    pub(crate) circuit_threshold: Option<u32>,

    /// How long an opened circuit refuses runs before one run may probe (breaker) [default: 1m]
    #[arg(long, value_name = "DURATION", value_parser = values::parse_positive_duration, allow_hyphen_values = true, help_heading = CIRCUIT)]
    pub(crate) circuit_cooldown: Option<Duration>,

    /// Largest cooldown: each failed probe doubles it up to this (breaker) [default: 1h]
    #[arg(long, value_name = "DURATION", value_parser = values::parse_positive_duration, allow_hyphen_values = true, help_heading = CIRCUIT)]
    pub(crate) circuit_max_cooldown: Option<Duration>,

    /// Adaptive: the backend receives about K times what it accepts before runs are rejected locally; 1 <= K <= 1000, lower throttles sooner [default: 2]
    #[arg(long, value_name = "K", allow_hyphen_values = true, help_heading = CIRCUIT)]
    pub(crate) circuit_k: Option<f64>,

    /// Adaptive: how long requests and accepts are counted, 1s to 24h (kept as 12 buckets, so old counts age out) [default: 2m]
    #[arg(long, value_name = "DURATION", value_parser = values::parse_positive_duration, allow_hyphen_values = true, help_heading = CIRCUIT)]
    pub(crate) circuit_window: Option<Duration>,

    /// Print the circuit's state (closed, open, half-open; failures; until when; adaptive: requests, accepts, the rejection probability) and exit 0
    #[arg(long, requires = "circuit", conflicts_with = "circuit_reset", help_heading = CIRCUIT)]
    pub(crate) circuit_status: bool,

    /// Close the circuit and forget its failures (adaptive: its requests and accepts), then exit 0
    #[arg(long, requires = "circuit", help_heading = CIRCUIT)]
    pub(crate) circuit_reset: bool,

    // ---- Retry budget ----
    /// Share retry budget NAME: each retry (attempt 2 and later) takes a whole token from a bucket that first attempts and time fill; with none left the run does not retry
    #[arg(long, value_name = "NAME", value_parser = parse_state_name, allow_hyphen_values = true, help_heading = BUDGET)]
    pub(crate) budget: Option<String>,

    /// Tokens each run's first attempt deposits: retries add at most this share of the first attempts' load (also 20%) [default: 0.2]
    #[arg(long, value_name = "R", value_parser = values::parse_ratio, allow_hyphen_values = true, requires = "budget", help_heading = BUDGET)]
    pub(crate) budget_ratio: Option<f64>,

    /// Tokens that flow in with time, N/UNIT (10/s, 1/min, 30/h), so a lone job can still retry now and then [default: 1/min]
    #[arg(long, value_name = "RATE", value_parser = values::parse_rate, allow_hyphen_values = true, requires = "budget", help_heading = BUDGET)]
    pub(crate) budget_min: Option<f64>,

    /// The bucket's capacity; a new bucket starts full [default: 10]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000), requires = "budget", help_heading = BUDGET)]
    pub(crate) budget_burst: Option<u32>,

    /// Print the budget's tokens and settings and exit 0
    #[arg(long, requires = "budget", conflicts_with = "budget_reset", help_heading = BUDGET)]
    pub(crate) budget_status: bool,

    /// Refill the budget and store the settings given (or the defaults), then exit 0
    #[arg(long, requires = "budget", help_heading = BUDGET)]
    pub(crate) budget_reset: bool,

    // ---- Shared state ----
    /// Where circuits and budgets are kept [default: $RETRY_STATE_DIR, else $XDG_STATE_HOME/retry, else ~/.local/state/retry (HOME, else the password entry's home), else /tmp/retry-state-UID]
    #[arg(long, value_name = "DIR", help_heading = STATE)]
    pub(crate) state_dir: Option<PathBuf>,

    /// Keep circuits and budgets in Redis, shared by a fleet: redis://[user:password@]host:port/db (rediss:// for TLS), a Redis Cluster's seed nodes redis://host:port,host:port (or --state-url given once per node), or Sentinel redis+sentinel://host:26379,host/master[/db] [env: RETRY_STATE_URL, unless --state-dir is given]
    #[arg(long, value_name = "URL", action = clap::ArgAction::Append, help_heading = STATE)]
    pub(crate) state_url: Vec<String>,

    /// Also trust the CA certificates (PEM) in FILE for a rediss:// state URL, besides the system's trust store and the public web roots [env: RETRY_STATE_CA]
    #[arg(long, value_name = "FILE", help_heading = STATE)]
    pub(crate) state_ca: Option<PathBuf>,

    /// One deadline for each exchange with the state store (the file lock's wait, or Redis from connecting on); past it the job runs as if there were no circuit or budget, with a warning
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = values::parse_positive_duration, allow_hyphen_values = true, help_heading = STATE)]
    pub(crate) state_timeout: Duration,

    /// The command to run, and its arguments (passed verbatim, no shell)
    #[arg(
        value_name = "COMMAND",
        value_hint = clap::ValueHint::CommandWithArguments,
        trailing_var_arg = true,
        num_args = 1..,
        required_unless_present_any = ["explain", "generate", "circuit_status", "circuit_reset", "budget_status", "budget_reset", "preset"]
    )]
    pub(crate) command: Vec<OsString>,

    /// The words before COMMAND as typed, for the hints of `slips`.
    #[arg(skip)]
    pub(crate) before_command: Vec<OsString>,
}

impl Cli {
    /// Parse argv (non-UTF-8 safe). Errors are clap errors: the caller maps
    /// them to exit 125, and help or version to 0.
    pub(crate) fn parse_from_os(
        args: impl IntoIterator<Item = OsString>,
    ) -> Result<Cli, clap::Error> {
        let args: Vec<OsString> = args.into_iter().collect();
        let mut command = natural::with_natural_names(Cli::command());
        let mut matches = command
            .try_get_matches_from_mut(&args)
            .map_err(|err| unknown::explained(err, &mut command, &args))?;
        needs_a_store::check(&mut command, &matches)?;
        natural::refuse_retry_counts(&mut command, &matches)?;
        // Takes the values out (`from_arg_matches` would copy every match
        // first); the hidden aliases, not fields of `Cli`, stay to be read.
        let mut cli =
            Cli::from_arg_matches_mut(&mut matches).map_err(|err| err.format(&mut command))?;
        cli.attempts = cli.attempts.or(natural::alias(&matches));
        let options = args.len().saturating_sub(cli.command.len());
        cli.before_command = args.get(1..options).unwrap_or_default().to_vec();
        Ok(cli)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_definition_is_consistent() {
        natural::with_natural_names(Cli::command()).debug_assert();
    }

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::parse_from_os(
            std::iter::once("retry")
                .chain(args.iter().copied())
                .map(OsString::from),
        )
    }

    #[test]
    fn everything_after_the_first_word_belongs_to_the_child() {
        let cli = parse(&["-n", "3", "curl", "-n", "--help", "--", "x"]).unwrap();
        assert_eq!(cli.command, ["curl", "-n", "--help", "--", "x"]);
        let cli = parse(&["--", "--weird", "-v"]).unwrap();
        assert_eq!(cli.command, ["--weird", "-v"]);
    }

    #[test]
    fn circuit_and_state_flags_need_what_reads_them() {
        assert!(parse(&["--circuit-cooldown", "5m", "true"]).is_err());
        assert!(parse(&["--state-timeout", "3s", "true"]).is_err());
        assert!(parse(&["--circuit", "c", "--circuit-cooldown", "5m", "true"]).is_ok());
        assert!(parse(&["--budget", "b", "--state-timeout", "3s", "true"]).is_ok());
        // Their defaults alone are no reason to refuse.
        assert!(parse(&["true"]).is_ok());
    }

    #[test]
    fn unknown_flags_and_missing_commands_are_errors() {
        assert!(parse(&["--bogus", "--", "true"]).is_err());
        assert!(parse(&[]).is_err());
        assert!(parse(&["--explain"]).is_ok());
    }
}
