//! `--log-format json`: one JSON object per line, the schema of the
//! contract (`event` first, then the event's fields, then `ts` and
//! `run_id`). Fields may be added, never renamed or removed.
//!
//! Only machine-readable events: no human wording beyond the messages it
//! is given, no colour, no CI markers.

use std::io::Write;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use super::{AttemptRecord, DoneRecord, Guard, Sink, SleepRecord, Throttled, Verbosity};
use crate::outcome::Ending;
use crate::outcome::RunOutcome;

/// The JSON sink: the events the verbosity lets through, one per line.
pub(crate) struct JsonSink<W> {
    out: W,
    verbosity: Verbosity,
    /// The run's id, on every event.
    run_id: String,
    /// The time of `ts`.
    clock: fn() -> SystemTime,
    /// What an adaptive circuit counted: fields of the `done` event.
    throttled: Option<Throttled>,
}

fn millis(duration: Duration) -> u64 {
    duration.as_millis().min(u128::from(u64::MAX)) as u64
}

impl<W: Write> JsonSink<W> {
    pub(crate) fn new(out: W, verbosity: Verbosity, run_id: &str) -> Self {
        JsonSink {
            out,
            verbosity,
            run_id: run_id.to_string(),
            clock: SystemTime::now,
            throttled: None,
        }
    }

    /// The `done` event, with what an adaptive circuit counted when it
    /// decided (added fields: `circuit_requests`, `circuit_accepts`,
    /// `circuit_reject_probability`, `circuit_throttled`).
    fn done_event(&mut self, mut event: Value) {
        if let (Some(throttled), Value::Object(fields)) = (&self.throttled, &mut event) {
            let probability = (throttled.probability * 10_000.0).round() / 10_000.0;
            fields.insert("circuit_requests".into(), Value::from(throttled.requests));
            fields.insert("circuit_accepts".into(), Value::from(throttled.accepts));
            fields.insert(
                "circuit_reject_probability".into(),
                Value::from(probability),
            );
            fields.insert("circuit_throttled".into(), Value::from(throttled.rejected));
        }
        self.event(event);
    }

    /// One event, with the time (RFC 3339, milliseconds, UTC) and the
    /// run's id added, in one write.
    fn event(&mut self, mut value: Value) {
        if let Value::Object(fields) = &mut value {
            let ts = humantime::format_rfc3339_millis((self.clock)()).to_string();
            fields.insert("ts".into(), Value::from(ts));
            fields.insert("run_id".into(), Value::from(self.run_id.as_str()));
        }
        let _ = self.out.write_all(format!("{value}\n").as_bytes());
    }

    fn quiet(&self) -> bool {
        self.verbosity == Verbosity::Quiet
    }

    fn verbose(&self) -> bool {
        self.verbosity == Verbosity::Verbose
    }
}

impl<W: Write> Sink for JsonSink<W> {
    fn error(&mut self, message: &str) {
        self.event(json!({"event": "error", "message": message}));
    }

    fn warning(&mut self, kind: &str, message: &str) {
        if !self.quiet() {
            self.lasting_warning(kind, message);
        }
    }

    fn lasting_warning(&mut self, kind: &str, message: &str) {
        self.event(json!({"event": "warning", "kind": kind, "message": message}));
    }

    fn policy(&mut self, description: &str) {
        if self.verbose() {
            self.event(json!({"event": "policy", "message": description}));
        }
    }

    fn budget(&mut self, name: &str, op: &str, tokens: f64, took: Duration) {
        if self.verbose() {
            self.event(json!({
                "event": "budget",
                "name": name,
                "op": op,
                "tokens": (tokens * 1000.0).round() / 1000.0,
                "store_ms": took.as_secs_f64() * 1000.0,
            }));
        }
    }

    fn attempt_start(&mut self, attempt: u64, max_attempts: Option<u64>, _command: &str) {
        if self.verbose() {
            self.event(json!({"event": "start", "attempt": attempt, "max_attempts": max_attempts}));
        }
    }

