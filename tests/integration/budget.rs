//! The retry budget across runs: first attempts deposit, retries withdraw
//! whole tokens, and no number of runs at once can spend more than came in.

use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use predicates::prelude::*;

use crate::util::*;

fn state_dir() -> tempfile::TempDir {
    let dir = scratch();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

/// `retry` on budget `name` in `state`: no sleeps, no time flowing in.
fn budgeted(state: &std::path::Path, name: &str, burst: &str, ratio: &str) -> Vec<String> {
    [
        "-d",
        "0",
        "--budget",
        name,
        "--budget-burst",
        burst,
        "--budget-ratio",
        ratio,
        "--budget-min",
        "0/s",
        "--state-dir",
    ]
    .iter()
    .map(ToString::to_string)
    .chain([state.display().to_string()])
    .collect()
}

/// `--budget-status` of `name`: (first attempts, retries allowed, refused).
fn totals(state: &std::path::Path, name: &str) -> (u64, u64, u64) {
    let out = retry()
        .args(["--budget", name, "--budget-status", "--state-dir"])
        .arg(state)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("since created:"))
        .unwrap_or_else(|| panic!("{text}"));
    let numbers: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (numbers[0], numbers[1], numbers[2])
}

#[test]
fn sequential_runs_retry_only_with_what_was_deposited() {
    let state = state_dir();
    let work = scratch();
    let body = format!("{}; exit 7", tally(work.path(), "attempts"));
    let args = budgeted(state.path(), "seq", "2", "0.5");
    let mut per_run = Vec::new();
    for _ in 0..4 {
        let before = lines(work.path(), "attempts");
        let out = retry()
            .args(&args)
            .args(["-n", "10", "--log-format", "json", "--", "sh", "-c", &body])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(7), "the last attempt's status");
        let done = json_events(&out.stderr).pop().unwrap();
        assert_eq!(done["outcome"], "budget-exhausted");
        per_run.push(lines(work.path(), "attempts") - before);
    }
    // Full bucket (2) + 0.5: two retries; then 0.5: none; 1.0: one; 0.5: none.
    assert_eq!(per_run, [3, 1, 2, 1]);
    assert_eq!(totals(state.path(), "seq"), (4, 3, 4));
}

