//! Where state comes from and what a run that never ran the command leaves
//! in it: flags beat the environment, the environment is read only when
//! needed, and a probe claimed by a run that failed on its own is given back.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use crate::util::*;

fn private_dir() -> tempfile::TempDir {
    let dir = scratch();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

#[test]
fn a_probe_claimed_by_a_run_that_failed_on_its_own_is_given_back() {
    let state = private_dir();
    let with_state = |command: &mut assert_cmd::Command| {
        command
            .args(circuit_args("own-failure"))
            .arg("--state-dir")
            .arg(state.path());
    };
    for _ in 0..2 {
        let mut command = retry();
        with_state(&mut command);
        command.args(["--", "false"]).assert().code(1);
    }
    std::thread::sleep(Duration::from_millis(400));
    // The probe's run cannot even set up (no usable TMPDIR): exit 125.
    let mut command = retry();
    with_state(&mut command);
    command
        .env("TMPDIR", "/nonexistent/retry-test")
        .args(["--", "true"])
        .assert()
        .code(125);
    // The next run probes at once instead of being refused for a cooldown.
    let mut command = retry();
    with_state(&mut command);
    command.args(["--", "true"]).assert().code(0);
}

#[test]
fn an_explicit_state_dir_beats_retry_state_url() {
    let state = private_dir();
    // A URL nobody answers: were it used, the run would warn about it.
    let out = retry()
        .env("RETRY_STATE_URL", "redis://127.0.0.1:1/")
        .args(["--circuit", "flags-first", "--state-dir"])
        .arg(state.path())
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("warning"), "{stderr}");
    assert!(state.path().join("flags-first.json").exists());
}

