//! The circuit breaker's state machine, pure: the clock comes in as `now`
//! (milliseconds since the Unix epoch, shared by every process and host),
//! and whether another run's probe is still alive is asked of the caller.
//!
//! Closed: runs go ahead; `threshold` failed runs in a row open it.
//! Open: runs are refused until the cooldown has passed.
//! Half-open: exactly one run, the probe, goes ahead; the others are
//! refused. Its success closes the circuit and resets everything; its failure
//! reopens it with the cooldown doubled (up to the maximum). A probe that
//! vanished without a word (killed, its host gone) loses its claim when its
//! lease ends or, on the same host, when its process is gone.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::state::MOST_AHEAD_MS;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Phase {
    #[default]
    Closed,
    Open,
    HalfOpen,
}

impl Phase {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Phase::Closed => "closed",
            Phase::Open => "open",
            Phase::HalfOpen => "half-open",
        }
    }
}

/// Who runs the half-open probe, and until when the claim holds. The
/// host name alone does not name a machine (containers and sandboxes share
/// the host's), nor a pid a process: where they are known, the boot, the
/// PID namespace and the process's start time say where the pid means
/// what it meant to the probe (see `liveness`). Absent in states written
/// before they were kept, and where the system has no such names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Probe {
    pub(crate) host: String,
    pub(crate) pid: u32,
    pub(crate) started_ms: u64,
    pub(crate) lease_until_ms: u64,
    /// The machine's boot (Linux: `boot_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) boot_id: Option<String>,
    /// The PID namespace `pid` is counted in (the inode naming it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) pid_ns: Option<u64>,
    /// The process's start time, in the system's units since boot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) start: Option<u64>,
}

impl Probe {
    /// The same process: the same host, pid, and whatever else both name.
    pub(crate) fn same_process(&self, other: &Probe) -> bool {
        self.host == other.host
            && self.pid == other.pid
            && self.boot_id == other.boot_id
            && self.pid_ns == other.pid_ns
            && self.start == other.start
    }
}

/// What is stored per circuit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub(crate) struct CircuitState {
    pub(crate) phase: Phase,
    /// Failed runs in a row.
    pub(crate) failures: u32,
    /// While open: when the cooldown ends.
    pub(crate) open_until_ms: Option<u64>,
    /// The cooldown now in force (doubles per failed probe); 0 before the
    /// circuit first opens.
    pub(crate) cooldown_ms: u64,
    pub(crate) probe: Option<Probe>,
    pub(crate) updated_ms: u64,
    /// The settings of the run that last recorded a result, so that
    /// `--circuit-status` shows what the circuit opens at (absent in states
    /// written before they were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) settings: Option<StoredSettings>,
}

/// A circuit's settings as stored with its state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StoredSettings {
    pub(crate) threshold: u32,
    pub(crate) cooldown_ms: u64,
    pub(crate) max_cooldown_ms: u64,
}

impl From<&Settings> for StoredSettings {
    fn from(settings: &Settings) -> StoredSettings {
        StoredSettings {
            threshold: settings.threshold,
            cooldown_ms: ms(settings.cooldown),
            max_cooldown_ms: ms(settings.max_cooldown),
        }
    }
}

/// The latest time a stored state may name: the last millisecond of the
/// year 9999, the last one an RFC 3339 timestamp can show.
pub(crate) const LATEST_MS: u64 = 253_402_300_799_999;

/// The longest cooldown a stored state may carry: 100 years, the longest
/// duration any flag accepts.
pub(crate) const LONGEST_COOLDOWN_MS: u64 = 36_525 * 24 * 3600 * 1000;

/// More failed runs in a row than any real circuit sees (one a second for
/// thirty years).
pub(crate) const MOST_FAILURES: u32 = 1_000_000_000;

