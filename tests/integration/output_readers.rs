//! Where the command's output goes, and the readers on the far end: a reader
//! that takes nothing (a socket, a terminal) holds retry past none of its
//! limits and leaves it hearing signals; a held stdout is the successful
//! attempt's alone; a terminal stays the command's where nothing scans it.
//!
//! The stalled readers and the terminals are made by python3 (a socket
//! pair, `os.openpty`, `pty.fork`), which holds the far end and never
//! reads it.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::util::*;

// ---- A reader that takes nothing: a socket, a terminal ----

/// What the stalled reader is.
#[derive(Clone, Copy, Debug)]
enum Stall {
    /// A unix stream socket, as systemd's journal stream is, nobody reading.
    Socket,
    /// A pseudo-terminal whose master nobody reads (as a terminal stopped
    /// with Ctrl-S).
    Terminal,
    /// A pipe nobody reads.
    Pipe,
}

/// Which of retry's outputs lead to the stalled reader.
#[derive(Clone, Copy, Debug)]
enum Held {
    Stdout,
    Both,
}

const STALLED_RUN: &str = r"
import os, signal, socket, subprocess, sys, time
kind, held, term_after = sys.argv[1], sys.argv[2], float(sys.argv[3])
if kind == 'terminal':
    keep, end = os.openpty()
elif kind == 'pipe':
    keep, end = os.pipe()
else:
    a, b = socket.socketpair()
    keep, end = b.detach(), a.detach()
out = end
err = end if held == 'both' else subprocess.DEVNULL
started = time.monotonic()
child = subprocess.Popen(sys.argv[4:], stdin=subprocess.DEVNULL, stdout=out, stderr=err)
os.close(end)
if term_after > 0:
    time.sleep(term_after)
    child.send_signal(signal.SIGTERM)
try:
    status = child.wait(timeout=30)
except subprocess.TimeoutExpired:
    child.kill()
    child.wait()
    print('hung')
    sys.exit(0)
print(status, round((time.monotonic() - started) * 1000))
";

/// Run `retry ARGS` with `held` leading to a `stall` reader, SIGTERM after
/// `term_after` if given: the status as Python reports it (negative: the
/// signal), and how long it took. Fails on a hang (30 s).
fn stalled(stall: Stall, held: Held, args: &[&str], term_after: Option<Duration>) -> (i32, u64) {
    let kind = match stall {
        Stall::Socket => "socket",
        Stall::Terminal => "terminal",
        Stall::Pipe => "pipe",
    };
    let held_name = match held {
        Held::Stdout => "stdout",
        Held::Both => "both",
    };
    let after = term_after
        .map_or(0.0, |after| after.as_secs_f64())
        .to_string();
    let output = std::process::Command::new("python3")
        .args(["-c", STALLED_RUN, kind, held_name, &after, BIN])
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("python3 runs the stalled reader");
    let said = String::from_utf8_lossy(&output.stdout).trim().to_string();
    assert_ne!(
        said, "hung",
        "retry {args:?} hung on a {kind} that takes nothing"
    );
    let mut words = said.split_whitespace().map(|word| word.parse().unwrap());
    let (Some(status), Some(took)) = (words.next(), words.next()) else {
        panic!("the stall driver said {said:?}");
    };
    (status, u64::try_from(took).unwrap())
}

/// More output than a socket or terminal buffer holds, then a failure.
const FLOOD: &str = "head -c 30000000 /dev/zero; sleep 1; exit 1";

/// What it takes for the run to end well after its limit: a hang is 30 s.
const LATE_MS: u64 = 10_000;

