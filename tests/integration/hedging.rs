//! Hedged attempts (`--hedge-after`, `--hedges`): a slow attempt gets
//! copies, the first success wins, the others are ended (superseded) and
//! nothing of them reaches retry's stdout; copies that cannot share their
//! input (or a terminal) are refused before anything runs; when the next
//! copy starts (`hedging_io`: their input and output; `hedging_signals`: a
//! signal to retry, and a copy that cannot be set up).

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::*;

/// `retry ARGS -- sh -c BODY` with stdin from /dev/null: its output.
pub(crate) fn hedged(args: &[&str], body: &str) -> std::process::Output {
    retry_std()
        .args(args)
        .args(["--", "sh", "-c", body])
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_hung_first_copy_is_overtaken_by_a_hedge_and_only_the_winner_speaks() {
    let marker = marker();
    // Copy 0 hangs (a background sleep too); copy 1 answers at once.
    let body = format!(
        "echo \"from copy $RETRY_HEDGE\"; if [ \"$RETRY_HEDGE\" = 0 ]; then sleep {marker} & sleep {marker}; fi"
    );
    let started = Instant::now();
    let out = hedged(&["--hedge-after", "300ms", "--kill-after", "1s"], &body);
    let took = started.elapsed();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout, "from copy 1\n", "{stderr}");
    // The hedge delay plus its run time, with room for a loaded machine.
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(stderr.contains("superseded"), "{stderr}");
    assert!(
        none_left(&marker, Duration::from_secs(3)),
        "a copy outlived the run"
    );
}

#[test]
fn a_pipe_on_stdin_without_replay_is_refused_before_anything_runs() {
    let dir = scratch();
    let mut child = retry_std()
        .args(["--hedge-after", "1s", "--", "sh", "-c"])
        .arg(tally(dir.path(), "ran"))
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"input\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(stderr.contains("--stdin replay"), "{stderr}");
    assert_eq!(lines(dir.path(), "ran"), 0, "the command ran");
    // With --stdin replay every copy gets the whole input.
    let mut child = retry_std()
        .args([
            "--stdin",
            "replay",
            "--hedge-after",
            "200ms",
            "--",
            "sh",
            "-c",
        ])
        .arg("cat; [ \"$RETRY_HEDGE\" = 1 ] || sleep 20")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"all of it\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(
        (out.status.code(), stdout.as_str()),
        (Some(0), "all of it\n"),
        "{stderr}"
    );
}