impl CircuitState {
    /// Whether a decoded state is in range. Stored states come from files
    /// and servers others may write: a time past the year 9999 cannot be
    /// printed, a pid past `i32::MAX` names a process group, a host with
    /// control characters would forge lines in messages. Times before 2000
    /// are harmless (they are past) and are what a host with an unset clock
    /// writes, so they are allowed.
    pub(crate) fn check(&self) -> Result<(), String> {
        let time = |what: &str, ms: u64| {
            if ms > LATEST_MS {
                Err(format!("{what} {ms} is past the year 9999"))
            } else {
                Ok(())
            }
        };
        time("open_until_ms", self.open_until_ms.unwrap_or(0))?;
        time("updated_ms", self.updated_ms)?;
        if self.cooldown_ms > LONGEST_COOLDOWN_MS {
            return Err(format!(
                "cooldown_ms {} is longer than 100 years",
                self.cooldown_ms
            ));
        }
        if self.failures > MOST_FAILURES {
            return Err(format!("failures {} is out of range", self.failures));
        }
        if let Some(settings) = &self.settings {
            let in_range = (1..=MOST_FAILURES).contains(&settings.threshold)
                && settings.cooldown_ms <= LONGEST_COOLDOWN_MS
                && settings.max_cooldown_ms <= LONGEST_COOLDOWN_MS;
            if !in_range {
                return Err("settings out of range".into());
            }
        }
        if let Some(probe) = &self.probe {
            time("probe.started_ms", probe.started_ms)?;
            time("probe.lease_until_ms", probe.lease_until_ms)?;
            if probe.pid == 0 || probe.pid > i32::MAX as u32 {
                return Err(format!("probe.pid {} is no process id", probe.pid));
            }
            if probe.host.len() > 255 || probe.host.chars().any(char::is_control) {
                return Err("probe.host is no host name".into());
            }
            let boot_id_plain = |id: &String| {
                id.len() <= 64 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
            };
            if !probe.boot_id.as_ref().is_none_or(boot_id_plain) {
                return Err("probe.boot_id is no boot id".into());
            }
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    pub(crate) threshold: u32,
    pub(crate) cooldown: Duration,
    pub(crate) max_cooldown: Duration,
    /// How long a probe's claim holds if it never reports back.
    pub(crate) probe_lease: Duration,
}

/// The answer to "may this run go ahead?".
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Closed: run as usual.
    Run,
    /// Half-open: run, as the one probe.
    Probe,
    /// Open (or another run is probing): do not run before `until_ms`.
    Refuse { until_ms: u64, probing: bool },
}

/// How the run that was admitted ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RunResult {
    Success,
    /// Retry exits non-zero because the command failed.
    Failure,
    /// Interrupted by a signal: says nothing about the dependency.
    Aborted,
}

fn ms(duration: Duration) -> u64 {
    duration.as_millis().min(u128::from(u64::MAX)) as u64
}

/// Decide whether a run may go ahead, updating the state (claiming the probe).
pub(crate) fn admit(
    state: &mut CircuitState,
    settings: &Settings,
    now_ms: u64,
    me: &Probe,
    probe_alive: impl Fn(&Probe) -> bool,
) -> Admission {
    believe_clocks(state, settings, now_ms);
    match state.phase {
        Phase::Closed => Admission::Run,
        Phase::Open => {
            let until = state.open_until_ms.unwrap_or(0);
            if now_ms < until {
                return Admission::Refuse {
                    until_ms: until,
                    probing: false,
                };
            }
            claim_probe(state, settings, now_ms, me)
        }
        Phase::HalfOpen => match &state.probe {
            Some(probe) if now_ms < probe.lease_until_ms && probe_alive(probe) => {
                Admission::Refuse {
                    until_ms: probe.lease_until_ms,
                    probing: true,
                }
            }
            _ => claim_probe(state, settings, now_ms, me),
        },
    }
}

