//! The two server-side steps of an update, each one `EVAL` of a small Lua
//! script on one key: read the record (whether it exists, and at most one
//! record and a byte of it), and compare-and-set (store the new record
//! only if the key still holds what was read). Redis runs a script
//! atomically, so two hosts can never both replace the same record; and a
//! script names its one key in `KEYS`, so in a Redis Cluster it goes to the
//! node serving that key's slot, and during a slot migration it is
//! answered `ASK` and runs on the target after `ASKING`, where the
//! `WATCH` / `MULTI` / `EXEC` transaction this replaces could not complete
//! (`EXECABORT`).
//!
//! The check compares the stored bytes, not a version: a change is a
//! function of the record (and of the time), so a record that was changed
//! and changed back in between is rightly changed again from where it is.

use std::time::Duration;

use super::resp::{Reply, Trouble};
use super::route::Router;
use crate::state::store::{Loaded, MAX_RECORD_BYTES, too_large};

/// `{exists, bytes 0..=ARGV[1]}`.
const READ: &str =
    "return {redis.call('EXISTS', KEYS[1]), redis.call('GETRANGE', KEYS[1], 0, ARGV[1])}";

/// Store ARGV[4] with a TTL of ARGV[5] ms if the key exists as ARGV[1]
/// says and its first ARGV[2] bytes are ARGV[3]; 1 if it did, else 0. The
/// value is compared with `GET` (on the server: only the answer travels),
/// and read with `GETRANGE` and `EXISTS`, so that INFO commandstats tells
/// the tries (GET calls) from the reads and the writes (SET calls).
const SWAP: &str = "\
local value = redis.call('GET', KEYS[1])
if value then
  if ARGV[1] ~= '1' or string.sub(value, 1, tonumber(ARGV[2])) ~= ARGV[3] then return 0 end
elseif ARGV[1] ~= '0' then return 0 end
redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[5])
return 1";

/// What a read found: whether the key exists, and its first bytes (one
/// past the largest record, so that a longer value shows).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Seen {
    exists: bool,
    bytes: Vec<u8>,
}

impl Seen {
    /// The record as the store's caller sees it.
    pub(super) fn loaded(&self) -> Loaded {
        if !self.exists {
            Loaded::Missing
        } else if self.bytes.len() > MAX_RECORD_BYTES {
            Loaded::Corrupt(too_large())
        } else {
            Loaded::Bytes(self.bytes.clone())
        }
    }
}

/// The last byte read: one past the largest record.
fn last_byte() -> String {
    MAX_RECORD_BYTES.to_string()
}

/// Read `key`.
pub(super) fn read(router: &mut Router<'_>, key: &str) -> Result<Seen, Trouble> {
    let last = last_byte();
    let reply = router.call(
        key.as_bytes(),
        &[
            b"EVAL",
            READ.as_bytes(),
            b"1",
            key.as_bytes(),
            last.as_bytes(),
        ],
    )?;
    seen(&reply)
}

/// Read `key` with plain commands, no script: for `--circuit-status` and
/// the like, which a user allowed only to read (`+@read`) may run. Two
/// commands, not one step: a record replaced in between reads as what
/// the second found, or as corrupt; a status shows it, and writes nothing.
pub(super) fn peek(router: &mut Router<'_>, key: &str) -> Result<Seen, Trouble> {
    let last = last_byte();
    let key = key.as_bytes();
    let exists = router.call(key, &[b"EXISTS", key])?;
    let bytes = router.call(key, &[b"GETRANGE", key, b"0", last.as_bytes()])?;
    seen(&Reply::Array(Some(vec![exists, bytes])))
}

/// Store `value` under `key` for `ttl` if the key is still as `seen`;
/// whether it was.
pub(super) fn swap(
    router: &mut Router<'_>,
    key: &str,
    seen: &Seen,
    value: &[u8],
    ttl: Duration,
) -> Result<bool, Trouble> {
    let compared = (MAX_RECORD_BYTES + 1).to_string();
    let ttl_ms = ttl.as_millis().clamp(1, i64::MAX as u128).to_string();
    let reply = router.call(
        key.as_bytes(),
        &[
            b"EVAL",
            SWAP.as_bytes(),
            b"1",
            key.as_bytes(),
            if seen.exists { b"1" } else { b"0" },
            compared.as_bytes(),
            &seen.bytes,
            value,
            ttl_ms.as_bytes(),
        ],
    )?;
    match reply {
        Reply::Int(1) => Ok(true),
        Reply::Int(0) => Ok(false),
        other => Err(other.unexpected()),
    }
}

