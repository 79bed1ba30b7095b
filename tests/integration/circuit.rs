//! The circuit breaker across runs: opening, refusing, probing, closing;
//! many processes at once; crashes in the middle of updates; bad state.

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

fn circuit(dir: &std::path::Path, name: &str) -> assert_cmd::Command {
    let mut command = retry();
    command.args(circuit_args(name)).arg("--state-dir").arg(dir);
    command
}

/// A circuit opened for an hour: a run that asserts a refusal never races
/// the cooldown, however slowly a loaded machine starts it.
fn circuit_held_open(dir: &std::path::Path, name: &str) -> assert_cmd::Command {
    let mut command = retry();
    command
        .args(circuit_args_cooling(name, "1h"))
        .arg("--state-dir")
        .arg(dir);
    command
}

/// End the cooldown of open circuit `name`, as time passing would: its
/// `open_until_ms` moves into the past, everything else is kept.
fn end_cooldown(dir: &std::path::Path, name: &str) {
    let path = dir.join(format!("{name}.json"));
    let mut state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(state["phase"], "open", "{state}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    state["open_until_ms"] = (now - 1).into();
    std::fs::write(&path, state.to_string()).unwrap();
}

#[test]
fn a_circuit_opens_after_the_threshold_refuses_then_probes_and_closes() {
    let dir = state_dir();
    let ran = dir.path().join("ran");
    let tally_ran = tally(dir.path(), "ran");
    for _ in 0..2 {
        circuit_held_open(dir.path(), "api")
            .args(["--", "sh", "-c", &format!("{tally_ran}; exit 3")])
            .assert()
            .code(3);
    }
    // Open: refused at once with 75, the command not run, a JSON done event.
    let out = circuit_held_open(dir.path(), "api")
        .args(["--log-format", "json", "--", "sh", "-c", &tally_ran])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(75));
    let done = json_events(&out.stderr).pop().unwrap();
    assert_eq!(done["event"], "done");
    assert_eq!(done["outcome"], "circuit-open");
    assert_eq!(done["exit_code"], 75);
    assert_eq!(lines(dir.path(), "ran"), 2);
    circuit_held_open(dir.path(), "api")
        .args(["--", "true"])
        .assert()
        .code(75)
        .stderr(
            predicate::str::contains("circuit api is open until")
                .and(predicate::str::contains("not running the command")),
        );
    circuit_held_open(dir.path(), "api")
        .arg("--circuit-status")
        .assert()
        .success()
        .stdout(predicate::str::contains("circuit api: open until"))
        .stdout(predicate::str::contains("failed runs in a row: 2"));

    // After the cooldown one run probes; its success closes the circuit.
    // (A cooldown running out in real time: the tests below.)
    end_cooldown(dir.path(), "api");
    circuit_held_open(dir.path(), "api")
        .arg("--circuit-status")
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "circuit api: open (cooldown over: the next run probes)",
        ));
    circuit_held_open(dir.path(), "api")
        .args(["--", "sh", "-c", &tally_ran])
        .assert()
        .success();
    assert_eq!(lines(dir.path(), "ran"), 3);
    circuit_held_open(dir.path(), "api")
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
    // A real cooldown running out: 300 ms, then the next run probes.
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
        .stdout(predicate::str::contains("circuit db: open"))
        .stdout(predicate::str::contains("failed runs in a row: 3"))
        .stdout(predicate::str::contains("cooldown: 600ms"));
    // Refused until the doubled cooldown ends: a cooldown of a minute,
    // over, so that the refusal never races it (600 ms is less than a
    // loaded machine may take to start the next run).
    std::fs::write(dir.path().join("db.json"), cooldown_over()).unwrap();
    circuit(dir.path(), "db")
        .args(["--", "false"])
        .assert()
        .code(1);
    circuit(dir.path(), "db")
        .arg("--circuit-status")
        .assert()
        .success()
        .stdout(predicate::str::contains("cooldown: 2m"));
    circuit(dir.path(), "db")
        .args(["--", "true"])
        .assert()
        .code(75)
        .stderr(predicate::str::contains("circuit db is open until"));
}

