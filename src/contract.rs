//! The public contract that is more than flags, written once: exit
//! statuses, environment variables and the kinds of warning events. Each
//! is a table of rows; `--help`'s epilogue, the man page and the generated
//! blocks of the guide (docs/) are rendered from these rows (`cli::contract_text`),
//! and a test compares every rendering with them.
//!
//! Data only: no I/O, no formatting beyond the words themselves. Texts are
//! written lower-case, without a final period, with `code` in backticks;
//! each rendering turns them into its own form (a man page sentence, a
//! Markdown table cell, a plain help line). No text holds a `|`.

/// One exit status of retry's.
#[derive(Debug)]
pub(crate) struct Status {
    /// The status as written: `0`, `124`, `the command's`, `signal N`.
    pub(crate) code: &'static str,
    /// A few words for `--help`, when the status is listed there.
    pub(crate) brief: Option<&'static str>,
    /// What it means, in full (man page, the guide).
    pub(crate) meaning: &'static str,
}

/// Retry's exit statuses, in the order they are documented.
pub(crate) const EXIT_STATUSES: &[Status] = &[
    Status {
        code: "0",
        brief: Some("success"),
        meaning: "an attempt succeeded (exit 0 or a `--success-on-exit` code, with an `--until-output` line when asked); with `--until-failure`, every run passed",
    },
    Status {
        code: "the command's",
        brief: Some(
            "the final attempt's own status, when retries run out or a failure is permanent",
        ),
        meaning: "the final attempt failed with that exit code (permanent, or a limit was reached); 1 when it exited 0 but no line matched `--until-output`; with `--until-failure`, the first failure's",
    },
    Status {
        code: "124",
        brief: Some("timed out (137 if SIGKILL was needed)"),
        meaning: "the final attempt was terminated by `--timeout` or `--max-time` (137 if SIGKILL was needed after `--kill-after`); also a run whose deadline (`RETRY_DEADLINE`) had passed before its first attempt",
    },
    Status {
        code: "CODE",
        brief: Some("--give-up-exit CODE: the run ended on a transient failure"),
        meaning: "`--give-up-exit CODE`: the run ended on a transient failure (attempts exhausted, `--max-time` or `RETRY_DEADLINE`, the retry budget refused, a circuit open), for a CI system to retry the job. A permanent failure keeps the command's status, retry's own errors theirs (125 and the like), a signal its own; the JSON `done` event still gives the command's status as `command_exit_code`",
    },
    Status {
        code: "125",
        brief: Some(
            "retry's own error (usage, a store that --circuit-status and the like cannot use, output that could not be delivered)",
        ),
        meaning: "retry itself failed: a usage error or a bad flag value (nothing was run), a state store that `--circuit-status`, `--circuit-reset`, `--budget-status` or `--budget-reset` cannot use (a run with `--circuit` or `--budget` warns and goes on instead), a `--stdin replay` spool that filled up, or output that could not be delivered (`--buffer-stdout`, `-o`), even after a successful attempt",
    },
    Status {
        code: "126",
        brief: Some("not executable"),
        meaning: "the command was found but could not be executed",
    },
    Status {
        code: "127",
        brief: Some("not found"),
        meaning: "the command was not found",
    },
    Status {
        code: "75",
        brief: Some("a --circuit is open (or throttled the run) and nothing ran"),
        meaning: "a circuit (`--circuit`) is open, or in `--circuit-mode adaptive` rejected the run locally: the command was not run; try again later (EX_TEMPFAIL, the cron and mail convention)",
    },
    Status {
        code: "signal N",
        brief: Some(
            "the attempt died of signal N, or retry received it: retry dies of N too (a shell shows 128+N)",
        ),
        meaning: "the final attempt died of signal N: retry re-raises N on itself (core dumps off), so a shell sees 128+N and a script stops as it would for the command; 128+N where re-raising is impossible (as PID 1). A command that died of SIGPIPE (its reader went away) ends the run quietly with 141",
    },
    Status {
        code: "signal N",
        brief: None,
        meaning: "retry received a signal that ends a process by default (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGABRT, SIGXCPU, SIGVTALRM, SIGPROF, SIGPWR, the real-time signals...): it forwarded N to the attempt (or cut its sleep short), started no further attempt, and dies of N the same way",
    },
];

