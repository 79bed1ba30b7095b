//! Hedged attempts' input and output: what each copy reads (a replayed
//! input read whole first, however long it takes, but not past a signal;
//! a file; an empty pipe), and what reaches retry's output of the copies'
//! spools (all of the winner's stdout or a failure, never a part; a
//! hedge's stderr in bounded memory; a reader that takes nothing held
//! neither past a signal).

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::*;

/// Wait for `child` until `limit`: its status, or `None` (then it is
/// killed and reaped).
fn wait_until(
    child: &mut std::process::Child,
    limit: Duration,
) -> Option<std::process::ExitStatus> {
    let end = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A copy after 200 ms; a superseded copy has 500 ms to end after SIGTERM.
const HEDGED: [&str; 4] = ["--hedge-after", "200ms", "--kill-after", "500ms"];

#[test]
fn a_replayed_input_that_never_ends_gives_way_to_a_signal_and_to_max_time() {
    let dir = scratch();
    let ran = dir.path().join("ran");
    let body = format!("touch '{}'; cat > /dev/null", ran.display());
    for (limit, signal) in [(None, Some("TERM")), (Some("1s"), None)] {
        let mut yes = std::process::Command::new("yes")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut child = retry_std_default_signals()
            .args(["--stdin", "replay", "--hedge-after", "1s"])
            .args(limit.map(|limit| ["--max-time", limit]).iter().flatten())
            .args(["--", "sh", "-c", &body])
            .stdin(yes.stdout.take().unwrap())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_secs(1));
        if let Some(signal) = signal {
            send_signal(child.id(), signal);
        }
        let status = wait_until(&mut child, Duration::from_secs(3));
        let _ = yes.kill();
        let _ = yes.wait();
        let status = status.unwrap_or_else(|| panic!("{limit:?} {signal:?}: retry kept reading"));
        match signal {
            Some(_) => assert_eq!(code_and_signal(status), (None, Some(libc::SIGTERM))),
            None => assert!(!status.success(), "{status:?}"),
        }
        assert!(!ran.exists(), "the command ran on a part of the input");
    }
}

#[test]
fn an_empty_pipe_and_a_replayed_file_are_given_to_every_copy() {
    let body = "got=$(cat); [ \"$RETRY_HEDGE\" = 1 ] || sleep 20; echo \"$got\"";
    // A pipe whose writer left it empty (a harness's stdin) holds nothing
    // copies could each get a part of.
    let mut child = retry_std()
        .args(HEDGED)
        .args(["--", "sh", "-c", body])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(
        (out.status.code(), stdout.as_str()),
        (Some(0), "\n"),
        "{stderr}"
    );
    // A file under --stdin replay: each copy reads all of it, from where
    // retry found it.
    let dir = scratch();
    let input = dir.path().join("input");
    std::fs::write(&input, "skipped\nall of it\n").unwrap();
    let mut file = std::fs::File::open(&input).unwrap();
    std::io::Read::read_exact(&mut file, &mut [0u8; 8]).unwrap();
    let out = retry_std()
        .args([
            "--stdin",
            "replay",
            "--hedge-after",
            "200ms",
            "--kill-after",
            "500ms",
        ])
        .args(["--", "sh", "-c", body])
        .stdin(file)
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(
        (out.status.code(), stdout.as_str()),
        (Some(0), "all of it\n"),
        "{stderr}"
    );
}

#[test]
fn a_terminal_is_refused_with_advice_that_works_for_it() {
    let script = std::path::Path::new("/usr/bin/script");
    if !script.exists() {
        eprintln!("skipping: no script(1) to give retry a terminal");
        return;
    }
    let out = std::process::Command::new(script)
        .args(["-qec"])
        .arg(format!("{BIN} --stdin replay --hedge-after 1s -- true"))
        .arg("/dev/null")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, _) = texts(&out);
    assert_eq!(out.status.code(), Some(125), "{stdout}");
    assert!(stdout.contains("terminal"), "{stdout}");
    assert!(stdout.contains("--stdin null"), "{stdout}");
    assert!(!stdout.contains("give --stdin replay"), "{stdout}");
}

#[test]
fn typed_at_a_prompt_the_copies_read_nothing_from_the_terminal() {
    let script = std::path::Path::new("/usr/bin/script");
    if !script.exists() {
        eprintln!("skipping: no script(1) to give retry a terminal");
        return;
    }
    // The default --stdin auto: copies get no stdin (keystrokes cannot be
    // shared), and the run goes ahead.
    let command = "if [ -t 0 ]; then echo a terminal; else echo no terminal; fi; cat";
    let out = std::process::Command::new(script)
        .args(["-qec"])
        .arg(format!("{BIN} -v --hedge-after 1s -- sh -c '{command}'"))
        .arg("/dev/null")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, _) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("no terminal"), "{stdout}");
    assert!(
        stdout.contains("copies cannot share: they read nothing"),
        "{stdout}"
    );
}

#[test]
fn a_winner_whose_stdout_did_not_fit_its_spool_is_not_delivered_in_part() {
    let Some(disk) = SmallDisk::mount("1m", "a full spool") else {
        return;
    };
    let marker = marker();
    let body =
        format!("if [ \"$RETRY_HEDGE\" = 0 ]; then sleep {marker}; fi; head -c 2000000 /dev/zero");
    let out = retry_std()
        .env("TMPDIR", &disk.path)
        .args(HEDGED)
        .args(["--", "sh", "-c", &body])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(out.stdout.len(), 0, "a part was delivered: {stderr}");
    assert!(stderr.contains("spool"), "{stderr}");
    assert!(none_left(&marker, Duration::from_secs(3)));
}

#[test]
fn a_stdout_that_takes_nothing_holds_the_delivery_no_longer_than_a_signal() {
    let body = "head -c 1000000 /dev/zero; [ \"$RETRY_HEDGE\" = 1 ] || sleep 20";
    let mut child = retry_std_default_signals()
        .args(HEDGED)
        .args(["--", "sh", "-c", body])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Never read: the winner's megabyte fills the pipe.
    let _unread = child.stdout.take();
    std::thread::sleep(Duration::from_millis(1500));
    send_signal(child.id(), "TERM");
    let status = wait_until(&mut child, Duration::from_secs(3)).expect("retry ignored SIGTERM");
    assert_eq!(code_and_signal(status), (None, Some(libc::SIGTERM)));
}

#[test]
fn a_hedges_stderr_without_line_ends_is_said_in_bounded_memory() {
    // 150 MB on stderr without a line end, said marked afterwards.
    let body =
        "if [ \"$RETRY_HEDGE\" = 1 ]; then head -c 150000000 /dev/zero >&2; else sleep 20; fi";
    #[allow(clippy::zombie_processes)] // reaped by wait4 below
    let child = retry_std()
        .args(HEDGED)
        .args(["--", "sh", "-c", body])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = i32::try_from(child.id()).unwrap();
    let mut status = 0;
    // SAFETY: all zeroes is a valid rusage.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 writes the status and the usage of our own child
    // `pid` into the two buffers; nothing else reaps it (`child` is never
    // waited for).
    let reaped = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut usage) };
    assert_eq!(reaped, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{status}"
    );
    // In KiB (bytes on macOS): a line held whole would be over 150 MB.
    let kib = if cfg!(target_os = "macos") {
        usage.ru_maxrss / 1024
    } else {
        usage.ru_maxrss
    };
    assert!(kib < 64 * 1024, "retry peaked at {} MiB", kib / 1024);
}