#[test]
fn copies_that_cannot_run_at_once_are_usage_errors() {
    for (args, says) in [
        (&["--hedge-after", "1s", "--foreground"][..], "--foreground"),
        (
            &["--hedge-after", "1s", "--until-failure"],
            "--until-failure",
        ),
        (&["--hedge-after", "p95"], "--circuit NAME or --budget NAME"),
        (&["--hedges", "2"], "--hedge-after"),
        (&["--hedge-after", "1s", "--hedges", "6"], "--hedges"),
        (&["--hedge-after", "soon"], "--hedge-after"),
    ] {
        let out = hedged(args, "true");
        let (_, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(125), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn a_permanent_failure_of_any_copy_ends_the_run_and_transient_ones_fall_back_to_the_schedule() {
    let dir = scratch();
    // Copy 1 fails for good (7 is on the stop list) while copy 0 hangs.
    let body = format!(
        "{}; if [ \"$RETRY_HEDGE\" = 1 ]; then exit 7; fi; sleep 20",
        tally(dir.path(), "copies")
    );
    let started = Instant::now();
    let out = hedged(
        &["--hedge-after", "200ms", "--stop-on-exit", "7", "-n", "3"],
        &body,
    );
    assert_eq!(out.status.code(), Some(7), "{:?}", texts(&out));
    assert!(started.elapsed() < Duration::from_secs(8));
    assert_eq!(lines(dir.path(), "copies"), 2);
    // Every copy fails transiently: the group is one failed attempt, and
    // the schedule retries it (2 attempts of 2 copies each).
    let dir = scratch();
    let body = format!("{}; sleep 0.3; exit 3", tally(dir.path(), "copies"));
    let (out, events) = json_run_null(&["--hedge-after", "100ms", "-n", "2", "-d", "1ms"], &body);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(lines(dir.path(), "copies"), 4);
    let attempts: Vec<(u64, u64)> = events
        .iter()
        .filter(|e| e["event"] == "attempt")
        .map(|e| (e["attempt"].as_u64().unwrap(), e["hedge"].as_u64().unwrap()))
        .collect();
    assert_eq!(attempts.len(), 4, "{events:?}");
}

/// `retry --log-format json ARGS -- sh -c BODY`, stdin from /dev/null.
pub(crate) fn json_run_null(
    args: &[&str],
    body: &str,
) -> (std::process::Output, Vec<serde_json::Value>) {
    let out = retry_std()
        .args(["--log-format", "json"])
        .args(args)
        .args(["--", "sh", "-c", body])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let events = json_events(&out.stderr);
    (out, events)
}

#[test]
fn each_copy_has_its_number_its_own_hint_file_and_its_own_event() {
    // Each copy says its number through its own hint file: copy 1 marks
    // itself permanent, and the run ends on its word, not copy 0's.
    let dir = scratch();
    let seen = dir.path().join("seen");
    let body = format!(
        "echo \"$RETRY_HEDGE $RETRY_HINT_FILE\" >> '{}'; \
         if [ \"$RETRY_HEDGE\" = 1 ]; then echo permanent > \"$RETRY_HINT_FILE\"; exit 4; fi; sleep 20",
        seen.display()
    );
    let (out, events) = json_run_null(&["--hedge-after", "200ms", "--kill-after", "500ms"], &body);
    assert_eq!(out.status.code(), Some(4), "{events:?}");
    let seen = std::fs::read_to_string(&seen).unwrap();
    let files: Vec<&str> = seen
        .lines()
        .filter_map(|line| line.split_once(' ').map(|(_, file)| file))
        .collect();
    assert_eq!(files.len(), 2, "{seen}");
    assert_ne!(files[0], files[1], "the copies shared a hint file");
    let outcomes: Vec<(String, u64)> = events
        .iter()
        .filter(|e| e["event"] == "attempt")
        .map(|e| {
            (
                e["outcome"].as_str().unwrap().to_string(),
                e["hedge"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(
        outcomes.contains(&("superseded".to_string(), 0)),
        "{outcomes:?}"
    );
    assert!(
        outcomes.contains(&("permanent".to_string(), 1)),
        "{outcomes:?}"
    );
}

#[test]
fn each_hedge_costs_a_budget_token_and_none_starts_without_one() {
    let dir = scratch();
    let state = dir.path().join("state");
    let body = format!("{}; sleep 0.6", tally(dir.path(), "copies"));
    let args = [
        "--hedge-after",
        "100ms",
        "--budget",
        "hedges",
        "--budget-burst",
        "1",
        "--budget-ratio",
        "0",
        "--budget-min",
        "0/s",
        "--state-dir",
        state.to_str().unwrap(),
    ];
    // A new budget starts full: its one token pays for one hedge.
    let out = hedged(&args, &body);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    assert_eq!(lines(dir.path(), "copies"), 2);
    // Spent: the next run's attempt runs alone.
    let out = hedged(&args, &body);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    assert_eq!(
        lines(dir.path(), "copies"),
        3,
        "a hedge started without a token"
    );
}

#[test]
fn p95_learns_from_earlier_successful_runs_of_the_circuit() {
    let dir = scratch();
    let state = dir.path().join("state");
    let state = state.to_str().unwrap();
    let args = [
        "-v",
        "--hedge-after",
        "p95",
        "--circuit",
        "learned",
        "--state-dir",
        state,
    ];
    // Not hedged until five successful attempts are known.
    for _ in 0..5 {
        let out = hedged(&args, "true");
        let (_, stderr) = texts(&out);
        assert!(
            stderr.contains("--hedge-after p95: not hedging yet"),
            "{stderr}"
        );
    }
    let out = hedged(&args, "true");
    let (_, stderr) = texts(&out);
    // The floor, 100ms: `true` is faster than that.
    assert!(
        stderr.contains("--hedge-after p95: 100ms (the 95th percentile of the last 5 successful attempts of learned)"),
        "{stderr}"
    );
}

#[test]
fn a_failed_copy_starts_the_next_at_once_and_each_waits_for_the_newest() {
    let marker = marker();
    let args = [
        "--hedge-after",
        "2s",
        "--hedges",
        "2",
        "--kill-after",
        "500ms",
    ];
    // Copy 0 hangs, copy 1 (after one delay) fails at once: copy 2 starts
    // then, not a second delay later, and wins.
    let body = format!("case $RETRY_HEDGE in 0) sleep {marker};; 1) exit 3;; *) echo won;; esac");
    let started = Instant::now();
    let out = hedged(&args, &body);
    let took = started.elapsed();
    let (stdout, stderr) = texts(&out);
    assert_eq!(
        (out.status.code(), stdout.as_str()),
        (Some(0), "won\n"),
        "{stderr}"
    );
    assert!(took < Duration::from_millis(3500), "two delays: {took:?}");
    // Copy 0 fails at once, copy 1 (started then) hangs: copy 2 starts a
    // delay after copy 1, not two after copy 0.
    let body = format!("case $RETRY_HEDGE in 0) exit 3;; 1) sleep {marker};; *) echo won;; esac");
    let started = Instant::now();
    let out = hedged(&args, &body);
    let took = started.elapsed();
    let (stdout, stderr) = texts(&out);
    assert_eq!(
        (out.status.code(), stdout.as_str()),
        (Some(0), "won\n"),
        "{stderr}"
    );
    assert!(took < Duration::from_millis(3500), "two delays: {took:?}");
    assert!(
        none_left(&marker, Duration::from_secs(3)),
        "a copy outlived the run"
    );
}

#[test]
fn a_copy_that_asks_for_a_wait_starts_no_other_and_its_wait_is_kept() {
    // Every copy fails at once asking for a wait: no hedge is sent to a
    // server that asked to slow down.
    let dir = scratch();
    let body = format!(
        "{}; echo retry-after=300ms > \"$RETRY_HINT_FILE\"; exit 3",
        tally(dir.path(), "copies")
    );
    let (out, _) = json_run_null(
        &["--hedge-after", "100ms", "--hedges", "3", "-n", "2"],
        &body,
    );
    assert_eq!(out.status.code(), Some(3), "{:?}", texts(&out));
    assert_eq!(
        lines(dir.path(), "copies"),
        2,
        "hedges started after a wait was asked for"
    );
    // A hedge asks for a wait while the first copy runs on: no third copy,
    // and the first copy's later plain failure does not hide the wait.
    let dir = scratch();
    let body = format!(
        "{}; if [ \"$RETRY_HEDGE\" = 1 ]; then echo retry-after=1500ms > \"$RETRY_HINT_FILE\"; exit 3; fi; sleep 0.6; exit 3",
        tally(dir.path(), "copies")
    );
    let args = [
        "--hedge-after",
        "100ms",
        "--hedges",
        "2",
        "-n",
        "2",
        "-d",
        "1ms",
    ];
    let (out, events) = json_run_null(&args, &body);
    assert_eq!(out.status.code(), Some(3), "{events:?}");
    assert_eq!(lines(dir.path(), "copies"), 4, "{events:?}");
    let sleeps: Vec<u64> = events
        .iter()
        .filter(|e| e["event"] == "sleep")
        .map(|e| e["delay_ms"].as_u64().unwrap())
        .collect();
    assert_eq!(sleeps, [1500], "{events:?}");
}

#[test]
fn a_delay_not_under_the_timeout_is_warned_about() {
    // Copies would never run together: each that times out is followed at
    // once by the next.
    let out = hedged(
        &["--hedge-after", "500ms", "--timeout", "200ms", "-n", "1"],
        "sleep 5",
    );
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(124), "{stderr}");
    assert!(
        stderr.contains("--hedge-after 500ms is not under --timeout 200ms"),
        "{stderr}"
    );
    let out = hedged(&["--hedge-after", "100ms", "--timeout", "5s"], "true");
    assert!(!texts(&out).1.contains("not under"), "{:?}", texts(&out));
}
