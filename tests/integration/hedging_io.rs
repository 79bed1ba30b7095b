//! Hedged attempts' input: what each copy reads (a replayed input read
//! whole first, however long it takes, but not past a signal; a file; an
//! empty pipe), and a terminal refused with advice that works for it.

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
        .args([
            "--hedge-after",
            "200ms",
            "--kill-after",
            "500ms",
            "--",
            "sh",
            "-c",
            body,
        ])
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
