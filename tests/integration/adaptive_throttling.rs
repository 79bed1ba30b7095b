//! `--circuit-mode adaptive`: runs against a backend that refuses them are
//! rejected locally (exit 75, the command not run) about as often as the
//! SRE book's formula says; answers keep it open; the counts are shared
//! through the file store and Redis, age out with the window, and are
//! shown, reset and reported; each mode's flags are refused in the other.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use crate::util::*;

fn state_dir() -> tempfile::TempDir {
    let dir = scratch();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

/// One attempt behind adaptive circuit `name`, kept in `state`.
fn adaptive(state: &Path, name: &str) -> assert_cmd::Command {
    let mut command = retry();
    command
        .args(["-n", "1", "--circuit", name, "--circuit-mode", "adaptive"])
        .arg("--state-dir")
        .arg(state);
    command
}

/// What `--circuit-status` says of adaptive circuit `name`.
fn status(args: &[&str]) -> String {
    let out = retry()
        .args(args)
        .args(["--circuit-mode", "adaptive", "--circuit-status"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// Runs that ran and runs rejected locally, of `count` runs of `body`
/// (which tallies itself in `dir/ran`) made by `run`.
fn rejections(
    count: usize,
    dir: &Path,
    body: &str,
    run: impl Fn(usize) -> assert_cmd::Command,
) -> (usize, usize) {
    let script = format!("{}; {body}", tally(dir, "ran"));
    let mut rejected = 0;
    for i in 0..count {
        let out = run(i).args(["--", "sh", "-c", &script]).output().unwrap();
        match out.status.code() {
            Some(75) => {
                rejected += 1;
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert!(stderr.contains("throttled this run locally"), "{stderr}");
            }
            Some(0 | 1 | 4) => {}
            other => panic!("run {i}: {other:?} {out:?}"),
        }
    }
    (lines(dir, "ran"), rejected)
}

/// The expected rejections of `count` runs in a row that all fail, in one
/// window: the n-th (from 0) finds n requests and no accepts, and is
/// rejected with probability n / (n + 1).
fn expected_rejections(count: usize) -> f64 {
    (0..count).map(|n| n as f64 / (n as f64 + 1.0)).sum()
}

#[test]
fn runs_that_always_fail_are_rejected_locally_about_as_the_formula_says() {
    let dir = state_dir();
    let (ran, rejected) = rejections(100, dir.path(), "exit 1", |_| adaptive(dir.path(), "api"));
    assert_eq!(ran + rejected, 100);
    // About 94.8 expected (a standard deviation of 1.9): within wide bounds.
    let expected = expected_rejections(100);
    assert!((expected - 94.8).abs() < 0.1, "{expected}");
    assert!(
        (80..=99).contains(&rejected),
        "{rejected} rejected, {ran} ran"
    );
    let text = status(&[
        "--circuit",
        "api",
        "--state-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert!(
        text.contains(&format!(
            "in the last 2m: 100 requests, 0 accepts, {rejected} runs rejected locally"
        )),
        "{text}"
    );
    assert!(
        text.contains("rejects a run with probability 0.99"),
        "{text}"
    );
    // The record: buckets of [start, requests, accepts, rejected].
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("adaptive@api.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["bucket_ms"], 10_000, "{record}");
    let buckets = record["buckets"].as_array().unwrap();
    let total = |i: usize| -> u64 { buckets.iter().map(|b| b[i].as_u64().unwrap()).sum() };
    assert_eq!((total(1), total(2), total(3)), (100, 0, rejected as u64));
    // A rejected run: the done event of an open circuit, with the counts;
    // the metrics; a GitHub annotation titled so.
    let metrics = dir.path().join("retry.prom");
    let mut rejected_once = None;
    for _ in 0..20 {
        let out = adaptive(dir.path(), "api")
            .args(["--log-format", "json", "--metrics-file"])
            .arg(&metrics)
            .args(["--", "sh", "-c", &tally(dir.path(), "ran")])
            .output()
            .unwrap();
        if out.status.code() == Some(75) {
            rejected_once = Some(out);
            break;
        }
    }
    let out = rejected_once.expect("20 runs at p > 0.99, none rejected");
    let done = json_events(&out.stderr).pop().unwrap();
    assert_eq!(done["outcome"], "circuit-open", "{done}");
    assert_eq!(done["exit_code"], 75);
    assert_eq!(done["circuit_throttled"], true);
    assert_eq!(done["circuit_accepts"], 0);
    assert!(done["circuit_requests"].as_u64().unwrap() >= 100, "{done}");
    assert!(done["circuit_reject_probability"].as_f64().unwrap() > 0.99);
    let text = std::fs::read_to_string(&metrics).unwrap();
    assert!(
        text.contains("retry_outcome{name=\"sh\",outcome=\"circuit-open\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("retry_circuit_throttled{name=\"sh\",circuit=\"api\"} 1"),
        "{text}"
    );
    let mut github = None;
    for _ in 0..20 {
        let out = adaptive(dir.path(), "api")
            .env("GITHUB_ACTIONS", "true")
            .args(["--", "false"])
            .output()
            .unwrap();
        if out.status.code() == Some(75) {
            github = Some(String::from_utf8(out.stderr).unwrap());
            break;
        }
    }
    let github = github.expect("20 runs at p > 0.99, none rejected");
    assert!(
        github.starts_with("::error title=retry%3A throttled locally::circuit api throttled"),
        "{github}"
    );
}

#[test]
fn answers_keep_it_open_and_retries_count_as_requests() {
    let dir = state_dir();
    let state = dir.path().to_str().unwrap();
    // Successes, then permanent failures (the backend answered: a 404),
    // then transient ones: never past K = 2 times the accepts.
    let (ran, rejected) = rejections(80, dir.path(), "exit $CODE", |i| {
        let mut run = adaptive(dir.path(), "api");
        match i {
            0..20 => run.env("CODE", "0"),
            20..40 => run.env("CODE", "4").args(["--stop-on-exit", "4"]),
            _ => run.env("CODE", "4"),
        };
        run
    });
    assert_eq!((ran, rejected), (80, 0));
    let text = status(&["--circuit", "api", "--state-dir", state]);
    assert!(
        text.contains("in the last 2m: 80 requests, 40 accepts, 0 runs rejected locally"),
        "{text}"
    );
    assert!(text.contains("api (adaptive): not throttling"), "{text}");
    // Three attempts that fail transiently: three requests, no accept.
    retry()
        .args([
            "-n",
            "3",
            "-d",
            "0",
            "--circuit",
            "web",
            "--circuit-mode",
            "adaptive",
        ])
        .args(["--state-dir", state, "--", "false"])
        .assert()
        .code(1);
    let text = status(&["--circuit", "web", "--state-dir", state]);
    assert!(
        text.contains("3 requests, 0 accepts, 0 runs rejected"),
        "{text}"
    );
    // --circuit-reset forgets them.
    let out = retry()
        .args(["--circuit", "web", "--circuit-mode", "adaptive"])
        .args(["--state-dir", state, "--circuit-reset"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = status(&["--circuit", "web", "--state-dir", state]);
    assert!(text.contains("0 requests, 0 accepts"), "{text}");
}

#[test]
fn old_counts_age_out_with_the_window() {
    let dir = state_dir();
    let run = |_| {
        let mut run = adaptive(dir.path(), "api");
        run.args(["--circuit-window", "1s"]);
        run
    };
    let (_, rejected) = rejections(12, dir.path(), "exit 1", run);
    assert!(rejected > 0, "12 failing runs, none rejected");
    // A second later the window is empty: the next run goes ahead.
    std::thread::sleep(Duration::from_millis(1_100));
    let out = run(0)
        .args(["-v", "--log-format", "json", "--", "false"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let done = json_events(&out.stderr).pop().unwrap();
    assert_eq!(done["circuit_requests"], 0, "{done}");
    assert_eq!(done["circuit_throttled"], false);
}

#[test]
fn each_mode_refuses_the_other_modes_flags() {
    for (args, expected) in [
        (
            &["--circuit", "c", "--circuit-k", "3"][..],
            "--circuit-k 3: only --circuit-mode adaptive uses it",
        ),
        (
            &[
                "--circuit",
                "c",
                "--circuit-mode",
                "breaker",
                "--circuit-window",
                "1m",
            ],
            "--circuit-window 1m: only --circuit-mode adaptive uses it",
        ),
        (
            &[
                "--circuit",
                "c",
                "--circuit-mode",
                "adaptive",
                "--circuit-threshold",
                "5",
            ],
            "--circuit-threshold 5: only --circuit-mode breaker uses it",
        ),
        (
            &[
                "--circuit",
                "c",
                "--circuit-mode",
                "adaptive",
                "--circuit-max-cooldown",
                "2h",
            ],
            "--circuit-max-cooldown 2h: only --circuit-mode breaker uses it",
        ),
        (
            &[
                "--circuit",
                "c",
                "--circuit-mode",
                "adaptive",
                "--circuit-k",
                "0.5",
            ],
            "--circuit-k 0.5: K is a number from 1 to 1000",
        ),
        (
            &["--circuit-k", "3"],
            "--circuit-k 3: only a circuit uses it",
        ),
        (
            &["--circuit-mode", "adaptive"],
            "--circuit-mode adaptive: only a circuit uses it",
        ),
        (
            &["--circuit", "c", "--circuit-mode", "throttle"],
            "--circuit-mode",
        ),
    ] {
        let dir = scratch();
        let out = retry()
            .args(args)
            .args(["--", "sh", "-c", &tally(dir.path(), "ran")])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(125), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert_eq!(lines(dir.path(), "ran"), 0, "nothing ran");
    }
}

/// The suite's redis-server (`RETRY_TEST_REDIS_PORT`, which scripts/test
/// starts): `None`, said loudly, without one; in CI a missing one fails.
fn suite_redis() -> Option<u16> {
    let port = std::env::var("RETRY_TEST_REDIS_PORT")
        .ok()
        .and_then(|p| p.parse().ok());
    if port.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "RETRY_TEST_REDIS_PORT is required in CI (scripts/test starts a redis-server)"
        );
        eprintln!("SKIPPED: no RETRY_TEST_REDIS_PORT (a redis-server on 127.0.0.1)");
    }
    port
}

#[test]
fn two_hosts_share_the_counts_through_redis() {
    let Some(port) = suite_redis() else { return };
    let url = format!("redis://127.0.0.1:{port}/0");
    let (a, b) = (state_dir(), state_dir());
    let name = format!("adaptive-{}", std::process::id());
    let host = |i: usize| {
        let mut run = adaptive(
            if i.is_multiple_of(2) {
                a.path()
            } else {
                b.path()
            },
            &name,
        );
        run.args(["--state-url", &url]);
        run
    };
    let reset = host(0).arg("--circuit-reset").output().unwrap();
    assert_eq!(reset.status.code(), Some(0), "{reset:?}");
    // The second host's first run sees the first host's success (nothing
    // counted yet: never rejected), and is not rejected either.
    let first = host(0).args(["--", "true"]).output().unwrap();
    assert_eq!(first.status.code(), Some(0), "{first:?}");
    let out = host(1)
        .args(["--log-format", "json", "--", "false"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let done = json_events(&out.stderr).pop().unwrap();
    assert_eq!(done["circuit_requests"], 1, "{done}");
    assert_eq!(done["circuit_accepts"], 1, "{done}");
    assert_eq!(done["circuit_throttled"], false, "{done}");
    // 60 failing runs alternating between the hosts: rejected about as
    // the formula says for one window (2 requests and 1 accept so far).
    let (ran, rejected) = rejections(60, a.path(), "exit 1", host);
    let expected: f64 = (2..62)
        .map(|n| (f64::from(n) - 2.0).max(0.0) / f64::from(n + 1))
        .sum();
    assert!((expected - 50.4).abs() < 0.1, "{expected}");
    assert!(
        (38..=60).contains(&rejected),
        "{rejected} rejected, {ran} ran"
    );
    let text = status(&["--circuit", &name, "--state-url", &url]);
    assert!(
        text.contains(&format!(
            "62 requests, 1 accepts, {rejected} runs rejected locally"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(", key retry:adaptive:{name}\n")),
        "{text}"
    );
    let reset = host(1).arg("--circuit-reset").output().unwrap();
    assert_eq!(reset.status.code(), Some(0), "{reset:?}");
    let text = status(&["--circuit", &name, "--state-url", &url]);
    assert!(text.contains("0 requests, 0 accepts"), "{text}");
}
