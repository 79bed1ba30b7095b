//! The run's guards across runs: `--circuit` and `--budget`, and the store
//! they share (a state directory, or Redis from `--state-url` or
//! `RETRY_STATE_URL`, with `--state-ca` or `RETRY_STATE_CA` for TLS).
//! Flags beat the environment, which is read only when a store is needed.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::budget::bucket::BudgetSettings;
use crate::budget::{BudgetConfig, DEFAULT_SETTINGS};
use crate::circuit::{CircuitConfig, adaptive};
use crate::cli::usage::UsageError;
use crate::cli::{CircuitMode, Cli};
use crate::state::{self, StateConfig};

use crate::cli::Env;

/// The circuit and the budget the flags name, if any.
#[derive(Debug)]
pub(super) struct Guards {
    pub(super) circuit: Option<CircuitConfig>,
    pub(super) budget: Option<BudgetConfig>,
}

/// An environment variable for a store: empty is unset, and a value that
/// is not UTF-8 is an error then, not on every run.
fn state_url_from_env(env: Env<'_>) -> Result<Option<String>, UsageError> {
    match env("RETRY_STATE_URL") {
        None => Ok(None),
        Some(value) if value.is_empty() => Ok(None),
        Some(value) => value
            .into_string()
            .map(Some)
            .map_err(|_: OsString| UsageError::StateUrlNotUtf8),
    }
}

/// The state URL and where it came from (errors name it): `--state-url`,
/// else `RETRY_STATE_URL` unless `--state-dir` is given; only when a
/// circuit or a budget needs a store.
fn state_url(cli: &Cli, env: Env<'_>) -> Result<Option<(String, &'static str)>, UsageError> {
    let needs_state = cli.circuit.is_some() || cli.budget.is_some();
    // `--state-url` has no clap `env`: the variable is read here.
    let url = match (needs_state, cli.state_url.is_empty(), &cli.state_dir) {
        (true, false, _) => Some((
            state::seeds_as_one_url(&cli.state_url).map_err(UsageError::State)?,
            "--state-url",
        )),
        (true, true, None) => state_url_from_env(env)?.map(|url| (url, "RETRY_STATE_URL")),
        _ => None,
    };
    if let Some((url, origin)) = &url {
        state::check_state_url(url, origin).map_err(UsageError::State)?;
    }
    Ok(url)
}

/// The store both guards use: the CA file is read now, so that a bad one
/// stops the run before anything runs. `--state-ca` without a `rediss://`
/// URL would be ignored silently: refused, as a state flag without a
/// circuit or a budget is; `RETRY_STATE_CA` is read only by the runs that
/// use TLS.
fn store(cli: &Cli, env: Env<'_>) -> Result<StateConfig, UsageError> {
    let url = state_url(cli, env)?;
    let tls = url
        .as_ref()
        .is_some_and(|(url, _)| state::state_url_uses_tls(url));
    let ca = match (&cli.state_ca, tls) {
        (Some(path), true) => {
            state::read_state_ca(path, "--state-ca").map_err(UsageError::State)?
        }
        (Some(path), false) => return Err(UsageError::StateCaUnused(path.clone())),
        // Empty counts as unset.
        (None, true) => match env("RETRY_STATE_CA").filter(|v| !v.is_empty()) {
            Some(path) => state::read_state_ca(&PathBuf::from(path), "RETRY_STATE_CA")
                .map_err(UsageError::State)?,
            None => Vec::new(),
        },
        (None, false) => Vec::new(),
    };
    Ok(StateConfig {
        dir: cli.state_dir.clone(),
        url: url.map(|(url, _)| url),
        ca,
        timeout: cli.state_timeout,
    })
}