    /// The attempt's event, then the sleep's that follows it.
    fn attempt(&mut self, record: &AttemptRecord, next: Option<&SleepRecord>) {
        if self.quiet() {
            return;
        }
        let mut event = json!({
            "event": "attempt",
            "attempt": record.attempt,
            "max_attempts": record.max_attempts,
            "exit_code": record.exit_code,
            "signal": record.signal,
            "timed_out": record.timed_out,
            "duration_ms": millis(record.duration),
            "outcome": record.outcome_str(),
            "reason": record.reason,
        });
        // Which copy of a hedged attempt (an added field).
        if let (Some(copy), Value::Object(fields)) = (record.copy, &mut event) {
            fields.insert("hedge".to_string(), copy.into());
        }
        self.event(event);
        if let Some(sleep) = next {
            self.sleep(sleep);
        }
    }

    fn sleep(&mut self, sleep: &SleepRecord) {
        if !self.quiet() {
            let mut event = json!({
                "event": "sleep",
                "attempt": sleep.attempt,
                "delay_ms": millis(sleep.delay),
                "ceiling_ms": millis(sleep.ceiling),
                "source": sleep.source.as_str(),
            });
            // Which response header set a `retry-after` sleep (added field).
            if let (Some((header, _)), Value::Object(fields)) = (&sleep.header, &mut event) {
                fields.insert("header".into(), Value::from(*header));
            }
            self.event(event);
        }
    }

    fn throttled(&mut self, throttled: &Throttled) {
        self.throttled = Some(throttled.clone());
    }

    /// Nothing ran: a `done` event even with `-q`.
    fn circuit_open(&mut self, message: &str, exit_code: i32, elapsed: Duration) {
        self.done_event(json!({
            "event": "done",
            "outcome": RunOutcome::CircuitOpen.as_str(),
            "attempts": 0,
            "elapsed_ms": millis(elapsed),
            "exit_code": exit_code,
            "timed_out": false,
            "signal": null,
            "successes": 0,
            "command_exit_code": null,
            "message": message,
        }));
    }

    /// With `-q`, only a run that did not succeed, or that went without
    /// its circuit or budget. `circuit_in_force` and `budget_in_force`
    /// appear with `--circuit` and `--budget`.
    fn done(&mut self, record: &DoneRecord) {
        let noteworthy = record.outcome != RunOutcome::Success || record.in_force.any_lost();
        if !self.quiet() || noteworthy {
            let mut event = json!({
                "event": "done",
                "outcome": record.outcome.as_str(),
                "attempts": record.attempts,
                "elapsed_ms": millis(record.elapsed),
                "exit_code": record.exit_code,
                "timed_out": record.timed_out,
                "signal": record.signal,
                "successes": record.successes,
                "command_exit_code": record.command_exit_code,
            });
            for guard in [Guard::Circuit, Guard::Budget] {
                if let (Some(guarded), Value::Object(fields)) =
                    (record.in_force.get(guard), &mut event)
                {
                    let field = format!("{}_in_force", guard.as_str());
                    fields.insert(field, Value::from(guarded.in_force));
                }
            }
            self.done_event(event);
        }
    }