#[test]
fn circuit_reset_closes_it() {
    let dir = state_dir();
    for _ in 0..2 {
        circuit_held_open(dir.path(), "q")
            .args(["--", "false"])
            .assert()
            .code(1);
    }
    circuit_held_open(dir.path(), "q")
        .args(["--", "true"])
        .assert()
        .code(75);
    circuit_held_open(dir.path(), "q")
        .arg("--circuit-reset")
        .assert()
        .success();
    circuit_held_open(dir.path(), "q")
        .args(["--", "true"])
        .assert()
        .success();
}

/// Start `runs` at once (retry command lines up to their `--`), each to run
/// a command that tallies itself in `work`/probes and then holds until
/// every run has been decided: refused, or running the command. The probe
/// must be one however far apart a loaded machine starts the runs, so it
/// may not end (and close the circuit, which lets later runs go ahead by
/// right) before the last run was asked. Their outputs, in order.
pub(crate) fn race_for_one_probe(
    runs: Vec<std::process::Command>,
    work: &std::path::Path,
) -> Vec<std::process::Output> {
    let release = work.join("release");
    let body = format!(
        "{}; while [ ! -e '{}' ]; do sleep 0.01; done",
        tally(work, "probes"),
        release.display()
    );
    let mut children: Vec<std::process::Child> = runs
        .into_iter()
        .map(|mut run| {
            run.args(["--", "sh", "-c", &body])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // Decided: every run still there is one running the command. (A hang
    // guard only: the assertions after it say what went wrong.)
    let end = Instant::now() + Duration::from_secs(120);
    loop {
        let running = children
            .iter_mut()
            .map(|child| child.try_wait().unwrap())
            .filter(Option::is_none)
            .count();
        if running == lines(work, "probes") || Instant::now() > end {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    std::fs::write(&release, "").unwrap();
    children
        .into_iter()
        .map(|child| child.wait_with_output().unwrap())
        .collect()
}

/// Exit codes, and the stderr of the runs that ran the command.
pub(crate) fn codes_and_runners(outputs: &[std::process::Output]) -> (Vec<i32>, String) {
    let codes = outputs.iter().map(|o| o.status.code().unwrap()).collect();
    let runners = outputs
        .iter()
        .filter(|o| o.status.code() != Some(75))
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .collect();
    (codes, runners)
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
    let runs = (0..30)
        .map(|_| {
            let mut run = retry_std();
            run.arg("-v")
                .args(circuit_args("shared"))
                .arg("--state-dir")
                .arg(dir.path());
            run
        })
        .collect();
    let outputs = race_for_one_probe(runs, dir.path());
    let (codes, runners) = codes_and_runners(&outputs);
    assert_eq!(lines(dir.path(), "probes"), 1, "{codes:?}\n{runners}");
    assert_eq!(codes.iter().filter(|&&c| c == 0).count(), 1, "{codes:?}");
    assert_eq!(codes.iter().filter(|&&c| c == 75).count(), 29, "{codes:?}");
    assert!(runners.contains("circuit shared: half-open"), "{runners}");
    // The probe succeeded: closed for the next run.
    circuit(dir.path(), "shared")
        .arg("--circuit-status")
        .assert()
        .success()
        .stdout(predicate::str::contains("circuit shared: closed"));
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
            // A run killed with SIGKILL leaves its private run directory:
            // here, not in the machine's /tmp.
            .env("TMPDIR", dir.path())
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
    // Nothing a killed writer was in the middle of is left behind.
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| {
            std::path::Path::new(name)
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("tmp"))
        })
        .collect();
    assert!(left.is_empty(), "temporary files left behind: {left:?}");
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
    // Refused for state, but a store that cannot be used never stops the
    // job: it runs as if the circuit were closed, with a warning.
    let dir = scratch();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let marker = dir.path().join("ran");
    retry()
        .args(["--circuit", "x", "--state-dir"])
        .arg(dir.path())
        .args(["--", "touch"])
        .arg(&marker)
        .assert()
        .success()
        .stderr(
            predicate::str::contains("writable by others")
                .and(predicate::str::contains("running as if it were closed")),
        );
    assert!(marker.exists());
    assert!(!dir.path().join("x.json").exists(), "nothing written there");
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

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn set_mode(path: &std::path::Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A circuit state that refuses runs for an hour.
fn open_for_an_hour() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    serde_json::json!({
        "phase": "open", "failures": 3, "open_until_ms": now + 3_600_000,
        "cooldown_ms": 3_600_000, "probe": null, "updated_ms": now
    })
    .to_string()
}

#[test]
fn a_state_dir_through_another_users_symlink_is_refused() {
    if !is_root() {
        eprintln!("SKIPPED: needs root to give a symlink to another user");
        return;
    }
    let top = state_dir();
    let real = top.path().join("real");
    std::fs::create_dir(&real).unwrap();
    set_mode(&real, 0o700);
    let link = top.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
    let marker = top.path().join("ran");
    retry()
        .args(["--circuit", "x", "--state-dir"])
        .arg(&link)
        .args(["--", "touch"])
        .arg(&marker)
        .assert()
        .success()
        .stderr(predicate::str::contains("symlink owned by uid 65534"));
    // The job ran (a store that cannot be used never stops it); nothing
    // was written through the link.
    assert!(marker.exists());
    assert_eq!(std::fs::read_dir(&real).unwrap().count(), 0);
    // Our own symlink is followed.
    std::os::unix::fs::lchown(&link, Some(0), Some(0)).unwrap();
    circuit(&link, "x").args(["--", "true"]).assert().success();
    // And a directory of another user above the state directory is refused.
    let theirs = top.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    set_mode(&theirs, 0o755);
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    retry()
        .args(["--circuit", "x", "--state-dir"])
        .arg(theirs.join("state"))
        .args(["--", "true"])
        .assert()
        .success()
        .stderr(predicate::str::contains("belongs to uid 65534"));
    assert!(!theirs.join("state").exists());
}

#[test]
fn a_state_dir_under_a_directory_others_can_write_is_refused_unless_sticky() {
    let top = state_dir();
    let open = top.path().join("open");
    std::fs::create_dir(&open).unwrap();
    set_mode(&open, 0o777);
    let marker = top.path().join("ran");
    retry()
        .args(["--circuit", "x", "--state-dir"])
        .arg(open.join("state"))
        .args(["--", "touch"])
        .arg(&marker)
        .assert()
        .success()
        .stderr(
            predicate::str::contains("writable by others").and(predicate::str::contains("sticky")),
        );
    // The job ran as if closed; no state directory was made in there.
    assert!(marker.exists());
    assert!(!open.join("state").exists());
    // As /tmp is: sticky, so others cannot replace what is ours.
    set_mode(&open, 0o1777);
    circuit(&open.join("state"), "x")
        .args(["--", "true"])
        .assert()
        .success();
}

#[test]
fn a_symlink_fifo_or_device_as_the_state_file_is_not_followed() {
    let dir = state_dir();
    let outside = state_dir();
    // A symlink to an open state elsewhere: not followed, the target untouched.
    let target = outside.path().join("target.json");
    let open = open_for_an_hour();
    std::fs::write(&target, &open).unwrap();
    std::os::unix::fs::symlink(&target, dir.path().join("link.json")).unwrap();
    circuit(dir.path(), "link")
        .args(["--", "true"])
        .assert()
        .success()
        .stderr(predicate::str::contains("symlink").and(predicate::str::contains("closed")));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), open);
    assert!(
        std::fs::symlink_metadata(dir.path().join("link.json"))
            .unwrap()
            .is_file()
    );
    // A FIFO: a warning, not a hang.
    let fifo = dir.path().join("fifo.json");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let started = Instant::now();
    circuit(dir.path(), "fifo")
        .args(["--", "true"])
        .timeout(Duration::from_secs(10))
        .assert()
        .success()
        .stderr(predicate::str::contains("FIFO"));
    assert!(started.elapsed() < Duration::from_secs(3));
    // A FIFO as the lock file: the job runs, with a warning.
    let lock = dir.path().join("lockfifo.lock");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&lock)
            .status()
            .unwrap()
            .success()
    );
    circuit(dir.path(), "lockfifo")
        .args(["--", "true"])
        .timeout(Duration::from_secs(10))
        .assert()
        .success()
        .stderr(predicate::str::contains("lock file").and(predicate::str::contains("FIFO")));
    // A device: never opened.
    if is_root() {
        let device = dir.path().join("dev.json");
        let made = std::process::Command::new("mknod")
            .arg(&device)
            .args(["c", "1", "3"])
            .status()
            .unwrap();
        assert!(made.success());
        circuit(dir.path(), "dev")
            .args(["--", "true"])
            .assert()
            .success()
            .stderr(predicate::str::contains("character device"));
    } else {
        eprintln!("SKIPPED (device part): needs root for mknod");
    }
}

