//! Presets end to end: the real tools (curl, wget, git, rsync, ssh, pip,
//! apt-get) against a local HTTP server or a closed port on 127.0.0.1, or a
//! lock held in a scratch directory, the preset chosen from the command
//! name or by --preset; user presets files that add and replace presets;
//! malformed files; --preset list, show and none.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use predicates::prelude::*;

use crate::util::*;

/// Is `tool` installed? (scripts/test installs curl, wget, git, rsync, ssh
/// and pip; a machine without one says so and skips its test.)
pub(crate) fn have(tool: &str) -> bool {
    let found = on_path(tool);
    if !found {
        eprintln!("{tool} is not installed: skipping its preset test");
    }
    found
}

pub(crate) fn on_path(tool: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A port on 127.0.0.1 where nothing listens.
pub(crate) fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Run retry with JSON events and `env`: the output, the events, and how
/// many attempts ran.
pub(crate) fn json(
    env: &[(&str, &Path)],
    args: &[&str],
) -> (std::process::Output, Vec<serde_json::Value>) {
    let mut command = retry_std();
    command
        .args(["--log-format", "json"])
        .args(args)
        .stdin(std::process::Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    let out = command.output().unwrap();
    let events = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .collect();
    (out, events)
}

pub(crate) fn attempts(events: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    events.iter().filter(|e| e["event"] == "attempt").collect()
}

pub(crate) fn warnings(events: &[serde_json::Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["event"] == "warning")
        .map(|e| e["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

// ---- curl (issue 12, items 1, 2 and 8) ----

#[test]
fn silent_curl_retries_a_503_and_says_once_that_s_would_stop_a_4xx() {
    assert!(curl_available(), "curl is needed for this test");
    let (port, served) = http_server(vec![
        "503 Service Unavailable",
        "503 Service Unavailable",
        "200 OK",
    ]);
    let url = format!("http://127.0.0.1:{port}/");
    let (out, events) = json(&[], &["-d", "1ms", "--", "curl", "-fs", &url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"body of 200 OK\n");
    assert_eq!(served.load(Ordering::SeqCst), 3);
    let said: Vec<String> = warnings(&events)
        .into_iter()
        .filter(|w| w.contains("add -S"))
        .collect();
    assert_eq!(said.len(), 1, "said once: {events:?}");
    assert!(said[0].contains("curl printed no HTTP status"), "{said:?}");
    // The same with --preset curl named.
    let (port, served) = http_server(vec!["503 Service Unavailable", "200 OK"]);
    let url = format!("http://127.0.0.1:{port}/");
    retry()
        .args(["-d", "1ms", "--preset", "curl", "--", "curl", "-fs", &url])
        .assert()
        .success()
        .stderr(predicate::str::contains("add -S (as in curl -fsS)"));
    assert_eq!(served.load(Ordering::SeqCst), 2);
}

#[test]
fn curl_with_s_stops_at_once_on_a_404_and_says_which_status() {
    assert!(curl_available(), "curl is needed for this test");
    let (port, served) = http_server(vec!["404 Not Found"]);
    let url = format!("http://127.0.0.1:{port}/");
    retry()
        .args(["-d", "1ms", "--", "curl", "-fsS", &url])
        .assert()
        .code(22)
        .stderr(predicate::str::contains(
            "attempt 1/5 failed: exit 22; curl reported HTTP 404, which a second try would get again (preset curl, chosen from the command name) (permanent)",
        ))
        .stderr(predicate::str::contains("add -S").not());
    assert_eq!(served.load(Ordering::SeqCst), 1);
}

#[test]
fn curl_names_the_transient_status_it_got() {
    assert!(curl_available(), "curl is needed for this test");
    let (port, served) = http_server(vec!["502 Bad Gateway", "429 Too Many Requests", "200 OK"]);
    let url = format!("http://127.0.0.1:{port}/");
    retry()
        .args(["-d", "1ms", "-c", "1ms", "--", "curl", "-fsS", "-D", "/dev/stderr", &url])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "exit 22; curl reported HTTP 502 (preset curl, chosen from the command name) (transient)",
        ))
        .stderr(predicate::str::contains("exit 22; curl reported HTTP 429 (preset curl) (throttled)"));
    assert_eq!(served.load(Ordering::SeqCst), 3);
}

#[test]
fn without_response_headers_retry_says_once_what_to_add_for_retry_after() {
    assert!(curl_available(), "curl is needed for this test");
    let (port, served) = http_server(vec!["503 Service Unavailable|Retry-After: 1\r\n"]);
    let url = format!("http://127.0.0.1:{port}/");
    let (out, events) = json(&[], &["-n", "3", "-d", "1ms", "--", "curl", "-fsS", &url]);
    assert_eq!(out.status.code(), Some(22));
    assert_eq!(served.load(Ordering::SeqCst), 3);
    let said: Vec<String> = warnings(&events)
        .into_iter()
        .filter(|w| w.contains("Retry-After"))
        .collect();
    assert_eq!(said.len(), 1, "{events:?}");
    assert!(
        said[0].contains("add -D /dev/stderr to the curl command"),
        "{said:?}"
    );
    // The backoff, not the server's second, set the sleeps.
    assert!(
        events
            .iter()
            .filter(|e| e["event"] == "sleep")
            .all(|e| e["source"] == "backoff")
    );
}

/// The man page's example (src/generate.rs, EXAMPLES), as written but for
/// the URL: the Retry-After of a 503 is honoured.
#[test]
fn the_man_page_example_honours_retry_after_as_written() {
    assert!(curl_available(), "curl is needed for this test");
    let dir = scratch();
    let (port, served) = http_server(vec!["503 Service Unavailable|Retry-After: 1\r\n", "200 OK"]);
    let url = format!("http://127.0.0.1:{port}/items");
    let started = Instant::now();
    let mut command = retry_std();
    command
        .current_dir(dir.path())
        .args(["--log-format", "json"])
        .args([
            "--",
            "curl",
            "-fsS",
            "-D",
            "/dev/stderr",
            "-o",
            "items.json",
            &url,
        ]);
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(started.elapsed() >= Duration::from_millis(950));
    assert_eq!(served.load(Ordering::SeqCst), 2);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("items.json")).unwrap(),
        "body of 200 OK\n"
    );
    let events = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .collect::<Vec<_>>();
    let sleep = events.iter().find(|e| e["event"] == "sleep").unwrap();
    assert_eq!(sleep["source"], "retry-after");
    assert_eq!(sleep["delay_ms"], 1000);
    assert!(warnings(&events).is_empty(), "{events:?}");
}

#[test]
fn the_automatic_choice_shows_in_verbose_and_in_the_first_failure_line_only() {
    assert!(curl_available(), "curl is needed for this test");
    let url = format!("http://127.0.0.1:{}/", closed_port());
    let out = retry()
        .args(["-v", "-n", "2", "-d", "1ms", "--", "curl", "-sS", &url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "retry: preset curl from built-in (presets/http.toml), chosen from the command name (--preset none turns it off)"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("attempt 1/2 failed: exit 7; curl could not connect to the host (preset curl, chosen from the command name) (transient)"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "attempt 2/2 failed: exit 7; curl could not connect to the host (preset curl) (transient)"
        ),
        "{stderr}"
    );
}

#[test]
fn preset_none_turns_the_automatic_choice_off() {
    assert!(curl_available(), "curl is needed for this test");
    let (port, served) = http_server(vec!["404 Not Found"]);
    let url = format!("http://127.0.0.1:{port}/");
    let out = retry()
        .args([
            "-v", "-n", "3", "-d", "1ms", "--preset", "none", "--", "curl", "-fsS", &url,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(22));
    assert_eq!(served.load(Ordering::SeqCst), 3);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("preset"), "{stderr}");
}

// ---- wget ----

#[test]
fn wget_retries_a_503_and_a_closed_port_and_stops_on_a_404() {
    if !have("wget") {
        return;
    }
    let (port, served) = http_server(vec!["503 Service Unavailable", "200 OK"]);
    let url = format!("http://127.0.0.1:{port}/");
    let (out, events) = json(
        &[],
        &["-d", "1ms", "--", "wget", "--tries=1", "-O", "-", &url],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(served.load(Ordering::SeqCst), 2);
    assert_eq!(
        attempts(&events)[0]["reason"],
        "exit 8; wget reported HTTP 503 (preset wget, chosen from the command name)"
    );

    let (port, served) = http_server(vec!["404 Not Found"]);
    let url = format!("http://127.0.0.1:{port}/");
    let (out, events) = json(
        &[],
        &["-d", "1ms", "--", "wget", "--tries=1", "-O", "-", &url],
    );
    assert_eq!(out.status.code(), Some(8));
    assert_eq!(served.load(Ordering::SeqCst), 1);
    assert_eq!(attempts(&events).len(), 1);
    assert_eq!(attempts(&events)[0]["outcome"], "permanent");

    let url = format!("http://127.0.0.1:{}/", closed_port());
    let (out, events) = json(
        &[],
        &[
            "-n",
            "2",
            "-d",
            "1ms",
            "--",
            "wget",
            "--tries=1",
            "-O",
            "-",
            &url,
        ],
    );
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(attempts(&events).len(), 2, "{events:?}");
}

// ---- git over HTTP ----

#[test]
fn git_clone_retries_a_503_and_stops_on_a_missing_repository() {
    if !have("git") {
        return;
    }
    let dir = scratch();
    let (port, served) = http_server(vec!["503 Service Unavailable"]);
    let url = format!("http://127.0.0.1:{port}/repo.git");
    let target = dir.path().join("a");
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
        "exit 128; the git server answered HTTP 503 (preset git, chosen from the command name)"
    );
    assert!(served.load(Ordering::SeqCst) >= 3);

    let (port, served) = http_server(vec!["404 Not Found"]);
    let url = format!("http://127.0.0.1:{port}/missing.git");
    let target = dir.path().join("b");
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
    assert_eq!(tried.len(), 1, "{events:?}");
    assert_eq!(tried[0]["outcome"], "permanent");
    assert!(
        tried[0]["reason"]
            .as_str()
            .unwrap()
            .contains("the repository does not exist"),
        "{tried:?}"
    );
    assert_eq!(served.load(Ordering::SeqCst), 1);
}

// ---- rsync and ssh ----

#[test]
fn rsync_retries_a_closed_port_and_stops_on_a_missing_file() {
    if !have("rsync") {
        return;
    }
    let dir = scratch();
    let source = format!("rsync://127.0.0.1:{}/module/", closed_port());
    let target = dir.path().join("dst");
    let (out, events) = json(
        &[],
        &[
            "-n",
            "2",
            "-d",
            "1ms",
            "--",
            "rsync",
            &source,
            target.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(10));
    assert_eq!(attempts(&events).len(), 2, "{events:?}");
    assert_eq!(attempts(&events)[0]["outcome"], "transient");

    let missing = dir.path().join("no-such-file");
    let (out, events) = json(
        &[],
        &[
            "-n",
            "3",
            "-d",
            "1ms",
            "--",
            "rsync",
            missing.to_str().unwrap(),
            target.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(23));
    assert_eq!(attempts(&events).len(), 1, "{events:?}");
    assert_eq!(attempts(&events)[0]["outcome"], "permanent");
}

#[test]
fn ssh_retries_a_closed_port_and_stops_on_a_bad_option() {
    if !have("ssh") {
        return;
    }
    let port = closed_port().to_string();
    let (out, events) = json(
        &[],
        &[
            "-n",
            "2",
            "-d",
            "1ms",
            "--",
            "ssh",
            "-p",
            &port,
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=no",
            "127.0.0.1",
            "true",
        ],
    );
    assert_eq!(out.status.code(), Some(255));
    let tried = attempts(&events);
    assert_eq!(tried.len(), 2, "{events:?}");
    assert_eq!(
        tried[0]["reason"],
        "exit 255; ssh could not connect (Connection refused) (preset ssh, chosen from the command name)"
    );

    let (out, events) = json(&[], &["-n", "3", "-d", "1ms", "--", "ssh", "-Z", "x"]);
    assert_eq!(out.status.code(), Some(255));
    assert_eq!(attempts(&events).len(), 1, "{events:?}");
    assert_eq!(attempts(&events)[0]["outcome"], "permanent");
}

// ---- user presets files ----

const MYJOB: &str = r#"
[preset.myjob]
description = "myjob: 75 is worth another try, 3 is not"
commands = ["myjob"]

[[preset.myjob.exit]]
kind = "permanent"
codes = "3"
means = "myjob found no input"

[[preset.myjob.output]]
kind = "transient"
pattern = 'busy until (\d+)'
means = "myjob's server is busy (until {1})"
"#;

#[test]
fn a_user_presets_file_adds_a_preset_chosen_by_the_command_name() {
    let dir = scratch();
    let presets = dir.path().join("presets.toml");
    std::fs::write(&presets, MYJOB).unwrap();
    let myjob = script(
        dir.path(),
        "myjob",
        &format!(
            "#!/bin/sh\n{}\necho 'busy until 12:00' >&2\nexit \"$1\"\n",
            tally(dir.path(), "runs")
        ),
    );
    let myjob = myjob.to_str().unwrap();
    // Exit 3: permanent by the user's preset, after one attempt.
    let (out, events) = json(
        &[("RETRY_PRESETS", &presets)],
        &["-n", "3", "-d", "1ms", "--", myjob, "3"],
    );
    assert_eq!(out.status.code(), Some(3));
    // The transient pattern comes before the permanent exit code.
    assert_eq!(attempts(&events).len(), 3, "{events:?}");
    assert_eq!(
        attempts(&events)[0]["reason"],
        "exit 3; myjob's server is busy (until 12) (preset myjob, chosen from the command name)"
    );
    std::fs::write(&presets, MYJOB.replace("busy until", "busy till")).unwrap();
    let (out, events) = json(
        &[("RETRY_PRESETS", &presets)],
        &["-n", "3", "-d", "1ms", "--", myjob, "3"],
    );
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(attempts(&events).len(), 1, "{events:?}");
    assert_eq!(
        attempts(&events)[0]["reason"],
        "exit 3; myjob found no input (preset myjob, chosen from the command name)"
    );
    // Found through XDG_CONFIG_HOME as well, when RETRY_PRESETS is empty.
    let config = dir.path().join("config");
    std::fs::create_dir_all(config.join("retry")).unwrap();
    std::fs::copy(&presets, config.join("retry/presets.toml")).unwrap();
    let (out, events) = json(
        &[
            ("RETRY_PRESETS", Path::new("")),
            ("XDG_CONFIG_HOME", &config),
        ],
        &["-n", "3", "-d", "1ms", "--", myjob, "3"],
    );
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(attempts(&events).len(), 1, "{events:?}");
}

#[test]
fn a_user_preset_replaces_the_built_in_of_its_name() {
    assert!(curl_available(), "curl is needed for this test");
    let dir = scratch();
    let presets = dir.path().join("presets.toml");
    std::fs::write(
        &presets,
        r#"
[preset.curl]
description = "curl, but a refused connection is final"
commands = ["curl"]
other_exit = "transient"

[[preset.curl.exit]]
kind = "permanent"
codes = "7"
means = "nobody listens there"
"#,
    )
    .unwrap();
    let url = format!("http://127.0.0.1:{}/", closed_port());
    let (out, events) = json(
        &[("RETRY_PRESETS", &presets)],
        &["-n", "3", "-d", "1ms", "--", "curl", "-sS", &url],
    );
    assert_eq!(out.status.code(), Some(7));
    let tried = attempts(&events);
    assert_eq!(tried.len(), 1, "{events:?}");
    assert_eq!(
        tried[0]["reason"],
        "exit 7; nobody listens there (preset curl, chosen from the command name)"
    );
    // --preset list says where it comes from.
    let mut list = retry();
    list.env("RETRY_PRESETS", &presets)
        .args(["--preset", "list"]);
    list.assert()
        .success()
        .stdout(predicate::str::contains(format!(
            "curl: chosen for curl; from {}, replaces the built-in",
            presets.display()
        )));
}

#[test]
fn a_malformed_presets_file_is_a_usage_error_naming_file_and_line() {
    let dir = scratch();
    let marker = dir.path().join("ran");
    let touch = format!("touch '{}'", marker.display());
    let presets = dir.path().join("presets.toml");
    let cases = [
        (
            MYJOB.replace("codes = \"3\"", "codes = \"3-\""),
            8,
            "exit rule 1: codes '3-'",
        ),
        (
            MYJOB.replace("kind = \"transient\"", "kind = \"maybe\""),
            12,
            "maybe",
        ),
        (MYJOB.replace(r"(\d+)'", r"(\d+'"), 13, "does not compile"),
        (MYJOB.replace("commands =", "comands ="), 4, "comands"),
        (MYJOB.replace("[preset.myjob]", "[preset.myjob"), 2, ""),
    ];
    for (text, line, what) in cases {
        std::fs::write(&presets, &text).unwrap();
        let out = retry()
            .env("RETRY_PRESETS", &presets)
            .args(["--", "sh", "-c", &touch])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(125));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("retry: error: presets file ")
                && stderr.contains(&format!("{}:{line}: ", presets.display()))
                && stderr.contains(what),
            "{stderr}"
        );
        assert!(!marker.exists(), "the command ran despite {stderr}");
    }
    // RETRY_PRESETS naming nothing, or a directory.
    retry()
        .env("RETRY_PRESETS", dir.path().join("missing.toml"))
        .args(["--", "sh", "-c", &touch])
        .assert()
        .code(125)
        .stderr(
            predicate::str::contains("RETRY_PRESETS names")
                .and(predicate::str::contains("missing.toml")),
        );
    retry()
        .env("RETRY_PRESETS", dir.path())
        .args(["--", "sh", "-c", &touch])
        .assert()
        .code(125)
        .stderr(predicate::str::contains("not a regular file"));
    assert!(!marker.exists());
    // --preset none reads no file at all.
    retry()
        .env("RETRY_PRESETS", dir.path().join("missing.toml"))
        .args(["--preset", "none", "--", "sh", "-c", &touch])
        .assert()
        .success();
    assert!(marker.exists());
}

// ---- list, show, explain ----

#[test]
fn preset_list_and_show_run_nothing_and_show_prints_a_file_that_works() {
    retry()
        .args(["--preset", "list"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "git: chosen for git; from built-in (presets/vcs.toml)",
        ))
        .stdout(predicate::str::contains("apt: chosen for apt-get, apt;"));
    let shown = retry()
        .args(["--preset", "show", "rsync"])
        .output()
        .unwrap();
    assert!(shown.status.success());
    let text = String::from_utf8(shown.stdout).unwrap();
    assert!(
        text.contains("[preset.rsync]\n") && text.contains("[[preset.rsync.exit]]"),
        "{text}"
    );
    // Copied into a user file, renamed, it is a preset of its own.
    let dir = scratch();
    let presets = dir.path().join("presets.toml");
    std::fs::write(
        &presets,
        text.replace("preset.rsync", "preset.myrsync")
            .replace("commands = [\"rsync\"]", "commands = []"),
    )
    .unwrap();
    retry()
        .env("RETRY_PRESETS", &presets)
        .args(["--explain", "--preset", "myrsync", "--", "rsync", "a", "b"])
        .assert()
        .success()
        .stdout(predicate::str::contains(format!(
            "preset myrsync from {}, named by --preset",
            presets.display()
        )));
    retry()
        .args(["--preset", "show", "nosuch"])
        .assert()
        .code(125)
        .stderr(predicate::str::contains("no preset named 'nosuch'"));
    retry().args(["--preset", "show"]).assert().code(125);
    retry()
        .args(["--preset", "list", "--", "true"])
        .assert()
        .code(125);
    retry().args(["--preset", "curl"]).assert().code(125);
}

#[test]
fn preset_check_checks_a_file_with_the_loader_and_names_each_problems_line() {
    let dir = scratch();
    let good = dir.path().join("good.toml");
    std::fs::write(
        &good,
        "[preset.rclone]\ndescription = \"rclone\"\ncommands = [\"rclone\"]\n\n[[preset.rclone.exit]]\nkind = \"transient\"\ncodes = \"5\"\nmeans = \"a temporary error\"\n",
    )
    .unwrap();
    retry()
        .args(["--preset", "check"])
        .arg(&good)
        .assert()
        .success()
        .stdout(format!(
            "{}: 1 preset: rclone; no problems\n",
            good.display()
        ));
    // Every built-in file passes as a user file too (--preset show's form).
    for file in ["http", "vcs", "packages"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("presets")
            .join(format!("{file}.toml"));
        retry()
            .args(["--preset", "check"])
            .arg(&path)
            .assert()
            .success();
    }
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&good)
            .unwrap()
            .replace("codes = \"5\"", "codes = \"5-\"")
            .replace("[\"rclone\"]", "[\"/bin/rclone\"]"),
    )
    .unwrap();
    let out = retry()
        .args(["--preset", "check"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    let shown = bad.display();
    assert!(
        lines[0].starts_with(&format!(
            "retry: error: {shown}:3: preset rclone: command '/bin/rclone'"
        )),
        "{stderr}"
    );
    assert!(
        lines[1].starts_with(&format!(
            "retry: error: {shown}:7: preset rclone: exit rule 1: codes '5-'"
        )),
        "{stderr}"
    );
    // Nothing to check, or a file that is not there: refused.
    retry()
        .args(["--preset", "check"])
        .assert()
        .code(125)
        .stderr(predicate::str::contains(
            "--preset check takes one presets file",
        ));
    retry()
        .args(["--preset", "check"])
        .arg(dir.path().join("missing.toml"))
        .assert()
        .code(125)
        .stderr(predicate::str::contains("--preset check names "));
}

#[test]
fn explain_shows_the_rules_in_force_and_where_they_come_from() {
    retry()
        .args(["--explain", "--stop-on-exit", "2", "--", "git", "fetch"])
        .assert()
        .success()
        .stdout(predicate::str::contains("  from the command line:\n    permanent  --stop-on-exit 2\n"))
        .stdout(predicate::str::contains(
            "  preset git from built-in (presets/vcs.toml), chosen from the command name (--preset none turns it off):",
        ))
        .stdout(predicate::str::contains("    permanent  exit 128: git stopped with a fatal error"));
    retry()
        .args(["--explain", "--", "./build.sh"])
        .assert()
        .success()
        .stdout(predicate::str::contains("preset").not());
}

/// A server on 127.0.0.1 that reads each request and then, per connection
/// in turn, closes without a reply (`"close"`), resets the connection
/// (`"reset"`), or answers 200 (`"ok"`; the last entry repeats). Returns the
/// port and the count of connections.
fn faulty_server(
    script: Vec<&'static str>,
) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = served.clone();
    let port = serve(move |_, mut stream| {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        match script[n.min(script.len() - 1)] {
            "reset" => {
                // SO_LINGER with a zero timeout: close sends a RST.
                let linger = libc::linger {
                    l_onoff: 1,
                    l_linger: 0,
                };
                // SAFETY: a valid socket descriptor and a linger struct of
                // the size given.
                unsafe {
                    libc::setsockopt(
                        stream.as_raw_fd(),
                        libc::SOL_SOCKET,
                        libc::SO_LINGER,
                        std::ptr::addr_of!(linger).cast(),
                        size_of::<libc::linger>() as libc::socklen_t,
                    );
                }
            }
            "close" => {}
            _ => {
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n"
                );
            }
        }
    });
    (port, served)
}

#[test]
fn curl_and_wget_retry_a_reset_and_an_empty_reply() {
    assert!(curl_available(), "curl is needed for this test");
    let (port, served) = faulty_server(vec!["reset", "close", "ok"]);
    let url = format!("http://127.0.0.1:{port}/");
    let (out, events) = json(&[], &["-d", "1ms", "--", "curl", "-fsS", &url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"ok\n");
    assert_eq!(served.load(Ordering::SeqCst), 3);
    let tried = attempts(&events);
    assert_eq!(
        tried[0]["reason"],
        "exit 56; sending or receiving network data failed (connection reset) (preset curl, chosen from the command name)"
    );
    assert_eq!(
        tried[1]["reason"],
        "exit 52; the server closed the connection without a reply (preset curl)"
    );
    if !have("wget") {
        return;
    }
    let (port, served) = faulty_server(vec!["reset", "ok"]);
    let url = format!("http://127.0.0.1:{port}/");
    let (out, events) = json(
        &[],
        &["-d", "1ms", "--", "wget", "--tries=1", "-O", "-", &url],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(served.load(Ordering::SeqCst), 2);
    assert_eq!(attempts(&events)[0]["outcome"], "transient");
}

// ---- pip and apt-get against a local index (issue 16: "apt-get and pip
// against a local index that answers 503 vs 404") ----

/// The pip on PATH, by a file name the pip preset is chosen for (`python3
/// -m pip` would be python3's). None, said on stderr, when there is none.
pub(crate) fn pip_command() -> Option<&'static str> {
    let found = ["pip3", "pip"].into_iter().find(|name| on_path(name));
    if found.is_none() {
        eprintln!("pip is not installed: skipping its preset test");
    }
    found
}

pub(crate) const WHEEL: &str = "demo_pkg-1.0-py3-none-any.whl";

/// The wheel of project demo-pkg 1.0, written by python3's zipfile.
pub(crate) fn demo_wheel(dir: &Path) -> Vec<u8> {
    let path = dir.join(WHEEL);
    let made = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile\n\
             with zipfile.ZipFile(sys.argv[1], 'w') as z:\n\
             \x20   z.writestr('demo_pkg/__init__.py', '')\n\
             \x20   z.writestr('demo_pkg-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: demo-pkg\\nVersion: 1.0\\n')\n\
             \x20   z.writestr('demo_pkg-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: retry-tests\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n\
             \x20   z.writestr('demo_pkg-1.0.dist-info/RECORD', '')\n",
        ])
        .arg(&path)
        .status()
        .unwrap();
    assert!(made.success());
    std::fs::read(&path).unwrap()
}

/// A package index on 127.0.0.1 with one project, demo-pkg: `page(n)` is
/// the status of the n-th request (from 0) for its project page
/// `/simple/demo-pkg/`, `file(n)` that for its wheel; a 200 serves the page
/// or the wheel.
pub(crate) fn pip_index(
    wheel: Vec<u8>,
    page: impl Fn(usize) -> &'static str + Send + 'static,
    file: impl Fn(usize) -> &'static str + Send + 'static,
) -> (u16, Served) {
    http_routes(move |path, n| {
        let (status, ok) = if path == "/simple/demo-pkg/" {
            let html =
                format!("<html><body><a href=\"/files/{WHEEL}\">{WHEEL}</a></body></html>\n");
            (
                page(n),
                ("200 OK|Content-Type: text/html\r\n", html.into_bytes()),
            )
        } else if path == format!("/files/{WHEEL}") {
            let binary = "200 OK|Content-Type: application/octet-stream\r\n";
            (file(n), (binary, wheel.clone()))
        } else {
            ("404 Not Found", ("", Vec::new()))
        };
        if status.starts_with("200") {
            ok
        } else {
            (status, format!("{status}\n").into_bytes())
        }
    })
}

/// Run `retry -d 1ms RETRY_ARGS -- PIP download PIP_ARGS ... demo-pkg`
/// (PIP may be several words: `python3 -m pip`)
/// against the index on `port`, saving into `dest`: pip's own retries off
/// (`--retries 0`), no cache, no version check, and none of the machine's
/// pip settings (PIP_* variables, configuration files). The output, the
/// events, and pip's own lines of stderr.
pub(crate) fn pip_download(
    pip: &str,
    port: u16,
    dest: &Path,
    retry_args: &[&str],
    pip_args: &[&str],
) -> (std::process::Output, Vec<serde_json::Value>, Vec<String>) {
    let mut command = retry_std();
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PIP_") {
            command.env_remove(&key);
        }
    }
    let index = format!("http://127.0.0.1:{port}/simple/");
    command
        .env("PIP_CONFIG_FILE", "/dev/null")
        .args(["--log-format", "json", "-d", "1ms"])
        .args(retry_args)
        .arg("--")
        .args(pip.split(' '))
        .arg("download")
        .args(pip_args)
        .args([
            "--no-deps",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--retries",
            "0",
            "--timeout",
            "2",
            "--index-url",
            &index,
            "--dest",
        ])
        .arg(dest)
        .arg("demo-pkg")
        .stdin(std::process::Stdio::null());
    let out = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let (events, said): (Vec<&str>, Vec<&str>) = stderr
        .lines()
        .partition(|line| line.starts_with("{\"event\""));
    let events = events
        .into_iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (out, events, said.into_iter().map(str::to_string).collect())
}

