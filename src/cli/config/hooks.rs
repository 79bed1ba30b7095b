//! Hooks and the run's shape beyond the backoff: `--on-retry`,
//! `--on-give-up`, `--until-failure`, `--reset-after`, `--successes` and
//! `--give-up-exit`, each checked against what it could never do.

use std::ffi::OsString;
use std::time::Duration;

use crate::cli::Cli;
use crate::cli::usage::UsageError;

/// How long `--on-give-up` may run when no `--timeout` is given: an alert
/// that hangs must not hold the run (and whatever waits for it) forever.
pub(crate) const GIVE_UP_LIMIT: Duration = Duration::from_secs(60);

/// Hooks and the run's shape beyond the backoff (the success conditions
/// are in `rules`).
#[derive(Debug)]
pub(crate) struct Hooks {
    /// `--on-retry`: a shell command run right before each retry.
    pub(crate) on_retry: Option<OsString>,
    /// `--on-give-up`: a shell command run once when the run fails.
    pub(crate) on_give_up: Option<OsString>,
    /// `--until-failure`: repeat while the command succeeds.
    pub(crate) until_failure: bool,
    /// `--reset-after`: a failed attempt that ran this long resets the backoff.
    pub(crate) reset_after: Option<Duration>,
    /// `--successes`: successful attempts in a row the run needs (1 or more).
    pub(crate) successes: u64,
    /// `--give-up-exit`: the status of a run that ends on a transient failure.
    pub(crate) give_up_exit: Option<u8>,
}

/// A hook's command: not empty (`/bin/sh -c ''` would do nothing, silently).
fn hook_command(
    flag: &'static str,
    command: Option<&OsString>,
) -> Result<Option<OsString>, UsageError> {
    match command {
        Some(text) if text.to_string_lossy().trim().is_empty() => {
            Err(UsageError::EmptyHook { flag })
        }
        other => Ok(other.cloned()),
    }
}

/// The hooks of `cli`; `--successes N` must be reachable within the
/// `attempts` limit, which counts every attempt (the successes too).
pub(super) fn hooks(cli: &Cli, attempts: Option<u64>) -> Result<Hooks, UsageError> {
    let hooks = Hooks {
        on_retry: hook_command("--on-retry", cli.on_retry.as_ref())?,
        on_give_up: hook_command("--on-give-up", cli.on_give_up.as_ref())?,
        until_failure: cli.until_failure,
        reset_after: cli.reset_after,
        successes: cli.successes,
        give_up_exit: cli.give_up_exit,
    };
    match attempts {
        Some(limit) if cli.successes > limit => Err(UsageError::SuccessesOverAttempts {
            successes: cli.successes,
            limit,
        }),
        _ => Ok(hooks),
    }
}

/// `--give-up-exit CODE` where CODE already means something for retry (a
/// success, or a status coreutils `timeout` gave a meaning to): the warning.
pub(super) fn give_up_exit_collision(code: u8) -> Option<String> {
    let meaning = match code {
        0 => "success",
        124 => "that the last attempt timed out",
        125 => "that retry itself failed",
        126 => "that the command could not be executed",
        127 => "that the command was not found",
        _ => return None,
    };
    Some(format!(
        "--give-up-exit {code}: {code} already means {meaning}: a caller cannot tell a run that gave up from that (75, EX_TEMPFAIL, is the usual choice)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::config::fixtures::cli;

    #[test]
    fn successes_must_fit_in_the_attempts() {
        for (args, attempts, ok) in [
            (&["true"][..], Some(1), true),
            (&["--successes", "5", "true"], Some(5), true),
            (&["--successes", "50", "true"], None, true),
            (&["--successes", "6", "true"], Some(5), false),
        ] {
            assert_eq!(hooks(&cli(args), attempts).is_ok(), ok, "{args:?}");
        }
        let err = hooks(&cli(&["--successes", "6", "true"]), Some(5))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("--successes 6 can never be met within 5 attempts"),
            "{err}"
        );
    }

    #[test]
    fn an_empty_hook_is_refused_naming_its_flag() {
        for (args, flag) in [
            (&["--on-retry", "", "true"][..], "--on-retry"),
            (&["--on-give-up", "  ", "true"], "--on-give-up"),
        ] {
            let err = hooks(&cli(args), Some(5)).unwrap_err();
            assert!(matches!(err, UsageError::EmptyHook { flag: f } if f == flag));
            assert_eq!(
                err.to_string(),
                format!("{flag}: the command is empty (a shell command line is expected)")
            );
        }
        let set = hooks(&cli(&["--on-retry", "rm -f lock", "true"]), Some(5)).unwrap();
        assert_eq!(set.on_retry.as_deref(), Some("rm -f lock".as_ref()));
    }

    #[test]
    fn a_give_up_status_that_means_something_else_is_warned_about() {
        for (code, warned) in [(0, true), (1, false), (75, false), (124, true), (127, true)] {
            assert_eq!(give_up_exit_collision(code).is_some(), warned, "{code}");
        }
    }
}
