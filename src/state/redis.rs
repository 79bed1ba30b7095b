//! The fleet store: circuits in Redis, shared by every host that names the
//! same circuit and points at the same deployment (one server, a Redis
//! Cluster, or a replicated one behind Sentinel: see `target`, `route`).
//!
//! - Atomic on the server: each update reads the record and then stores
//!   the new one with a compare-and-set, each one `EVAL` of a script on the
//!   record's one key (see `script`), tried again when another host changed
//!   the key in between, so two hosts can never both claim the half-open
//!   probe. Between failed tries the client backs off with full jitter
//!   (see `pause_after`): without it, hundreds of runs updating one key at
//!   once abort each other until their deadlines pass (measured with 500
//!   runs: over 100 aborted tries per update that landed, and hundreds of
//!   runs past a 5 s `--state-timeout`; with the pauses, about 4 and none:
//!   BENCHMARKS.md, retry budget).
//! - Keys (`retry:circuit:NAME`; other kinds of record under their own
//!   prefix) carry a TTL, so an abandoned circuit disappears by itself; the
//!   TTL is far longer than any cooldown or probe. A record is one key, so
//!   in a cluster it lives in one slot whatever its name.
//! - One deadline (`--state-timeout`) for the whole exchange: finding the
//!   server, connecting, AUTH and SELECT, redirections, the reads and
//!   writes and their retries (see `resp`). An unreachable, slow or
//!   dribbling deployment makes the update fail by then, and the caller
//!   runs the job as if the circuit were closed. Retry never hangs, or
//!   blocks a job, on Redis.
//! - Bounded: the value is read up to one byte past the largest record, so
//!   an oversized value is never transferred, and is corrupt. Everything
//!   the server says reaches messages as one line.

mod cluster;
mod resp;
mod route;
mod script;
mod sentinel;
pub(crate) mod target;
pub(crate) mod tls;
pub(crate) mod url;

use std::sync::Mutex;
use std::time::Duration;

use anyhow::Result;
use rand::RngExt;
use rand::rngs::SmallRng;

use super::store::{Change, Interrupted, Kind, Loaded, Patience, Store, one_line, one_line_within};
use resp::{Deadline, Trouble};
use route::{Known, Router};
use target::Target;
use tls::{Certificate, Trust};

pub(crate) struct RedisStore {
    target: Target,
    /// What the exchanges of this run learned of the deployment (a
    /// cluster's slot map).
    known: Mutex<Known>,
    /// Whom a `rediss://` server's certificate must chain to.
    trust: Trust,
    /// The URL without its credentials, for messages.
    shown: String,
    timeout: Duration,
    ttl: Duration,
}

fn key_for(kind: &Kind, name: &str) -> String {
    format!("{}{name}", kind.key_prefix)
}

/// `redis://user:password@host:port/db` without the user and password,
/// and `unix:///path?db=1&pass=secret` without its `pass`.
pub(crate) fn redact(url: &str) -> String {
    let url = match (url.split_once("://"), url.rfind('@')) {
        (Some((scheme, _)), Some(at)) => format!("{scheme}://{}", &url[at + 1..]),
        _ => url.to_string(),
    };
    let Some((base, query)) = url.split_once('?') else {
        return url;
    };
    let (query, fragment) = match query.split_once('#') {
        Some((query, fragment)) => (query, format!("#{fragment}")),
        None => (query, String::new()),
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| {
            !["pass=", "password=", "sentinel_password="]
                .iter()
                .any(|key| pair.starts_with(key))
        })
        .collect();
    if kept.is_empty() {
        format!("{base}{fragment}")
    } else {
        format!("{base}?{}{fragment}", kept.join("&"))
    }
}

/// `url` parsed; an error names `origin`, the flag or the environment
/// variable the URL came from.
pub(crate) fn parse_url(url: &str, origin: &str) -> Result<Target> {
    target::parse(url).map_err(|why| {
        anyhow::anyhow!(
            "{origin} {}: not a usable Redis URL ({})",
            redact(url),
            one_line(&why)
        )
    })
}