/// Times another host's clock wrote are believed only as far ahead as an
/// honest clock could have put them: an open circuit until its cooldown
/// from now, a probe's lease until its own length from now (and
/// [`MOST_AHEAD_MS`] more, for clocks that differ a little). A host whose
/// clock was set years ahead would otherwise keep the circuit open, or its
/// probe claimed, on every host for those years.
fn believe_clocks(state: &mut CircuitState, settings: &Settings, now_ms: u64) {
    let ahead = |ms: u64| now_ms.saturating_add(ms).saturating_add(MOST_AHEAD_MS);
    if let Some(until) = state.open_until_ms {
        let latest = ahead(state.cooldown_ms.max(ms(settings.cooldown)));
        if until > latest {
            state.open_until_ms = Some(latest);
        }
    }
    if let Some(probe) = &mut state.probe
        && probe.started_ms > ahead(0)
    {
        let lease = probe.lease_until_ms.saturating_sub(probe.started_ms);
        probe.started_ms = now_ms;
        probe.lease_until_ms = now_ms.saturating_add(lease);
    }
}

fn claim_probe(
    state: &mut CircuitState,
    settings: &Settings,
    now_ms: u64,
    me: &Probe,
) -> Admission {
    state.phase = Phase::HalfOpen;
    state.probe = Some(Probe {
        started_ms: now_ms,
        lease_until_ms: now_ms.saturating_add(ms(settings.probe_lease)),
        ..me.clone()
    });
    state.updated_ms = now_ms;
    Admission::Probe
}

fn holds_probe(state: &CircuitState, me: &Probe) -> bool {
    state.phase == Phase::HalfOpen && state.probe.as_ref().is_some_and(|p| p.same_process(me))
}

