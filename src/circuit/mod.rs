//! `--circuit NAME`: a circuit breaker that lasts across runs and is shared
//! by every process (and, with a shared store, every host) naming the same
//! circuit. Backoff protects a dependency within one run; the circuit stops
//! each new cron or CI run from hammering a broken dependency from the top
//! of its schedule again.
//!
//! `breaker` holds the pure state machine, `store` the load-modify-store
//! interface, `file` the local store. This module ties them to a run.

pub(crate) mod breaker;
pub(crate) mod file;
pub(crate) mod redis;
pub(crate) mod store;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Result;

use breaker::{Admission, CircuitState, Phase, Probe, RunResult, Settings, StoredSettings};
use store::{Patience, Store};

/// Where state (circuits, budgets) is kept: the flags and environment that
/// name a store.
#[derive(Clone, Debug)]
pub(crate) struct StateConfig {
    /// `--state-dir`.
    pub(crate) dir: Option<PathBuf>,
    /// `--state-url` (or `RETRY_STATE_URL`): keep state in Redis.
    pub(crate) url: Option<String>,
    /// `--state-ca` (or `RETRY_STATE_CA`): CA certificates a `rediss://`
    /// server's may chain to, besides the web roots and the system's.
    pub(crate) ca: Vec<redis::tls::Certificate>,
    /// `--state-timeout`: one deadline for a whole exchange with the store
    /// (the file lock's wait included).
    pub(crate) timeout: Duration,
}

/// The circuit settings from the command line.
#[derive(Clone, Debug)]
pub(crate) struct CircuitConfig {
    pub(crate) name: String,
    pub(crate) state: StateConfig,
    pub(crate) settings: Settings,
}

/// Where state lives without `--state-dir`: `$RETRY_STATE_DIR`, else
/// `$XDG_STATE_HOME/retry`, else `$HOME/.local/state/retry`, else (cron's
/// `env -i`: no variables at all) the same under the home directory of the
/// user's password entry, else `/tmp/retry-state-UID` (a directory of ours,
/// 0700, checked like any other: one planted by another user is refused).
/// A home counts only when it can hold the directory (see
/// [`state_dir_in_home`]): `HOME=/nonexistent`, a service account's, is
/// never created, and the run still gets a working store.
pub(crate) fn default_state_dir() -> PathBuf {
    let nonempty = |key: &str| {
        std::env::var_os(key)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = nonempty("RETRY_STATE_DIR") {
        return dir;
    }
    // The XDG base directory spec: a relative path is to be ignored.
    if let Some(dir) = nonempty("XDG_STATE_HOME").filter(|dir| dir.is_absolute()) {
        return dir.join("retry");
    }
    if let Some(dir) = nonempty("HOME")
        .and_then(|home| state_dir_in_home(&home))
        .or_else(|| password_home().and_then(|home| state_dir_in_home(&home)))
    {
        return dir;
    }
    let uid = rustix::process::getuid().as_raw();
    PathBuf::from(format!("/tmp/retry-state-{uid}"))
}

/// `HOME/.local/state/retry`, when `home` is an absolute path to an
/// existing directory and the state directory is there already or can be
/// made (the deepest part of its path that exists is a directory of ours,
/// writable).
/// Otherwise `None`: a relative `HOME` would put state wherever the job
/// happens to run, and a missing one must not be created (as root, retry
/// would make `/nonexistent`, which Debian's `nobody` relies on not
/// existing); an unwritable one would fail every run.
fn state_dir_in_home(home: &Path) -> Option<PathBuf> {
    if !home.is_absolute() || !home.is_dir() {
        return None;
    }
    let dir = home.join(".local/state/retry");
    let mut existing = dir.as_path();
    while std::fs::symlink_metadata(existing).is_err() {
        existing = existing.parent()?;
    }
    // The store takes only a directory of the user's own (see
    // `open_private`): the deepest part there now must be one, or what we
    // make would sit in another user's (`sudo` keeps the caller's HOME).
    let ours = std::fs::metadata(existing).is_ok_and(|meta| {
        meta.is_dir()
            && std::os::unix::fs::MetadataExt::uid(&meta) == rustix::process::geteuid().as_raw()
    });
    let usable = ours
        && (existing == dir
            || rustix::fs::access(
                existing,
                rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
            )
            .is_ok());
    usable.then_some(dir)
}

/// The home directory in the password database for our user id.
fn password_home() -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut entry = std::mem::MaybeUninit::<libc::passwd>::uninit();
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    let mut buffer = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: getpwuid_r writes the entry into `entry`, its strings into
    // `buffer` (whose length it is told), and sets `found` to `entry` on
    // success; nothing is read unless it succeeded.
    let status = unsafe {
        libc::getpwuid_r(
            libc::getuid(),
            entry.as_mut_ptr(),
            buffer.as_mut_ptr(),
            buffer.len(),
            &raw mut found,
        )
    };
    if status != 0 || found.is_null() {
        return None;
    }
    // SAFETY: the call succeeded, so the entry is initialised and `pw_dir`
    // points at a NUL-terminated string inside `buffer`, alive here.
    let dir = unsafe { std::ffi::CStr::from_ptr(entry.assume_init().pw_dir) };
    let dir = std::ffi::OsStr::from_bytes(dir.to_bytes());
    (!dir.is_empty() && dir.as_bytes().starts_with(b"/")).then(|| PathBuf::from(dir))
}