    fn hook(&mut self, which: &str, command: &str, ending: &Ending, duration: Duration) {
        if !self.quiet() {
            self.event(json!({
                "event": "hook",
                "hook": which,
                "command": command,
                "exit_code": ending.exit_code(),
                "signal": ending.signal(),
                "timed_out": ending.timed_out,
                "duration_ms": millis(duration),
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::ProcessEnd;
    use crate::outcome::SleepSource;
    use crate::policy::classify::Class;
    use crate::report::fixtures::{attempt_record, done_record, noon, sleep_record};

    fn sink(verbosity: Verbosity) -> JsonSink<Vec<u8>> {
        let mut sink = JsonSink::new(Vec::new(), verbosity, "r1");
        sink.clock = noon;
        sink
    }

    fn lines(sink: &JsonSink<Vec<u8>>) -> Vec<&str> {
        std::str::from_utf8(&sink.out).unwrap().lines().collect()
    }

    /// The line as a JSON object, and its keys in order.
    fn keys(line: &str) -> Vec<String> {
        let Value::Object(fields) = serde_json::from_str::<Value>(line).unwrap() else {
            panic!("not an object: {line}");
        };
        fields.keys().cloned().collect()
    }

    #[test]
    fn an_attempt_and_its_sleep_are_the_contracts_events() {
        let mut sink = sink(Verbosity::Normal);
        sink.attempt(&attempt_record(1, Class::Transient), Some(&sleep_record(1)));
        assert_eq!(
            lines(&sink),
            [
                r#"{"event":"attempt","attempt":1,"max_attempts":5,"exit_code":7,"signal":null,"timed_out":false,"duration_ms":123,"outcome":"transient","reason":"exit 7","ts":"2023-11-14T22:13:20.000Z","run_id":"r1"}"#,
                r#"{"event":"sleep","attempt":1,"delay_ms":734,"ceiling_ms":1000,"source":"backoff","ts":"2023-11-14T22:13:20.000Z","run_id":"r1"}"#,
            ]
        );
    }

    #[test]
    fn a_throttled_attempt_and_the_header_that_set_its_sleep() {
        let mut sink = sink(Verbosity::Normal);
        let mut asked = sleep_record(1);
        asked.source = SleepSource::RetryAfter;
        asked.header = Some(("RateLimit", "\"default\";r=0;t=30".to_string()));
        sink.attempt(&attempt_record(1, Class::Throttled), Some(&asked));
        let lines = lines(&sink);
        assert!(
            lines[0].contains(r#""outcome":"throttled""#),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].contains(r#""source":"retry-after","header":"RateLimit","ts""#),
            "{}",
            lines[1]
        );
    }

    #[test]
    fn the_end_of_a_run_is_a_done_event() {
        let mut sink = sink(Verbosity::Normal);
        sink.done(&done_record(RunOutcome::Success, 3));
        let mut killed = done_record(RunOutcome::Exhausted, 5);
        killed.signal = Some(9);
        killed.exit_code = 137;
        killed.command_exit_code = Some(137);
        sink.done(&killed);
        // --give-up-exit: retry's status is not the command's.
        let handed_off = DoneRecord {
            exit_code: 75,
            ..done_record(RunOutcome::Exhausted, 5)
        };
        sink.done(&handed_off);
        sink.circuit_open("circuit c is open", 75, Duration::from_millis(2));
        assert_eq!(
            lines(&sink),
            [
                r#"{"event":"done","outcome":"success","attempts":3,"elapsed_ms":4211,"exit_code":0,"timed_out":false,"signal":null,"successes":1,"command_exit_code":0,"ts":"2023-11-14T22:13:20.000Z","run_id":"r1"}"#,
                r#"{"event":"done","outcome":"exhausted","attempts":5,"elapsed_ms":4211,"exit_code":137,"timed_out":false,"signal":9,"successes":0,"command_exit_code":137,"ts":"2023-11-14T22:13:20.000Z","run_id":"r1"}"#,
                r#"{"event":"done","outcome":"exhausted","attempts":5,"elapsed_ms":4211,"exit_code":75,"timed_out":false,"signal":null,"successes":0,"command_exit_code":7,"ts":"2023-11-14T22:13:20.000Z","run_id":"r1"}"#,
                r#"{"event":"done","outcome":"circuit-open","attempts":0,"elapsed_ms":2,"exit_code":75,"timed_out":false,"signal":null,"successes":0,"command_exit_code":null,"message":"circuit c is open","ts":"2023-11-14T22:13:20.000Z","run_id":"r1"}"#,
            ]
        );
    }

    #[test]
    fn an_adaptive_circuit_adds_its_counts_to_the_done_event() {
        let mut sink = sink(Verbosity::Quiet);
        sink.throttled(&Throttled {
            requests: 120,
            accepts: 10,
            probability: 100.0 / 121.0,
            rejected: true,
        });
        sink.circuit_open("circuit c throttled this run", 75, Duration::from_millis(2));
        let lines = lines(&sink);
        assert_eq!(lines.len(), 1, "a refusal is said under -q");
        assert!(
            lines[0].contains(r#""outcome":"circuit-open""#)
                && lines[0].contains(r#""circuit_requests":120,"circuit_accepts":10,"circuit_reject_probability":0.8264,"circuit_throttled":true"#),
            "{}",
            lines[0]
        );
    }

    #[test]
    fn errors_warnings_and_hooks_are_events_too() {
        let mut sink = sink(Verbosity::Normal);
        sink.error("bad \"value\"\nsecond line");
        sink.warning("nested", "careful");
        let ending = Ending::not_started(ProcessEnd::Exited(3));
        sink.hook("on-retry", "exit 3", &ending, Duration::from_millis(5));
        assert_eq!(
            lines(&sink),
            [
                r#"{"event":"error","message":"bad \"value\"\nsecond line","ts":"2023-11-14T22:13:20.000Z","run_id":"r1"}"#,
                r#"{"event":"warning","kind":"nested","message":"careful","ts":"2023-11-14T22:13:20.000Z","run_id":"r1"}"#,
                r#"{"event":"hook","hook":"on-retry","command":"exit 3","exit_code":3,"signal":null,"timed_out":false,"duration_ms":5,"ts":"2023-11-14T22:13:20.000Z","run_id":"r1"}"#,
            ]
        );
    }

    #[test]
    fn quiet_keeps_errors_and_a_failed_end_verbose_adds_starts_and_policy() {
        let mut quiet = sink(Verbosity::Quiet);
        quiet.warning("nested", "careful");
        quiet.attempt(&attempt_record(1, Class::Transient), Some(&sleep_record(1)));
        quiet.done(&done_record(RunOutcome::Success, 2));
        quiet.error("boom");
        quiet.done(&done_record(RunOutcome::Permanent, 1));
        let events: Vec<Value> = lines(&quiet)
            .iter()
            .map(|line| serde_json::from_str::<Value>(line).unwrap()["event"].clone())
            .collect();
        assert_eq!(events, ["error", "done"]);

        let mut verbose = sink(Verbosity::Verbose);
        verbose.policy("5 attempts");
        verbose.attempt_start(1, None, "make test");
        let mut splay = sleep_record(0);
        splay.source = SleepSource::Splay;
        verbose.sleep(&splay);
        verbose.budget("api", "withdraw", 2.345_67, Duration::from_micros(1500));
        assert_eq!(
            lines(&verbose),
            [
                r#"{"event":"policy","message":"5 attempts","ts":"2023-11-14T22:13:20.000Z","run_id":"r1"}"#,
                r#"{"event":"start","attempt":1,"max_attempts":null,"ts":"2023-11-14T22:13:20.000Z","run_id":"r1"}"#,
                r#"{"event":"sleep","attempt":0,"delay_ms":734,"ceiling_ms":1000,"source":"splay","ts":"2023-11-14T22:13:20.000Z","run_id":"r1"}"#,
                r#"{"event":"budget","name":"api","op":"withdraw","tokens":2.346,"store_ms":1.5,"ts":"2023-11-14T22:13:20.000Z","run_id":"r1"}"#,
            ]
        );
    }

    #[test]
    fn every_event_has_the_contracts_fields_and_a_utc_timestamp_in_milliseconds() {
        let mut sink = JsonSink::new(Vec::new(), Verbosity::Normal, "a1b2");
        sink.attempt(&attempt_record(1, Class::Transient), Some(&sleep_record(1)));
        sink.done(&done_record(RunOutcome::Exhausted, 1));
        sink.warning("nested", "careful");
        let contract: [&[&str]; 4] = [
            &[
                "event",
                "attempt",
                "max_attempts",
                "exit_code",
                "signal",
                "timed_out",
                "duration_ms",
                "outcome",
                "reason",
            ],
            &["event", "attempt", "delay_ms", "ceiling_ms", "source"],
            &["event", "outcome", "attempts", "elapsed_ms", "exit_code"],
            &["event", "kind", "message"],
        ];
        let lines = lines(&sink);
        assert_eq!(lines.len(), contract.len());
        for (line, fields) in lines.iter().zip(contract) {
            let keys = keys(line);
            for field in fields.iter().chain(&["ts", "run_id"]) {
                assert!(keys.iter().any(|key| key == field), "{field} in {line}");
            }
            let event: Value = serde_json::from_str(line).unwrap();
            assert_eq!(event["run_id"], "a1b2");
            let ts = event["ts"].as_str().unwrap();
            // RFC 3339, UTC, milliseconds: 2023-11-14T22:13:20.000Z.
            assert_eq!(ts.len(), 24, "{ts}");
            assert!(ts.ends_with('Z') && ts.as_bytes()[19] == b'.', "{ts}");
            humantime::parse_rfc3339(ts).unwrap();
        }
    }
}
