//! `--circuit NAME`: a circuit breaker that lasts across runs and is shared
//! by every process (and, with a shared store, every host) naming the same
//! circuit. Backoff protects a dependency within one run; the circuit stops
//! each new cron or CI run from hammering a broken dependency from the top
//! of its schedule again.
//!
//! Two modes (`--circuit-mode`): the breaker (`breaker`, the pure state
//! machine, kept here as [`Circuit`]) and adaptive client-side throttling
//! (`adaptive`, the pure rule, kept in `throttle`); `gate` is either, as
//! a run sees it. The stores they are kept in are `crate::state`'s.

pub(crate) mod adaptive;
pub(crate) mod breaker;
mod gate;
mod liveness;
mod throttle;

use std::time::{Duration, UNIX_EPOCH};

use anyhow::Result;

use crate::state::store::{Kind, Patience, Record, Store, Updated, read_record, update_record};
use crate::state::{Access, StateConfig, now_ms, open_store};
use breaker::{Admission, CircuitState, Phase, Probe, RunResult, Settings, StoredSettings};
pub(crate) use gate::Gatekeeper;
use throttle::Throttle;

/// Circuits: `NAME.json`, `retry:circuit:NAME`.
pub(crate) const CIRCUIT: Kind = Kind {
    file_prefix: "",
    key_prefix: "retry:circuit:",
    noun: "circuit state",
    fallback: "treating the circuit as closed",
    durable: true,
};

impl Record for CircuitState {
    const KIND: Kind = CIRCUIT;

    fn check(&self) -> Result<(), String> {
        CircuitState::check(self)
    }
}

/// A store seen from the circuit: its records are circuit states.
pub(crate) trait CircuitStore {
    /// Load circuit `name`, let `change` modify it, and store the result if
    /// it changed: atomically with respect to every other process (and
    /// host) using the same store. A missing or unreadable state is closed.
    fn update(
        &self,
        name: &str,
        change: &mut dyn FnMut(&mut CircuitState),
    ) -> Result<Updated<CircuitState>>;

    /// For messages: where circuit `name` is kept.
    fn describe(&self, name: &str) -> String;
}

impl<S: Store + ?Sized> CircuitStore for S {
    fn update(
        &self,
        name: &str,
        change: &mut dyn FnMut(&mut CircuitState),
    ) -> Result<Updated<CircuitState>> {
        update_record(self, name, Patience::default(), change)
    }

    fn describe(&self, name: &str) -> String {
        self.describe_record(&CIRCUIT, name)
    }
}

/// The circuit settings from the command line.
#[derive(Clone, Debug)]
pub(crate) struct CircuitConfig {
    pub(crate) name: String,
    pub(crate) state: StateConfig,
    /// The breaker's settings (its defaults in the adaptive mode).
    pub(crate) settings: Settings,
    /// `--circuit-mode adaptive`, and its K and window.
    pub(crate) adaptive: Option<adaptive::Settings>,
}

/// Circuit names become file names and keys: keep them plain.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if valid {
        Ok(())
    } else {
        Err(
            "a circuit name is 1-128 letters, digits, '.', '_' or '-', not starting with '.'"
                .into(),
        )
    }
}

fn hostname() -> String {
    crate::sys::machine::host_name()
}

/// `threshold 3, cooldown 1m, max cooldown 1h`, as the flags write them.
fn describe(settings: &StoredSettings) -> String {
    let human = |ms: u64| crate::values::human(Duration::from_millis(ms));
    format!(
        "--circuit-threshold {}, --circuit-cooldown {}, --circuit-max-cooldown {}",
        settings.threshold,
        human(settings.cooldown_ms),
        human(settings.max_cooldown_ms)
    )
}