pub(crate) fn count(served: &Served, path: &str) -> usize {
    served.lock().unwrap().iter().filter(|p| *p == path).count()
}

#[test]
fn pip_retries_a_503_from_the_index_and_stops_on_a_404() {
    let Some(pip) = pip_command() else { return };
    let dir = scratch();
    let wheel = demo_wheel(dir.path());
    let file = format!("/files/{WHEEL}");
    // The wheel answers 503 twice: pip (no retries of its own) raises
    // "too many 503 error responses" and exits 2; the third attempt saves it.
    let (port, served) = pip_index(
        wheel.clone(),
        |_| "200 OK",
        |n| {
            if n < 2 {
                "503 Service Unavailable"
            } else {
                "200 OK"
            }
        },
    );
    let dest = dir.path().join("a");
    let (out, events, said) = pip_download(pip, port, &dest, &[], &[]);
    assert!(out.status.success(), "{said:?} {events:?}");
    let tried = attempts(&events);
    assert_eq!(tried.len(), 3, "{events:?}");
    assert_eq!(
        tried[0]["reason"],
        "exit 2; the package server answered HTTP 503 to every try (preset pip, chosen from the command name)"
    );
    assert_eq!(
        tried[1]["reason"],
        "exit 2; the package server answered HTTP 503 to every try (preset pip)"
    );
    assert_eq!(count(&served, &file), 3);
    assert_eq!(std::fs::read(dest.join(WHEEL)).unwrap(), wheel);

    // The wheel answers 404: pip says so, exits 1, and one attempt is all.
    let (port, served) = pip_index(wheel, |_| "200 OK", |_| "404 Not Found");
    let (out, events, said) = pip_download(pip, port, &dir.path().join("b"), &[], &[]);
    assert_eq!(out.status.code(), Some(1), "{said:?}");
    assert!(
        said.iter()
            .any(|line| line.contains("ERROR: HTTP error 404 while getting")),
        "{said:?}"
    );
    let tried = attempts(&events);
    assert_eq!(tried.len(), 1, "{events:?}");
    assert_eq!(tried[0]["outcome"], "permanent");
    assert_eq!(
        tried[0]["reason"],
        "exit 1; the package server answered HTTP 404 (preset pip, chosen from the command name)"
    );
    assert_eq!(count(&served, &file), 1);
}

