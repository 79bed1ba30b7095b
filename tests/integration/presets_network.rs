//! Presets that misjudged a network failure (issue 25, item 17): a refused
//! git:// connection (git daemon) and a pip index that answers 503 or
//! refuses while pip's own retries are off were permanent, with messages
//! claiming that no network failure was reported. Real git against a
//! closed port, real pip against a local index on 127.0.0.1.

use crate::presets::*;
use crate::util::*;

#[test]
fn a_refused_git_daemon_connection_is_transient_and_named() {
    if !have("git") {
        return;
    }
    let dir = scratch();
    let url = format!("git://127.0.0.1:{}/repo.git", closed_port());
    let target = dir.path().join("clone");
    let (out, events) = json(
        &[],
        &[
            "-n",
            "3",
            "-d",
            "1ms",
            "--",
            "git",
            "clone",
            "-q",
            &url,
            target.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(128));
    let tried = attempts(&events);
    assert_eq!(tried.len(), 3, "{events:?}");
    assert_eq!(tried[0]["outcome"], "transient");
    assert_eq!(
        tried[0]["reason"],
        "exit 128; git could not connect to the git daemon (Connection refused) (preset git, chosen from the command name)"
    );
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!text.contains("no network failure"), "{text}");
}

#[test]
fn pip_with_its_retries_off_retries_a_503_index_and_a_refused_one() {
    let Some(pip) = pip_command() else { return };
    let dir = scratch();
    let wheel = demo_wheel(dir.path());
    let page = "/simple/demo-pkg/";
    // The project page answers 503 once: pip (--retries 0) gives up on the
    // page and says only that no version was found; the second attempt
    // gets the wheel.
    let (port, served) = pip_index(
        wheel.clone(),
        |n| {
            if n < 1 {
                "503 Service Unavailable"
            } else {
                "200 OK"
            }
        },
        |_| "200 OK",
    );
    let dest = dir.path().join("a");
    let (out, events, said) = pip_download(pip, port, &dest, &[], &[]);
    assert!(out.status.success(), "{said:?} {events:?}");
    let tried = attempts(&events);
    assert_eq!(tried.len(), 2, "{events:?}");
    assert_eq!(tried[0]["outcome"], "transient");
    let reason = tried[0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(
            "exit 1; pip found no version of demo-pkg at all: the index may have failed"
        ),
        "{reason}"
    );
    assert!(!reason.contains("no network failure"), "{reason}");
    assert_eq!(count(&served, page), 2);
    assert_eq!(std::fs::read(dest.join(WHEEL)).unwrap(), wheel);

    // Nothing listens: every attempt is transient, the run exhausts.
    let (out, events, said) =
        pip_download(pip, closed_port(), &dir.path().join("b"), &["-n", "2"], &[]);
    assert_eq!(out.status.code(), Some(1), "{said:?}");
    let tried = attempts(&events);
    assert_eq!(tried.len(), 2, "{events:?}");
    assert!(
        tried.iter().all(|t| t["outcome"] == "transient"),
        "{tried:?}"
    );
    let done = events.iter().find(|e| e["event"] == "done").unwrap();
    assert_eq!(done["outcome"], "exhausted");

    // Under -vv and --scan-stdout pip says why: the connection error.
    let (out, events, _) = pip_download(
        pip,
        closed_port(),
        &dir.path().join("c"),
        &["-n", "2", "--scan-stdout"],
        &["-vv"],
    );
    assert_eq!(out.status.code(), Some(1));
    let tried = attempts(&events);
    assert_eq!(tried.len(), 2, "{events:?}");
    let reason = tried[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("NewConnectionError") || reason.contains("connection error"),
        "{reason}"
    );
}
