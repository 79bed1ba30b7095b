//! Hedged attempts under stress: a signal to retry while what an ended
//! copy left is being ended, or while a hedge waits for the budget's
//! store, reaches every copy and ends the run by it; a hedge that cannot
//! be set up leaves the copies already running supervised.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::*;

/// `retry ARGS -- sh -c BODY` with every signal at its default action,
/// stdin from /dev/null, stdout and stderr piped.
fn hedged_child(args: &[&str], body: &str) -> std::process::Child {
    retry_std_default_signals()
        .args(args)
        .args(["--", "sh", "-c", body])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_signal_while_an_ended_copy_is_cleaned_up_reaches_every_copy_and_ends_the_run() {
    // Copy 1 fails at once, leaving a process that ignores SIGTERM (ended
    // at --kill-after); copy 0 would succeed after 4s. A SIGTERM to retry
    // meanwhile is passed on to copy 0 and ends the run by it.
    let marker = marker();
    let body = format!(
        "if [ \"$RETRY_HEDGE\" = 1 ]; then (trap '' TERM; sleep {marker}) & exit 3; fi; sleep 4; echo copy 0 done"
    );
    let child = hedged_child(&["--hedge-after", "200ms", "--kill-after", "3s"], &body);
    std::thread::sleep(Duration::from_secs(1));
    let signalled = Instant::now();
    send_signal(child.id(), "TERM");
    let out = child.wait_with_output().unwrap();
    let took = signalled.elapsed();
    let (stdout, stderr) = texts(&out);
    assert_eq!(
        code_and_signal(out.status),
        (None, Some(libc::SIGTERM)),
        "{stderr}"
    );
    assert_eq!(stdout, "", "{stderr}");
    assert!(took < Duration::from_millis(2500), "{took:?}");
    assert!(
        none_left(&marker, Duration::from_secs(3)),
        "a copy's process outlived the run"
    );
}

#[test]
fn a_signal_while_a_hedge_waits_for_the_budget_ends_the_run() {
    let dir = scratch();
    let state = dir.path().join("state");
    let started = dir.path().join("started");
    let body = format!(
        "touch '{}'; sleep 4; echo copy $RETRY_HEDGE done",
        started.display()
    );
    let args = [
        "--hedge-after",
        "1s",
        "--budget",
        "locked",
        "--state-dir",
        state.to_str().unwrap(),
    ];
    let child = hedged_child(&args, &body);
    // The first copy runs (the deposit is done): the store is held by
    // another process when the hedge asks it for a token.
    wait_for_file(&started, Duration::from_secs(10));
    let lock = std::fs::File::open(state.join("budget@locked.lock")).unwrap();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let signalled = Instant::now();
    send_signal(child.id(), "TERM");
    let out = child.wait_with_output().unwrap();
    let took = signalled.elapsed();
    let (stdout, stderr) = texts(&out);
    assert_eq!(
        code_and_signal(out.status),
        (None, Some(libc::SIGTERM)),
        "{stderr}"
    );
    assert_eq!(stdout, "", "{stderr}");
    assert!(took < Duration::from_millis(2500), "{took:?}");
}

#[test]
fn a_hedge_that_cannot_be_set_up_leaves_the_others_supervised() {
    // A $TMPDIR out of inodes: from some copy on, its spools cannot be
    // made. Whichever copy that is, the run ends by the first copy's
    // --timeout (or at once, if nothing could start), with nothing left.
    let marker = marker();
    for inodes in 3..=7 {
        let Some(disk) = SmallDisk::mount(&format!("1m,nr_inodes={inodes}"), "hedge set-up") else {
            return;
        };
        let mut child = retry_std()
            .env("TMPDIR", &disk.path)
            .args(["--hedge-after", "200ms", "--timeout", "1s", "-n", "1"])
            .args(["--kill-after", "500ms", "--", "sleep", &marker])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let end = Instant::now() + Duration::from_secs(6);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if Instant::now() > end {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let status = status.unwrap_or_else(|| panic!("nr_inodes={inodes}: retry hung"));
        assert!(
            matches!(status.code(), Some(124 | 125)),
            "nr_inodes={inodes}: {status:?}"
        );
        assert!(
            none_left(&marker, Duration::from_secs(3)),
            "nr_inodes={inodes}: a copy outlived the run"
        );
    }
}