/// Record how an admitted run ended.
pub(crate) fn record(
    state: &mut CircuitState,
    settings: &Settings,
    now_ms: u64,
    me: &Probe,
    result: RunResult,
) {
    state.updated_ms = now_ms;
    if holds_probe(state, me) {
        state.probe = None;
        match result {
            RunResult::Success => {
                *state = CircuitState {
                    updated_ms: now_ms,
                    ..CircuitState::default()
                };
            }
            RunResult::Failure => {
                let doubled = state
                    .cooldown_ms
                    .max(ms(settings.cooldown))
                    .saturating_mul(2);
                state.cooldown_ms = doubled
                    .min(ms(settings.max_cooldown))
                    .max(ms(settings.cooldown).min(ms(settings.max_cooldown)));
                state.failures = state.failures.saturating_add(1);
                state.phase = Phase::Open;
                state.open_until_ms = Some(now_ms.saturating_add(state.cooldown_ms));
            }
            RunResult::Aborted => {
                // Give the probe back at once: the next run probes.
                state.phase = Phase::Open;
                state.open_until_ms = Some(now_ms);
            }
        }
        return;
    }
    // A run admitted while closed.
    match result {
        RunResult::Success => {
            if state.phase == Phase::Closed {
                state.failures = 0;
            }
        }
        RunResult::Failure => {
            if state.phase != Phase::Closed {
                // Others opened it meanwhile; their cooldown stands.
                return;
            }
            state.failures = state.failures.saturating_add(1);
            if state.failures >= settings.threshold {
                state.phase = Phase::Open;
                state.cooldown_ms = ms(settings.cooldown);
                state.open_until_ms = Some(now_ms.saturating_add(state.cooldown_ms));
            }
        }
        RunResult::Aborted => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: u64 = 60_000;

    fn settings() -> Settings {
        Settings {
            threshold: 3,
            cooldown: Duration::from_secs(60),
            max_cooldown: Duration::from_secs(300),
            probe_lease: Duration::from_secs(600),
        }
    }

    fn me(pid: u32) -> Probe {
        Probe {
            host: "h".into(),
            pid,
            started_ms: 0,
            lease_until_ms: 0,
            boot_id: None,
            pid_ns: None,
            start: None,
        }
    }

    fn alive(_: &Probe) -> bool {
        true
    }

    #[test]
    fn opens_after_threshold_consecutive_failures_and_a_success_resets_the_count() {
        let (s, mut state) = (settings(), CircuitState::default());
        for _ in 0..2 {
            assert_eq!(admit(&mut state, &s, 0, &me(1), alive), Admission::Run);
            record(&mut state, &s, 0, &me(1), RunResult::Failure);
        }
        record(&mut state, &s, 0, &me(1), RunResult::Success);
        assert_eq!(state.failures, 0);
        for _ in 0..3 {
            assert_eq!(admit(&mut state, &s, 1000, &me(1), alive), Admission::Run);
            record(&mut state, &s, 1000, &me(1), RunResult::Failure);
        }
        assert_eq!(state.phase, Phase::Open);
        assert_eq!(state.open_until_ms, Some(1000 + MIN));
        assert_eq!(
            admit(&mut state, &s, 2000, &me(2), alive),
            Admission::Refuse {
                until_ms: 1000 + MIN,
                probing: false
            }
        );
    }

    fn opened() -> CircuitState {
        CircuitState {
            phase: Phase::Open,
            failures: 3,
            open_until_ms: Some(MIN),
            cooldown_ms: MIN,
            probe: None,
            updated_ms: 0,
            settings: None,
        }
    }

    #[test]
    fn after_the_cooldown_exactly_one_run_probes() {
        let s = settings();
        let mut state = opened();
        assert_eq!(admit(&mut state, &s, MIN, &me(1), alive), Admission::Probe);
        assert_eq!(state.phase, Phase::HalfOpen);
        for pid in 2..10 {
            assert!(matches!(
                admit(&mut state, &s, MIN + 5, &me(pid), alive),
                Admission::Refuse { probing: true, .. }
            ));
        }
    }

    #[test]
    fn a_successful_probe_closes_and_resets_everything() {
        let s = settings();
        let mut state = opened();
        admit(&mut state, &s, MIN, &me(1), alive);
        record(&mut state, &s, MIN + 10, &me(1), RunResult::Success);
        assert_eq!(state.phase, Phase::Closed);
        assert_eq!(state.failures, 0);
        assert_eq!(state.cooldown_ms, 0);
        assert_eq!(state.probe, None);
    }

    #[test]
    fn each_failed_probe_doubles_the_cooldown_up_to_the_maximum() {
        let s = settings();
        let mut state = opened();
        let mut now = MIN;
        let mut cooldowns = Vec::new();
        for _ in 0..5 {
            assert_eq!(admit(&mut state, &s, now, &me(1), alive), Admission::Probe);
            record(&mut state, &s, now, &me(1), RunResult::Failure);
            assert_eq!(state.phase, Phase::Open);
            cooldowns.push(state.cooldown_ms / 1000);
            now = state.open_until_ms.unwrap();
        }
        assert_eq!(cooldowns, [120, 240, 300, 300, 300]);
    }

    #[test]
    fn a_vanished_probe_loses_its_claim() {
        let s = settings();
        let mut state = opened();
        admit(&mut state, &s, MIN, &me(1), alive);
        // Its process is gone: the next run takes over at once.
        assert_eq!(
            admit(&mut state, &s, MIN + 1, &me(2), |p| p.pid != 1),
            Admission::Probe
        );
        // Or its lease ran out.
        let lease_end = state.probe.as_ref().unwrap().lease_until_ms;
        assert_eq!(
            admit(&mut state, &s, lease_end, &me(3), alive),
            Admission::Probe
        );
        assert_eq!(state.probe.as_ref().unwrap().pid, 3);
    }

    #[test]
    fn an_aborted_probe_hands_the_probe_to_the_next_run() {
        let s = settings();
        let mut state = opened();
        admit(&mut state, &s, MIN, &me(1), alive);
        record(&mut state, &s, MIN + 5, &me(1), RunResult::Aborted);
        assert_eq!(
            admit(&mut state, &s, MIN + 6, &me(2), alive),
            Admission::Probe
        );
    }

    #[test]
    fn out_of_range_states_are_refused() {
        assert_eq!(opened().check(), Ok(()));
        let far = CircuitState {
            open_until_ms: Some(300_000_000_000_000),
            ..opened()
        };
        assert!(far.check().unwrap_err().contains("9999"));
        let last = CircuitState {
            open_until_ms: Some(LATEST_MS),
            updated_ms: LATEST_MS,
            ..opened()
        };
        assert_eq!(last.check(), Ok(()));
        let long = CircuitState {
            cooldown_ms: LONGEST_COOLDOWN_MS + 1,
            ..opened()
        };
        assert!(long.check().is_err());
        let many = CircuitState {
            failures: u32::MAX,
            ..opened()
        };
        assert!(many.check().is_err());
        let probe = |host: &str, pid: u32, lease: u64| CircuitState {
            phase: Phase::HalfOpen,
            probe: Some(Probe {
                host: host.into(),
                pid,
                started_ms: 0,
                lease_until_ms: lease,
                boot_id: None,
                pid_ns: None,
                start: None,
            }),
            ..opened()
        };
        assert_eq!(probe("h", 42, LATEST_MS).check(), Ok(()));
        assert!(probe("h", 42, LATEST_MS + 1).check().is_err());
        assert!(probe("h", 0, 0).check().is_err());
        assert!(probe("h", u32::MAX, 0).check().is_err());
        assert!(probe("h\nretry: forged", 42, 0).check().is_err());
        assert!(probe(&"h".repeat(256), 42, 0).check().is_err());
    }

    #[test]
    fn a_clock_set_years_ahead_keeps_nothing_open_for_years() {
        let s = settings();
        let now = 1_800_000_000_000;
        let years = 10 * 365 * 24 * 60 * MIN;
        // Opened by a host whose clock was ten years ahead: believed open
        // for its cooldown (and a minute) from now. Before: ten years.
        let mut state = CircuitState {
            phase: Phase::Open,
            failures: 3,
            open_until_ms: Some(now + years + MIN),
            cooldown_ms: MIN,
            ..CircuitState::default()
        };
        let Admission::Refuse { until_ms, .. } = admit(&mut state, &s, now, &me(1), alive) else {
            panic!("{state:?}")
        };
        assert!(until_ms <= now + 2 * MIN, "{until_ms}");
        assert_eq!(state.open_until_ms, Some(until_ms), "stored clamped");
        assert_eq!(
            admit(&mut state, &s, now + 2 * MIN, &me(1), alive),
            Admission::Probe
        );
        // A probe it claimed: its lease, from now. Before: ten years.
        let lease = 10 * MIN;
        let mut state = CircuitState {
            phase: Phase::HalfOpen,
            probe: Some(Probe {
                host: "far".into(),
                pid: 7,
                started_ms: now + years,
                lease_until_ms: now + years + lease,
                boot_id: None,
                pid_ns: None,
                start: None,
            }),
            ..CircuitState::default()
        };
        let Admission::Refuse { until_ms, .. } = admit(&mut state, &s, now, &me(1), alive) else {
            panic!("{state:?}")
        };
        assert_eq!(until_ms, now + lease);
        assert_eq!(
            admit(&mut state, &s, now + lease, &me(1), alive),
            Admission::Probe
        );
        // Clocks a few seconds apart are believed as they are.
        let mut state = opened();
        state.open_until_ms = Some(now + MIN + 5_000);
        state.cooldown_ms = MIN;
        admit(&mut state, &s, now, &me(1), alive);
        assert_eq!(state.open_until_ms, Some(now + MIN + 5_000));
    }

    #[test]
    fn a_late_failure_does_not_restart_anothers_cooldown() {
        let s = settings();
        let mut state = opened();
        let before = state.clone();
        record(&mut state, &s, 30_000, &me(7), RunResult::Failure);
        assert_eq!(state.open_until_ms, before.open_until_ms);
    }
}