/// Who is given an environment variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Whom {
    /// Each attempt.
    Command,
    /// Each attempt, and `--on-retry` for the attempt to come.
    CommandAndOnRetry,
    /// Each attempt and both hooks.
    CommandAndHooks,
    /// `--on-give-up`.
    OnGiveUp,
}

impl Whom {
    /// As the guide and the man page say it.
    pub(crate) fn words(self) -> &'static str {
        match self {
            Whom::Command => "the command",
            Whom::CommandAndOnRetry => "the command and `--on-retry`",
            Whom::CommandAndHooks => "the command and the hooks",
            Whom::OnGiveUp => "`--on-give-up`",
        }
    }
}

/// One environment variable (or a few that go together).
#[derive(Debug)]
pub(crate) struct Variable {
    /// `RETRY_ATTEMPT`, or `XDG_STATE_HOME, HOME`.
    pub(crate) name: &'static str,
    /// Given to the command or a hook, and what it holds then.
    pub(crate) given: Option<(Whom, &'static str)>,
    /// Read by retry itself, and what it does with it.
    pub(crate) read: Option<&'static str>,
    /// A few words for `--help` after the name, when any are needed.
    pub(crate) brief: Option<&'static str>,
}

/// The environment retry gives and reads, in the order documented.
pub(crate) const ENVIRONMENT: &[Variable] = &[
    Variable {
        name: "RETRY_ATTEMPT",
        given: Some((Whom::CommandAndOnRetry, "this attempt's number, from 1")),
        read: Some(
            "found in retry's own environment, it means retry runs inside another retry, which it warns about (attempts multiply) unless an outer deadline (`RETRY_DEADLINE`) bounds it; empty counts as unset",
        ),
        brief: None,
    },
    Variable {
        name: "RETRY_MAX_ATTEMPTS",
        given: Some((
            Whom::CommandAndHooks,
            "the attempt limit, empty when unlimited",
        )),
        read: None,
        brief: None,
    },
    Variable {
        name: "RETRY_RUN_ID",
        given: Some((
            Whom::CommandAndHooks,
            "a random identifier, the same for every attempt of one run (usable as an idempotency key)",
        )),
        read: None,
        brief: None,
    },
    Variable {
        name: "RETRY_PREVIOUS_EXIT",
        given: Some((
            Whom::CommandAndOnRetry,
            "the previous attempt's exit status as retry reports it (128+N for signal N; 124 when it timed out, 137 when it then had to be killed), empty on the first attempt",
        )),
        read: None,
        brief: None,
    },
    Variable {
        name: "RETRY_DEPTH",
        given: Some((
            Whom::Command,
            "how deep the retry that runs the command is nested: 1 for an outermost retry, 2 for a retry inside another's attempt, and so on",
        )),
        read: Some(
            "a retry that finds it is one level deeper and marks its lines `retry[N]:` (N its depth) so nested runs can be told apart; not a whole number from 1 to 99, or unset while `RETRY_ATTEMPT` is set (an outer retry of an older version), it counts as 1",
        ),
        brief: None,
    },
    Variable {
        name: "RETRY_HEDGE",
        given: Some((
            Whom::Command,
            "with `--hedge-after`: which copy of the attempt this is, 0 for the first, 1, 2 ... for its hedges (each has its own `RETRY_HINT_FILE`)",
        )),
        read: None,
        brief: None,
    },
    Variable {
        name: "RETRY_HINT_FILE",
        given: Some((
            Whom::Command,
            "a path in a private directory of the run that the attempt may write one word to, which decides over every rule except what is decided first (a success, a timeout, a death by SIGINT, SIGQUIT or SIGPIPE): `permanent` (stop now), `transient` (retry), `throttled` (retry, the backoff growing from the larger of `--delay` and `--throttle-delay`), or `retry-after=DURATION` (retry after exactly that long, not clamped by `--cap`; a request longer than `--max-retry-after` ends the run, as a server's does). It may also hold the headers of an HTTP response, as `curl -D \"$RETRY_HINT_FILE\"` writes them: they are read as the response headers in the output are, with or without `--retry-after`. Only a regular file of at most 256 KiB is read, after the attempt; it is removed before the next. Empty (no hint file, with a warning) only where no private directory can be made at all: no `$TMPDIR` and no usable place (an empty root without /tmp)",
        )),
        read: None,
        brief: Some(
            "write 'permanent', 'transient' or 'retry-after=DURATION' there to decide for yourself",
        ),
    },
    Variable {
        name: "RETRY_DEADLINE",
        given: Some((
            Whom::CommandAndHooks,
            "the run's deadline (`--max-time`, or an outer one) as Unix time in milliseconds (not `--timeout`, which is an attempt's); unset when the run has none",
        )),
        read: Some(
            "a retry started inside another (or by a CI job that sets it) cuts its `--max-time` to what is left; past, no attempt starts (exit 124); not a whole number of milliseconds, exit 125; empty counts as unset",
        ),
        brief: Some(
            "Unix time in ms, when the run has a deadline: a retry that finds it cuts its own --max-time to what is left",
        ),
    },
    Variable {
        name: "RETRY_EXIT",
        given: Some((
            Whom::OnGiveUp,
            "the status retry is about to exit with (128+N for signal N)",
        )),
        read: None,
        brief: None,
    },
    Variable {
        name: "RETRY_OUTCOME",
        given: Some((
            Whom::OnGiveUp,
            "how the run ended, as the JSON `done` event's outcome: `exhausted`, `deadline`, `permanent` or `budget-exhausted`",
        )),
        read: None,
        brief: None,
    },
    Variable {
        name: "RETRY_ATTEMPTS",
        given: Some((Whom::OnGiveUp, "the number of attempts that ran")),
        read: None,
        brief: None,
    },
    Variable {
        name: "RETRY_STATE_DIR",
        given: None,
        read: Some(
            "where circuits (`--circuit`) and budgets (`--budget`) are kept when neither `--state-dir` nor a Redis URL is given; when it is unset or empty, `$XDG_STATE_HOME/retry`, else `$HOME/.local/state/retry`, else the same under the password entry's home, else `/tmp/retry-state-UID`. A home counts when it is an absolute path to an existing directory that can hold the state directory: a missing or relative one is skipped, never created",
        ),
        brief: None,
    },
    Variable {
        name: "RETRY_STATE_URL",
        given: None,
        read: Some(
            "a Redis URL (`redis://[user:password@]host:port/db`, `rediss://` for TLS; `redis://host:port,host:port` for the seed nodes of a Redis Cluster; `redis+sentinel://host:26379,host/master[/db]` for Sentinel) where circuits and budgets are kept, shared by a fleet; the same as `--state-url`, but ignored when `--state-dir` is given, and empty counts as unset. Read only when a circuit or budget needs a store",
        ),
        brief: None,
    },
    Variable {
        name: "RETRY_STATE_CA",
        given: None,
        read: Some(
            "a PEM file of CA certificates a `rediss://` server's certificate may chain to, besides the system's trust store and the public web roots; the same as `--state-ca`, which wins. Empty counts as unset. Read only when a `rediss://` URL is used",
        ),
        brief: None,
    },
    Variable {
        name: "RETRY_PRESETS",
        given: None,
        read: Some(
            "a presets file read instead of `$XDG_CONFIG_HOME/retry/presets.toml` (see PRESETS in the man page); it must exist. Empty counts as unset",
        ),
        brief: None,
    },
    Variable {
        name: "XDG_CONFIG_HOME",
        given: None,
        read: Some(
            "where the user's presets file is looked for: `$XDG_CONFIG_HOME/retry/presets.toml`, else `~/.config/retry/presets.toml`",
        ),
        brief: None,
    },
    Variable {
        name: "XDG_STATE_HOME, HOME",
        given: None,
        read: Some("where the state directory is when `RETRY_STATE_DIR` is not set (see above)"),
        brief: None,
    },
    Variable {
        name: "TMPDIR",
        given: None,
        read: Some(
            "where the run's private directory (for `RETRY_HINT_FILE`) and the unnamed spools of `--stdin replay` and `--buffer-stdout` go. Empty counts as unset",
        ),
        brief: None,
    },
    Variable {
        name: "XDG_RUNTIME_DIR",
        given: None,
        read: Some(
            "where the run's private directory goes when `TMPDIR` is not set, if it is the user's own 0700 directory with 1 MiB free (else, for root, `/dev/shm`, sticky and with 1 MiB free; else `/tmp`): a file system in memory, so a plain run writes nothing to disk",
        ),
        brief: None,
    },
    Variable {
        name: "NO_COLOR",
        given: None,
        read: Some(
            "when set and not empty, `--color auto` never colours retry's messages (`--color always` still does)",
        ),
        brief: None,
    },
    Variable {
        name: "CLICOLOR, CLICOLOR_FORCE, TERM",
        given: None,
        read: Some(
            "under `--color auto`: `CLICOLOR=0` or `TERM=dumb` turns colour off; a non-empty `CLICOLOR_FORCE` turns it on even off a terminal, unless `NO_COLOR` is set (the rules of the anstream crate, which ripgrep and fd follow too)",
        ),
        brief: None,
    },
    Variable {
        name: "GITHUB_ACTIONS, GITLAB_CI",
        given: None,
        read: Some(
            "when `true` (exactly), and no `--log-format` is given, retry's messages are in the `github` or `gitlab` format: each attempt folded, failures (and retry's own errors, usage errors included) as annotations on GitHub",
        ),
        brief: None,
    },
    Variable {
        name: "GITHUB_OUTPUT, GITHUB_STEP_SUMMARY",
        given: None,
        read: Some(
            "when set (to existing regular files), the outermost retry appends its outputs (`attempts`, `exit_code`, `outcome`) and a summary table of the attempts at the end of every run, whatever the log format",
        ),
        brief: None,
    },
];

/// The kinds of warning events (`{"event":"warning","kind":...}`): every
/// `kind` retry emits is one of these constants.
pub(crate) mod warning {
    /// A retry runs inside another's attempt.
    pub(crate) const NESTED: &str = "nested";
    /// A setting that does not take effect as given.
    pub(crate) const POLICY: &str = "policy";
    /// A hook failed, or was not run.
    pub(crate) const HOOK: &str = "hook";
    /// The circuit's store, state or result.
    pub(crate) const CIRCUIT: &str = "circuit";
    /// The retry budget's store or state.
    pub(crate) const BUDGET: &str = "budget";
    /// Output that could not be passed on or held.
    pub(crate) const OUTPUT: &str = "output";
    /// The hint file.
    pub(crate) const HINT: &str = "hint";
    /// A Retry-After (or hint) not obeyed.
    pub(crate) const RETRY_AFTER: &str = "retry-after";
    /// What later attempts read.
    pub(crate) const STDIN: &str = "stdin";
    /// Advice about a preset's command line.
    pub(crate) const PRESET: &str = "preset";
    /// The GitHub Actions step files.
    pub(crate) const CI: &str = "ci";
    /// The processes an attempt started.
    pub(crate) const PROCESSES: &str = "processes";
    /// `--hedge-after`.
    pub(crate) const HEDGING: &str = "hedging";
}

/// One kind of warning event.
#[derive(Debug)]
pub(crate) struct WarningKind {
    /// The event's `kind`: one of the constants of [`warning`].
    pub(crate) kind: &'static str,
    /// What it warns about.
    pub(crate) meaning: &'static str,
}

/// Every kind of warning event, in the order documented.
pub(crate) const WARNING_KINDS: &[WarningKind] = &[
    WarningKind {
        kind: warning::NESTED,
        meaning: "retry runs inside another retry's attempt (`RETRY_ATTEMPT` is set) without an outer deadline: the attempts multiply",
    },
    WarningKind {
        kind: warning::POLICY,
        meaning: "a setting that does not take effect as given (`--delay` longer than `--cap`, a `--give-up-exit` status that already means something, a user presets file ignored, a curl or wget command line whose failures a preset cannot tell apart)",
    },
    WarningKind {
        kind: warning::HOOK,
        meaning: "`--on-retry` or `--on-give-up` failed, timed out, or was not run (the outer deadline had passed)",
    },
    WarningKind {
        kind: warning::CIRCUIT,
        meaning: "the circuit's store cannot be used (the run goes on as if the circuit were closed), its state is corrupt or was stored with other settings (a threshold and cooldowns, or an adaptive circuit's K and window), or the run's result could not be recorded",
    },
    WarningKind {
        kind: warning::BUDGET,
        meaning: "the retry budget's store cannot be used (the run goes on without it), or its state is corrupt or was stored with other settings",
    },
    WarningKind {
        kind: warning::OUTPUT,
        meaning: "the command's output could not be passed on or held (the rest of the attempt's is lost), or held stdout was dropped on give-up",
    },
    WarningKind {
        kind: warning::HINT,
        meaning: "the hint file: no private directory for it, or what the attempt left there could not be read or understood",
    },
    WarningKind {
        kind: warning::RETRY_AFTER,
        meaning: "a wait a server (`Retry-After`, the rate-limit headers) or the hint file asked for, longer than `--max-retry-after` or ending past `--max-time`: the run ended on it, never answered by a shorter sleep",
    },
    WarningKind {
        kind: warning::STDIN,
        meaning: "later attempts do not get the whole input (stdin is a pipe, or the `--stdin replay` spool failed)",
    },
    WarningKind {
        kind: warning::PRESET,
        meaning: "advice about the command line of a preset's command (what to add to a curl or wget command line: `-f`, `-S`, `-D /dev/stderr`)",
    },
    WarningKind {
        kind: warning::CI,
        meaning: "a GitHub Actions step file (`$GITHUB_OUTPUT`, `$GITHUB_STEP_SUMMARY`) could not be written",
    },
    WarningKind {
        kind: warning::HEDGING,
        meaning: "`--hedge-after`: what `p95` learned from earlier runs cannot be read or kept (the run is not hedged, or learns nothing), a hedge could not be set up (no room for its spools: the attempt goes on without it), or the delay is not under `--timeout` (copies never run together)",
    },
    WarningKind {
        kind: warning::PROCESSES,
        meaning: "what an attempt started may outlive it: no watchdog process (should retry be killed with SIGKILL), the system refused to let retry adopt orphans, or no process table to find an attempt's processes in retry's own process group",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_fit_every_rendering() {
        let texts = EXIT_STATUSES
            .iter()
            .flat_map(|s| [Some(s.meaning), s.brief])
            .chain(
                ENVIRONMENT
                    .iter()
                    .flat_map(|v| [v.given.map(|(_, text)| text), v.read, v.brief]),
            )
            .chain(WARNING_KINDS.iter().map(|w| Some(w.meaning)))
            .flatten();
        for text in texts {
            assert!(!text.contains('|'), "a table cell: {text}");
            assert!(!text.ends_with('.'), "no final period: {text}");
            assert_eq!(text.matches('`').count() % 2, 0, "{text}");
        }
        // The man page capitalises the first word, a table cell of the guide does not:
        // a text starts as it would within a sentence.
        let starts = EXIT_STATUSES
            .iter()
            .map(|s| s.meaning)
            .chain(WARNING_KINDS.iter().map(|w| w.meaning));
        for text in starts {
            assert!(!text.starts_with(char::is_uppercase), "lower-case: {text}");
        }
    }

    #[test]
    fn each_kind_and_variable_is_listed_once() {
        let mut kinds: Vec<&str> = WARNING_KINDS.iter().map(|w| w.kind).collect();
        kinds.sort_unstable();
        kinds.dedup();
        assert_eq!(kinds.len(), WARNING_KINDS.len());
        let mut names: Vec<&str> = ENVIRONMENT.iter().map(|v| v.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ENVIRONMENT.len());
        for variable in ENVIRONMENT {
            assert!(variable.given.is_some() || variable.read.is_some());
        }
    }
}