fn timestamp(ms: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

pub(crate) struct Circuit {
    pub(crate) name: String,
    store: Box<dyn Store>,
    settings: Settings,
    me: Probe,
}

/// What `admit` decided, and what to tell the user.
pub(crate) struct Decision {
    pub(crate) admission: Admission,
    pub(crate) warning: Option<String>,
    pub(crate) state: CircuitState,
}

impl Circuit {
    pub(crate) fn new(name: &str, store: Box<dyn Store>, settings: Settings) -> Circuit {
        Circuit {
            name: name.to_string(),
            store,
            settings,
            me: Probe {
                host: hostname(),
                pid: std::process::id(),
                started_ms: 0,
                lease_until_ms: 0,
                boot_id: crate::sys::machine::boot_id(),
                pid_ns: crate::sys::machine::pid_namespace(),
                start: crate::sys::machine::own_start(),
            },
        }
    }

    pub(crate) fn admit(&self) -> Result<Decision> {
        let mut admission = Admission::Run;
        let (settings, me) = (&self.settings, &self.me);
        let eyes = liveness::Eyes {
            here: crate::sys::machine::look_for,
            into: crate::sys::machine::look_into,
        };
        // Nothing has run yet: a signal to retry ends the wait at once.
        let updated = update_record(&*self.store, &self.name, Patience::SIGNALS, &mut |state| {
            admission = breaker::admit(state, settings, now_ms(), me, |probe| {
                liveness::probe_alive(probe, me, &eyes)
            });
        })?;
        Ok(Decision {
            admission,
            warning: updated.warning,
            state: updated.state,
        })
    }

    pub(crate) fn record(&self, result: RunResult) -> Result<Option<String>> {
        let (settings, me) = (&self.settings, &self.me);
        let updated = self.store.update(&self.name, &mut |state| {
            breaker::record(state, settings, now_ms(), me, result);
            state.settings = Some(StoredSettings::from(settings));
        })?;
        Ok(updated.warning)
    }

    pub(crate) fn reset(&self) -> Result<Option<String>> {
        let settings = StoredSettings::from(&self.settings);
        let updated = self.store.update(&self.name, &mut |state| {
            *state = CircuitState {
                updated_ms: now_ms(),
                settings: Some(settings),
                ..CircuitState::default()
            }
        })?;
        Ok(updated.warning)
    }

    /// `--circuit-status`: the state, failures, and until when. Only read:
    /// a corrupt state is reported, and left for the next run to replace.
    pub(crate) fn status(&self) -> Result<String> {
        let updated = read_record::<CircuitState, _>(&*self.store, &self.name)?;
        let state = updated.state;
        let now = now_ms();
        let mut text = String::new();
        if let Some(warning) = updated.warning {
            text.push_str(&format!("warning: {warning}\n"));
        }
        let phase = match (state.phase, state.open_until_ms) {
            (Phase::Open, Some(until)) if until <= now => {
                "open (cooldown over: the next run probes)".to_string()
            }
            (Phase::Open, Some(until)) => format!(
                "open until {} (in {})",
                timestamp(until),
                crate::values::human(Duration::from_millis(until - now))
            ),
            (Phase::HalfOpen, _) => match &state.probe {
                Some(probe) => format!(
                    "half-open: probe running on {} (pid {}) since {}",
                    probe.host,
                    probe.pid,
                    timestamp(probe.started_ms)
                ),
                None => "half-open".to_string(),
            },
            (phase, _) => phase.as_str().to_string(),
        };
        text.push_str(&format!("circuit {}: {phase}\n", self.name));
        // What the last run that recorded a result stored; else this
        // command line's settings.
        let (kept, stored) = match state.settings {
            Some(stored) => (stored, " (as stored by the last run)"),
            None => (StoredSettings::from(&self.settings), ""),
        };
        text.push_str(&format!(
            "failed runs in a row: {} (opens at {}){stored}\n",
            state.failures, kept.threshold
        ));
        let cooldown = if state.cooldown_ms == 0 {
            kept.cooldown_ms
        } else {
            state.cooldown_ms
        };
        text.push_str(&format!(
            "cooldown: {} (doubles with each failed probe, up to {})\n",
            crate::values::human(Duration::from_millis(cooldown)),
            crate::values::human(Duration::from_millis(kept.max_cooldown_ms))
        ));
        text.push_str(&format!("stored in: {}\n", self.store.describe(&self.name)));
        Ok(text)
    }

    /// `-v`, at the start of a run: the circuit as admission found it.
    pub(crate) fn summary(&self, state: &CircuitState) -> String {
        let threshold = state
            .settings
            .map_or(self.settings.threshold, |stored| stored.threshold);
        format!(
            "circuit {}: {}; {} failed runs in a row (opens at {threshold}); kept in {}",
            self.name,
            state.phase.as_str(),
            state.failures,
            self.store.describe(&self.name)
        )
    }

    /// Said at the start of a run whose settings differ from those the
    /// last run stored: this run's apply, and replace them when it ends,
    /// so runs that disagree change each other's circuit in turn.
    pub(crate) fn settings_mismatch(&self, state: &CircuitState) -> Option<String> {
        let stored = state.settings?;
        let given = StoredSettings::from(&self.settings);
        (stored != given).then(|| {
            format!(
                "circuit {} was stored with {}; this run uses {} and stores them when it ends (give every run that names the circuit the same settings)",
                self.name,
                describe(&stored),
                describe(&given)
            )
        })
    }

    /// The message for a refused run.
    pub(crate) fn refusal(&self, until_ms: u64, probing: bool, state: &CircuitState) -> String {
        let wait = crate::values::human(Duration::from_millis(until_ms.saturating_sub(now_ms())));
        if probing {
            format!(
                "circuit {} is half-open and another run is probing it; not running the command (try again after {}, in {wait})",
                self.name,
                timestamp(until_ms)
            )
        } else {
            format!(
                "circuit {} is open until {} (in {wait}) after {} failed runs in a row; not running the command",
                self.name,
                timestamp(until_ms),
                state.failures
            )
        }
    }
}

/// Open circuit `config` names, in its store, for `access`.
pub(crate) fn open(config: &CircuitConfig, access: Access) -> Result<Gatekeeper> {
    if let Some(adaptive) = config.adaptive {
        // What expires is a window nobody has used for a day.
        let ttl = adaptive
            .window
            .saturating_mul(2)
            .max(Duration::from_secs(24 * 3600));
        let store = open_store(&config.state, ttl, access)?;
        let mut rng: rand::rngs::SmallRng = rand::make_rng();
        let draw = Box::new(move || rand::RngExt::random::<f64>(&mut rng));
        return Ok(Gatekeeper::Adaptive(Throttle::new(
            &config.name,
            store,
            adaptive,
            draw,
        )));
    }
    // Long enough to outlive any cooldown and probe lease: what expires is
    // a circuit nobody has used for that long.
    let settings = &config.settings;
    let ttl = (settings.max_cooldown + settings.probe_lease)
        .saturating_mul(4)
        .max(Duration::from_secs(24 * 3600));
    let store = open_store(&config.state, ttl, access)?;
    Ok(Gatekeeper::Breaker(Circuit::new(
        &config.name,
        store,
        config.settings,
    )))
}

/// For `--explain`: what the circuit does.
pub(crate) fn explain(config: &CircuitConfig) -> String {
    if let Some(adaptive) = &config.adaptive {
        return throttle::explain(&config.name, adaptive);
    }
    let settings = &config.settings;
    format!(
        "Circuit {} (breaker): after {} failed runs in a row it opens, and runs are refused (exit 75, nothing run) for {}, then one run probes; each failed probe doubles the wait, up to {}.",
        config.name,
        settings.threshold,
        crate::values::human(settings.cooldown),
        crate::values::human(settings.max_cooldown)
    )
}