impl RedisStore {
    /// Parse the URL; connecting waits for the first update. (Its origin
    /// was checked before: a malformed one never gets here from
    /// `RETRY_STATE_URL`.)
    pub(crate) fn open(url: &str, timeout: Duration, ttl: Duration) -> Result<RedisStore> {
        Ok(RedisStore {
            target: parse_url(url, "--state-url")?,
            known: Mutex::default(),
            trust: Trust::default(),
            shown: redact(url),
            timeout,
            ttl,
        })
    }

    /// Trust the CA certificates `extra` too (`--state-ca`), for a
    /// `rediss://` URL.
    pub(crate) fn trusting(self, extra: Vec<Certificate>) -> RedisStore {
        RedisStore {
            trust: Trust::new(extra),
            ..self
        }
    }

    /// One line, saying plainly what happened.
    fn explain(&self, trouble: Trouble, deadline: &Deadline) -> anyhow::Error {
        let shown = &self.shown;
        match trouble {
            Trouble::TimedOut if deadline.by_run => anyhow::anyhow!(
                "no answer from {shown} before --max-time ran out (gave up after {:.2}s)",
                deadline.started.elapsed().as_secs_f64()
            ),
            Trouble::TimedOut => anyhow::anyhow!(
                "no answer from {shown} within {} (gave up after {:.2}s; --state-timeout)",
                crate::values::human(self.timeout),
                deadline.started.elapsed().as_secs_f64()
            ),
            Trouble::Interrupted => anyhow::Error::new(Interrupted),
            Trouble::Refused => anyhow::anyhow!("Redis at {shown}: connection refused"),
            Trouble::Auth(text) => anyhow::anyhow!(
                "Redis at {shown}: authentication failed ({})",
                one_line(&text)
            ),
            Trouble::Server(text) => anyhow::anyhow!("Redis at {shown}: {}", one_line(&text)),
            // Retry's own words (advice included) may be longer than a
            // server's, which are cut short inside them.
            Trouble::Other(text) => {
                anyhow::anyhow!("Redis at {shown}: {}", one_line_within(&text, 800))
            }
            Trouble::Record(err) => err,
        }
    }

    /// Read, change, compare-and-set; again while other hosts get in
    /// between.
    fn exchange(
        &self,
        deadline: &Deadline,
        key: &str,
        change: &mut Change<'_>,
    ) -> Result<(), Trouble> {
        let mut router = Router::new(&self.target, &self.trust, deadline, &self.known);
        let mut aborted = 0;
        let mut rng: Option<SmallRng> = None;
        loop {
            let seen = script::read(&mut router, key)?;
            let Some(value) = change(&seen.loaded()).map_err(Trouble::Record)? else {
                return Ok(());
            };
            let json = serde_json::to_vec(&value).map_err(|err| Trouble::Record(err.into()))?;
            if script::swap(&mut router, key, &seen, &json, self.ttl)? {
                return Ok(());
            }
            // Another host changed the key since it was read: again, after
            // a pause, so that the hosts in a crowd take turns.
            aborted += 1;
            let pause = pause_after(aborted, rng.get_or_insert_with(rand::make_rng));
            deadline.pause(pause)?;
        }
    }
}

/// The first pause after an aborted update is at most this long, and
/// the ceiling doubles with each abort in a row, up to `LONGEST_PAUSE`.
const FIRST_PAUSE: Duration = Duration::from_millis(1);
const LONGEST_PAUSE: Duration = Duration::from_millis(500);

