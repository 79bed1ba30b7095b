//! Flag names other retry tools taught their users, and what retry calls
//! the same thing. Read from the tools' own help: Debian's `retry`
//! (minfrin/retry: `-t/--times`, `-d/--delay`, `-u/--until`,
//! `-w/--while`), kadwanev/retry (`-t/--tries`, `-s/--sleep`, `-m/--min`,
//! `-x/--max`, `-f/--fail`), joshdk/retry (Go flags with one dash:
//! `-attempts`, `-sleep`, `-backoff`, `-consecutive`, `-invert`,
//! `-task-time`), dbohdan/recur (`-a/--attempts`, `-b/--backoff`,
//! `-f/--forever`, `-m/--max-delay`, `-r/--reset`, `-I/--replay-stdin`,
//! `-O/--hold-stdout`), the `retry-cli` crate (`--min-duration`,
//! `--max-duration`, `--factor`), npm's `retry-cli` (`--min-timeout` and
//! `--max-timeout` in milliseconds), ctry (`-i/--interval`, `--max`),
//! winix's retry (`--on`, `--until`, `--backoff`), and curl's
//! (`--retry-delay`, `--retry-max-time`, `--retry-all-errors`). Names that
//! retry accepts (`--times`, `--tries`) or refuses with a count of its own
//! (`--retries`) are `natural`'s.
//!
//! A name two tools use for different things (`--max`, `--max-timeout`,
//! `-f`) is answered with both of retry's flags; a value is carried over
//! only when it reads as the peer meant it (`--sleep 5` becomes `-d 5`, a
//! count of 0 or less is `unlimited`, npm's milliseconds get their unit).

use crate::values;

/// What a peer's flag does, in retry's terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Meaning {
    Attempts,
    Forever,
    FixedSleep,
    FirstSleep,
    /// In milliseconds when bare (npm's `--min-timeout`).
    FirstSleepMs,
    LongestSleep,
    Factor,
    Backoff,
    RunTime,
    AttemptTime,
    RetryOn,
    StopOn,
    Until,
    While,
    Splay,
    Successes,
    Invert,
    AllErrors,
    Condition,
    ResetAfter,
    ReplayStdin,
    HoldStdout,
    GiveUpCommand,
    /// `--max`: attempts (ctry) or the longest sleep (kadwanev).
    AttemptsOrLongestSleep,
    /// `--max-timeout`: the longest sleep (npm) or the run's time (eretry).
    LongestSleepOrRunTime,
    /// `-f`: no limit (recur) or a command on failure (kadwanev).
    ForeverOrGiveUp,
}

use Meaning::{
    AllErrors, AttemptTime, Attempts, AttemptsOrLongestSleep, Backoff, Condition, Factor,
    FirstSleep, FirstSleepMs, FixedSleep, Forever, ForeverOrGiveUp, GiveUpCommand, HoldStdout,
    Invert, LongestSleep, LongestSleepOrRunTime, ReplayStdin, ResetAfter, RetryOn, RunTime, Splay,
    StopOn, Successes, Until, While,
};