fn scanned(rest: &[&'static str]) -> Vec<&'static str> {
    let mut args = vec!["--scan-stdout", "--retry-on-output", "zzz"];
    args.extend_from_slice(rest);
    args
}

/// Scanned output passed on by a pump into `stall` (stdout alone, then
/// both streams): -t, --max-time and SIGTERM each end retry in time.
fn scanned_output_keeps_the_limits(stall: Stall) {
    for held in [Held::Stdout, Held::Both] {
        let (status, took) = stalled(
            stall,
            held,
            &scanned(&["-t", "1s", "--", "sh", "-c", FLOOD]),
            None,
        );
        assert_eq!(status, 124, "{held:?} -t, after {took} ms");
        assert!(took < LATE_MS, "{held:?} -t: {took} ms");
        let (status, took) = stalled(
            stall,
            held,
            &scanned(&["-n", "3", "--max-time", "2s", "--", "sh", "-c", FLOOD]),
            None,
        );
        assert_eq!(status, 124, "{held:?} --max-time, after {took} ms");
        assert!(took < LATE_MS, "{held:?} --max-time: {took} ms");
        let (status, took) = stalled(
            stall,
            held,
            &scanned(&["--", "sh", "-c", FLOOD]),
            Some(Duration::from_secs(1)),
        );
        assert_eq!(status, -15, "{held:?} SIGTERM, after {took} ms");
        assert!(took < LATE_MS, "{held:?} SIGTERM: {took} ms");
    }
}

#[test]
fn a_socket_nobody_reads_holds_retry_past_no_limit_and_no_signal() {
    // Scanned output passed on by a pump. Before: the pump blocked in its
    // write to the socket, and retry with it, past -t, --max-time and
    // SIGTERM.
    scanned_output_keeps_the_limits(Stall::Socket);
    // --buffer-stdout: the delivery of the successful attempt's output.
    let buffered = [
        "--buffer-stdout",
        "--",
        "head",
        "-c",
        "30000000",
        "/dev/zero",
    ];
    let (status, took) = stalled(
        Stall::Socket,
        Held::Stdout,
        &buffered,
        Some(Duration::from_secs(1)),
    );
    assert_eq!(status, -15, "delivery, SIGTERM, after {took} ms");
    assert!(took < LATE_MS, "delivery: {took} ms");
}

#[test]
fn a_pipe_nobody_reads_holds_retry_past_no_limit_and_no_signal_on_every_system() {
    // Linux writes a pipe through its own non-blocking open of it; the
    // portable build (FreeBSD, macOS) hands the writes to a thread of their
    // own. Before, the portable build blocked in its write.
    let (status, took) = stalled(
        Stall::Pipe,
        Held::Both,
        &scanned(&["-t", "1s", "--", "sh", "-c", FLOOD]),
        None,
    );
    assert_eq!(status, 124, "-t, after {took} ms");
    assert!(took < LATE_MS, "-t: {took} ms");
    let (status, took) = stalled(
        Stall::Pipe,
        Held::Stdout,
        &scanned(&["--", "sh", "-c", FLOOD]),
        Some(Duration::from_secs(1)),
    );
    assert_eq!(status, -15, "SIGTERM, after {took} ms");
    assert!(took < LATE_MS, "SIGTERM: {took} ms");
    let fill = "timeout 1 head -c 30000000 /dev/zero; exit 1";
    let args = ["-n", "2", "--delay", "0", "--", "sh", "-c", fill];
    let (status, took) = stalled(Stall::Pipe, Held::Both, &args, None);
    assert_eq!(status, 1, "own lines, after {took} ms");
    assert!(took < LATE_MS, "own lines: {took} ms");
}

#[test]
fn retrys_own_lines_wait_for_a_stalled_stderr_at_most_a_second() {
    // Nothing scanned: the command fills the socket itself (`timeout` ends
    // its writer), then fails; no time limit and no signal would end a
    // wait for the reader. Before: retry's "attempt 1/2 failed" line
    // waited for ever.
    let fill = "timeout 1 head -c 30000000 /dev/zero; exit 1";
    let args = ["-n", "2", "--delay", "0", "--", "sh", "-c", fill];
    let (status, took) = stalled(Stall::Socket, Held::Both, &args, None);
    assert_eq!(status, 1, "after {took} ms");
    assert!(took < LATE_MS, "{took} ms");
}

#[test]
fn a_terminal_nobody_reads_holds_retry_past_no_limit_and_no_signal() {
    scanned_output_keeps_the_limits(Stall::Terminal);
    // Nothing scanned: the command fills the terminal, retry's own lines
    // meet it full.
    let fill = "timeout 1 head -c 30000000 /dev/zero; exit 1";
    let args = ["-n", "2", "--delay", "0", "--", "sh", "-c", fill];
    let (status, took) = stalled(Stall::Terminal, Held::Both, &args, None);
    assert_eq!(status, 1, "after {took} ms");
    assert!(took < LATE_MS, "{took} ms");
}

// ---- Held output: the successful attempt's alone ----

/// A command whose first run leaves `leftover` behind writing to stdout
/// (and a line to `dir/wrote` for each write that went through), prints
/// `first` and fails once the leftover has started; whose second run prints `second` after a while and
/// succeeds.
fn leaves_a_writer(dir: &Path, leftover: &str) -> String {
    let count = dir.join("count");
    let wrote = dir.join("wrote");
    let started = dir.join("started");
    let writer = format!(
        "touch '{}'; i=0; while [ $i -lt 30 ]; do echo LATE || exit; echo x >> '{}'; i=$((i+1)); sleep 0.1; done",
        started.display(),
        wrote.display()
    );
    let leftover = leftover.replace("WRITER", &writer.replace('\'', "'\\''"));
    script(
        dir,
        "leaves.sh",
        &format!(
            "#!/bin/sh\nn=$(cat '{c}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{c}'\n\
             if [ $n = 1 ]; then {leftover} echo first\n\
             while [ ! -e '{s}' ]; do sleep 0.05; done; exit 1; fi\nsleep 0.6; echo second\n",
            c = count.display(),
            s = started.display()
        ),
    )
    .display()
    .to_string()
}

/// The ways an attempt leaves a writer behind: in its group (ended with
/// it), and out of it (`setsid`: nothing ends it).
const LEFTOVERS: [&str; 2] = ["(sh -c 'WRITER') &", "setsid sh -c 'WRITER' &"];

#[test]
fn a_held_stdout_is_the_successful_attempts_alone() {
    for leftover in LEFTOVERS {
        for how in ["--buffer-stdout", "-o"] {
            let dir = scratch();
            let command = leaves_a_writer(dir.path(), leftover);
            let file = dir.path().join("out");
            let mut args = vec!["-n", "3", "--delay", "0"];
            let file_arg = file.display().to_string();
            if how == "-o" {
                args.extend(["-o", &file_arg]);
            } else {
                args.push(how);
            }
            args.extend(["--", &command]);
            let output = retry_std()
                .args(&args)
                .env("TMPDIR", dir.path())
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert_eq!(output.status.code(), Some(0), "{how} {leftover}");
            let delivered = if how == "-o" {
                // Read after the leftover had time to write again.
                std::thread::sleep(Duration::from_millis(400));
                std::fs::read(&file).unwrap()
            } else {
                output.stdout.clone()
            };
            assert_eq!(
                String::from_utf8_lossy(&delivered),
                "second\n",
                "{how} {leftover}"
            );
            // Whatever the leftover still writes goes nowhere: no file,
            // named or not, keeps taking its lines after the run.
            std::thread::sleep(Duration::from_millis(300));
            let then = lines(dir.path(), "wrote");
            std::thread::sleep(Duration::from_millis(700));
            let now = lines(dir.path(), "wrote");
            assert_eq!(then, now, "{how} {leftover}: the leftover kept writing");
        }
    }
}

// ---- A terminal stays the command's ----

/// Run retry ARGS under a pseudo-terminal (stdout and stderr one
/// terminal): what appeared on it.
fn on_a_terminal(args: &[&str]) -> String {
    let program = r"
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = b''
end = time.time() + 20
while time.time() < end:
    r, _, _ = select.select([fd], [], [], 0.05)
    if r:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors='replace'))
";
    let output = std::process::Command::new("python3")
        .args(["-c", program, BIN])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("python3 drives the terminal");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

const SAYS_WHAT_IS_A_TERMINAL: &str =
    "[ -t 1 ] && echo out-is-a-terminal; [ -t 2 ] && echo err-is-a-terminal; echo done";

#[test]
fn a_terminal_stays_the_commands_where_nothing_scans_it() {
    // Nothing scanned: nothing between the command and the terminal.
    let seen = on_a_terminal(&["--", "sh", "-c", SAYS_WHAT_IS_A_TERMINAL]);
    assert!(seen.contains("out-is-a-terminal"), "{seen}");
    assert!(seen.contains("err-is-a-terminal"), "{seen}");
    // stderr scanned (a pattern, as presets have): stdout is still the
    // terminal. Before: one pipe for both took it from the command.
    let seen = on_a_terminal(&[
        "--retry-on-output",
        "zzz",
        "--",
        "sh",
        "-c",
        SAYS_WHAT_IS_A_TERMINAL,
    ]);
    assert!(seen.contains("out-is-a-terminal"), "{seen}");
    assert!(!seen.contains("err-is-a-terminal"), "{seen}");
    assert!(seen.contains("done"), "{seen}");
    // Both scanned: both through retry (README: what holds on a terminal).
    let seen = on_a_terminal(&[
        "--scan-stdout",
        "--retry-on-output",
        "zzz",
        "--",
        "sh",
        "-c",
        SAYS_WHAT_IS_A_TERMINAL,
    ]);
    assert!(!seen.contains("is-a-terminal"), "{seen}");
    assert!(seen.contains("done"), "{seen}");
}

#[test]
fn one_pipe_still_keeps_the_order_of_a_shared_file() {
    // Not a terminal: `>log 2>&1` with output scanned keeps its exact
    // order through one pipe, as before.
    let dir = scratch();
    let log = std::fs::File::create(dir.path().join("log")).unwrap();
    let status = retry_std()
        .args(["--retry-on-output", "zzz", "--", "sh", "-c"])
        .arg("for i in 1 2 3 4 5; do echo o$i; echo e$i >&2; done")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .status()
        .unwrap();
    assert!(status.success());
    let text = std::fs::read_to_string(dir.path().join("log")).unwrap();
    assert_eq!(text, "o1\ne1\no2\ne2\no3\ne3\no4\ne4\no5\ne5\n");
}
