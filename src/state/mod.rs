//! Where state that outlives a run is kept: circuits and budgets both stand
//! on this room. `store` is the load-modify-store interface that knows no
//! circuit, `file` the local store (a private directory, a lock, atomic
//! replaces), `redis` the fleet store. This module says which store a run
//! uses, and where the local one lives.

// Windows keeps the same files with its own locks and moves.
#[cfg_attr(windows, path = "file/windows/mod.rs")]
pub(crate) mod file;
pub(crate) mod redis;
pub(crate) mod store;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Result;

use store::Store;

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
    // Windows: `%LOCALAPPDATA%\retry\state`.
    if let Some(dir) = crate::sys::user::system_state_dir() {
        return dir;
    }
    // The XDG base directory spec: a relative path is to be ignored.
    if let Some(dir) = nonempty("XDG_STATE_HOME").filter(|dir| dir.is_absolute()) {
        return dir.join("retry");
    }
    if let Some(dir) = nonempty("HOME")
        .and_then(|home| state_dir_in_home(&home))
        .or_else(|| crate::sys::user::password_home().and_then(|home| state_dir_in_home(&home)))
    {
        return dir;
    }
    crate::sys::user::fallback_state_dir()
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
    let ours = crate::sys::user::is_own_dir(existing);
    let usable = ours && (existing == dir || crate::sys::user::may_write_in(existing));
    usable.then_some(dir)
}

/// What a store is opened for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Runs and resets: records are updated (a state directory is made if
    /// missing, and locked for each update).
    Update,
    /// `--circuit-status`, `--budget-status`: records are only read, so
    /// nothing is made, locked or written (a read-only state directory
    /// will do).
    Read,
}

/// Open the store `state` names, for `access`; `ttl` is how long Redis
/// keeps a record nobody touches.
pub(crate) fn open_store(
    state: &StateConfig,
    ttl: Duration,
    access: Access,
) -> Result<Box<dyn Store>> {
    if let Some(url) = &state.url {
        // Reads are plain reads there already (see `Store::read_blob`).
        let store = redis::RedisStore::open(url, state.timeout, ttl)?;
        return Ok(Box::new(store.trusting(state.ca.clone())));
    }
    let dir = match &state.dir {
        Some(dir) => dir.clone(),
        None => default_state_dir(),
    };
    match access {
        Access::Update => Ok(Box::new(file::FileStore::open(&dir, state.timeout)?)),
        Access::Read => file::FileStore::open_to_read(&dir, state.timeout),
    }
}

/// A Redis URL the store could use: checked while the configuration is
/// built, so a malformed one is a usage error before anything runs. The
/// error names `origin`: `--state-url` or `RETRY_STATE_URL`.
pub(crate) fn check_state_url(url: &str, origin: &str) -> Result<(), String> {
    redis::parse_url(url, origin)
        .map(|_| ())
        .map_err(|err| format!("{err:#}"))
}

/// Several `--state-url` values (a Redis Cluster's seed nodes) as the one
/// URL that names them all: `redis://[user:pass@]h1:p1,h2:p2[/db]`. Each
/// must name one server, with the same scheme, credentials and path as the
/// first; one value is returned as it is.
pub(crate) fn seeds_as_one_url(urls: &[String]) -> Result<String, String> {
    let [first, rest @ ..] = urls else {
        return Err("--state-url: no URL".to_string());
    };
    if rest.is_empty() {
        return Ok(first.clone());
    }
    // scheme://[credentials@]host[:port][/path][?query]
    let split = |url: &str| -> Option<(String, String, String)> {
        let (scheme, rest) = url.split_once("://")?;
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let (prefix, host) = match authority.rsplit_once('@') {
            Some((credentials, host)) => (format!("{scheme}://{credentials}@"), host),
            None => (format!("{scheme}://"), authority),
        };
        Some((prefix, host.to_string(), tail.to_string()))
    };
    let shown = |url: &str| crate::text::sanitize_line(&redis::redact(url), 120);
    let mut hosts = Vec::new();
    let mut shape: Option<(String, String)> = None;
    for url in urls {
        let (prefix, host, tail) = split(url)
            .ok_or_else(|| format!("--state-url {}: not a URL (scheme://host:port)", shown(url)))?;
        let single = matches!(
            prefix.split("://").next(),
            Some("redis" | "rediss" | "valkey" | "valkeys")
        );
        if !single || host.is_empty() || host.contains(',') {
            return Err(format!(
                "--state-url {}: given more than once, each names one node of a Redis Cluster (redis://host:port)",
                shown(url)
            ));
        }
        match &shape {
            Some(first) if *first != (prefix.clone(), tail.clone()) => {
                return Err(format!(
                    "--state-url {}: the seeds of one cluster share their scheme, credentials and database",
                    shown(url)
                ));
            }
            _ => shape = Some((prefix, tail)),
        }
        hosts.push(host);
    }
    let (prefix, tail) = shape.unwrap_or_default();
    Ok(format!("{prefix}{}{tail}", hosts.join(",")))
}

/// Whether a state URL (checked before) uses TLS (`rediss://`,
/// `rediss+sentinel://`, `?tls=true`), the one kind a
/// `--state-ca` is for.
pub(crate) fn state_url_uses_tls(url: &str) -> bool {
    redis::target::parse(url).is_ok_and(|target| target.uses_tls())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn seeds(urls: &[&str]) -> Result<String, String> {
        seeds_as_one_url(&urls.iter().map(ToString::to_string).collect::<Vec<_>>())
    }

    #[test]
    fn several_state_urls_are_the_seeds_of_one_cluster() {
        assert_eq!(seeds(&["redis://a:1"]).unwrap(), "redis://a:1");
        assert_eq!(
            seeds(&["redis://u:p@a:1/0", "redis://u:p@b:2/0"]).unwrap(),
            "redis://u:p@a:1,b:2/0"
        );
        assert_eq!(
            seeds(&["rediss://a:1", "rediss://b:2", "rediss://c"]).unwrap(),
            "rediss://a:1,b:2,c"
        );
        for bad in [
            &["redis://a:1", "rediss://b:2"][..],
            &["redis://u:p@a:1", "redis://b:2"],
            &["redis://a:1/0", "redis://b:2/1"],
            &["redis://a:1", "redis+sentinel://s:26379/m"],
            &["redis://a:1,b:2", "redis://c:3"],
            &["redis://a:1", "unix:///tmp/sock"],
        ] {
            let err = seeds(bad).unwrap_err();
            assert!(err.starts_with("--state-url "), "{bad:?}: {err}");
            assert!(!err.contains(":p@"), "{err}");
        }
    }
}