/// Peers' long names (also typed with one dash, as Go's flags are).
pub(super) const LONG: &[(&str, Meaning)] = &[
    ("max-tries", Attempts),
    ("max-attempts", Attempts),
    ("max_attempts", Attempts),
    ("count", Attempts),
    ("forever", Forever),
    ("infinite", Forever),
    ("unlimited", Forever),
    ("interval", FixedSleep),
    ("interval_seconds", FixedSleep),
    ("wait", FixedSleep),
    ("sleep", FixedSleep),
    ("retry-delay", FixedSleep),
    ("min-duration", FirstSleep),
    ("min-sleep", FirstSleep),
    ("min", FirstSleep),
    ("initial-delay", FirstSleep),
    ("min-timeout", FirstSleepMs),
    ("max-duration", LongestSleep),
    ("max-delay", LongestSleep),
    ("max-sleep", LongestSleep),
    ("max-wait", LongestSleep),
    ("max-interval", LongestSleep),
    ("max-backoff", LongestSleep),
    ("waitretry", LongestSleep),
    ("factor", Factor),
    ("backoff-factor", Factor),
    ("backoff-multiplier", Factor),
    ("backoff", Backoff),
    ("exponential", Backoff),
    ("exponential-backoff", Backoff),
    ("retry-max-time", RunTime),
    ("total-timeout", RunTime),
    ("max-total-time", RunTime),
    ("deadline", RunTime),
    ("task-time", AttemptTime),
    ("attempt-timeout", AttemptTime),
    ("timeout_seconds", AttemptTime),
    ("retry-on", RetryOn),
    ("on", RetryOn),
    ("retry-on-error", RetryOn),
    ("retry-on-exit-code", RetryOn),
    ("retry-on-exit-codes", RetryOn),
    ("stop-on", StopOn),
    ("fatal-exit-codes", StopOn),
    ("until", Until),
    ("while", While),
    ("stagger", Splay),
    ("consecutive", Successes),
    ("invert", Invert),
    ("retry-on-success", Invert),
    ("retry-all-errors", AllErrors),
    ("condition", Condition),
    ("reset", ResetAfter),
    ("replay-stdin", ReplayStdin),
    ("hold-stdout", HoldStdout),
    ("fail", GiveUpCommand),
    ("on-fail", GiveUpCommand),
    ("on-failure", GiveUpCommand),
    ("max", AttemptsOrLongestSleep),
    ("max-timeout", LongestSleepOrRunTime),
];

/// Peers' short names that retry does not have.
pub(super) const SHORT: &[(char, Meaning)] = &[
    ('a', Attempts),
    ('s', FixedSleep),
    ('i', FixedSleep),
    ('x', LongestSleep),
    ('b', Backoff),
    ('u', Until),
    ('w', While),
    ('f', ForeverOrGiveUp),
    ('I', ReplayStdin),
    ('O', HoldStdout),
];

/// The meaning of a peer's long name.
pub(super) fn long(name: &str) -> Option<Meaning> {
    LONG.iter().find(|(n, _)| *n == name).map(|&(_, m)| m)
}

/// The meaning of a peer's short name.
pub(super) fn short(c: char) -> Option<Meaning> {
    SHORT.iter().find(|(s, _)| *s == c).map(|&(_, m)| m)
}

/// What a value of the peer's flag is, when it takes one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Value {
    Count,
    Duration,
    Milliseconds,
    Factor,
    Codes,
    Criteria,
}

impl Meaning {
    /// The kind of value the peers' flag takes (none when they disagree).
    fn value(self) -> Option<Value> {
        match self {
            Attempts | Successes => Some(Value::Count),
            FixedSleep | FirstSleep | LongestSleep | RunTime | AttemptTime | Splay | ResetAfter => {
                Some(Value::Duration)
            }
            FirstSleepMs => Some(Value::Milliseconds),
            Factor => Some(Value::Factor),
            RetryOn | StopOn => Some(Value::Codes),
            Until | While => Some(Value::Criteria),
            _ => None,
        }
    }

    /// `value` in retry's form when it reads as the peer meant it.
    pub(super) fn carried(self, value: Option<&str>) -> Option<String> {
        let value = value?.trim();
        match self.value()? {
            Value::Count => count(value),
            Value::Duration => values::parse_duration(value)
                .is_ok()
                .then(|| value.to_string()),
            Value::Milliseconds if value.parse::<f64>().is_ok() => Some(format!("{value}ms")),
            Value::Milliseconds => values::parse_duration(value)
                .is_ok()
                .then(|| value.to_string()),
            Value::Factor => values::parse_multiplier(value)
                .is_ok()
                .then(|| value.to_string()),
            Value::Codes => values::parse_codes(value)
                .is_ok()
                .then(|| value.to_string()),
            Value::Criteria => {
                let word = value.to_ascii_lowercase();
                let known = ["success", "true", "fail", "false"].contains(&word.as_str());
                (known || values::parse_codes(value).is_ok()).then_some(word)
            }
        }
    }