/// Open the store `state` names; `ttl` is how long Redis keeps a record
/// nobody touches.
pub(crate) fn open_store(state: &StateConfig, ttl: Duration) -> Result<Box<dyn Store>> {
    if let Some(url) = &state.url {
        let store = redis::RedisStore::open(url, state.timeout, ttl)?;
        return Ok(Box::new(store.trusting(state.ca.clone())));
    }
    let dir = match &state.dir {
        Some(dir) => dir.clone(),
        None => default_state_dir(),
    };
    Ok(Box::new(file::FileStore::open(&dir, state.timeout)?))
}

/// A Redis URL the store could use: checked while the configuration is
/// built, so a malformed one is a usage error before anything runs. The
/// error names `origin`: `--state-url` or `RETRY_STATE_URL`.
pub(crate) fn check_state_url(url: &str, origin: &str) -> Result<(), String> {
    redis::parse_url(url, origin)
        .map(|_| ())
        .map_err(|err| format!("{err:#}"))
}

/// Whether a state URL (checked before) is `rediss://`, the one kind a
/// `--state-ca` is for.
pub(crate) fn state_url_uses_tls(url: &str) -> bool {
    redis::url::parse(url).is_ok_and(|url| url.uses_tls())
}

/// The CA certificates of `--state-ca FILE` (or `RETRY_STATE_CA`), read
/// while the configuration is built, so a missing, unreadable or non-PEM
/// file is a usage error before anything runs. The error names `origin`
/// and the file.
pub(crate) fn read_state_ca(
    path: &Path,
    origin: &str,
) -> Result<Vec<redis::tls::Certificate>, String> {
    redis::tls::read_ca(path).map_err(|why| format!("{origin} {}: {why}", path.display()))
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

/// How far ahead of this host's clock a time in a shared store is
/// believed: a minute, far more than clocks kept by NTP ever differ. More
/// is a clock that jumped (a host set years ahead once, a virtual machine
/// restored from a snapshot), and is not allowed to stop others for years.
pub(crate) const MOST_AHEAD_MS: u64 = 60_000;

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn hostname() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
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
            },
        }
    }

    pub(crate) fn admit(&self) -> Result<Decision> {
        let mut admission = Admission::Run;
        let (settings, me) = (&self.settings, &self.me);
        let store = &self.store;
        // Nothing has run yet: a signal to retry ends the wait at once.
        let updated =
            store::update_record(&**store, &self.name, Patience::SIGNALS, &mut |state| {
                admission = breaker::admit(state, settings, now_ms(), me, |probe| {
                    store.probe_alive(&probe.host, probe.pid, &me.host)
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

    /// `--circuit-status`: the state, failures, and until when.
    pub(crate) fn status(&self) -> Result<String> {
        let updated = self.store.update(&self.name, &mut |_| {})?;
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

/// Open circuit `config` names, in its store.
pub(crate) fn open(config: &CircuitConfig) -> Result<Circuit> {
    // Long enough to outlive any cooldown and probe lease: what expires is
    // a circuit nobody has used for that long.
    let settings = &config.settings;
    let ttl = (settings.max_cooldown + settings.probe_lease)
        .saturating_mul(4)
        .max(Duration::from_secs(24 * 3600));
    let store = open_store(&config.state, ttl)?;
    Ok(Circuit::new(&config.name, store, config.settings))
}