#[test]
fn an_empty_retry_state_url_is_unset_and_a_garbled_one_matters_only_for_circuits() {
    use std::os::unix::ffi::OsStrExt;
    let state = private_dir();
    retry()
        .env("RETRY_STATE_URL", "")
        .env("RETRY_STATE_DIR", state.path())
        .args(["--circuit", "empty-url", "--", "true"])
        .assert()
        .success();
    assert!(state.path().join("empty-url.json").exists());
    let garbled = std::ffi::OsStr::from_bytes(b"redis://\xff/");
    // Without a circuit the variable is not read at all.
    retry()
        .env("RETRY_STATE_URL", garbled)
        .args(["--", "true"])
        .assert()
        .success();
    let out = retry()
        .env("RETRY_STATE_URL", garbled)
        .args(["--circuit", "garbled", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("RETRY_STATE_URL"));
}

#[test]
fn circuit_names_may_start_with_a_hyphen() {
    let state = private_dir();
    retry()
        .args(["--circuit", "-x", "--state-dir"])
        .arg(state.path())
        .args(["--", "true"])
        .assert()
        .success();
}

#[test]
fn a_circuit_under_cron_without_home_or_xdg_runs_the_job() {
    // cron's `env -i`: no HOME, no XDG variables. The state goes to the
    // home directory of the password entry (or /tmp/retry-state-UID), and
    // the job runs.
    let work = scratch();
    let marker = work.path().join("ran");
    let name = format!("cron-{}", std::process::id());
    let status = std::process::Command::new("env")
        .args(["-i", "PATH=/usr/bin:/bin", BIN, "-v", "--circuit"])
        .arg(&name)
        .args(["--", "touch"])
        .arg(&marker)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    assert!(marker.exists());
    let stderr = String::from_utf8_lossy(&status.stderr);
    assert!(!stderr.contains("error"), "{stderr}");
    // Leave the password entry's home as it was.
    if let Some(home) = std::env::var_os("HOME") {
        let dir = std::path::Path::new(&home).join(".local/state/retry");
        for ending in ["json", "lock"] {
            let _ = std::fs::remove_file(dir.join(format!("{name}.{ending}")));
        }
    }
}

#[test]
fn the_status_shows_the_threshold_the_circuit_was_opened_with() {
    let state = private_dir();
    for _ in 0..2 {
        retry()
            .args([
                "-q",
                "-n",
                "1",
                "--circuit",
                "kept",
                "--circuit-threshold",
                "2",
            ])
            .arg("--state-dir")
            .arg(state.path())
            .args(["--", "false"])
            .assert()
            .code(1);
    }
    // Asked with the default threshold (3), it tells what opened it.
    let out = retry()
        .args(["--circuit", "kept", "--circuit-status", "--state-dir"])
        .arg(state.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("circuit kept: open until"), "{text}");
    assert!(
        text.contains("failed runs in a row: 2 (opens at 2) (as stored by the last run)"),
        "{text}"
    );
    // -v says how the circuit stands when a run starts.
    let out = retry()
        .args(["-v", "-n", "1", "--circuit", "fresh", "--state-dir"])
        .arg(state.path())
        .args(["--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("circuit fresh: closed; 0 failed runs in a row (opens at 3)"),
        "{stderr}"
    );
}

#[test]
fn credentials_never_appear_in_messages_whatever_the_url_form() {
    for url in [
        "redis+unix:///nonexistent/sock?pass=SECRET",
        "unix:///nonexistent/sock?pass=SECRET&db=1",
        "redis+unix:///nonexistent/sock?password=SECRET",
        "redis://user:SECRET@127.0.0.1:1/0",
        "rediss://:SECRET@127.0.0.1:1/0",
        "redis://127.0.0.1:1/0?password=SECRET",
        "redis://:SECRET@[broken",
    ] {
        let out = retry()
            .args(["-n", "1", "--circuit", "x", "--state-timeout", "300ms"])
            .args(["--state-url", url, "--log-format", "json", "--", "true"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("SECRET"), "{url}: {stderr}");
        assert!(
            stderr.contains("\"event\""),
            "{url}: said nothing: {stderr}"
        );
    }
}

#[test]
fn a_refused_runs_done_event_has_the_same_fields_as_any_other() {
    let state = private_dir();
    let args = [
        "-q",
        "-n",
        "1",
        "--circuit",
        "refuse",
        "--circuit-threshold",
        "1",
    ];
    retry()
        .args(args)
        .arg("--state-dir")
        .arg(state.path())
        .args(["--", "false"])
        .assert()
        .code(1);
    let out = retry()
        .args([
            "-n",
            "1",
            "--circuit",
            "refuse",
            "--log-format",
            "json",
            "--state-dir",
        ])
        .arg(state.path())
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(75));
    let done = json_events(&out.stderr).pop().unwrap();
    assert_eq!(done["outcome"], "circuit-open");
    assert_eq!(done["timed_out"], false);
    assert!(done["signal"].is_null());
}

#[test]
fn a_relative_xdg_state_home_is_ignored_as_the_spec_says() {
    let home = private_dir();
    let out = retry()
        .env("XDG_STATE_HOME", "relative/state")
        .env("HOME", home.path())
        .env_remove("RETRY_STATE_DIR")
        .args(["--circuit", "xdg", "--circuit-status"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let expected = home.path().join(".local/state/retry/xdg.json");
    assert!(text.contains(&expected.display().to_string()), "{text}");
}

#[test]
fn a_missing_or_relative_home_is_never_created() {
    // As root, HOME=/nonexistent used to make /nonexistent (Debian's
    // `nobody` relies on it not existing), and HOME=relh made ./relh.
    let work = scratch();
    let missing = work.path().join("missing/deeper");
    let name = format!("homeless-{}", std::process::id());
    for home in [missing.as_os_str(), std::ffi::OsStr::new("relh")] {
        let out = retry()
            .current_dir(work.path())
            .env("HOME", home)
            .env_remove("XDG_STATE_HOME")
            .env_remove("RETRY_STATE_DIR")
            .args(["--circuit", &name, "--circuit-status"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    }
    assert!(!work.path().join("missing").exists());
    assert!(!work.path().join("relh").exists());
    // The state went to the password entry's home: leave it as it was.
    if let Some(home) = std::env::var_os("HOME") {
        let dir = std::path::Path::new(&home).join(".local/state/retry");
        for ending in ["json", "lock"] {
            let _ = std::fs::remove_file(dir.join(format!("{name}.{ending}")));
        }
    }
}

#[test]
fn a_service_account_whose_home_does_not_exist_keeps_its_circuit_in_tmp() {
    // nobody's home is /nonexistent: every run warned "creating the state
    // directory /nonexistent: Permission denied" and ran without a circuit.
    let name = format!("service-{}", std::process::id());
    let Ok(out) = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args([
            "env",
            "-i",
            "PATH=/usr/bin:/bin",
            BIN,
            "--circuit",
            &name,
            "--circuit-status",
        ])
        .output()
    else {
        eprintln!("skipped: no setpriv (util-linux)");
        return;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    let file = format!("/tmp/retry-state-65534/{name}.json");
    assert!(stdout.contains(&file), "{stdout}");
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(format!("/tmp/retry-state-65534/{name}.lock"));
}

#[test]
fn a_bad_state_url_names_the_variable_or_the_flag_it_came_from() {
    let out = retry()
        .env("RETRY_STATE_URL", "garbage")
        .args(["--circuit", "x", "-n", "1", "--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    // Before: `--state-url garbage: ...`, a flag never typed.
    assert!(
        stderr.starts_with("retry: error: RETRY_STATE_URL garbage: not a usable Redis URL ("),
        "{stderr}"
    );
    assert!(!stderr.contains("--state-url"), "{stderr}");
    // The flag, when it is the flag (over the variable).
    let out = retry()
        .env("RETRY_STATE_URL", "redis://127.0.0.1:1/")
        .args(["--circuit", "x", "--state-url", "garbage", "--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(
        stderr.starts_with("retry: error: --state-url garbage: not a usable Redis URL ("),
        "{stderr}"
    );
}

#[test]
fn circuit_and_state_flags_without_a_circuit_or_a_budget_are_usage_errors() {
    // They would be ignored: the run has no circuit and no budget to keep.
    let dir = private_dir();
    let dir = dir.path().to_str().unwrap();
    for (flag, value) in [
        ("--circuit-threshold", "5"),
        ("--circuit-cooldown", "5m"),
        ("--circuit-max-cooldown", "2h"),
        ("--state-dir", dir),
        ("--state-timeout", "3s"),
        ("--state-url", "redis://127.0.0.1:1/0"),
    ] {
        let out = retry()
            .args([flag, value, "-n", "1", "--", "true"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{flag}: {stderr}");
        assert!(
            stderr.contains(&format!("error: {flag} {value}: ")),
            "{flag}: {stderr}"
        );
        assert!(stderr.contains("--circuit NAME"), "{flag}: {stderr}");
    }
}

#[test]
fn state_flags_go_with_a_budget_and_its_modes_too() {
    let state = private_dir();
    retry()
        .args(["--budget", "shared", "--state-timeout", "3s", "--state-dir"])
        .arg(state.path())
        .args(["-n", "1", "--", "true"])
        .assert()
        .success();
    retry()
        .args(["--budget", "shared", "--budget-status", "--state-dir"])
        .arg(state.path())
        .assert()
        .success();
    retry()
        .args([
            "--circuit",
            "kept",
            "--circuit-threshold",
            "5",
            "--circuit-reset",
        ])
        .arg("--state-dir")
        .arg(state.path())
        .assert()
        .success();
}

#[test]
fn state_variables_in_the_environment_leave_a_plain_run_alone() {
    // A CI environment that exports them for the jobs that use a circuit.
    retry()
        .env("RETRY_STATE_URL", "redis://127.0.0.1:1/0")
        .env("RETRY_STATE_DIR", "/nonexistent/retry-state")
        .args(["-n", "1", "--", "true"])
        .assert()
        .success()
        .stderr("");
}

#[test]
fn a_home_of_another_users_is_not_where_state_goes() {
    // `sudo` keeps the caller's HOME: the store would refuse a directory
    // made there (not root's own), and the circuit would be off.
    if !running_as_root() {
        eprintln!("skipped: needs root to give the home to another user");
        return;
    }
    let work = scratch();
    let home = work.path().join("alice");
    std::fs::create_dir(&home).unwrap();
    std::os::unix::fs::chown(&home, Some(65534), Some(65534)).unwrap();
    let name = format!("sudoed-{}", std::process::id());
    let out = retry()
        .env("HOME", &home)
        .env_remove("XDG_STATE_HOME")
        .env_remove("RETRY_STATE_DIR")
        .args(["--circuit", &name, "--circuit-status"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(!stdout.contains(&home.display().to_string()), "{stdout}");
    assert!(!home.join(".local").exists());
    if let Some(own) = std::env::var_os("HOME") {
        let dir = std::path::Path::new(&own).join(".local/state/retry");
        for ending in ["json", "lock"] {
            let _ = std::fs::remove_file(dir.join(format!("{name}.{ending}")));
        }
    }
}

fn running_as_root() -> bool {
    std::fs::metadata("/proc/self")
        .is_ok_and(|meta| std::os::unix::fs::MetadataExt::uid(&meta) == 0)
}

/// Makes `dir` read-only for the rest of the test: as root, whom modes do
/// not stop, by remounting the small file system it is on read-only;
/// otherwise by `chmod a-w`.
fn make_read_only(dir: &std::path::Path, disk: Option<&SmallDisk>) {
    match disk {
        Some(disk) => {
            let remounted = std::process::Command::new("mount")
                .args(["-o", "remount,ro"])
                .arg(&disk.path)
                .status()
                .unwrap();
            assert!(remounted.success());
        }
        None => std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o500)).unwrap(),
    }
}

#[test]
fn status_of_a_read_only_state_directory_needs_no_write() {
    let root = rustix::process::geteuid().is_root();
    let disk = if root {
        match SmallDisk::mount("1m", "status_of_a_read_only_state_directory_needs_no_write") {
            Some(disk) => Some(disk),
            None => return,
        }
    } else {
        None
    };
    let scratch = private_dir();
    let base = disk
        .as_ref()
        .map_or(scratch.path(), |disk| disk.path.as_path());
    let dir = base.join("state");
    let state = |command: &mut assert_cmd::Command| {
        command.arg("--state-dir").arg(&dir);
    };
    let mut run = retry();
    state(&mut run);
    run.args(circuit_args("ro"))
        .args(["--budget", "ro", "--", "false"])
        .assert()
        .code(1);
    let before = listing(&dir);
    make_read_only(&dir, disk.as_ref());
    let mut status = retry();
    state(&mut status);
    let out = status
        .args(["--circuit", "ro", "--circuit-status"])
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("circuit ro: closed"), "{stdout}");
    assert!(stdout.contains("failed runs in a row: 1"), "{stdout}");
    assert_eq!(stderr, "");
    let mut status = retry();
    state(&mut status);
    let out = status
        .args(["--budget", "ro", "--budget-status"])
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("since created: 1 first attempts"),
        "{stdout}"
    );
    assert_eq!(stderr, "");
    assert_eq!(listing(&dir), before);
    // A state directory not made yet is read as empty, and not made.
    let missing = base.join("never");
    let out = retry()
        .arg("--state-dir")
        .arg(&missing)
        .args(["--circuit", "new", "--circuit-status"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("circuit new: closed"), "{stdout}");
    assert!(stdout.contains("nothing stored yet"), "{stdout}");
    assert!(!missing.exists());
}

/// The events of `kind` in `events`.
fn of_kind<'a>(events: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    events.iter().filter(|e| e["event"] == kind).collect()
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one unusable store, seen in each of its reports in turn"
)]
fn a_store_that_cannot_be_used_is_said_under_quiet_in_done_and_in_the_metrics() {
    // A state directory anyone may write is refused: the job runs as if
    // there were no circuit and no budget.
    let dir = private_dir();
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let metrics = dir.path().join("job.prom");
    let (open_dir, metrics_file) = (open.to_str().unwrap(), metrics.to_str().unwrap());
    let guarded = [
        "--circuit",
        "api",
        "--budget",
        "api",
        "--name",
        "job",
        "--metrics-file",
        metrics_file,
    ];
    let (out, events) = json_run(
        &[
            &["-q", "--state-dir", open_dir][..],
            &guarded,
            &["--", "true"],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(0));
    let warnings = of_kind(&events, "warning");
    let kinds: Vec<&str> = warnings
        .iter()
        .map(|w| w["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["circuit", "budget"], "{events:?}");
    assert!(
        warnings[0]["message"]
            .as_str()
            .unwrap()
            .contains("running as if it were closed"),
        "{events:?}"
    );
    // A success under -q still has its done event when a guard was off.
    let done = of_kind(&events, "done");
    assert_eq!(done.len(), 1, "{events:?}");
    assert_eq!(done[0]["circuit_in_force"], false, "{events:?}");
    assert_eq!(done[0]["budget_in_force"], false, "{events:?}");
    let text = std::fs::read_to_string(&metrics).unwrap();
    assert!(
        text.contains("retry_circuit_in_force{name=\"job\",circuit=\"api\"} 0\n"),
        "{text}"
    );
    assert!(
        text.contains("retry_budget_in_force{name=\"job\",budget=\"api\"} 0\n"),
        "{text}"
    );
    // In text, -q keeps the warning too (cron mails it).
    let out = retry()
        .args([
            "-q",
            "--state-dir",
            open_dir,
            "--circuit",
            "api",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("retry: warning: circuit api: state directory"),
        "{stderr}"
    );
    // A usable store: in force, and a quiet success says nothing.
    let good = dir.path().join("good");
    let (out, events) = json_run(
        &[
            &["-q", "--state-dir", good.to_str().unwrap()][..],
            &guarded,
            &["--", "true"],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(events.is_empty(), "{events:?}");
    let text = std::fs::read_to_string(&metrics).unwrap();
    assert!(
        text.contains("retry_circuit_in_force{name=\"job\",circuit=\"api\"} 1\n"),
        "{text}"
    );
    assert!(
        text.contains("retry_budget_in_force{name=\"job\",budget=\"api\"} 1\n"),
        "{text}"
    );
    let (_, events) = json_run(&[
        "--state-dir",
        good.to_str().unwrap(),
        "--budget",
        "api",
        "--",
        "true",
    ]);
    assert_eq!(
        of_kind(&events, "done")[0]["budget_in_force"],
        true,
        "{events:?}"
    );
    assert!(
        of_kind(&events, "done")[0]
            .get("circuit_in_force")
            .is_none(),
        "{events:?}"
    );
}

#[test]
fn a_budget_lost_during_the_run_is_said_under_quiet_and_in_done() {
    let dir = private_dir();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    // Another process holds the budget's lock past --state-timeout.
    let lock = state.join("budget@held.lock");
    let mut holder = std::process::Command::new("flock")
        .arg(&lock)
        .args(["sleep", "30"])
        .spawn()
        .unwrap();
    let held = || {
        !std::process::Command::new("flock")
            .args(["-n"])
            .arg(&lock)
            .arg("true")
            .status()
            .unwrap()
            .success()
    };
    let started = std::time::Instant::now();
    while !held() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "flock never held the lock"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (out, events) = json_run(&[
        "-q",
        "--state-dir",
        state.to_str().unwrap(),
        "--state-timeout",
        "100ms",
        "--budget",
        "held",
        "--",
        "true",
    ]);
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(out.status.code(), Some(0));
    let warnings = of_kind(&events, "warning");
    assert_eq!(warnings.len(), 1, "{events:?}");
    assert_eq!(warnings[0]["kind"], "budget", "{events:?}");
    assert!(
        warnings[0]["message"]
            .as_str()
            .unwrap()
            .contains("retrying as if it allowed"),
        "{events:?}"
    );
    assert_eq!(
        of_kind(&events, "done")[0]["budget_in_force"],
        false,
        "{events:?}"
    );
}

#[test]
fn configuration_warnings_survive_quiet() {
    let out = retry()
        .args([
            "-q", "-n", "1", "--delay", "5s", "--cap", "1s", "--", "true",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stderr.contains("warning: --delay 5s is longer than --cap 1s"),
        "{stderr}"
    );
}