#[test]
fn an_oversized_state_file_is_corrupt_and_treated_as_closed() {
    let dir = state_dir();
    // A valid open state, padded past 64 KiB: never read whole.
    let mut text = " ".repeat(70 * 1024);
    text.push_str(&open_for_an_hour());
    std::fs::write(dir.path().join("big.json"), text).unwrap();
    circuit(dir.path(), "big")
        .args(["--", "true"])
        .assert()
        .success()
        .stderr(predicate::str::contains("corrupt").and(predicate::str::contains("64 KiB")));
    // Rewritten as a small, closed state.
    let text = std::fs::read_to_string(dir.path().join("big.json")).unwrap();
    assert!(text.len() < 1024);
    // The same state, not padded, is obeyed.
    std::fs::write(dir.path().join("big.json"), open_for_an_hour()).unwrap();
    circuit(dir.path(), "big")
        .args(["--", "true"])
        .assert()
        .code(75);
}

#[test]
fn a_stored_time_out_of_range_is_corrupt_not_a_crash() {
    let dir = state_dir();
    let far = r#"{"phase":"open","failures":3,"open_until_ms":300000000000000,"cooldown_ms":60000,"probe":null,"updated_ms":0}"#;
    std::fs::write(dir.path().join("far.json"), far).unwrap();
    circuit(dir.path(), "far")
        .arg("--circuit-status")
        .assert()
        .success()
        .stdout(
            predicate::str::contains("corrupt")
                .and(predicate::str::contains("circuit far: closed")),
        );
    std::fs::write(dir.path().join("far.json"), far).unwrap();
    circuit(dir.path(), "far")
        .args(["--", "true"])
        .assert()
        .success()
        .stderr(predicate::str::contains("corrupt").and(predicate::str::contains("9999")));
    // A probe with a pid past i32::MAX and a lease past the year 9999.
    let probe = r#"{"phase":"half-open","failures":3,"open_until_ms":null,"cooldown_ms":60000,"probe":{"host":"h","pid":4294967295,"started_ms":0,"lease_until_ms":18446744073709551615},"updated_ms":0}"#;
    std::fs::write(dir.path().join("far.json"), probe).unwrap();
    circuit(dir.path(), "far")
        .args(["--", "true"])
        .assert()
        .success()
        .stderr(predicate::str::contains("corrupt"));
}

