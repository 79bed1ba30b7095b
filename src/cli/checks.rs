//! Checks of values that only make sense together (or not at all): a
//! failure is a usage error, exit 125, before anything runs.

use std::ffi::OsString;

use crate::cli::config::UsageError;
use crate::values::CodeSet;

/// A hook's command: not empty (`/bin/sh -c ''` would do nothing, silently).
pub(super) fn hook_command(
    flag: &str,
    command: Option<OsString>,
) -> Result<Option<OsString>, UsageError> {
    match command {
        Some(text) if text.to_string_lossy().trim().is_empty() => Err(UsageError(format!(
            "{flag}: the command is empty (a shell command line is expected)"
        ))),
        other => Ok(other),
    }
}

/// `--foreground` where the system has no terminal process groups to keep
/// the command in (Windows: each attempt runs in a job and a console
/// group of its own, always).
pub(super) fn check_foreground(foreground: bool) -> Result<(), UsageError> {
    match crate::sys::process::NO_FOREGROUND {
        Some(why) if foreground => Err(UsageError(format!("--foreground: {why}"))),
        _ => Ok(()),
    }
}

/// `--success-on-exit` and the exit-code lists must not share a code: the
/// success would silently win over the list.
pub(super) fn check_success_codes(
    success: Option<&CodeSet>,
    lists: [(&str, Option<&CodeSet>); 2],
) -> Result<(), UsageError> {
    let Some(success) = success else {
        return Ok(());
    };
    for (flag, list) in lists {
        let Some(list) = list else { continue };
        if let Some(code) = (0..256).find(|&code| success.contains(code) && list.contains(code)) {
            return Err(UsageError(format!(
                "--success-on-exit {success}: exit code {code} is also in {flag} (a code is either a success or a failure)"
            )));
        }
    }
    Ok(())
}

/// `--retry-on-exit` and `--stop-on-exit` must not share a code: the stop
/// list would silently win (it is asked first), and the other list says
/// the opposite.
pub(super) fn check_exit_lists(
    retry: Option<&CodeSet>,
    stop: Option<&CodeSet>,
) -> Result<(), UsageError> {
    let (Some(retry), Some(stop)) = (retry, stop) else {
        return Ok(());
    };
    match (0..256).find(|&code| retry.contains(code) && stop.contains(code)) {
        Some(code) => Err(UsageError(format!(
            "--retry-on-exit {retry} and --stop-on-exit {stop} both list exit code {code} (a code is either worth retrying or permanent; --retry-on-exit alone already makes every code it does not list permanent)"
        ))),
        None => Ok(()),
    }
}

/// `--successes N` must be reachable within the attempt limit, which
/// counts every attempt (the successes too).
pub(super) fn check_successes(successes: u64, attempts: Option<u64>) -> Result<(), UsageError> {
    match attempts {
        Some(limit) if successes > limit => Err(UsageError(format!(
            "--successes {successes} can never be met within {limit} attempts (--attempts counts every attempt; the default is 5): raise --attempts or give --max-time"
        ))),
        _ => Ok(()),
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

    #[test]
    fn successes_must_fit_in_the_attempts() {
        assert!(check_successes(1, Some(1)).is_ok());
        assert!(check_successes(5, Some(5)).is_ok());
        assert!(check_successes(50, None).is_ok());
        let err = check_successes(6, Some(5)).unwrap_err().0;
        assert!(
            err.starts_with("--successes 6 can never be met within 5 attempts"),
            "{err}"
        );
    }
}