/// pip hides why it skipped a project page unless asked (-vv, on stdout):
/// at its default verbosity a 503 page reads as a missing project, and both
/// are retried (issue 25, item 17: a failing index must not stop the run);
/// `pip -vv` under `retry --scan-stdout` tells them apart.
#[test]
fn pip_tells_a_503_project_page_from_a_missing_project_only_under_vv_and_scan_stdout() {
    let Some(pip) = pip_command() else { return };
    let dir = scratch();
    let wheel = demo_wheel(dir.path());
    let page = "/simple/demo-pkg/";
    let mut lines = Vec::new();
    for status in ["503 Service Unavailable", "404 Not Found"] {
        let (port, served) = pip_index(wheel.clone(), move |_| status, |_| "200 OK");
        let (out, events, said) = pip_download(pip, port, &dir.path().join("a"), &["-n", "2"], &[]);
        assert_eq!(out.status.code(), Some(1), "{said:?}");
        let tried = attempts(&events);
        assert_eq!(tried.len(), 2, "{status}: {events:?}");
        assert_eq!(
            tried[0]["reason"],
            "exit 1; pip found no version of demo-pkg at all: the index may have failed or been unreachable (pip says why only under -vv), or the project does not exist (preset pip, chosen from the command name)"
        );
        assert_eq!(*served.lock().unwrap(), vec![page.to_string(); 2]);
        lines.push(said);
    }
    assert_eq!(lines[0], lines[1]);
    assert!(
        lines[0].contains(&"ERROR: No matching distribution found for demo-pkg".to_string()),
        "{lines:?}"
    );

    // -vv and --scan-stdout: a 503 page (which pip, but for --retries 0,
    // would have retried itself first) is transient, and the next attempt
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
    let dest = dir.path().join("b");
    let (out, events, said) = pip_download(pip, port, &dest, &["--scan-stdout"], &["-vv"]);
    assert!(out.status.success(), "{said:?} {events:?}");
    let tried = attempts(&events);
    assert_eq!(tried.len(), 2, "{events:?}");
    assert_eq!(
        tried[0]["reason"],
        "exit 1; the package server answered HTTP 503 to every try (preset pip, chosen from the command name)"
    );
    assert_eq!(count(&served, page), 2);
    assert_eq!(std::fs::read(dest.join(WHEEL)).unwrap(), wheel);

    // A 502, which pip does not retry: named by the page's status.
    let (port, served) = pip_index(wheel.clone(), |_| "502 Bad Gateway", |_| "200 OK");
    let (out, events, _) = pip_download(
        pip,
        port,
        &dir.path().join("c"),
        &["-n", "2", "--scan-stdout"],
        &["-vv"],
    );
    assert_eq!(out.status.code(), Some(1));
    let tried = attempts(&events);
    assert_eq!(tried.len(), 2, "{events:?}");
    assert_eq!(
        tried[0]["reason"],
        "exit 1; the index answered HTTP 502 for the project page (preset pip, chosen from the command name)"
    );
    assert_eq!(count(&served, page), 2);

    // A 404 page under -vv still stops at once.
    let (port, served) = pip_index(wheel, |_| "404 Not Found", |_| "200 OK");
    let (out, events, _) = pip_download(
        pip,
        port,
        &dir.path().join("d"),
        &["--scan-stdout"],
        &["-vv"],
    );
    assert_eq!(out.status.code(), Some(1));
    let tried = attempts(&events);
    assert_eq!(tried.len(), 1, "{events:?}");
    assert_eq!(tried[0]["outcome"], "permanent");
    assert_eq!(count(&served, page), 1);
}