/// The adaptive mode's settings, if `--circuit-mode adaptive`; a flag of
/// the other mode is refused, as it would be ignored.
fn adaptive_settings(cli: &Cli) -> Result<Option<adaptive::Settings>, UsageError> {
    let other = |flag, value: Option<String>, mode| match value {
        Some(value) => Err(UsageError::OtherCircuitMode { flag, value, mode }),
        None => Ok(()),
    };
    let shown = |d: Option<Duration>| d.map(|d| humantime::format_duration(d).to_string());
    if cli.circuit_mode != Some(CircuitMode::Adaptive) {
        other(
            "--circuit-k",
            cli.circuit_k.map(|k| k.to_string()),
            "adaptive",
        )?;
        other("--circuit-window", shown(cli.circuit_window), "adaptive")?;
        return Ok(None);
    }
    let threshold = cli.circuit_threshold.map(|n| n.to_string());
    other("--circuit-threshold", threshold, "breaker")?;
    other("--circuit-cooldown", shown(cli.circuit_cooldown), "breaker")?;
    other(
        "--circuit-max-cooldown",
        shown(cli.circuit_max_cooldown),
        "breaker",
    )?;
    let k = cli.circuit_k.unwrap_or(adaptive::DEFAULT_K);
    if !adaptive::K_RANGE.contains(&k) {
        return Err(UsageError::CircuitK(k));
    }
    let window = cli.circuit_window.unwrap_or(adaptive::DEFAULT_WINDOW);
    if !(Duration::from_secs(1)..=Duration::from_secs(24 * 3600)).contains(&window) {
        return Err(UsageError::CircuitWindow(window));
    }
    Ok(Some(adaptive::Settings { k, window }))
}

