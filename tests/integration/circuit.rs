//! The circuit breaker across runs: opening, refusing, probing, closing;
//! many processes at once; crashes in the middle of updates; bad state.

use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::Duration;

use predicates::prelude::*;

use crate::util::*;

fn state_dir() -> tempfile::TempDir {
    let dir = scratch();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

fn circuit(dir: &std::path::Path, name: &str) -> assert_cmd::Command {
    let mut command = retry();
    command.args(circuit_args(name)).arg("--state-dir").arg(dir);
    command
}

#[test]
fn a_circuit_opens_after_the_threshold_refuses_then_probes_and_closes() {
    let dir = state_dir();
    let ran = dir.path().join("ran");
    let tally_ran = tally(dir.path(), "ran");
    for _ in 0..2 {
        circuit(dir.path(), "api")
            .args(["--", "sh", "-c", &format!("{tally_ran}; exit 3")])
            .assert()
            .code(3);
    }
    // Open: refused at once with 75, the command not run, a JSON done event.
    let out = circuit(dir.path(), "api")
        .args(["--log-format", "json", "--", "sh", "-c", &tally_ran])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(75));
    let done = json_events(&out.stderr).pop().unwrap();
    assert_eq!(done["event"], "done");
    assert_eq!(done["outcome"], "circuit-open");
    assert_eq!(done["exit_code"], 75);
    assert_eq!(lines(dir.path(), "ran"), 2);
    circuit(dir.path(), "api")
        .args(["--", "true"])
        .assert()
        .code(75)
        .stderr(
            predicate::str::contains("circuit api is open until")
                .and(predicate::str::contains("not running the command")),
        );
    circuit(dir.path(), "api")
        .arg("--circuit-status")
        .assert()
        .success()
        .stdout(predicate::str::contains("circuit api: open until"))
        .stdout(predicate::str::contains("failed runs in a row: 2"));

    // After the cooldown one run probes; its success closes the circuit.
    std::thread::sleep(Duration::from_millis(350));
    circuit(dir.path(), "api")
        .args(["--", "sh", "-c", &tally_ran])
        .assert()
        .success();
    assert_eq!(lines(dir.path(), "ran"), 3);
    circuit(dir.path(), "api")
        .arg("--circuit-status")
        .assert()
        .success()
        .stdout(predicate::str::contains("circuit api: closed"))
        .stdout(predicate::str::contains("failed runs in a row: 0"));
    assert!(ran.exists());
}

#[test]
fn a_failed_probe_reopens_with_the_cooldown_doubled() {
    let dir = state_dir();
    for _ in 0..2 {
        circuit(dir.path(), "db")
            .args(["--", "false"])
            .assert()
            .code(1);
    }
    std::thread::sleep(Duration::from_millis(350));
    circuit(dir.path(), "db")
        .args(["--", "false"])
        .assert()
        .code(1);
    circuit(dir.path(), "db")
        .arg("--circuit-status")
        .assert()
        .success()
        .stdout(predicate::str::contains("cooldown: 600ms"));
    circuit(dir.path(), "db")
        .args(["--", "true"])
        .assert()
        .code(75);
}

#[test]
fn circuit_reset_closes_it() {
    let dir = state_dir();
    for _ in 0..2 {
        circuit(dir.path(), "q")
            .args(["--", "false"])
            .assert()
            .code(1);
    }
    circuit(dir.path(), "q")
        .args(["--", "true"])
        .assert()
        .code(75);
    circuit(dir.path(), "q")
        .arg("--circuit-reset")
        .assert()
        .success();
    circuit(dir.path(), "q")
        .args(["--", "true"])
        .assert()
        .success();
}

