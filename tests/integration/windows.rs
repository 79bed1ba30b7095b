//! The Windows build's end-to-end tests, run under wine here (`scripts/test`
//! with `RETRY_TEST_BUILDS="windows"`) and on a Windows runner in CI: the
//! core promises with `cmd.exe` where the Unix tests use `sh`. What wine
//! cannot show (a Ctrl-Break to a console process group) is tested by the
//! Windows runner alone (`a_time_limit_gives_a_console_program_its_ctrl_break_first`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use predicates::prelude::*;

const BIN: &str = env!("CARGO_BIN_EXE_retry");

/// The binary with no RETRY_* or CI variables of a surrounding run, and a
/// hard timeout so a hang fails.
fn retry() -> assert_cmd::Command {
    let mut command = assert_cmd::Command::new(BIN);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("RETRY_") || key.starts_with("GITHUB_") || key == "GITLAB_CI" {
            command.env_remove(&key);
        }
    }
    command.env("NO_COLOR", "1");
    command.timeout(Duration::from_secs(60));
    command
}

fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("retry-test-")
        .tempdir()
        .unwrap()
}

/// A batch file `name` in `dir` holding `lines` (CRLF line ends).
fn batch(dir: &Path, name: &str, lines: &[&str]) -> PathBuf {
    let path = dir.join(name);
    let text: String = lines.iter().flat_map(|line| [line, "\r\n"]).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// `PATH` with `dir` first.
fn path_with(dir: &Path) -> std::ffi::OsString {
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(dir.to_path_buf()).chain(std::env::split_paths(&rest)))
        .unwrap()
}

#[test]
fn the_commands_exit_status_comes_back() {
    for code in [0, 1, 3, 42, 255] {
        retry()
            .args(["-n", "1", "--", "cmd", "/c"])
            .arg(format!("exit {code}"))
            .assert()
            .code(code);
    }
}

#[test]
fn a_code_past_255_ends_retry_with_255_and_is_reported_whole() {
    // Windows' exit codes are 32-bit; the shell's last status is 0-255 on
    // Unix, so retry clamps (a failure never wraps to 0): 256 is 255.
    retry()
        .args(["-n", "1", "--", "cmd", "/c", "exit 256"])
        .assert()
        .code(255)
        .stderr(predicate::str::contains("exit 256 (255 for the shell)"));
    // An NTSTATUS (here STATUS_CONTROL_C_EXIT) reads in hex.
    retry()
        .args(["-n", "1", "--", "cmd", "/c", "exit -1073741510"])
        .assert()
        .code(255)
        .stderr(predicate::str::contains(
            "exit 0xC000013A (255 for the shell)",
        ));
}

#[test]
fn every_attempt_runs_and_is_counted() {
    let dir = scratch();
    let count = dir.path().join("count.txt");
    let script = batch(
        dir.path(),
        "fail.cmd",
        // `>>FILE echo N`: `echo 1>>FILE` would redirect handle 1.
        &[">> \"%~dp0count.txt\" echo %RETRY_ATTEMPT%", "@exit /b 7"],
    );
    retry()
        .args(["-n", "4", "-d", "1ms", "--"])
        .arg(&script)
        .assert()
        .code(7)
        .stderr(predicate::str::contains("gave up after 4 attempts"));
    let written = std::fs::read_to_string(&count).unwrap();
    let attempts: Vec<&str> = written.lines().map(str::trim).collect();
    assert_eq!(attempts, ["1", "2", "3", "4"]);
}

#[test]
fn a_success_stops_the_retries() {
    let dir = scratch();
    let script = batch(
        dir.path(),
        "third.cmd",
        &["@if \"%RETRY_ATTEMPT%\"==\"3\" exit /b 0", "@exit /b 1"],
    );
    retry()
        .args(["-n", "9", "-d", "1ms", "--"])
        .arg(&script)
        .assert()
        .success()
        .stderr(predicate::str::contains("attempt 2/9 failed"))
        .stderr(predicate::str::contains("attempt 3/9 failed").not());
}

#[test]
fn a_time_limit_ends_the_child_and_its_grandchild_with_124() {
    let dir = scratch();
    // The grandchild (a cmd started by `start /b`, with its ping) writes a
    // marker after about 3 s, unless its job is ended first.
    batch(
        dir.path(),
        "late.cmd",
        &["@ping -n 4 127.0.0.1 >nul", "@echo late> \"%~dp0marker\""],
    );
    let parent = batch(
        dir.path(),
        "parent.cmd",
        &[
            "@start /b \"\" \"%~dp0late.cmd\"",
            "@ping -n 30 127.0.0.1 >nul",
        ],
    );
    let started = Instant::now();
    retry()
        .args(["-n", "1", "-T", "1", "--"])
        .arg(&parent)
        .assert()
        .code(124)
        .stderr(predicate::str::contains("timed out"));
    let took = started.elapsed();
    assert!(took < Duration::from_secs(8), "{took:?}");
    std::thread::sleep(Duration::from_secs(4));
    assert!(
        !dir.path().join("marker").exists(),
        "the grandchild outlived the time limit"
    );
}