    /// What retry calls it, with `value` (from [`Meaning::carried`]) in
    /// place where one was given.
    pub(super) fn hint(self, value: Option<&str>) -> String {
        match self {
            Attempts | Forever | Successes | AttemptsOrLongestSleep | ForeverOrGiveUp => {
                self.count_hint(value)
            }
            FixedSleep
            | FirstSleep
            | FirstSleepMs
            | LongestSleep
            | Factor
            | Backoff
            | Splay
            | ResetAfter
            | LongestSleepOrRunTime => self.sleep_hint(value),
            RetryOn | StopOn | Until | While | Invert | AllErrors | Condition => {
                self.verdict_hint(value)
            }
            RunTime | AttemptTime | ReplayStdin | HoldStdout | GiveUpCommand => {
                self.run_hint(value)
            }
        }
    }

    /// How many attempts: the count, no limit, successes in a row.
    fn count_hint(self, value: Option<&str>) -> String {
        let n = value.unwrap_or("N");
        match self {
            Attempts if n == "unlimited" => {
                "retry's is --attempts unlimited (-n unlimited)".to_string()
            }
            Attempts => format!("retry's is --attempts {n} (-n {n}), the first attempt included"),
            Forever => "retry's is --attempts unlimited (-n unlimited)".to_string(),
            Successes => format!("retry's is --successes {n}, successful attempts in a row"),
            AttemptsOrLongestSleep => "retry's are --attempts N (-n N) for the number of \
                                       attempts and --cap DURATION (-c) for the longest sleep"
                .to_string(),
            _ => "retry's are -n unlimited (--attempts unlimited) for no attempt limit and \
                  --on-give-up CMD for a command run when the run fails"
                .to_string(),
        }
    }

    /// The sleeps between attempts.
    fn sleep_hint(self, value: Option<&str>) -> String {
        let d = value.unwrap_or("DURATION");
        match self {
            FixedSleep => format!(
                "retry's is --delay {d} (-d {d}), the first sleep's ceiling, which grows by \
                 --multiplier up to --cap, with jitter; the same sleep every time is {}",
                fixed_sleep(d)
            ),
            FirstSleep | FirstSleepMs => format!(
                "retry's is --delay {d} (-d {d}), the first sleep's ceiling (it grows by \
                 --multiplier, 2, up to --cap, 30s)"
            ),
            LongestSleep => format!("retry's is --cap {d} (-c {d}), the longest sleep"),
            Factor => {
                let x = value.unwrap_or("X");
                format!("retry's is --multiplier {x} (-m {x}), the sleep's growth per retry")
            }
            Splay => format!("retry's is --splay {d}, a random sleep before the first attempt"),
            ResetAfter => format!(
                "retry's is --reset-after {d}: an attempt that ran that long before failing \
                 starts the backoff over"
            ),
            LongestSleepOrRunTime => "retry's are --cap DURATION (-c) for the longest sleep \
                                      and --max-time DURATION (-t) for the whole run"
                .to_string(),
            _ => "retry always backs off exponentially: the sleep's ceiling starts at --delay \
                  (-d, 1s) and grows by --multiplier (-m, 2) up to --cap (-c, 30s); -m 1 keeps \
                  it fixed"
                .to_string(),
        }
    }