/// A Release file for suite `stable`, component `main`, whose one index
/// (amd64 Packages) is empty: apt makes an empty file itself and asks the
/// mirror for nothing more.
const RELEASE: &str = "Origin: retry-tests\nLabel: retry-tests\nSuite: stable\nCodename: stable\n\
Date: Tue, 01 Dec 2026 00:00:00 UTC\nArchitectures: amd64\nComponents: main\nSHA256:\n \
e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 0 main/binary-amd64/Packages\n";

/// An apt configuration in `dir`, for `APT_CONFIG`, that leaves the system's
/// apt and dpkg alone: no /etc/apt/apt.conf.d (whose update hooks would
/// run) or sources.list.d; the sources list `sources`, the lists, the
/// caches and the dpkg status in `dir`, and with the status the dpkg locks
/// (apt takes lock-frontend and lock next to it); dpkg itself is `false`.
/// apt's own retries are off, and its downloads not handed to user _apt
/// (who could not enter the private scratch directory).
fn apt_sandbox(dir: &Path, sources: &str) -> std::path::PathBuf {
    for sub in ["parts", "lists/partial", "cache/archives/partial"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    std::fs::write(dir.join("sources.list"), format!("{sources}\n")).unwrap();
    std::fs::write(dir.join("status"), "").unwrap();
    let d = dir.display();
    let config = dir.join("apt.conf");
    std::fs::write(
        &config,
        format!(
            "Dir::Etc::main \"/dev/null\";\n\
             Dir::Etc::parts \"{d}/parts\";\n\
             Dir::Etc::sourcelist \"{d}/sources.list\";\n\
             Dir::Etc::sourceparts \"{d}/parts\";\n\
             Dir::State::lists \"{d}/lists\";\n\
             Dir::State::status \"{d}/status\";\n\
             Dir::State::extended_states \"{d}/extended_states\";\n\
             Dir::Cache \"{d}/cache\";\n\
             Dir::Log \"{d}/log\";\n\
             Dir::Bin::dpkg \"/bin/false\";\n\
             APT::Sandbox::User \"root\";\n\
             Acquire::Retries \"0\";\n\
             Acquire::http::Timeout \"2\";\n\
             Acquire::http::Pipeline-Depth \"0\";\n"
        ),
    )
    .unwrap();
    config
}

/// `apt-get update --error-on=any` (the flag the preset's notes ask for):
/// a mirror's 503 is retried, a 404 or a missing Release file stops; and
/// without the flag a 503 never reaches retry.
#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one mirror set up, then its cases in turn"
)]
fn apt_get_update_retries_a_503_from_the_mirror_and_stops_on_a_404() {
    if !have("apt-get") {
        return;
    }
    // InRelease answers 503 twice, then 404 (an unsigned mirror: apt then
    // takes Release, trusted=yes).
    let dir = scratch();
    let (port, served) = http_routes(|path, n| match path {
        "/debian/dists/stable/InRelease" if n < 2 => {
            ("503 Service Unavailable", b"busy\n".to_vec())
        }
        "/debian/dists/stable/Release" => ("200 OK", RELEASE.as_bytes().to_vec()),
        _ => ("404 Not Found", b"not found\n".to_vec()),
    });
    let config = apt_sandbox(
        dir.path(),
        &format!("deb [trusted=yes arch=amd64] http://127.0.0.1:{port}/debian stable main"),
    );
    let (out, events) = json(
        &[("APT_CONFIG", &config)],
        &["-d", "1ms", "--", "apt-get", "update", "--error-on=any"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tried = attempts(&events);
    assert_eq!(tried.len(), 3, "{events:?}");
    assert_eq!(
        tried[0]["reason"],
        "exit 100; the mirror answered HTTP 503 (preset apt, chosen from the command name)"
    );
    assert_eq!(
        tried[1]["reason"],
        "exit 100; the mirror answered HTTP 503 (preset apt)"
    );
    assert_eq!(count(&served, "/debian/dists/stable/InRelease"), 3);
    assert!(
        dir.path()
            .join(format!(
                "lists/127.0.0.1:{port}_debian_dists_stable_Release"
            ))
            .is_file()
    );

    // Every file answers 404: apt names the first index it could not get.
    let dir = scratch();
    let (port, served) = http_routes(|_, _| ("404 Not Found", b"not found\n".to_vec()));
    let config = apt_sandbox(
        dir.path(),
        &format!("deb [trusted=yes arch=amd64] http://127.0.0.1:{port}/debian stable main"),
    );
    let (out, events) = json(
        &[("APT_CONFIG", &config)],
        &["-d", "1ms", "--", "apt-get", "update", "--error-on=any"],
    );
    assert_eq!(out.status.code(), Some(100));
    let tried = attempts(&events);
    assert_eq!(tried.len(), 1, "{events:?}");
    assert_eq!(tried[0]["outcome"], "permanent");
    assert_eq!(
        tried[0]["reason"],
        "exit 100; the mirror answered HTTP 404 (preset apt, chosen from the command name)"
    );
    assert_eq!(count(&served, "/debian/dists/stable/InRelease"), 1);

    // The same mirror, not trusted=yes: no Release file, apt stops there.
    let dir = scratch();
    let config = apt_sandbox(
        dir.path(),
        &format!("deb http://127.0.0.1:{port}/debian stable main"),
    );
    let before = served.lock().unwrap().len();
    let (out, events) = json(
        &[("APT_CONFIG", &config)],
        &["-d", "1ms", "--", "apt-get", "update", "--error-on=any"],
    );
    assert_eq!(out.status.code(), Some(100));
    let tried = attempts(&events);
    assert_eq!(tried.len(), 1, "{events:?}");
    assert_eq!(
        tried[0]["reason"],
        "exit 100; the repository is missing or its signature does not verify (preset apt, chosen from the command name)"
    );
    assert_eq!(
        served.lock().unwrap()[before..],
        [
            "/debian/dists/stable/InRelease",
            "/debian/dists/stable/Release"
        ]
    );

    // Without --error-on=any, as the preset's notes say, `apt-get update`
    // only warns about the mirror's 503 and exits 0: nothing to retry.
    let dir = scratch();
    let (port, served) = http_routes(|_, _| ("503 Service Unavailable", b"busy\n".to_vec()));
    let config = apt_sandbox(
        dir.path(),
        &format!("deb [trusted=yes arch=amd64] http://127.0.0.1:{port}/debian stable main"),
    );
    let (out, events) = json(
        &[("APT_CONFIG", &config)],
        &["-d", "1ms", "--", "apt-get", "update"],
    );
    assert!(out.status.success());
    assert_eq!(attempts(&events).len(), 1, "{events:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "W: Failed to fetch http://127.0.0.1:{port}/debian/dists/stable/InRelease  503  Service Unavailable"
        )),
        "{stderr}"
    );
    assert_eq!(count(&served, "/debian/dists/stable/InRelease"), 1);
}

