//! Where circuits live: a small load-modify-store interface, so a shared
//! store for fleets can sit beside the local one without touching the
//! breaker's logic.
//!
//! Two layers. A store (`file`, `redis`) keeps small records as bounded
//! JSON blobs: it owns the locking or transaction, the bounded read, the
//! atomic write and the format on its medium, and knows nothing of what a
//! record means. On top, `update_record` decodes a blob into a typed
//! [`Record`] (the circuit's [`CircuitState`], and any other kind of record
//! kept beside circuits under its own [`Kind`]), validates it, and treats
//! anything unusable as the record's default with a warning: what another
//! process or host wrote is never trusted to be well formed.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The largest record a store reads, in bytes. A circuit's state is a few
/// hundred bytes; anything longer is corrupt, and is never read whole.
pub(crate) const MAX_RECORD_BYTES: usize = 64 * 1024;

/// A kind of record kept in the stores: how its files and keys are named,
/// and the words for it in messages.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Kind {
    /// In a state directory: `{file_prefix}NAME.json` and its lock
    /// `{file_prefix}NAME.lock`.
    pub(crate) file_prefix: &'static str,
    /// In Redis: the key `{key_prefix}NAME`.
    pub(crate) key_prefix: &'static str,
    /// For messages: what one record is ("circuit state").
    pub(crate) noun: &'static str,
    /// For messages: what an unusable record is taken as.
    pub(crate) fallback: &'static str,
    /// Whether a file store syncs each write to disk (two fsyncs, about
    /// 8 ms on this machine, held under the lock). A circuit must survive a
    /// power loss; a retry budget is written by every run's first attempt
    /// and every retry, and losing one to a power cut only starts it afresh.
    pub(crate) durable: bool,
}

/// What a store found under a name, before any decoding.
#[derive(Clone, Debug)]
pub(crate) enum Loaded {
    /// Nothing stored yet.
    Missing,
    /// The stored bytes, at most [`MAX_RECORD_BYTES`].
    Bytes(Vec<u8>),
    /// Something is there but is no record (too large, not a regular file):
    /// why, in a few words.
    Corrupt(String),
    /// It could not be read (an I/O error): why.
    Unreadable(String),
}

/// The state after an update, and anything worth a warning on the way (a
/// corrupt state that was read as closed).
pub(crate) struct Updated<R> {
    pub(crate) state: R,
    pub(crate) warning: Option<String>,
}

/// What may end one exchange with a store sooner than the store's own time
/// limit (`--state-timeout`): a store asked in the middle of a run (a retry
/// budget before each retry) must not outlast the run's `--max-time`, nor
/// keep retry deaf to a signal while it waits for a lock or a server. The
/// default is neither: an exchange that must happen (recording how a run
/// ended, releasing a probe) waits its full time.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Patience {
    /// The run's deadline: the exchange gives up by then.
    pub(crate) until: Option<Instant>,
    /// A terminating signal to retry ends the exchange at once, with
    /// [`Interrupted`].
    pub(crate) signals: bool,
}

impl Patience {
    /// Give way to signals (and to nothing else).
    pub(crate) const SIGNALS: Patience = Patience {
        until: None,
        signals: true,
    };

    /// When an exchange that started at `started`, under the store's own
    /// `limit`, must end; and whether that is the run's deadline (for
    /// messages). `None`: no end.
    pub(crate) fn end(self, started: Instant, limit: Duration) -> (Option<Instant>, bool) {
        match (started.checked_add(limit), self.until) {
            (Some(own), Some(run)) if run < own => (Some(run), true),
            (None, Some(run)) => (Some(run), true),
            (own, _) => (own, false),
        }
    }

    /// A signal arrived, and this exchange gives way to it.
    pub(crate) fn interrupted(self) -> bool {
        self.signals && crate::process::signals::terminating_arrived()
    }
}

/// A store exchange given up because retry received a terminating signal:
/// the run ends on that signal, so it is no failure of the store, and is
/// worth no warning. Callers recognise it with `error.is::<Interrupted>()`.
#[derive(Debug)]
pub(crate) struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted by a signal")
    }
}

impl std::error::Error for Interrupted {}

/// How long the longest single wait inside an exchange that gives way to
/// signals lasts: the delay before it notices one.
pub(crate) const SIGNAL_SLICE: Duration = Duration::from_millis(50);

/// What `change` gets and gives back: the record as found, and the JSON to
/// store in its place (`None`: leave it as it is).
pub(crate) type Change<'a> = dyn FnMut(&Loaded) -> Result<Option<serde_json::Value>> + 'a;