/// The circuit's and the budget's settings, in their store.
pub(super) fn guards(cli: &Cli, env: Env<'_>) -> Result<Guards, UsageError> {
    let cooldown = cli.circuit_cooldown.unwrap_or(Duration::from_secs(60));
    let max_cooldown = cli
        .circuit_max_cooldown
        .unwrap_or(Duration::from_secs(3600));
    if max_cooldown < cooldown {
        return Err(UsageError::CooldownsReversed {
            max: max_cooldown,
            cooldown,
        });
    }
    let adaptive = adaptive_settings(cli)?;
    let state = store(cli, env)?;
    let budget = cli.budget.clone().map(|name| BudgetConfig {
        name,
        state: state.clone(),
        settings: BudgetSettings {
            ratio: cli.budget_ratio.unwrap_or(DEFAULT_SETTINGS.ratio),
            min_per_ms: cli.budget_min.unwrap_or(DEFAULT_SETTINGS.min_per_ms),
            burst: cli.budget_burst.map_or(DEFAULT_SETTINGS.burst, f64::from),
        },
        explicit: cli.budget_ratio.is_some()
            || cli.budget_min.is_some()
            || cli.budget_burst.is_some(),
    });
    let circuit = cli.circuit.clone().map(|name| CircuitConfig {
        name,
        state,
        settings: crate::circuit::breaker::Settings {
            threshold: cli.circuit_threshold.unwrap_or(3),
            cooldown,
            max_cooldown,
            // A probe that never reports back holds its claim this long
            // (a dead probe on this machine loses it at once).
            probe_lease: cli.max_time.unwrap_or(max_cooldown).max(cooldown),
        },
        adaptive,
    });
    Ok(Guards { circuit, budget })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::config::fixtures::{cli, env, no_env};

    #[test]
    fn the_state_url_comes_from_the_flag_then_the_environment() {
        let from_env = [("RETRY_STATE_URL", "redis://from-env:6379")];
        let empty = [("RETRY_STATE_URL", "")];
        for (args, pairs, expected) in [
            (
                &["--circuit", "c", "true"][..],
                &from_env[..],
                Some("redis://from-env:6379"),
            ),
            (
                &["--circuit", "c", "--state-url", "redis://flag:6379", "true"],
                &from_env,
                Some("redis://flag:6379"),
            ),
            // --state-dir beats the variable; so does no circuit at all.
            (
                &["--circuit", "c", "--state-dir", "/tmp/s", "true"],
                &from_env,
                None,
            ),
            (&["true"], &from_env, None),
            (&["--budget", "b", "true"], &empty, None),
        ] {
            let guards = guards(&cli(args), &env(pairs)).unwrap();
            let state = guards
                .circuit
                .map(|c| c.state)
                .or(guards.budget.map(|b| b.state));
            assert_eq!(
                state.and_then(|s| s.url).as_deref(),
                expected,
                "{args:?} {pairs:?}"
            );
        }
    }

    #[test]
    fn a_state_url_or_ca_that_cannot_be_used_is_refused() {
        let bad = [("RETRY_STATE_URL", "http://x")];
        let err = guards(&cli(&["--circuit", "c", "true"]), &env(&bad)).unwrap_err();
        assert!(
            matches!(&err, UsageError::State(m) if m.contains("RETRY_STATE_URL")),
            "{err:?}"
        );
        let err = guards(
            &cli(&[
                "--circuit",
                "c",
                "--state-url",
                "redis://h:1",
                "--state-ca",
                "/x.pem",
                "true",
            ]),
            &no_env,
        )
        .unwrap_err();
        assert!(matches!(err, UsageError::StateCaUnused(_)), "{err:?}");
        assert!(
            err.to_string()
                .starts_with("--state-ca /x.pem: only a rediss:// state URL")
        );
    }

    #[test]
    fn cooldowns_must_grow() {
        let args = [
            "--circuit",
            "c",
            "--circuit-cooldown",
            "5m",
            "--circuit-max-cooldown",
            "1m",
            "true",
        ];
        let err = guards(&cli(&args), &no_env).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--circuit-max-cooldown 1m is shorter than --circuit-cooldown 5m"
        );
    }

    #[test]
    fn each_circuit_mode_takes_its_own_flags() {
        let adaptive = |extra: &[&str]| {
            let mut args = vec!["--circuit", "c", "--circuit-mode", "adaptive"];
            args.extend_from_slice(extra);
            args.push("true");
            guards(&cli(&args), &no_env).map(|g| g.circuit.unwrap().adaptive)
        };
        let defaults = adaptive(&[]).unwrap().unwrap();
        assert!((defaults.k - 2.0).abs() < f64::EPSILON);
        assert_eq!(defaults.window, Duration::from_secs(120));
        let given = adaptive(&["--circuit-k", "1.5", "--circuit-window", "30s"]);
        let given = given.unwrap().unwrap();
        assert!((given.k - 1.5).abs() < f64::EPSILON);
        assert_eq!(given.window, Duration::from_secs(30));
        let breaker = guards(&cli(&["--circuit", "c", "true"]), &no_env).unwrap();
        assert!(breaker.circuit.unwrap().adaptive.is_none());
        // A flag of the other mode: tests/integration/adaptive_throttling.rs
        // checks each, end to end.
        let err = adaptive(&["--circuit-threshold", "5"]).unwrap_err();
        assert!(matches!(err, UsageError::OtherCircuitMode { .. }), "{err}");
        for (extra, expected) in [
            (
                &["--circuit-k", "0.5"][..],
                "--circuit-k 0.5: K is a number from 1 to 1000",
            ),
            (&["--circuit-k", "NaN"], "--circuit-k NaN: "),
            (&["--circuit-k", "1001"], "--circuit-k 1001: "),
            (
                &["--circuit-window", "500ms"],
                "--circuit-window 500ms: the window is from 1s to 24h",
            ),
            (&["--circuit-window", "2d"], "--circuit-window 2days: "),
        ] {
            let err = adaptive(extra).unwrap_err();
            assert!(err.to_string().starts_with(expected), "{err}");
        }
    }

    #[test]
    fn the_budget_keeps_its_defaults_unless_given() {
        let plain = guards(&cli(&["--budget", "b", "true"]), &no_env).unwrap();
        let budget = plain.budget.unwrap();
        assert!(!budget.explicit);
        assert!((budget.settings.burst - DEFAULT_SETTINGS.burst).abs() < f64::EPSILON);
        let given = guards(
            &cli(&["--budget", "b", "--budget-burst", "3", "true"]),
            &no_env,
        );
        let budget = given.unwrap().budget.unwrap();
        assert!(budget.explicit);
        assert!((budget.settings.burst - 3.0).abs() < f64::EPSILON);
    }
}