#[test]
fn a_missing_command_is_127_with_a_clear_message() {
    retry()
        .args(["-n", "3", "--", "no-such-command-anywhere"])
        .assert()
        .code(127)
        .stderr(predicate::str::contains(
            "'no-such-command-anywhere': command not found on PATH",
        ))
        // Not found is permanent: one attempt.
        .stderr(predicate::str::contains("gave up after 1 attempt"));
}

#[test]
fn a_missing_path_is_127_too() {
    let dir = scratch();
    retry()
        .args(["-n", "1", "--"])
        .arg(dir.path().join("nothing-here.exe"))
        .assert()
        .code(127)
        .stderr(predicate::str::contains("no such file"));
}

#[test]
fn a_batch_file_is_found_through_pathext() {
    let dir = scratch();
    batch(dir.path(), "hello.cmd", &["@echo hello %~1", "@exit /b 5"]);
    retry()
        .env("PATH", path_with(dir.path()))
        .args(["-n", "2", "-d", "1ms", "--", "hello", "a b"])
        .assert()
        .code(5)
        .stdout(predicate::str::contains("hello a b"))
        .stderr(predicate::str::contains("gave up after 2 attempts"));
    // PATHEXT decides which extensions count.
    retry()
        .env("PATH", path_with(dir.path()))
        .env("PATHEXT", ".EXE")
        .args(["-n", "1", "--", "hello"])
        .assert()
        .code(127);
}

#[test]
fn a_batch_files_arguments_are_never_run_as_commands() {
    // std's Command quotes a batch file's arguments for cmd.exe, and
    // refuses those it cannot quote (CVE-2024-24576): an argument that
    // would end the quotes and start a command stays an argument.
    let dir = scratch();
    let script = batch(dir.path(), "echo.cmd", &["@echo %*"]);
    let marker = dir.path().join("pwned");
    retry()
        .args(["-n", "1", "--"])
        .arg(&script)
        .arg(format!("\"& echo pwned> {}", marker.display()))
        .assert()
        .success();
    assert!(!marker.exists(), "an argument ran as a command");
}

#[test]
fn hooks_run_through_cmd() {
    let dir = scratch();
    let log = dir.path().join("hooks.txt");
    retry()
        .args(["-n", "2", "-d", "1ms", "--on-retry"])
        .arg(format!(
            "echo retry %RETRY_ATTEMPT%>> \"{}\"",
            log.display()
        ))
        .arg("--on-give-up")
        .arg(format!("echo gave up>> \"{}\"", log.display()))
        .args(["--", "cmd", "/c", "exit 2"])
        .assert()
        .code(2);
    let written = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = written.lines().map(str::trim).collect();
    assert_eq!(lines, ["retry 2", "gave up"]);
}

#[test]
fn output_is_scanned_as_elsewhere() {
    retry()
        .args(["-n", "5", "-d", "1ms", "--stop-on-output", "fatal", "--"])
        .args(["cmd", "/c", "echo fatal: no such thing 1>&2 & exit 1"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("fatal: no such thing"))
        .stderr(predicate::str::contains("gave up after 1 attempt"));
}

#[test]
fn foreground_is_refused_with_a_usage_error() {
    retry()
        .args(["--foreground", "--", "cmd", "/c", "exit 0"])
        .assert()
        .code(125)
        .stderr(predicate::str::contains(
            "--foreground: not available on Windows",
        ));
}

#[test]
fn a_circuit_keeps_its_state_in_the_state_directory() {
    let dir = scratch();
    let state = dir.path().join("state");
    for _ in 0..2 {
        retry()
            .env("RETRY_STATE_DIR", &state)
            .args(["-n", "1", "--circuit", "api", "--circuit-threshold", "2"])
            .args(["--", "cmd", "/c", "exit 1"])
            .assert()
            .code(1);
    }
    assert!(
        state.join("api.json").is_file(),
        "{:?}",
        std::fs::read_dir(&state)
    );
    // Open now: the command is not run (75).
    retry()
        .env("RETRY_STATE_DIR", &state)
        .args(["-n", "1", "--circuit", "api", "--circuit-threshold", "2"])
        .args(["--", "cmd", "/c", "exit 0"])
        .assert()
        .code(75);
}

#[test]
fn the_hint_file_is_given_and_read() {
    let dir = scratch();
    let script = batch(
        dir.path(),
        "hint.cmd",
        &["@echo permanent> \"%RETRY_HINT_FILE%\"", "@exit /b 1"],
    );
    retry()
        .args(["-n", "5", "-d", "1ms", "--"])
        .arg(&script)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("gave up after 1 attempt"));
}