    /// Which failures are retried, which end the run, what is a success.
    fn verdict_hint(self, value: Option<&str>) -> String {
        match (self, value) {
            (RetryOn, Some(codes)) => format!(
                "retry's is --retry-on-exit {codes} (then any other failing code is \
                 permanent), and --retry-on-output REGEX for output"
            ),
            (RetryOn, None) => "retry's are --retry-on-exit CODES and --retry-on-output \
                                REGEX; without them every failure is retried, a timed-out \
                                attempt too"
                .to_string(),
            (StopOn, codes) => format!(
                "retry's is --stop-on-exit {}, and --stop-on-output REGEX for output",
                codes.unwrap_or("CODES")
            ),
            (Until, value) => until(value),
            (While, value) => repeat_while(value),
            (Invert, _) => "retry's is --until-failure: repeat while the command succeeds, \
                            stop at its first failure"
                .to_string(),
            (AllErrors, _) => "retry retries every failure that no rule makes permanent; \
                               --preset none drops a preset's permanent rules (curl's for \
                               HTTP 4xx)"
                .to_string(),
            _ => "retry's are --success-on-exit CODES (codes that count as success) and \
                  --until-output REGEX (success also needs a matching line)"
                .to_string(),
        }
    }

    /// Time limits, input and output, a command on failure.
    fn run_hint(self, value: Option<&str>) -> String {
        let d = value.unwrap_or("DURATION");
        match self {
            RunTime => {
                format!("retry's is --max-time {d} (-t {d}), the whole run's time, sleeps included")
            }
            AttemptTime => format!("retry's is --timeout {d} (-T {d}), each attempt's time limit"),
            ReplayStdin => {
                "retry's is --stdin replay: every attempt reads the whole input".to_string()
            }
            HoldStdout => {
                "retry's is --buffer-stdout: only a successful attempt's stdout is emitted"
                    .to_string()
            }
            _ => "retry's is --on-give-up CMD, run with /bin/sh -c once when the run fails"
                .to_string(),
        }
    }
}

/// A peer's count as retry's attempts: 0 and negative counts mean no
/// limit to the peers that take them (joshdk's, ctry, recur).
fn count(value: &str) -> Option<String> {
    if value.eq_ignore_ascii_case("unlimited") || value.eq_ignore_ascii_case("inf") {
        return Some("unlimited".to_string());
    }
    let n: i64 = value.parse().ok()?;
    Some(if n <= 0 {
        "unlimited".to_string()
    } else {
        n.to_string()
    })
}

/// The flags that sleep `d` every time; `--cap` too when `d` is over its
/// default (30s).
fn fixed_sleep(d: &str) -> String {
    let over_cap = values::parse_duration(d).is_ok_and(|d| d.as_secs_f64() > 30.0);
    if over_cap {
        format!("-d {d} -m 1 -j none -c {d}")
    } else {
        format!("-d {d} -m 1 -j none")
    }
}

/// `--until CRITERIA` (Debian's: success, fail, codes; winix's: codes).
fn until(value: Option<&str>) -> String {
    match value {
        Some("success" | "true" | "0") => {
            "retry stops at the first success already: leave it out".to_string()
        }
        Some("fail" | "false") => "retry's is --until-failure: repeat while the command \
                                   succeeds, stop at its first failure"
            .to_string(),
        Some(codes) => format!(
            "retry's is --success-on-exit {codes}: exit codes that count as success (0 always does)"
        ),
        None => "retry stops at the first success; --until-failure repeats until a failure, \
                 --success-on-exit CODES counts codes as success, --until-output REGEX also \
                 needs a matching line"
            .to_string(),
    }
}

/// `--while CRITERIA` (Debian's).
fn repeat_while(value: Option<&str>) -> String {
    match value {
        Some("fail" | "false") => {
            "retry repeats while the command fails already: leave it out".to_string()
        }
        Some("success" | "true" | "0") => "retry's is --until-failure: repeat while the \
                                            command succeeds, stop at its first failure"
            .to_string(),
        Some(codes) => format!(
            "retry's is --retry-on-exit {codes}: exit codes worth retrying (any other failing \
             code is then permanent)"
        ),
        None => "retry repeats while the command fails; --retry-on-exit CODES retries only \
                 those codes, --until-failure repeats while it succeeds"
            .to_string(),
    }
}