pub(crate) trait Store {
    /// Load record `name` of `kind`, let `change` decide what replaces it,
    /// and store that: atomically with respect to every other process (and
    /// host) using the same store, within the store's time limit. `change`
    /// may be called more than once (a shared store retries when another
    /// host got in between); only its last answer counts. `patience` may
    /// end the exchange sooner than the store's own limit.
    fn update_blob(
        &self,
        kind: &Kind,
        name: &str,
        patience: Patience,
        change: &mut Change<'_>,
    ) -> Result<()>;

    /// Read record `name` of `kind` as it is, writing nothing, not even a
    /// lock: `--circuit-status` and `--budget-status` work on a read-only
    /// state directory, a read-only Redis replica or a Redis user allowed
    /// only to read. By default, an update that stores nothing (Redis
    /// reads with plain commands instead of its scripts).
    fn read_blob(&self, kind: &Kind, name: &str) -> Result<Loaded> {
        let mut found = None;
        self.update_blob(kind, name, Patience::default(), &mut |loaded| {
            found = Some(loaded.clone());
            Ok(None)
        })?;
        found.context("the store never read the record")
    }

    /// For messages about the record's content: "/dir/NAME.json", "Redis
    /// key retry:circuit:NAME".
    fn location(&self, kind: &Kind, name: &str) -> String;

    /// For `--circuit-status` and the like: where record `name` is kept.
    fn describe_record(&self, kind: &Kind, name: &str) -> String;
}

/// A typed record kept in the stores.
pub(crate) trait Record: Serialize + DeserializeOwned + Default + Clone + PartialEq {
    const KIND: Kind;

    /// Refuse values that deserialise but are out of range (times past the
    /// year 9999, absurd counts): a record is read from a file or a server
    /// that others may write, and must never make the arithmetic or the
    /// messages built on it fail.
    fn check(&self) -> Result<(), String>;
}

/// Decode a stored record: bounded, well-formed JSON of the right shape,
/// with values in range. The error says why in one line.
pub(crate) fn decode<R: Record>(bytes: &[u8]) -> Result<R, String> {
    if bytes.len() > MAX_RECORD_BYTES {
        return Err(too_large());
    }
    let record: R = serde_json::from_slice(bytes).map_err(|err| one_line(&err.to_string()))?;
    record.check().map_err(|why| one_line(&why))?;
    Ok(record)
}

pub(crate) fn too_large() -> String {
    format!("larger than {} KiB", MAX_RECORD_BYTES / 1024)
}

/// Load record `name` of type `R`, let `change` modify it, and store it if
/// it changed (or if what was stored was unusable, so the warning is not
/// repeated forever).
pub(crate) fn update_record<R: Record, S: Store + ?Sized>(
    store: &S,
    name: &str,
    patience: Patience,
    change: &mut dyn FnMut(&mut R),
) -> Result<Updated<R>> {
    let kind = R::KIND;
    let mut outcome = None;
    store.update_blob(&kind, name, patience, &mut |loaded| {
        let (mut state, warning) = interpret::<R, S>(store, &kind, name, loaded);
        let before = state.clone();
        change(&mut state);
        let replace = if state != before || warning.is_some() {
            Some(serde_json::to_value(&state).context("encoding the record")?)
        } else {
            None
        };
        outcome = Some(Updated { state, warning });
        Ok(replace)
    })?;
    outcome.context("the store never read the record")
}

/// Read record `name` of type `R` without changing it (see
/// [`Store::read_blob`]); what is unusable is the record's default, with
/// a warning, as for an update, but is left as it is.
pub(crate) fn read_record<R: Record, S: Store + ?Sized>(
    store: &S,
    name: &str,
) -> Result<Updated<R>> {
    let kind = R::KIND;
    let loaded = store.read_blob(&kind, name)?;
    let (state, warning) = interpret::<R, S>(store, &kind, name, &loaded);
    Ok(Updated { state, warning })
}

fn interpret<R: Record, S: Store + ?Sized>(
    store: &S,
    kind: &Kind,
    name: &str,
    loaded: &Loaded,
) -> (R, Option<String>) {
    let corrupt = |why: &str| {
        format!(
            "the {} {} is corrupt ({}); {}",
            kind.noun,
            store.location(kind, name),
            one_line(why),
            kind.fallback
        )
    };
    match loaded {
        Loaded::Missing => (R::default(), None),
        Loaded::Bytes(bytes) => match decode::<R>(bytes) {
            Ok(state) => (state, None),
            Err(why) => (R::default(), Some(corrupt(&why))),
        },
        Loaded::Corrupt(why) => (R::default(), Some(corrupt(why))),
        Loaded::Unreadable(why) => (
            R::default(),
            Some(format!(
                "cannot read the {} {}: {}; {}",
                kind.noun,
                store.location(kind, name),
                one_line(why),
                kind.fallback
            )),
        ),
    }
}