#[test]
fn output_to_a_file_replaces_it_after_a_success() {
    let dir = scratch();
    let out = dir.path().join("out.txt");
    std::fs::write(&out, "old\n").unwrap();
    retry()
        .arg("-o")
        .arg(&out)
        .args(["-n", "1", "--", "cmd", "/c", "echo new"])
        .assert()
        .success();
    assert_eq!(std::fs::read_to_string(&out).unwrap().trim(), "new");
    // A failed run leaves it as it was.
    retry()
        .arg("-o")
        .arg(&out)
        .args(["-n", "1", "--", "cmd", "/c", "echo newer & exit 1"])
        .assert()
        .code(1);
    assert_eq!(std::fs::read_to_string(&out).unwrap().trim(), "new");
}

#[test]
fn stdin_from_a_file_is_replayed_to_every_attempt() {
    let dir = scratch();
    let input = dir.path().join("input.txt");
    std::fs::write(&input, "line\r\n").unwrap();
    let count = dir.path().join("seen.txt");
    let script = batch(
        dir.path(),
        "read.cmd",
        &[
            "@set /p got=",
            "@echo %got%>> \"%~dp0seen.txt\"",
            "@exit /b 1",
        ],
    );
    let status = std::process::Command::new(BIN)
        .args(["-n", "3", "-d", "1ms", "--"])
        .arg(&script)
        .stdin(std::fs::File::open(&input).unwrap())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1));
    let seen = std::fs::read_to_string(&count).unwrap();
    let lines: Vec<&str> = seen.lines().map(str::trim).collect();
    assert_eq!(lines, ["line", "line", "line"]);
}

/// Wine does not deliver a Ctrl-Break to a console process group
/// (`GenerateConsoleCtrlEvent` fails there): this runs on a real Windows
/// runner only (`RETRY_TEST_CONSOLE=1` in the workflow's Windows job). The
/// console program is retry itself: a Ctrl-Break ends its run as SIGTERM
/// does elsewhere, and it says so before its own job ends (a job ended
/// without the Ctrl-Break would say nothing).
#[test]
fn a_time_limit_gives_a_console_program_its_ctrl_break_first() {
    if std::env::var_os("RETRY_TEST_CONSOLE").is_none() {
        eprintln!("skipped: needs a real Windows console (RETRY_TEST_CONSOLE=1)");
        return;
    }
    let started = Instant::now();
    retry()
        .args(["-n", "1", "-T", "2", "--kill-after", "20s", "--", BIN])
        .args(["-n", "1", "--", "cmd", "/c", "ping -n 30 127.0.0.1 >nul"])
        .assert()
        .code(124)
        .stderr(predicate::str::contains("interrupted by SIGTERM"));
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[test]
fn piped_input_is_replayed_to_every_attempt() {
    use std::io::Write;
    let mut child = std::process::Command::new(BIN)
        .args(["--stdin", "replay", "-n", "3", "-d", "1ms", "--"])
        .args(["cmd", "/c", "set /p x= & echo got %x% & exit 1"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"hello\r\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("got hello").count(), 3, "{text}");
}

#[test]
fn held_output_and_metrics_are_delivered_at_the_end() {
    let dir = scratch();
    let metrics = dir.path().join("retry.prom");
    retry()
        .args(["--buffer-stdout", "-n", "2", "-d", "1ms", "--metrics-file"])
        .arg(&metrics)
        .args([
            "--",
            "cmd",
            "/c",
            "echo out %RETRY_ATTEMPT% & if %RETRY_ATTEMPT%==1 exit 1",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("out 2"))
        .stdout(predicate::str::contains("out 1").not());
    let text = std::fs::read_to_string(&metrics).unwrap();
    assert!(text.contains("retry_attempts{name=\"cmd\"} 2"), "{text}");
}

#[test]
fn a_hung_first_copy_is_overtaken_by_a_hedge_and_its_job_ended() {
    let dir = scratch();
    // Copy 0 hangs, with a background cmd that would write a marker after
    // about 3 s; copy 1 answers at once.
    batch(
        dir.path(),
        "late.cmd",
        &["@ping -n 4 127.0.0.1 >nul", "@echo late> \"%~dp0marker\""],
    );
    let hedged = batch(
        dir.path(),
        "hedged.cmd",
        &[
            "@if not \"%RETRY_HEDGE%\"==\"0\" goto answer",
            "@start /b \"\" \"%~dp0late.cmd\"",
            "@ping -n 30 127.0.0.1 >nul",
            "@exit /b 0",
            ":answer",
            "@echo from copy %RETRY_HEDGE%",
        ],
    );
    let started = Instant::now();
    let out = retry()
        .args([
            "--stdin",
            "null",
            "--hedge-after",
            "500ms",
            "--kill-after",
            "1s",
            "--",
        ])
        .arg(&hedged)
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "from copy 1",
        "{stderr}"
    );
    assert!(stderr.contains("superseded"), "{stderr}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    std::thread::sleep(Duration::from_secs(4));
    assert!(
        !dir.path().join("marker").exists(),
        "the superseded copy's background process outlived it"
    );
}