/// The pause after the `aborted`-th aborted update in a row: full
/// jitter (uniform between zero and a ceiling that doubles from
/// `FIRST_PAUSE` up to `LONGEST_PAUSE`). A crowd of K hosts on one key
/// spreads its next tries over about K round trips within log2(K) aborts,
/// instead of all trying again at once.
fn pause_after(aborted: u32, rng: &mut SmallRng) -> Duration {
    let ceiling = FIRST_PAUSE
        .saturating_mul(1 << aborted.saturating_sub(1).min(20))
        .min(LONGEST_PAUSE);
    Duration::from_nanos(rng.random_range(0..=ceiling.as_nanos() as u64))
}

impl Store for RedisStore {
    fn update_blob(
        &self,
        kind: &Kind,
        name: &str,
        patience: Patience,
        change: &mut Change<'_>,
    ) -> Result<()> {
        let deadline = Deadline::new(self.timeout, patience);
        let key = key_for(kind, name);
        self.exchange(&deadline, &key, change)
            .map_err(|trouble| self.explain(trouble, &deadline))
    }

    /// Plain reads, no script (see `script::peek`).
    fn read_blob(&self, kind: &Kind, name: &str) -> Result<Loaded> {
        let deadline = Deadline::new(self.timeout, Patience::default());
        let mut router = Router::new(&self.target, &self.trust, &deadline, &self.known);
        script::peek(&mut router, &key_for(kind, name))
            .map(|seen| seen.loaded())
            .map_err(|trouble| self.explain(trouble, &deadline))
    }

    fn location(&self, kind: &Kind, name: &str) -> String {
        format!("at Redis key {}", key_for(kind, name))
    }

    fn describe_record(&self, kind: &Kind, name: &str) -> String {
        format!("Redis at {}, key {}", self.shown, key_for(kind, name))
    }
}