#[test]
fn thirty_runs_at_once_never_spend_more_than_came_in() {
    let state = state_dir();
    let work = scratch();
    let body = format!("{}; exit 1", tally(work.path(), "attempts"));
    let args = budgeted(state.path(), "crowd", "5", "0.2");
    let children: Vec<_> = (0..30)
        .map(|_| {
            retry_std()
                .args(&args)
                .args([
                    "-q",
                    "-n",
                    "20",
                    "--state-timeout",
                    "20s",
                    "--",
                    "sh",
                    "-c",
                    &body,
                ])
                .stdin(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert_eq!(child.wait().unwrap().code(), Some(1));
    }
    let attempts = lines(work.path(), "attempts") as u64;
    let (deposits, retries, _) = totals(state.path(), "crowd");
    assert_eq!(
        deposits, 30,
        "every first attempt deposited: no update lost"
    );
    assert_eq!(attempts, 30 + retries, "every retry the store counted ran");
    // What came in: the full bucket (5) and 30 x 0.2.
    assert!(retries <= 11, "{retries} retries from 11 tokens");
    assert!(
        retries >= 5,
        "{retries}: the full bucket was there to spend"
    );
}

#[test]
fn the_budget_says_why_it_stopped_and_counts_as_a_failure() {
    let state = state_dir();
    let metrics = state.path().join("m.prom");
    let out = retry()
        .args(budgeted(state.path(), "words", "1", "0"))
        .args(["-n", "5", "--metrics-file"])
        .arg(&metrics)
        .args(["--", "sh", "-c", "exit 3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("retry budget words exhausted (0.0 tokens): not retrying"),
        "{stderr}"
    );
    let text = std::fs::read_to_string(&metrics).unwrap();
    assert!(text.contains("outcome=\"budget-exhausted\"} 1"), "{text}");
}

#[test]
fn an_unusable_store_never_stops_the_retries() {
    let state = scratch();
    let file = state.path().join("not-a-dir");
    std::fs::write(&file, "").unwrap();
    let work = scratch();
    let body = format!("{}; exit 1", tally(work.path(), "attempts"));
    let started = Instant::now();
    retry()
        .args(["-n", "3", "-d", "0", "--budget", "x", "--state-dir"])
        .arg(&file)
        .args(["--", "sh", "-c", &body])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("retrying as if it allowed"));
    assert_eq!(lines(work.path(), "attempts"), 3);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn status_reset_and_settings_kept_with_the_bucket() {
    let state = state_dir();
    let dir = state.path();
    // Created by a first run with burst 3.
    retry()
        .args(budgeted(dir, "kept", "3", "0.5"))
        .args(["-n", "1", "--", "true"])
        .assert()
        .success();
    let status = retry()
        .args(["--budget", "kept", "--budget-status", "--state-dir"])
        .arg(dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("retry budget kept: 3 of 3 tokens"), "{text}");
    assert!(
        text.contains("0.5 per first attempt, 0/h, burst 3"),
        "{text}"
    );
    // Other settings warn, and the stored ones are used.
    retry()
        .args(budgeted(dir, "kept", "9", "0.5"))
        .args(["-n", "1", "--", "true"])
        .assert()
        .success()
        .stderr(
            predicate::str::contains("was created with").and(predicate::str::contains("burst 3")),
        );
    // A reset with new settings changes them.
    retry()
        .args(budgeted(dir, "kept", "9", "0.5"))
        .arg("--budget-reset")
        .assert()
        .success()
        .stdout(predicate::str::contains("retry budget kept reset: full"));
    let status = retry()
        .args(["--budget", "kept", "--budget-status", "--state-dir"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&status.stdout).contains("9 of 9 tokens"));
}

#[test]
fn repeats_of_until_failure_take_no_token() {
    let state = state_dir();
    retry()
        .args(budgeted(state.path(), "hunt", "1", "0"))
        .args(["--until-failure", "-n", "4", "--", "true"])
        .assert()
        .success();
    assert_eq!(totals(state.path(), "hunt").1, 0);
}

#[test]
fn bad_budget_values_are_usage_errors() {
    let dir = scratch();
    let marker = dir.path().join("ran");
    let touch = format!("touch '{}'", marker.display());
    for (args, flag) in [
        (
            &["--budget", "x", "--budget-ratio", "-1"][..],
            "--budget-ratio",
        ),
        (
            &["--budget", "x", "--budget-ratio", "11"][..],
            "--budget-ratio",
        ),
        (
            &["--budget", "x", "--budget-ratio", "lots"][..],
            "--budget-ratio",
        ),
        (&["--budget", "x", "--budget-min", "1"][..], "--budget-min"),
        (
            &["--budget", "x", "--budget-min", "1/week"][..],
            "--budget-min",
        ),
        (
            &["--budget", "x", "--budget-burst", "0"][..],
            "--budget-burst",
        ),
        (
            &["--budget", "x", "--budget-burst", "many"][..],
            "--budget-burst",
        ),
        (&["--budget-ratio", "0.1"][..], "--budget"),
        (&["--budget", "../x"][..], "--budget"),
    ] {
        retry()
            .args(args)
            .args(["--", "sh", "-c", &touch])
            .assert()
            .code(125)
            .stderr(predicate::str::contains(flag));
        assert!(!marker.exists(), "{args:?}");
    }
}

#[test]
fn other_settings_are_said_once_a_run() {
    let state = state_dir();
    retry()
        .args(budgeted(state.path(), "once", "1", "0"))
        .arg("--budget-reset")
        .assert()
        .success();
    // A run that deposits and withdraws: two exchanges, one warning.
    let out = retry()
        .args(budgeted(state.path(), "once", "5", "0"))
        .args(["-n", "3", "--", "false"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("was created with").count(), 1, "{stderr}");
}

#[test]
fn explain_says_its_budget_settings_are_the_ones_given_not_the_stored_ones() {
    // --explain reads no store: a bucket stored with burst 2 still shows
    // the flags' burst 10, so it says which settings it describes.
    let state = state_dir();
    retry()
        .args(budgeted(state.path(), "api", "2", "0.5"))
        .args(["--budget-reset"])
        .assert()
        .success();
    retry()
        .args(["--explain", "--budget", "api", "--state-dir"])
        .arg(state.path())
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "These are the settings given here: a bucket stored with others keeps its own (--budget-status shows them).",
        ));
}
