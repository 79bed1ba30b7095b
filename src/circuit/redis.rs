//! The fleet store: circuits in Redis, shared by every host that names the
//! same circuit and points at the same server.
//!
//! - Atomic on the server: each update is a WATCH / GET / MULTI / SET / EXEC
//!   transaction, retried when another host changed the key in between, so
//!   two hosts can never both claim the half-open probe.
//! - Keys (`retry:circuit:NAME`) carry a TTL, so an abandoned circuit
//!   disappears by itself; the TTL is far longer than any cooldown or probe.
//! - A short connect and command timeout: an unreachable or slow server
//!   makes the update fail quickly, and the caller then runs the job as if
//!   the circuit were closed. Retry never hangs, or blocks a job, on Redis.

use std::time::Duration;

use anyhow::{Context, Result};
use redis::{Commands, ConnectionLike};

use super::breaker::CircuitState;
use super::store::{Store, Updated};

pub(crate) struct RedisStore {
    client: redis::Client,
    /// The URL without its credentials, for messages.
    shown: String,
    timeout: Duration,
    ttl: Duration,
}

pub(crate) fn key(name: &str) -> String {
    format!("retry:circuit:{name}")
}

/// `redis://user:password@host:port/db` without the user and password.
fn redact(url: &str) -> String {
    match (url.split_once("://"), url.rfind('@')) {
        (Some((scheme, _)), Some(at)) => format!("{scheme}://{}", &url[at + 1..]),
        _ => url.to_string(),
    }
}

impl RedisStore {
    /// Parse the URL; connecting waits for the first update.
    pub(crate) fn open(url: &str, timeout: Duration, ttl: Duration) -> Result<RedisStore> {
        if url.starts_with("rediss://") {
            // rustls needs its cryptography chosen once per process.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let client = redis::Client::open(url)
            .with_context(|| format!("--state-url {}: not a usable Redis URL", redact(url)))?;
        Ok(RedisStore {
            client,
            shown: redact(url),
            timeout,
            ttl,
        })
    }

    /// Say "no answer" plainly when the cause is our timeout.
    fn explain(&self, err: redis::RedisError) -> anyhow::Error {
        if err.is_connection_refusal() {
            return anyhow::anyhow!("Redis at {}: connection refused", self.shown);
        }
        if err.is_timeout() {
            anyhow::anyhow!(
                "Redis at {}: no answer within {} (--state-timeout)",
                self.shown,
                crate::values::human(self.timeout)
            )
        } else {
            anyhow::Error::new(err).context(format!("Redis at {}", self.shown))
        }
    }

    fn connect(&self) -> Result<redis::Connection> {
        let connection = self
            .client
            .get_connection_with_timeout(self.timeout)
            .map_err(|err| self.explain(err))?;
        connection.set_read_timeout(Some(self.timeout))?;
        connection.set_write_timeout(Some(self.timeout))?;
        Ok(connection)
    }
}

impl Store for RedisStore {
    fn update(&self, name: &str, change: &mut dyn FnMut(&mut CircuitState)) -> Result<Updated> {
        let mut connection = self.connect()?;
        let key = key(name);
        let ttl_ms = self.ttl.as_millis().min(i64::MAX as u128) as i64;
        let mut warning = None;
        let state = redis::transaction(&mut connection, &[&key], |connection, pipe| {
            let stored: Option<Vec<u8>> = connection.get(&key)?;
            let (mut state, problem) = match stored {
                None => (CircuitState::default(), None),
                Some(bytes) => match serde_json::from_slice::<CircuitState>(&bytes) {
                    Ok(state) => (state, None),
                    Err(err) => (
                        CircuitState::default(),
                        Some(format!("the circuit state at {key} is corrupt ({err}); treating the circuit as closed")),
                    ),
                },
            };
            let before = state.clone();
            change(&mut state);
            warning = problem;
            if state == before && warning.is_none() {
                return Ok(Some(state));
            }
            let json = serde_json::to_vec(&state).expect("state serialises");
            let done: Option<(String,)> = pipe.cmd("SET").arg(&key).arg(json).arg("PX").arg(ttl_ms).query(connection)?;
            Ok(done.map(|_| state))
        })
        .map_err(|err| self.explain(err))?;
        debug_assert!(connection.is_open());
        Ok(Updated { state, warning })
    }

    fn describe(&self, name: &str) -> String {
        format!("Redis at {}, key {}", self.shown, key(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_never_reach_messages() {
        assert_eq!(
            redact("redis://user:secret@db.example:6379/2"),
            "redis://db.example:6379/2"
        );
        assert_eq!(redact("rediss://:secret@db:6380/0"), "rediss://db:6380/0");
        assert_eq!(
            redact("redis://127.0.0.1:6379/0"),
            "redis://127.0.0.1:6379/0"
        );
    }

    #[test]
    fn a_bad_url_is_refused_at_once() {
        assert!(
            RedisStore::open(
                "http://nope",
                Duration::from_secs(1),
                Duration::from_secs(60)
            )
            .is_err()
        );
    }
}