/// Hold `path`'s flock for `seconds` in a `flock` process (util-linux);
/// returns once it holds the lock, `None` without `flock`.
fn hold_lock(path: &std::path::Path, seconds: u32) -> Option<std::process::Child> {
    let held = path.with_extension("held");
    let script = format!("touch '{}'; sleep {seconds}", held.display());
    let Ok(child) = std::process::Command::new("flock")
        .arg(path)
        .args(["sh", "-c", &script])
        .spawn()
    else {
        eprintln!("SKIPPED: no flock command (util-linux)");
        return None;
    };
    wait_for_file(&held, Duration::from_secs(5));
    Some(child)
}

#[test]
fn a_held_lock_gives_a_warning_within_the_state_timeout() {
    let dir = state_dir();
    circuit(dir.path(), "held")
        .args(["--", "true"])
        .assert()
        .success();
    let Some(mut holder) = hold_lock(&dir.path().join("held.lock"), 10) else {
        return;
    };
    let started = Instant::now();
    circuit(dir.path(), "held")
        .args(["--state-timeout", "300ms", "--", "true"])
        .timeout(Duration::from_secs(20))
        .assert()
        .success()
        .stderr(
            predicate::str::contains("could not lock")
                .and(predicate::str::contains(
                    "within 300ms (held by another process)",
                ))
                .and(predicate::str::contains("running as if it were closed")),
        );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    // A SIGTERM during the wait: acted on as soon as the wait ends, the
    // command never started.
    let marker = dir.path().join("ran");
    let child = retry_std()
        .args(circuit_args("held"))
        .arg("--state-dir")
        .arg(dir.path())
        .args(["--state-timeout", "1s", "--", "touch"])
        .arg(&marker)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    send_signal(child.id(), "TERM");
    let status = child.wait_with_output().unwrap().status;
    assert_eq!(code_and_signal(status), (None, Some(15)));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(!marker.exists());
    let _ = holder.kill();
    let _ = holder.wait();
}