/// The port of the suite's redis-server (`scripts/test` starts one and
/// exports `RETRY_TEST_REDIS_PORT`); without one `None`, and the test
/// that needs it says on stderr that it is skipped.
#[cfg(test)]
#[allow(clippy::print_stderr)] // a test that cannot run here says why
fn suite_port() -> Option<u16> {
    let port = std::env::var("RETRY_TEST_REDIS_PORT")
        .ok()
        .and_then(|port| port.parse().ok());
    if port.is_none() {
        eprintln!("SKIPPED: no RETRY_TEST_REDIS_PORT (scripts/test starts a redis-server)");
    }
    port
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuit::CircuitStore;

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
        assert_eq!(
            redact("unix:///run/redis.sock?db=2&pass=secret"),
            "unix:///run/redis.sock?db=2"
        );
        assert_eq!(
            redact("redis+unix:///run/redis.sock?pass=secret"),
            "redis+unix:///run/redis.sock"
        );
        assert_eq!(
            redact("redis+sentinel://:pw@h1,h2:5000/m/1?sentinel_password=sp&tls=true"),
            "redis+sentinel://h1,h2:5000/m/1?tls=true"
        );
        assert_eq!(
            redact("redis://u:pw@h1:7000,h2:7001/0"),
            "redis://h1:7000,h2:7001/0"
        );
    }

    #[test]
    fn a_bad_url_is_refused_at_once() {
        for url in ["http://nope", "redis://host/notanumber", "redis://"] {
            let err = RedisStore::open(url, Duration::from_secs(1), Duration::from_secs(60))
                .err()
                .unwrap();
            let text = format!("{err:#}");
            assert!(
                text.contains("--state-url") && !text.contains('\n'),
                "{text}"
            );
        }
    }

    /// Against the suite's redis-server (`scripts/test` starts one).
    #[test]
    fn another_kind_of_record_reuses_the_scripts_under_its_own_key() {
        let Some(port) = suite_port() else {
            return;
        };
        let store = RedisStore::open(
            &format!("redis://127.0.0.1:{port}/0"),
            Duration::from_secs(5),
            Duration::from_secs(24 * 3600),
        )
        .unwrap();
        let budget = Kind {
            key_prefix: "retry:budget:",
            ..crate::circuit::CIRCUIT
        };
        let name = format!("unit-{}", std::process::id());
        store
            .update_blob(&budget, &name, Patience::default(), &mut |loaded| {
                assert!(matches!(loaded, Loaded::Missing), "{loaded:?}");
                Ok(Some(serde_json::json!({"tokens": 3})))
            })
            .unwrap();
        store
            .update_blob(&budget, &name, Patience::default(), &mut |loaded| {
                match loaded {
                    Loaded::Bytes(bytes) => assert_eq!(bytes, br#"{"tokens":3}"#),
                    other => panic!("{other:?}"),
                }
                Ok(None)
            })
            .unwrap();
        // The circuit of the same name is another key, still missing.
        let circuit = store.update(&name, &mut |_| {}).unwrap();
        assert!(circuit.warning.is_none());
        assert_eq!(
            circuit.state,
            crate::circuit::breaker::CircuitState::default()
        );
    }

    #[test]
    fn pauses_after_aborts_are_jittered_and_double_up_to_the_longest() {
        use rand::SeedableRng;
        let mut rng = SmallRng::seed_from_u64(14);
        for aborted in 1..40u32 {
            let ceiling = (FIRST_PAUSE * 2u32.pow(aborted.min(20) - 1)).min(LONGEST_PAUSE);
            let pauses: Vec<Duration> = (0..200).map(|_| pause_after(aborted, &mut rng)).collect();
            assert!(pauses.iter().all(|p| *p <= ceiling), "{aborted}");
            // Spread over the whole range, not stuck at one end.
            assert!(pauses.iter().any(|p| *p < ceiling / 4), "{aborted}");
            assert!(pauses.iter().any(|p| *p > ceiling * 3 / 4), "{aborted}");
        }
        assert!(pause_after(u32::MAX, &mut rng) <= LONGEST_PAUSE);
    }

    /// Against the suite's redis-server: many clients updating one key at
    /// once lose no update, and none runs out of its time.
    #[test]
    fn a_crowd_on_one_key_loses_no_update() {
        let Some(port) = suite_port() else {
            return;
        };
        let url = format!("redis://127.0.0.1:{port}/0");
        let kind = Kind {
            key_prefix: "retry:crowd:",
            ..crate::circuit::CIRCUIT
        };
        let name = format!("crowd-{}", std::process::id());
        let (clients, updates) = (40, 10);
        std::thread::scope(|scope| {
            for _ in 0..clients {
                scope.spawn(|| {
                    let store =
                        RedisStore::open(&url, Duration::from_secs(10), Duration::from_secs(600))
                            .unwrap();
                    for _ in 0..updates {
                        store
                            .update_blob(&kind, &name, Patience::default(), &mut |loaded| {
                                let count: u64 = match loaded {
                                    Loaded::Missing => 0,
                                    Loaded::Bytes(bytes) => serde_json::from_slice(bytes).unwrap(),
                                    other => panic!("{other:?}"),
                                };
                                Ok(Some(serde_json::json!(count + 1)))
                            })
                            .unwrap();
                    }
                });
            }
        });
        let store =
            RedisStore::open(&url, Duration::from_secs(5), Duration::from_secs(600)).unwrap();
        store
            .update_blob(&kind, &name, Patience::default(), &mut |loaded| {
                match loaded {
                    Loaded::Bytes(bytes) => {
                        assert_eq!(bytes, format!("{}", clients * updates).as_bytes());
                    }
                    other => panic!("{other:?}"),
                }
                Ok(None)
            })
            .unwrap();
    }

    #[test]
    fn records_of_another_kind_have_keys_of_their_own() {
        let budget = Kind {
            key_prefix: "retry:budget:",
            ..crate::circuit::CIRCUIT
        };
        assert_eq!(
            key_for(&crate::circuit::CIRCUIT, "api"),
            "retry:circuit:api"
        );
        assert_eq!(key_for(&budget, "api"), "retry:budget:api");
    }
}
