//! The run's limits: how many attempts, how long, and the deadline an
//! outer run gave this one (`RETRY_DEADLINE`); and what is said at the
//! start about a backoff that cannot be what was asked.

use crate::cli::Cli;
use crate::cli::deadline::{self, OuterDeadline};
use crate::cli::usage::UsageError;

use super::mode::Mode;
use crate::cli::Env;

/// The limits worked out from the flags and the environment (the others
/// are taken from the flags as they are).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Limits {
    /// `None`: unlimited.
    pub(super) attempts: Option<u64>,
    /// `RETRY_DEADLINE`, for what runs the command or explains it.
    pub(super) outer_deadline: Option<OuterDeadline>,
}

/// The attempt limit (5 by default; unlimited with `--max-time` or
/// `--until-failure`), the splay checked against `--max-time`, and the
/// outer deadline, read only by what runs the command (or explains it).
pub(super) fn limits(cli: &Cli, mode: &Mode, env: Env<'_>) -> Result<Limits, UsageError> {
    if let Some(max_time) = cli.max_time
        && !cli.splay.is_zero()
        && cli.splay >= max_time
    {
        return Err(UsageError::SplayNotShorter {
            splay: cli.splay,
            max_time,
        });
    }
    let attempts = match cli.attempts {
        Some(limit) => limit.0,
        // A hunt for a rare failure runs until it finds one, or until
        // --max-time; -n bounds it by count.
        None if cli.max_time.is_some() || cli.until_failure => None,
        None => Some(5),
    };
    let outer_deadline = if mode.is_about_the_command() {
        deadline::from_env(env)?
    } else {
        None
    };
    Ok(Limits {
        attempts,
        outer_deadline,
    })
}

/// `--delay` longer than `--cap`: the cap wins, said at the start.
pub(super) fn delay_over_cap(cli: &Cli) -> Option<String> {
    (cli.delay > cli.cap).then(|| {
        format!(
            "--delay {} is longer than --cap {}: the cap wins, every sleep is at most {}",
            humantime::format_duration(cli.delay),
            humantime::format_duration(cli.cap),
            humantime::format_duration(cli.cap)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::config::fixtures::{cli, env, no_env};

    #[test]
    fn the_attempt_limit_follows_the_flags() {
        for (args, attempts) in [
            (&["true"][..], Some(5)),
            (&["-n", "3", "true"], Some(3)),
            (&["-n", "unlimited", "true"], None),
            (&["-t", "1m", "true"], None),
            (&["-t", "1m", "-n", "7", "true"], Some(7)),
            (&["--until-failure", "true"], None),
            (&["--until-failure", "--tries", "2", "true"], Some(2)),
            (&["--times", "4", "true"], Some(4)),
        ] {
            let limits = limits(&cli(args), &Mode::Run, &no_env).unwrap();
            assert_eq!(limits.attempts, attempts, "{args:?}");
        }
    }

    #[test]
    fn the_splay_must_be_shorter_than_the_run() {
        for (args, refused) in [
            (&["--splay", "5s", "-t", "1s", "true"][..], true),
            (&["--splay", "1s", "-t", "1s", "true"], true),
            (&["--splay", "999ms", "-t", "1s", "true"], false),
            (&["--splay", "0", "-t", "1s", "true"], false),
            (&["--splay", "1h", "true"], false),
        ] {
            let result = limits(&cli(args), &Mode::Run, &no_env);
            assert_eq!(
                matches!(result, Err(UsageError::SplayNotShorter { .. })),
                refused,
                "{args:?}"
            );
        }
        let err = limits(
            &cli(&["--splay", "5s", "-t", "1s", "true"]),
            &Mode::Run,
            &no_env,
        );
        assert_eq!(
            err.unwrap_err().to_string(),
            "--splay 5s must be shorter than --max-time 1s"
        );
    }

    #[test]
    fn the_outer_deadline_binds_only_what_is_about_the_command() {
        let far = "99999999999999";
        let bad = "soon";
        for (mode, value, expected) in [
            (Mode::Run, far, Some(true)),
            (Mode::Explain, far, Some(true)),
            (Mode::PresetList, far, Some(false)),
            (Mode::Run, "", Some(false)),
            (Mode::Run, bad, None),
            (Mode::CircuitStatus, bad, Some(false)),
        ] {
            let pairs = [("RETRY_DEADLINE", value)];
            let found = limits(&cli(&["true"]), &mode, &env(&pairs));
            match expected {
                Some(present) => {
                    assert_eq!(found.unwrap().outer_deadline.is_some(), present, "{mode:?}");
                }
                None => assert!(
                    matches!(found, Err(UsageError::Deadline(_))),
                    "{mode:?} {value}"
                ),
            }
        }
    }

    #[test]
    fn a_delay_over_the_cap_is_said() {
        assert_eq!(
            delay_over_cap(&cli(&["-d", "1s", "-c", "1s", "true"])),
            None
        );
        let said = delay_over_cap(&cli(&["-d", "2s", "-c", "1s", "true"])).unwrap();
        assert!(
            said.starts_with("--delay 2s is longer than --cap 1s"),
            "{said}"
        );
    }
}