/// `text` as one short line: control characters (newlines included)
/// escaped, at most 200 characters. For anything a server, a file or a
/// library error built from them puts into one of retry's messages.
pub(crate) fn one_line(text: &str) -> String {
    one_line_within(text, 200)
}

/// [`one_line`], at most `most` characters.
pub(crate) fn one_line_within(text: &str, most: usize) -> String {
    let mut line = String::new();
    for (count, c) in text.trim().chars().enumerate() {
        if count == most {
            line.push_str("...");
            break;
        }
        if c.is_control() {
            line.extend(c.escape_default());
        } else {
            line.push(c);
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuit::Circuit;
    use crate::circuit::breaker::CircuitState;
    use crate::circuit::breaker::{self, Phase, Probe, RunResult, Settings};
    use proptest::prelude::*;
    use std::cell::RefCell;
    use std::time::Duration;

    /// A store in memory: what a file or a Redis key could hold.
    struct Memory {
        blob: RefCell<Option<Vec<u8>>>,
    }

    impl Memory {
        fn holding(bytes: Option<Vec<u8>>) -> Memory {
            Memory {
                blob: RefCell::new(bytes),
            }
        }
    }

    impl Store for Memory {
        fn update_blob(
            &self,
            _: &Kind,
            _: &str,
            _: Patience,
            change: &mut Change<'_>,
        ) -> Result<()> {
            let loaded = match self.blob.borrow().clone() {
                None => Loaded::Missing,
                Some(bytes) if bytes.len() > MAX_RECORD_BYTES => Loaded::Corrupt(too_large()),
                Some(bytes) => Loaded::Bytes(bytes),
            };
            if let Some(value) = change(&loaded)? {
                *self.blob.borrow_mut() = Some(serde_json::to_vec(&value)?);
            }
            Ok(())
        }

        fn location(&self, _: &Kind, name: &str) -> String {
            format!("memory:{name}")
        }

        fn describe_record(&self, _: &Kind, name: &str) -> String {
            format!("memory:{name}")
        }
    }

    fn settings() -> Settings {
        Settings {
            threshold: 3,
            cooldown: Duration::from_secs(60),
            max_cooldown: Duration::from_secs(3600),
            probe_lease: Duration::from_secs(3600),
        }
    }

    #[test]
    fn a_stored_time_past_the_year_9999_is_corrupt_not_a_panic() {
        let text = br#"{"phase":"open","failures":3,"open_until_ms":300000000000000,"cooldown_ms":60000,"probe":null,"updated_ms":0}"#;
        assert!(decode::<CircuitState>(text).unwrap_err().contains("9999"));
        let circuit = Circuit::new(
            "far",
            Box::new(Memory::holding(Some(text.to_vec()))),
            settings(),
        );
        let status = circuit.status().unwrap();
        assert!(status.contains("corrupt"), "{status}");
        assert!(status.contains("circuit far: closed"), "{status}");
        assert_eq!(circuit.admit().unwrap().admission, breaker::Admission::Run);
    }

    #[test]
    fn a_corrupt_reason_is_one_line() {
        let text = b"{\"phase\":\"op\\nen\\u001b[31m\"}";
        let circuit = Circuit::new(
            "odd",
            Box::new(Memory::holding(Some(text.to_vec()))),
            settings(),
        );
        let warning = circuit.admit().unwrap().warning.unwrap();
        assert!(
            !warning.contains('\n') && !warning.contains('\u{1b}'),
            "{warning}"
        );
        assert!(warning.contains("corrupt"), "{warning}");
    }

    #[test]
    fn one_line_escapes_and_shortens() {
        assert_eq!(one_line("a\nb\r\x1b"), "a\\nb\\r\\u{1b}");
        assert_eq!(one_line(&"x".repeat(500)).len(), 203);
    }

    #[test]
    fn a_second_kind_of_record_reuses_the_stores() {
        #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
        struct Tokens {
            tokens: u32,
        }
        impl Record for Tokens {
            const KIND: Kind = Kind {
                file_prefix: "budget-",
                key_prefix: "retry:budget:",
                noun: "retry budget",
                fallback: "treating the budget as full",
                durable: false,
            };
            fn check(&self) -> Result<(), String> {
                if self.tokens > 100 {
                    return Err("too many tokens".into());
                }
                Ok(())
            }
        }
        let memory = Memory::holding(None);
        let updated =
            update_record::<Tokens, _>(&memory, "b", Patience::default(), &mut |t| t.tokens = 7)
                .unwrap();
        assert_eq!(updated.state.tokens, 7);
        let again =
            update_record::<Tokens, _>(&memory, "b", Patience::default(), &mut |_| {}).unwrap();
        assert_eq!(again.state.tokens, 7);
        *memory.blob.borrow_mut() = Some(br#"{"tokens":1000}"#.to_vec());
        let bad =
            update_record::<Tokens, _>(&memory, "b", Patience::default(), &mut |_| {}).unwrap();
        assert_eq!(bad.state.tokens, 0);
        assert!(bad.warning.unwrap().contains("treating the budget as full"));
    }

    /// Numbers a hostile or broken writer might store.
    fn extreme_number() -> impl Strategy<Value = serde_json::Value> {
        use serde_json::json;
        prop_oneof![
            Just(json!(0)),
            Just(json!(1)),
            Just(json!(-1)),
            Just(json!(breaker::LATEST_MS)),
            Just(json!(breaker::LATEST_MS + 1)),
            Just(json!(300_000_000_000_000u64)),
            Just(json!(u32::MAX)),
            Just(json!(u64::from(u32::MAX) + 1)),
            Just(json!(i32::MAX)),
            Just(json!(i64::MAX)),
            Just(json!(u64::MAX)),
            Just(json!(3e14)),
            Just(json!(1e300)),
            Just(json!(null)),
            Just(json!("12")),
            any::<u64>().prop_map(|n| json!(n)),
            any::<u32>().prop_map(|n| json!(n)),
            (0..=breaker::LATEST_MS).prop_map(|n| json!(n)),
        ]
    }

    fn phase() -> impl Strategy<Value = serde_json::Value> {
        prop_oneof![
            Just("closed"),
            Just("open"),
            Just("half-open"),
            Just("opened"),
            Just("")
        ]
        .prop_map(serde_json::Value::from)
    }

    fn host() -> impl Strategy<Value = serde_json::Value> {
        prop_oneof![
            Just("h".to_string()),
            Just(String::new()),
            Just("x".repeat(300)),
            "\\PC{0,20}",
            "[\\x00-\\x1f]{1,5}",
        ]
        .prop_map(serde_json::Value::from)
    }

    fn probe() -> impl Strategy<Value = serde_json::Value> {
        prop_oneof![
            Just(serde_json::Value::Null),
            (host(), extreme_number(), extreme_number(), extreme_number()).prop_map(
                |(host, pid, started, lease)| {
                    serde_json::json!({
                        "host": host, "pid": pid, "started_ms": started, "lease_until_ms": lease
                    })
                }
            ),
        ]
    }

    fn stored_object() -> impl Strategy<Value = Vec<u8>> {
        (
            phase(),
            extreme_number(),
            extreme_number(),
            extreme_number(),
            probe(),
            extreme_number(),
        )
            .prop_map(|(phase, failures, until, cooldown, probe, updated)| {
                serde_json::to_vec(&serde_json::json!({
                    "phase": phase,
                    "failures": failures,
                    "open_until_ms": until,
                    "cooldown_ms": cooldown,
                    "probe": probe,
                    "updated_ms": updated,
                }))
                .unwrap()
            })
    }

    /// States in range, up to their limits: what decodes must then work.
    fn valid_state() -> impl Strategy<Value = Vec<u8>> {
        let time = prop_oneof![Just(0), Just(breaker::LATEST_MS), 0..=breaker::LATEST_MS];
        let probe = proptest::option::of((
            "[a-z.]{1,20}",
            1..=i32::MAX as u32,
            time.clone(),
            time.clone(),
        ));
        (
            prop_oneof![
                Just(Phase::Closed),
                Just(Phase::Open),
                Just(Phase::HalfOpen)
            ],
            prop_oneof![
                Just(0),
                Just(breaker::MOST_FAILURES),
                0..=breaker::MOST_FAILURES
            ],
            proptest::option::of(time.clone()),
            prop_oneof![
                Just(0),
                Just(breaker::LONGEST_COOLDOWN_MS),
                0..=breaker::LONGEST_COOLDOWN_MS
            ],
            probe,
            time,
        )
            .prop_map(
                |(phase, failures, open_until_ms, cooldown_ms, probe, updated_ms)| {
                    let state = CircuitState {
                        phase,
                        failures,
                        open_until_ms,
                        cooldown_ms,
                        probe: probe.map(|(host, pid, started_ms, lease_until_ms)| Probe {
                            host,
                            pid,
                            started_ms,
                            lease_until_ms,
                            boot_id: None,
                            pid_ns: None,
                            start: None,
                        }),
                        updated_ms,
                        settings: None,
                    };
                    assert_eq!(state.check(), Ok(()));
                    serde_json::to_vec(&state).unwrap()
                },
            )
    }

    /// A state in range with one field replaced by an extreme number:
    /// the boundary the decoder's checks guard.
    fn one_field_extreme() -> impl Strategy<Value = Vec<u8>> {
        let fields = prop_oneof![
            Just("/failures"),
            Just("/open_until_ms"),
            Just("/cooldown_ms"),
            Just("/updated_ms"),
            Just("/probe/pid"),
            Just("/probe/started_ms"),
            Just("/probe/lease_until_ms"),
            Just("/probe/host"),
        ];
        (valid_state(), fields, extreme_number(), host()).prop_map(
            |(bytes, field, number, host)| {
                let mut value: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                let replacement = if field == "/probe/host" { host } else { number };
                if let Some(slot) = value.pointer_mut(field) {
                    *slot = replacement;
                }
                serde_json::to_vec(&value).unwrap()
            },
        )
    }

    fn any_settings() -> impl Strategy<Value = Settings> {
        let hundred_years = 100 * 365 * 24 * 3600 * 1000u64;
        (
            1..=u32::MAX,
            1..=hundred_years,
            1..=hundred_years,
            1..=hundred_years,
        )
            .prop_map(|(threshold, cooldown, max_cooldown, lease)| Settings {
                threshold,
                cooldown: Duration::from_millis(cooldown.min(max_cooldown)),
                max_cooldown: Duration::from_millis(max_cooldown.max(cooldown)),
                probe_lease: Duration::from_millis(lease),
            })
    }

    /// Whatever is stored, decoding it and then every use of the result
    /// (admission, recording, the status text, the refusal message) never
    /// panics, and what decodes is in range.
    fn exercise(bytes: Vec<u8>, settings: Settings) {
        if let Ok(state) = decode::<CircuitState>(&bytes) {
            assert_eq!(state.check(), Ok(()));
            let me = Probe {
                host: "h".into(),
                pid: 1,
                started_ms: 0,
                lease_until_ms: 0,
                boot_id: None,
                pid_ns: None,
                start: None,
            };
            for now in [0, 1, crate::state::now_ms(), breaker::LATEST_MS, u64::MAX] {
                for result in [RunResult::Success, RunResult::Failure, RunResult::Aborted] {
                    let mut s = state.clone();
                    breaker::admit(&mut s, &settings, now, &me, |_| true);
                    breaker::record(&mut s, &settings, now, &me, result);
                    let mut s = state.clone();
                    breaker::admit(&mut s, &settings, now, &me, |_| false);
                }
            }
        }
        let circuit = Circuit::new("fuzz", Box::new(Memory::holding(Some(bytes))), settings);
        let _ = circuit.status().unwrap();
        let decision = circuit.admit().unwrap();
        if let breaker::Admission::Refuse { until_ms, probing } = decision.admission {
            let _ = circuit.refusal(until_ms, probing, &decision.state);
        }
        for result in [RunResult::Failure, RunResult::Aborted, RunResult::Success] {
            circuit.record(result).unwrap();
            let _ = circuit.status().unwrap();
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256), settings in any_settings()) {
            exercise(bytes, settings);
        }

        #[test]
        fn states_in_range_decode_and_never_panic(bytes in valid_state(), settings in any_settings()) {
            prop_assert!(decode::<CircuitState>(&bytes).is_ok());
            exercise(bytes, settings);
        }

        #[test]
        fn states_with_one_extreme_field_never_panic(bytes in one_field_extreme(), settings in any_settings()) {
            exercise(bytes, settings);
        }

        #[test]
        fn arbitrary_states_never_panic(bytes in stored_object(), settings in any_settings()) {
            exercise(bytes, settings);
        }
    }

    #[test]
    fn an_open_state_far_in_range_still_prints() {
        let state = CircuitState {
            phase: Phase::Open,
            failures: 3,
            open_until_ms: Some(breaker::LATEST_MS),
            cooldown_ms: 60_000,
            probe: None,
            updated_ms: 0,
            settings: None,
        };
        let circuit = Circuit::new(
            "late",
            Box::new(Memory::holding(Some(serde_json::to_vec(&state).unwrap()))),
            settings(),
        );
        assert!(circuit.status().unwrap().contains("9999-12-31"));
    }
}