/// The dpkg frontend lock, held by another process: transient; once it is
/// free, the unknown package: permanent. The lock is the sandbox's (next to
/// its dpkg status), never the system's. The holder lets go when the
/// --on-retry hook asks, and the hook waits until it has, so that the
/// second attempt finds the lock free.
#[test]
fn apt_get_install_waits_for_a_held_dpkg_lock_and_stops_on_an_unknown_package() {
    if !have("apt-get") || !have("python3") {
        return;
    }
    let dir = scratch();
    let config = apt_sandbox(dir.path(), "");
    let lock = dir.path().join("lock-frontend");
    let go = dir.path().join("go");
    let mut holder = std::process::Command::new("python3")
        .args([
            "-c",
            "import fcntl, os, sys, time\n\
             f = open(sys.argv[1], 'w')\n\
             fcntl.lockf(f, fcntl.LOCK_EX)\n\
             print('locked', flush=True)\n\
             end = time.monotonic() + 30\n\
             while not os.path.exists(sys.argv[2]) and time.monotonic() < end:\n\
             \x20   time.sleep(0.01)\n\
             f.close()\n\
             os.remove(sys.argv[2])\n",
        ])
        .arg(&lock)
        .arg(&go)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut locked = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
        &mut locked,
    )
    .unwrap();
    assert_eq!(locked, "locked\n");
    let hook = format!(
        "touch '{go}'; for i in $(seq 1000); do [ -e '{go}' ] || break; sleep 0.01; done",
        go = go.display()
    );
    let (out, events) = json(
        &[("APT_CONFIG", &config)],
        &[
            "-d",
            "1ms",
            "--on-retry",
            &hook,
            "--",
            "apt-get",
            "install",
            "-y",
            "no-such-package-xyz",
        ],
    );
    let _ = holder.wait();
    assert_eq!(out.status.code(), Some(100));
    let tried = attempts(&events);
    assert_eq!(tried.len(), 2, "{events:?}");
    assert_eq!(
        tried[0]["reason"],
        format!(
            "exit 100; another process holds the lock {} (preset apt, chosen from the command name)",
            lock.display()
        )
    );
    assert_eq!(tried[1]["outcome"], "permanent");
    assert_eq!(
        tried[1]["reason"],
        "exit 100; apt has no such package or version (preset apt)"
    );
}

#[test]
fn only_the_chosen_presets_patterns_are_compiled() {
    // A user preset whose pattern is too big to compile: a run that does not
    // use it never pays for it (nor fails on it); a run that does is told.
    let dir = scratch();
    let presets = dir.path().join("presets.toml");
    std::fs::write(
        &presets,
        "[preset.big]\ndescription = \"a pattern too big to compile\"\ncommands = [\"bigtool\"]\nother_exit = \"transient\"\n\n[[preset.big.output]]\nkind = \"transient\"\npattern = '\\w{1000}\\w{1000}\\w{1000}'\nmeans = \"huge\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&presets, std::fs::Permissions::from_mode(0o600)).unwrap();
    retry()
        .env("RETRY_PRESETS", &presets)
        .args(["-n", "1", "--", "true"])
        .assert()
        .success();
    let tool = dir.path().join("bigtool");
    std::os::unix::fs::symlink("/bin/true", &tool).unwrap();
    retry()
        .env("RETRY_PRESETS", &presets)
        .args(["-n", "1", "--"])
        .arg(&tool)
        .assert()
        .code(125)
        .stderr(predicate::str::contains("preset big").and(predicate::str::contains("size limit")));
}