#[test]
fn thirty_processes_after_the_cooldown_make_exactly_one_probe() {
    let dir = state_dir();
    for _ in 0..2 {
        circuit(dir.path(), "shared")
            .args(["--", "false"])
            .assert()
            .code(1);
    }
    std::thread::sleep(Duration::from_millis(350));
    let probe = format!("{}; sleep 0.5", tally(dir.path(), "probes"));
    let children: Vec<_> = (0..30)
        .map(|_| {
            retry_std()
                .arg("-q")
                .args(circuit_args("shared"))
                .arg("--state-dir")
                .arg(dir.path())
                .args(["--", "sh", "-c", &probe])
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let codes: Vec<i32> = children
        .into_iter()
        .map(|mut c| c.wait().unwrap().code().unwrap())
        .collect();
    assert_eq!(lines(dir.path(), "probes"), 1, "{codes:?}");
    assert_eq!(codes.iter().filter(|&&c| c == 0).count(), 1, "{codes:?}");
    assert_eq!(codes.iter().filter(|&&c| c == 75).count(), 29, "{codes:?}");
}

#[test]
fn sigkill_in_the_middle_of_state_updates_never_leaves_a_torn_file() {
    let dir = state_dir();
    let state = dir.path().join("crash.json");
    for i in 0..150u64 {
        let mut child = retry_std()
            .args([
                "-q",
                "-n",
                "1",
                "-d",
                "0",
                "--circuit",
                "crash",
                "--circuit-threshold",
                "1000",
                "--state-dir",
            ])
            .arg(dir.path())
            .args(["--", if i % 2 == 0 { "false" } else { "true" }])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros((i * 97) % 3000));
        let _ = child.kill();
        let _ = child.wait();
        if let Ok(text) = std::fs::read_to_string(&state) {
            serde_json::from_str::<serde_json::Value>(&text)
                .unwrap_or_else(|e| panic!("torn state after kill {i}: {e}: {text:?}"));
        }
    }
    // And the circuit still works.
    circuit(dir.path(), "crash")
        .args(["--", "true"])
        .assert()
        .success();
}

#[test]
fn a_corrupt_state_file_is_reported_and_treated_as_closed() {
    let dir = state_dir();
    std::fs::write(dir.path().join("bad.json"), "{\"phase\":\"op").unwrap();
    circuit(dir.path(), "bad")
        .args(["--", "true"])
        .assert()
        .success()
        .stderr(predicate::str::contains("corrupt"));
    let text = std::fs::read_to_string(dir.path().join("bad.json")).unwrap();
    serde_json::from_str::<serde_json::Value>(&text).unwrap();
}

#[test]
fn a_state_directory_writable_by_others_is_refused() {
    let dir = scratch();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let marker = dir.path().join("ran");
    retry()
        .args(["--circuit", "x", "--state-dir"])
        .arg(dir.path())
        .args(["--", "touch"])
        .arg(&marker)
        .assert()
        .code(125)
        .stderr(predicate::str::contains("writable by others"));
    assert!(!marker.exists());
}

#[test]
fn state_files_are_private_and_the_directory_comes_from_the_environment() {
    let dir = state_dir();
    let state = dir.path().join("nested/state");
    retry()
        .env("RETRY_STATE_DIR", &state)
        .args(["--circuit", "envjob", "--", "false"])
        .args(["-n", "1"])
        .assert()
        .code(1);
    let mode = std::fs::metadata(state.join("envjob.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(
        std::fs::metadata(&state).unwrap().permissions().mode() & 0o777,
        0o700
    );
    retry()
        .env_remove("RETRY_STATE_DIR")
        .env("XDG_STATE_HOME", dir.path())
        .args(["--circuit", "xdg", "-n", "1", "--", "true"])
        .assert()
        .success();
    assert!(dir.path().join("retry/xdg.json").exists());
}

#[test]
fn bad_circuit_flags_are_usage_errors() {
    retry()
        .args(["--circuit", "../etc", "--", "true"])
        .assert()
        .code(125)
        .stderr(predicate::str::contains("--circuit"));
    retry().args(["--circuit-status"]).assert().code(125);
    retry()
        .args(["--circuit", "x", "--circuit-threshold", "0", "--", "true"])
        .assert()
        .code(125)
        .stderr(predicate::str::contains("--circuit-threshold"));
    retry()
        .args([
            "--circuit",
            "x",
            "--circuit-cooldown",
            "1h",
            "--circuit-max-cooldown",
            "1m",
            "--",
            "true",
        ])
        .assert()
        .code(125);
}