/// A circuit whose cooldown is over: the next run probes.
pub(crate) fn cooldown_over() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    serde_json::json!({
        "phase": "open", "failures": 3, "open_until_ms": now - 1000,
        "cooldown_ms": 60_000, "probe": null, "updated_ms": now - 61_000
    })
    .to_string()
}

/// Whether a PID namespace of our own can be made here (`unshare --pid`,
/// as root: a user namespace would show the directories above a state
/// directory as nobody's, which the store refuses).
pub(crate) fn pid_namespaces_work(test: &str) -> bool {
    if !is_root() {
        eprintln!("{test}: skipped, a PID namespace of our own (unshare --pid) needs root here");
        return false;
    }
    let made = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        eprintln!("{test}: skipped, unshare --pid --fork is refused here");
    }
    made
}

/// Circuit `name` in the store `store` names (its cooldown over): a run
/// here takes the probe, and a run in a PID namespace of its own, which
/// cannot see the probe's process, must not take it for gone.
pub(crate) fn one_probe_across_pid_namespaces(store: &[&str], name: &str) {
    let dir = state_dir();
    let started = dir.path().join("started");
    let release = dir.path().join("release");
    // The probe runs until the second run has been decided.
    let body = format!(
        "touch '{}'; while [ ! -e '{}' ]; do sleep 0.01; done",
        started.display(),
        release.display()
    );
    let mut probe = retry_std()
        .args(circuit_args(name))
        .args(store)
        .args(["--", "sh", "-c", &body])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_file(&started, Duration::from_secs(20));
    // The same binary, in a PID namespace of its own: the probe's pid is
    // no process there, or another one.
    let inside = std::process::Command::new("unshare")
        .args(["--pid", "--fork", BIN])
        .args(circuit_args(name))
        .args(store)
        .args(["--", "echo", "second probe"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    std::fs::write(&release, "").unwrap();
    let stderr = String::from_utf8_lossy(&inside.stderr);
    assert_eq!(inside.status.code(), Some(75), "{stderr}");
    assert!(stderr.contains("another run is probing it"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&inside.stdout), "");
    assert_eq!(probe.wait().unwrap().code(), Some(0));
    // The probe closed the circuit: the next run goes ahead.
    retry()
        .args(circuit_args(name))
        .args(store)
        .args(["--", "true"])
        .assert()
        .code(0);
}

#[test]
fn a_probe_in_another_pid_namespace_keeps_its_claim_until_its_lease_ends() {
    // Two runs on one host name, sharing a store, in two PID namespaces (a
    // sandbox, a host-network container).
    if !pid_namespaces_work("a_probe_in_another_pid_namespace_keeps_its_claim_until_its_lease_ends")
    {
        return;
    }
    let dir = state_dir();
    std::fs::write(dir.path().join("pidns.json"), cooldown_over()).unwrap();
    let state = dir.path().to_str().unwrap();
    one_probe_across_pid_namespaces(&["--state-dir", state], "pidns");
}

#[test]
fn a_probe_that_was_pid_1_of_a_container_that_ended_is_gone_for_the_host() {
    // Seen from the host's PID namespace (the initial one), a container's
    // processes are visible: its probe is judged there, and our own pid 1
    // (init) is not taken for it.
    let test = "a_probe_that_was_pid_1_of_a_container_that_ended_is_gone_for_the_host";
    if !pid_namespaces_work(test) {
        return;
    }
    let namespace =
        std::os::unix::fs::MetadataExt::ino(&std::fs::metadata("/proc/self/ns/pid").unwrap());
    if namespace != 0xEFFF_FFFC {
        eprintln!("{test}: skipped, the tests do not run in the initial PID namespace");
        return;
    }
    let dir = state_dir();
    std::fs::write(dir.path().join("pid-one.json"), cooldown_over()).unwrap();
    let started = dir.path().join("started");
    let body = format!("touch '{}'; sleep 60", started.display());
    // The probe is pid 1 of its namespace; killing unshare kills it, and
    // with it the namespace.
    let mut container = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--kill-child", BIN])
        .args(circuit_args("pid-one"))
        .arg("--state-dir")
        .arg(dir.path())
        .args(["--", "sh", "-c", &body])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_file(&started, Duration::from_secs(20));
    let state = std::fs::read_to_string(dir.path().join("pid-one.json")).unwrap();
    assert!(state.contains("\"pid\": 1,"), "{state}");
    // While it runs, it is seen running.
    circuit(dir.path(), "pid-one")
        .args(["--", "true"])
        .assert()
        .code(75)
        .stderr(predicate::str::contains("another run is probing it"));
    send_signal(container.id(), "KILL");
    let _ = container.wait();
    let ended = Instant::now();
    loop {
        let out = circuit(dir.path(), "pid-one")
            .args(["--", "true"])
            .output()
            .unwrap();
        if out.status.code() == Some(0) {
            break;
        }
        // The namespace ends a moment after its pid 1 is killed.
        assert!(
            ended.elapsed() < Duration::from_secs(10),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Field 22 of `/proc/PID/stat`: the start time, in clock ticks since boot.
fn start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    rest.split_whitespace().nth(19).unwrap().parse().unwrap()
}

#[test]
fn a_probe_whose_pid_now_names_another_process_loses_its_claim() {
    use std::os::unix::fs::MetadataExt;
    let dir = state_dir();
    // A process that is not the probe holds the probe's pid.
    let mut other = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = other.id();
    let host = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let namespace = std::fs::metadata("/proc/self/ns/pid").unwrap().ino();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let claimed = |start: u64| {
        serde_json::json!({
            "phase": "half-open", "failures": 3, "open_until_ms": null,
            "cooldown_ms": 60_000, "updated_ms": now,
            "probe": {
                "host": host, "pid": pid, "started_ms": now,
                "lease_until_ms": now + 3_600_000,
                "boot_id": boot.trim(), "pid_ns": namespace, "start": start
            }
        })
        .to_string()
    };
    // The probe started at another time than the process with its pid.
    let real = start_time(pid);
    std::fs::write(dir.path().join("reused.json"), claimed(real + 1)).unwrap();
    circuit(dir.path(), "reused")
        .args(["--", "true"])
        .assert()
        .code(0);
    // The same process (pid and start time): still probing.
    std::fs::write(dir.path().join("reused.json"), claimed(real)).unwrap();
    circuit(dir.path(), "reused")
        .args(["--", "true"])
        .assert()
        .code(75)
        .stderr(predicate::str::contains("another run is probing it"));
    let _ = other.kill();
    let _ = other.wait();
    // Gone: the next run probes.
    circuit(dir.path(), "reused")
        .args(["--", "true"])
        .assert()
        .code(0);
}