/// The reply of [`READ`].
fn seen(reply: &Reply) -> Result<Seen, Trouble> {
    if let Reply::Array(Some(items)) = reply
        && let [Reply::Int(exists), Reply::Bulk(bytes)] = items.as_slice()
    {
        return Ok(Seen {
            exists: *exists > 0,
            bytes: bytes.clone().unwrap_or_default(),
        });
    }
    Err(reply.unexpected())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_is_exists_and_the_first_bytes() {
        let reply = |exists, bytes: &[u8]| {
            Reply::Array(Some(vec![
                Reply::Int(exists),
                Reply::Bulk(Some(bytes.to_vec())),
            ]))
        };
        let missing = seen(&reply(0, b"")).unwrap();
        assert!(matches!(missing.loaded(), Loaded::Missing));
        let empty = seen(&reply(1, b"")).unwrap();
        assert!(matches!(empty.loaded(), Loaded::Bytes(b) if b.is_empty()));
        let record = seen(&reply(1, b"{}")).unwrap();
        assert!(matches!(record.loaded(), Loaded::Bytes(b) if b == b"{}"));
        let long = seen(&reply(1, &vec![b'x'; MAX_RECORD_BYTES + 1])).unwrap();
        assert!(matches!(long.loaded(), Loaded::Corrupt(_)));
        for other in [
            Reply::Int(1),
            Reply::Error(
                "WRONGTYPE Operation against a key holding the wrong kind of value".into(),
            ),
            Reply::Array(Some(vec![Reply::Int(1)])),
            Reply::Array(Some(vec![Reply::Bulk(None), Reply::Int(1)])),
        ] {
            assert!(seen(&other).is_err());
        }
    }

    /// Against the suite's redis-server: a swap stores only over what was
    /// read, a missing key, an empty value and an oversized one (compared
    /// by the part read) included.
    #[test]
    fn a_swap_stores_only_over_what_was_read() {
        use crate::state::redis::route::{Known, Router};
        use crate::state::redis::{resp::Deadline, target, tls::Trust};
        use crate::state::store::Patience;
        let Some(port) = crate::state::redis::suite_port() else {
            return;
        };
        let target = target::parse(&format!("redis://127.0.0.1:{port}/0")).unwrap();
        let (trust, known) = (Trust::default(), std::sync::Mutex::new(Known::default()));
        let deadline = Deadline::new(Duration::from_secs(5), Patience::default());
        let mut router = Router::new(&target, &trust, &deadline, &known);
        let key = format!("retry:script-test:{}", std::process::id());
        let hour = Duration::from_secs(3600);
        let missing = read(&mut router, &key).unwrap();
        assert!(matches!(missing.loaded(), Loaded::Missing));
        assert!(swap(&mut router, &key, &missing, b"", hour).unwrap());
        assert!(!swap(&mut router, &key, &missing, b"x", hour).unwrap());
        let empty = read(&mut router, &key).unwrap();
        assert!(matches!(empty.loaded(), Loaded::Bytes(b) if b.is_empty()));
        assert!(swap(&mut router, &key, &empty, b"a", hour).unwrap());
        assert!(!swap(&mut router, &key, &empty, b"b", hour).unwrap());
        let a = read(&mut router, &key).unwrap();
        let large = vec![b'x'; MAX_RECORD_BYTES + 100];
        assert!(swap(&mut router, &key, &a, &large, hour).unwrap());
        let oversized = read(&mut router, &key).unwrap();
        assert!(matches!(oversized.loaded(), Loaded::Corrupt(_)));
        assert!(!swap(&mut router, &key, &a, b"c", hour).unwrap());
        assert!(swap(&mut router, &key, &oversized, b"{}", hour).unwrap());
        let last = read(&mut router, &key).unwrap();
        assert!(matches!(last.loaded(), Loaded::Bytes(b) if b == b"{}"));
        // And a status read sees the same, with plain commands.
        assert_eq!(peek(&mut router, &key).unwrap(), last);
    }

    /// The scripts name their key only in KEYS (a cluster routes by it)
    /// and write nothing but that key.
    #[test]
    fn the_scripts_touch_their_one_key_only() {
        for script in [READ, SWAP] {
            assert!(script.contains("KEYS[1]"));
            assert!(!script.contains("KEYS[2]"));
            for call in script.split("redis.call(").skip(1) {
                let key = call.split(',').nth(1).unwrap_or("").trim();
                assert!(key.starts_with("KEYS[1]"), "{call}");
            }
        }
        assert!(!READ.contains("'SET'"));
    }
}
