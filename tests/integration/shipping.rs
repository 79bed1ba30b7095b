//! Shipping and seeing it: generated files, the man page, metrics, the
//! nested-retry warning, metrics and log files in shared places.

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::process::Stdio;

use predicates::prelude::*;

use crate::untrusted_inputs::{
    give_to_nobody, mkfifo, planted_directory_link, skip_unless_root, sticky_dir,
};
use crate::util::*;

const GENERATED: &[(&str, &str)] = &[
    ("man", "man/retry.1"),
    ("bash", "completions/retry.bash"),
    ("zsh", "completions/_retry"),
    ("fish", "completions/retry.fish"),
    ("elvish", "completions/retry.elv"),
    ("powershell", "completions/_retry.ps1"),
];

#[test]
fn committed_man_page_and_completions_match_the_binary() {
    for (kind, path) in GENERATED {
        let generated = retry().args(["--generate", kind]).output().unwrap();
        assert!(generated.status.success(), "{kind}");
        let committed = std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
            .unwrap_or_default();
        assert!(
            generated.stdout == committed,
            "{path} is out of date: run scripts/generate and commit the result"
        );
    }
}

#[test]
fn the_man_page_has_every_section_and_no_build_date() {
    let out = retry().args(["--generate", "man"]).output().unwrap();
    let page = String::from_utf8(out.stdout).unwrap();
    for section in [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "BACKOFF",
        "LIMITS",
        "\"EXIT STATUS\"",
        "ENVIRONMENT",
        "EXAMPLES",
    ] {
        assert!(
            page.contains(&format!(".SH {section}")),
            "missing {section}"
        );
    }
    let title = page.lines().find(|l| l.starts_with(".TH")).unwrap();
    assert!(!title.contains("20"), "a date in {title}");
    for flag in [
        "max\\-time",
        "retry\\-on\\-output",
        "RETRY_HINT_FILE",
        "curl",
    ] {
        assert!(page.contains(flag), "{flag}");
    }
}

#[test]
fn the_man_page_renders_without_warnings() {
    if std::process::Command::new("man")
        .arg("--version")
        .output()
        .is_err()
    {
        panic!("man is needed for this test (apt-get install man-db)");
    }
    let dir = scratch();
    let page = dir.path().join("retry.1");
    std::fs::write(
        &page,
        retry().args(["--generate", "man"]).output().unwrap().stdout,
    )
    .unwrap();
    let out = std::process::Command::new("man")
        .env("MANWIDTH", "80")
        .args(["--warnings", "-l"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "man warned");
    assert!(String::from_utf8_lossy(&out.stdout).contains("EXIT STATUS"));
}

#[test]
fn bash_completion_completes_max_t_to_max_time() {
    let dir = scratch();
    let completion = dir.path().join("retry.bash");
    std::fs::write(
        &completion,
        retry()
            .args(["--generate", "bash"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let program = format!(
        "source '{}'; COMP_WORDS=(retry --max-t); COMP_CWORD=1; COMP_LINE='retry --max-t'; COMP_POINT=13; _retry retry --max-t retry; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        completion.display()
    );
    let out = std::process::Command::new("bash")
        .args(["--norc", "-c", &program])
        .output()
        .unwrap();
    let replies = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        replies.trim(),
        "--max-time",
        "{replies} {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn generate_rejects_an_unknown_kind() {
    retry()
        .args(["--generate", "tcsh"])
        .assert()
        .code(125)
        .stderr(predicate::str::contains("--generate"));
}

#[test]
fn the_metrics_file_is_prometheus_text_written_at_the_end() {
    let dir = scratch();
    let metrics = dir.path().join("job.prom");
    let flaky = flaky(dir.path(), 2, 7);
    retry()
        .args(["-d", "1ms", "--name", "nightly", "--metrics-file"])
        .arg(&metrics)
        .arg("--")
        .arg(&flaky)
        .assert()
        .success();
    let text = std::fs::read_to_string(&metrics).unwrap();
    assert!(
        text.contains("retry_attempts{name=\"nightly\"} 3\n"),
        "{text}"
    );
    assert!(text.contains("retry_retries{name=\"nightly\"} 2\n"));
    assert!(text.contains("retry_outcome{name=\"nightly\",outcome=\"success\"} 1\n"));
    assert!(text.contains("retry_exit_status{name=\"nightly\"} 0\n"));
    assert_prometheus_text(&text);
    assert_eq!(
        std::fs::metadata(&metrics).unwrap().permissions().mode() & 0o777,
        0o644
    );

    // A failing run replaces it; the default name is the command's file name.
    retry()
        .args(["-n", "2", "-d", "1ms", "--metrics-file"])
        .arg(&metrics)
        .args(["--", "/bin/false"])
        .assert()
        .code(1);
    let text = std::fs::read_to_string(&metrics).unwrap();
    assert!(
        text.contains("retry_outcome{name=\"false\",outcome=\"exhausted\"} 1\n"),
        "{text}"
    );
    assert!(text.contains("retry_exit_status{name=\"false\"} 1\n"));
    assert_prometheus_text(&text);
}

/// Every sample line is `name{labels} value`; every metric has HELP and TYPE.
fn assert_prometheus_text(text: &str) {
    let mut helped = std::collections::HashSet::new();
    let mut typed = std::collections::HashSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            helped.insert(rest.split(' ').next().unwrap().to_string());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split(' ');
            typed.insert(parts.next().unwrap().to_string());
            assert_eq!(parts.next(), Some("gauge"));
        } else {
            let (series, value) = line
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("bad line {line:?}"));
            let (name, labels) = series
                .split_once('{')
                .unwrap_or_else(|| panic!("no labels {line:?}"));
            assert!(
                labels.ends_with('}') && labels.contains("name=\""),
                "{line}"
            );
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "{line}"
            );
            value
                .parse::<f64>()
                .unwrap_or_else(|_| panic!("bad value {line:?}"));
            assert!(
                helped.contains(name) && typed.contains(name),
                "{name} lacks HELP or TYPE"
            );
        }
    }
}

#[test]
fn the_metrics_file_is_never_seen_half_written() {
    let dir = scratch();
    let metrics = dir.path().join("job.prom");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (metrics, stop) = (metrics.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut seen = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                if let Ok(text) = std::fs::read_to_string(&metrics) {
                    assert!(
                        text.ends_with('\n')
                            && text.contains("retry_last_run_end_timestamp_seconds"),
                        "torn: {text:?}"
                    );
                    seen += 1;
                }
            }
            seen
        })
    };
    for _ in 0..30 {
        retry()
            .args(["-q", "--metrics-file"])
            .arg(&metrics)
            .args(["--", "true"])
            .assert()
            .success();
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(watcher.join().unwrap() > 0);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name() != "job.prom")
        .collect();
    assert!(leftovers.is_empty(), "temporary files left behind");
}

#[test]
fn a_nested_retry_warns_once_with_both_limits_and_the_product() {
    let inner = format!("'{BIN}' -n 3 -d 1ms -- true");
    let out = retry()
        .args(["-n", "4", "--", "sh", "-c", &inner])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr
            .matches("warning: running inside another retry")
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("4 outer x 3 inner = 12"), "{stderr}");

    let quiet = format!("'{BIN}' -q -n 3 -- true");
    retry()
        .args(["-n", "4", "--", "sh", "-c", &quiet])
        .assert()
        .success()
        .stderr("");

    let json = format!("'{BIN}' --log-format json -n 3 -- true");
    let out = retry().args(["--", "sh", "-c", &json]).output().unwrap();
    let events = json_events(&out.stderr);
    assert_eq!(events[0]["event"], "warning");
    assert_eq!(events[0]["kind"], "nested");

    // Not nested: no warning.
    retry()
        .args(["-n", "3", "--", "true"])
        .assert()
        .success()
        .stderr(predicate::str::contains("warning").not());
}

#[test]
fn colour_only_on_a_terminal() {
    // stderr is a pipe here: no escape codes even without NO_COLOR.
    let out = retry_std()
        .args(["-n", "2", "-d", "1ms", "--", "false"])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!out.stderr.contains(&0x1b));
}

// ---- Metrics and log files in shared places (issue 13, items 6 and 8) ----

/// `retry --metrics-file PATH -- sh -c 'exit CODE'`: its output.
fn with_metrics(path: &std::path::Path, code: i32) -> std::process::Output {
    with_metrics_running(path, &format!("exit {code}"))
}

/// `retry --metrics-file PATH -- sh -c BODY`: its output.
fn with_metrics_running(path: &std::path::Path, body: &str) -> std::process::Output {
    retry()
        .args(["-n", "1", "--metrics-file"])
        .arg(path)
        .args(["--", "sh", "-c", body])
        .output()
        .unwrap()
}

#[test]
fn a_metrics_path_that_is_not_a_regular_file_is_left_alone() {
    let dir = scratch();
    let fifo = dir.path().join("job.prom");
    mkfifo(&fifo);
    for code in [0, 3] {
        let out = with_metrics(&fifo, code);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "the job's status: {stderr}");
        assert!(
            stderr.contains(&format!(
                "--metrics-file {}: a FIFO stands there, not a regular file",
                fifo.display()
            )),
            "{stderr}"
        );
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
    }

    // A symlink could steer the write: refused, its target untouched.
    let target = dir.path().join("target");
    std::fs::write(&target, "mine\n").unwrap();
    let link = dir.path().join("link.prom");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = with_metrics(&link, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        stderr.contains(&format!(
            "--metrics-file {}: a symlink stands there",
            link.display()
        )),
        "{stderr}"
    );
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine\n");

    // A directory gone by the end of the run (one missing from the start
    // is refused before anything runs): the message shows the user's path,
    // no temporary one.
    let missing = dir.path().join("no-such-dir").join("job.prom");
    std::fs::create_dir(missing.parent().unwrap()).unwrap();
    let out = with_metrics_running(
        &missing,
        &format!("rmdir '{}'; exit 4", missing.parent().unwrap().display()),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4));
    assert!(
        stderr.contains(&format!(
            "--metrics-file {}: cannot create a file in {}: No such file or directory",
            missing.display(),
            missing.parent().unwrap().display()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains(".retry-metrics"), "{stderr}");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|name| name.to_string_lossy().starts_with(".retry-metrics"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
#[cfg(target_os = "linux")] // device 1,7 is Linux's /dev/full
fn a_metrics_path_that_is_a_device_is_left_alone() {
    if skip_unless_root("a_metrics_path_that_is_a_device_is_left_alone") {
        return;
    }
    // A /dev/full of our own (replacing the real one would hurt other tests).
    let dir = scratch();
    let full = dir.path().join("full");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &full,
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o666),
        rustix::fs::makedev(1, 7),
    )
    .unwrap();
    let out = with_metrics(&full, 5);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "--metrics-file {}: a device stands there, not a regular file",
            full.display()
        )),
        "{stderr}"
    );
    let meta = std::fs::symlink_metadata(&full).unwrap();
    assert!(meta.file_type().is_char_device());
    assert_eq!(meta.rdev(), rustix::fs::makedev(1, 7));
}

#[test]
fn a_metrics_file_another_user_planted_in_a_sticky_directory_is_not_replaced() {
    if skip_unless_root("a_metrics_file_another_user_planted_in_a_sticky_directory_is_not_replaced")
    {
        return;
    }
    // Another user makes the collector's file before root's job writes it,
    // writable by all: replaced, it would stay theirs to read and rewrite
    // (as -o refuses, and fs.protected_regular would refuse to open it).
    let dir = scratch();
    let shared = sticky_dir(dir.path(), "textfile");
    let metrics = shared.join("job.prom");
    std::fs::write(&metrics, "planted\n").unwrap();
    std::os::unix::fs::chown(&metrics, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&metrics, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = with_metrics(&metrics, 3);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The job's status stands.
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "--metrics-file {}: a file owned by another user (uid 65534) stands there",
            metrics.display()
        )),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&metrics).unwrap(), "planted\n");
    assert_eq!(std::fs::metadata(&metrics).unwrap().uid(), 65534);
    let leftovers: Vec<_> = std::fs::read_dir(&shared)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(leftovers, ["job.prom"]);

    // Another user's file in a directory that is not shared is replaced.
    let theirs = dir.path().join("theirs.prom");
    std::fs::write(&theirs, "old\n").unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    let out = with_metrics(&theirs, 0);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stderr, b"");
    assert!(
        std::fs::read_to_string(&theirs)
            .unwrap()
            .contains("retry_attempts")
    );
}

#[test]
fn the_metrics_mode_is_set_on_the_descriptor_not_through_a_swapped_symlink() {
    // A shared collector directory where a racer keeps turning every file
    // retry makes (the temporary one and the final one) into a symlink to a
    // private file: retry must never chmod or write that file.
    let dir = scratch();
    let shared = sticky_dir(dir.path(), "textfile");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "secret\n").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
    let metrics = shared.join("job.prom");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let racer = {
        let (shared, victim, stop) = (shared.clone(), victim.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut swapped = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                for entry in std::fs::read_dir(&shared).unwrap().flatten() {
                    let path = entry.path();
                    if entry.file_type().is_ok_and(|t| t.is_symlink()) {
                        continue;
                    }
                    if std::fs::remove_file(&path).is_ok()
                        && std::os::unix::fs::symlink(&victim, &path).is_ok()
                    {
                        swapped += 1;
                    }
                }
            }
            swapped
        })
    };
    for _ in 0..20 {
        // A symlink left at the path is refused (tested above): clear it,
        // so that every run makes a temporary file for the racer to swap.
        if std::fs::symlink_metadata(&metrics).is_ok_and(|m| m.is_symlink()) {
            let _ = std::fs::remove_file(&metrics);
        }
        // Whatever the racer does, the job's status is retry's status.
        let out = with_metrics(&metrics, 0);
        assert_eq!(out.status.code(), Some(0));
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let swapped = racer.join().unwrap();
    eprintln!("the racer swapped in {swapped} symlinks");
    let meta = std::fs::metadata(&victim).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o600, "the victim was chmodded");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "secret\n");

    // Without the racer: a regular file, 0644, the victim still untouched.
    for entry in std::fs::read_dir(&shared).unwrap().flatten() {
        std::fs::remove_file(entry.path()).unwrap();
    }
    let out = with_metrics(&metrics, 0);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stderr, b"");
    let meta = std::fs::symlink_metadata(&metrics).unwrap();
    assert!(meta.file_type().is_file());
    assert_eq!(meta.mode() & 0o7777, 0o644);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "secret\n");
    assert_eq!(std::fs::metadata(&victim).unwrap().mode() & 0o7777, 0o600);
}

/// `retry ARGS --log-file LOG -- touch DIR/ran`, which must be refused before
/// anything runs: exit 125, and the command did not run. Returns the stderr.
fn refused_log_file(dir: &std::path::Path, args: &[&str], log: &std::path::Path) -> String {
    let marker = dir.join("ran");
    let out = retry()
        .args(args)
        .arg("--log-file")
        .arg(log)
        .args(["--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(!marker.exists(), "the command ran: {stderr}");
    stderr
}

#[test]
fn a_log_file_symlink_of_another_user_in_a_sticky_directory_is_refused() {
    if skip_unless_root("a_log_file_symlink_of_another_user_in_a_sticky_directory_is_refused") {
        return;
    }
    let dir = scratch();
    let shared = sticky_dir(dir.path(), "shared");
    let target = dir.path().join("target");
    std::fs::write(&target, "").unwrap();
    let log = shared.join("retry.log");
    std::os::unix::fs::symlink(&target, &log).unwrap();
    give_to_nobody(&log);
    let stderr = refused_log_file(dir.path(), &[], &log);
    assert!(
        stderr.contains(&format!("--log-file {}", log.display()))
            && stderr.contains("a symlink owned by another user (uid 65534)"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "");

    // The kernel's rule, not a ban on symlinks: ours, or one in a directory
    // that is not shared, is followed.
    let ours = shared.join("ours.log");
    std::os::unix::fs::symlink(&target, &ours).unwrap();
    let private = dir.path().join("private.log");
    std::os::unix::fs::symlink(&target, &private).unwrap();
    give_to_nobody(&private);
    for link in [&ours, &private] {
        retry()
            .args(["-n", "2", "-d", "1ms", "--log-file"])
            .arg(link)
            .args(["--", "false"])
            .assert()
            .code(1)
            .stderr("");
    }
    assert_eq!(
        std::fs::read_to_string(&target)
            .unwrap()
            .matches("retry: attempt 1/2 failed")
            .count(),
        2
    );
}

#[test]
fn a_log_file_through_another_users_directory_symlink_is_refused() {
    if skip_unless_root("a_log_file_through_another_users_directory_symlink_is_refused") {
        return;
    }
    let dir = scratch();
    let (logs, victim) = planted_directory_link(dir.path(), "logs");
    // Before: the walk stopped only at a symlink in the last component, and
    // root's log went into etc/ (on a machine with fs.protected_symlinks=0).
    let stderr = refused_log_file(dir.path(), &[], &logs.join("cron.log"));
    assert!(
        stderr.contains("is a symlink owned by another user (uid 65534)"),
        "{stderr}"
    );
    assert!(!victim.join("cron.log").exists());
}

#[test]
fn metrics_through_another_users_directory_symlink_are_not_written() {
    if skip_unless_root("metrics_through_another_users_directory_symlink_are_not_written") {
        return;
    }
    let dir = scratch();
    let (metrics, victim) = planted_directory_link(dir.path(), "metrics");
    // Planted before the run: refused before anything runs.
    let ran = dir.path().join("ran");
    let out = with_metrics_running(
        &metrics.join("job.prom"),
        &format!("touch '{}'", ran.display()),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(
        stderr.contains("is a symlink owned by another user (uid 65534)"),
        "{stderr}"
    );
    assert!(!ran.exists(), "{stderr}");
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);

    // Planted while the job runs, in place of the directory that was
    // checked: the write at the end refuses it, and the job's status stands.
    std::fs::remove_file(&metrics).unwrap();
    std::fs::create_dir(&metrics).unwrap();
    let plant = format!(
        "rmdir '{link}' && ln -s '{victim}' '{link}' && chown -h 65534:65534 '{link}'; exit 3",
        link = metrics.display(),
        victim = victim.display()
    );
    let out = with_metrics_running(&metrics.join("job.prom"), &plant);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("is a symlink owned by another user (uid 65534)"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);
}

#[test]
fn a_log_file_that_is_a_fifo_is_refused_without_waiting() {
    let dir = scratch();
    let fifo = dir.path().join("log");
    mkfifo(&fifo);
    let started = std::time::Instant::now();
    let stderr = refused_log_file(dir.path(), &[], &fifo);
    assert!(
        stderr.contains(&format!("--log-file {}", fifo.display())) && stderr.contains("a FIFO"),
        "{stderr}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));

    // retry's own stderr through /dev/stderr is fine, pipe or not.
    retry()
        .args([
            "-n",
            "2",
            "-d",
            "1ms",
            "--log-file",
            "/dev/stderr",
            "--",
            "false",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("retry: attempt 1/2 failed"));
}

/// The ELF header's `e_type` of the built binary: 3 (`ET_DYN`) for a
/// position-independent executable, 2 (`ET_EXEC`) for a fixed-address one.
fn elf_type(path: &str) -> u16 {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..4], b"\x7fELF", "{path} is not an ELF file");
    u16::from_le_bytes([bytes[16], bytes[17]])
}

#[test]
fn the_binary_is_position_independent() {
    // A plain start-up: address randomization of retry's own code and data,
    // as distributions' hardening checks (lintian's hardening-no-pie) expect.
    assert_eq!(elf_type(BIN), 3, "retry is not a PIE");
}

/// `sleep 60` in a mount namespace of its own, where `dir/inner` is a
/// tmpfs of its own: (the process, the path of `dir/inner` through its
/// `/proc/PID/root`); `None` where no namespace can be made.
fn process_in_own_mount_namespace(dir: &std::path::Path) -> Option<(std::process::Child, PathBuf)> {
    let inner = dir.join("inner");
    std::fs::create_dir(&inner).unwrap();
    let ready = dir.join("ready");
    let script = format!(
        "mount -t tmpfs retry-test '{inner}' && touch '{ready}' && exec sleep 60",
        inner = inner.display(),
        ready = ready.display()
    );
    let mut child = std::process::Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !ready.exists() {
        if std::time::Instant::now() > until || child.try_wait().ok().flatten().is_some() {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let through =
        PathBuf::from(format!("/proc/{}/root", child.id())).join(inner.strip_prefix("/").unwrap());
    Some((child, through))
}

#[test]
fn files_through_proc_pid_root_are_those_of_that_process() {
    if skip_unless_root("files_through_proc_pid_root_are_those_of_that_process") {
        return;
    }
    let dir = scratch();
    let Some((mut sleeper, inner)) = process_in_own_mount_namespace(dir.path()) else {
        eprintln!("skipped: no mount namespace (unshare)");
        return;
    };
    let out = retry()
        .args(["-n", "1", "--log-file"])
        .arg(inner.join("job.log"))
        .arg("--metrics-file")
        .arg(inner.join("job.prom"))
        .args(["--", "false"])
        .output()
        .unwrap();
    let in_namespace = std::fs::read_dir(&inner)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect::<std::collections::BTreeSet<_>>();
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // Before: /proc/PID/root was read as the text of the link ("/"), and
    // both files went to the same path in retry's own mount namespace.
    assert_eq!(
        in_namespace,
        ["job.log", "job.prom"].map(String::from).into(),
        "{stderr}"
    );
    assert_eq!(listing(&dir.path().join("inner")), Vec::<String>::new());
}

#[test]
fn relative_log_and_metrics_files_need_no_search_permission_above_the_working_directory() {
    if skip_unless_root(
        "relative_log_and_metrics_files_need_no_search_permission_above_the_working_directory",
    ) {
        return;
    }
    // A job started in a directory, then run as another user who may not
    // search the directories above it.
    let dir = scratch();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o777)).unwrap();
    let Ok(out) = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
        .env("XDG_CONFIG_HOME", "/nonexistent/retry-test-config")
        .args(["-n", "1", "--log-file", "job.log", "--metrics-file"])
        .args(["job.prom", "-o", "job.out", "--", "false"])
        .current_dir(&work)
        .output()
    else {
        eprintln!("skipped: no setpriv (util-linux)");
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Before: the path was walked from / through the working directory's
    // name, and the walk was refused at the first directory nobody may
    // search (EACCES; also for -o, which walked so before); open(2) starts
    // from the working directory itself.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(listing(&work), ["job.log", "job.prom"]);
}

#[test]
fn a_log_file_symlink_of_ours_leading_through_a_planted_one_is_refused() {
    if skip_unless_root("a_log_file_symlink_of_ours_leading_through_a_planted_one_is_refused") {
        return;
    }
    let dir = scratch();
    let (logs, victim) = planted_directory_link(dir.path(), "logs");
    std::fs::write(victim.join("cron.log"), "root's\n").unwrap();
    // Our own symlink, in our own directory: it is followed; but where it
    // leads, the shared directory's `logs` is another user's.
    let mine = dir.path().join("cron.log");
    std::os::unix::fs::symlink(logs.join("cron.log"), &mine).unwrap();
    let out = retry()
        .args(["-n", "1", "--log-file"])
        .arg(&mine)
        .args(["--", "false"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Before: the symlink at the end was judged, then the kernel followed
    // it and, with fs.protected_symlinks=0, the planted one on its way too.
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(
        stderr.contains("is a symlink owned by another user (uid 65534)"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(victim.join("cron.log")).unwrap(),
        "root's\n"
    );

    // Ours all the way (also when it leads through /proc, as /dev/stderr
    // does): followed.
    let target = dir.path().join("real.log");
    let chain = dir.path().join("chain.log");
    std::os::unix::fs::symlink("sub/../real.log", &chain).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let stderr_link = dir.path().join("stderr");
    std::os::unix::fs::symlink("/dev/stderr", &stderr_link).unwrap();
    retry()
        .args(["-n", "1", "--log-file"])
        .arg(&chain)
        .args(["--", "false"])
        .assert()
        .code(1)
        .stderr("");
    assert!(
        std::fs::read_to_string(&target)
            .unwrap()
            .contains("retry: attempt 1/1 failed")
    );
    retry()
        .args(["-n", "1", "--log-file"])
        .arg(&stderr_link)
        .args(["--", "false"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("retry: attempt 1/1 failed"));
}

#[test]
fn a_file_path_ending_in_a_dot_names_a_directory() {
    let dir = scratch();
    let file = dir.path().join("file");
    std::fs::write(&file, "mine\n").unwrap();
    let dotted = dir.path().join("file/.");
    let out = retry()
        .args(["-n", "1", "--log-file"])
        .arg(&dotted)
        .args(["--", "false"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Before: "file/." was taken for "file" and the log appended to it;
    // open(2) says that a file is no directory.
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(stderr.contains("Not a directory"), "{stderr}");
    // Refused before anything runs, as -o below (it was found only after
    // the run, and the job's 3 was retry's status).
    let out = with_metrics(&dotted, 3);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "--metrics-file {}: not a file name",
            dotted.display()
        )),
        "{stderr}"
    );
    // -o took it for "file" too (before d596c22 as well).
    retry()
        .arg("-o")
        .arg(&dotted)
        .args(["--", "echo", "new"])
        .assert()
        .code(125)
        .stderr(predicate::str::contains("not a file name"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine\n");
}

#[test]
fn a_log_file_another_user_made_in_a_sticky_directory_is_not_written() {
    if skip_unless_root("a_log_file_another_user_made_in_a_sticky_directory_is_not_written") {
        return;
    }
    let dir = scratch();
    let shared = sticky_dir(dir.path(), "shared");
    // Made before the job's first run by another user, who can read it.
    let log = shared.join("cron.log");
    std::fs::write(&log, "").unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o666)).unwrap();
    give_to_nobody(&log);
    // Before: root's messages, the command lines under -v among them, were
    // appended to it (fs.protected_regular=0, as here; the kernel's rule
    // refuses that O_CREAT open where it is on).
    let stderr = refused_log_file(dir.path(), &["-v"], &log);
    assert!(
        stderr.contains(&format!("--log-file {}", log.display()))
            && stderr.contains("a file owned by another user (uid 65534)"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "");

    // The kernel's rule: another user's file in a directory that is not
    // sticky and shared is appended to, as is ours in the shared one.
    let private = dir.path().join("private.log");
    std::fs::write(&private, "").unwrap();
    give_to_nobody(&private);
    let ours = shared.join("ours.log");
    for path in [&private, &ours] {
        retry()
            .args(["-n", "1", "--log-file"])
            .arg(path)
            .args(["--", "false"])
            .assert()
            .code(1)
            .stderr("");
        assert!(
            std::fs::read_to_string(path)
                .unwrap()
                .contains("retry: attempt 1/1 failed")
        );
    }
}

#[test]
fn a_metrics_file_where_the_file_system_makes_no_files_is_refused_up_front() {
    // /proc has no O_TMPFILE: the probe falls back to a named file (removed
    // at once), which /proc refuses as it would refuse the metrics.
    let dir = scratch();
    let marker = dir.path().join("ran");
    let out = retry()
        .args([
            "-q",
            "-n",
            "1",
            "--metrics-file",
            "/proc/retry-test.prom",
            "--",
            "touch",
        ])
        .arg(&marker)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(!marker.exists(), "the command ran: {stderr}");
    assert!(
        stderr.starts_with(
            "retry: error: --metrics-file /proc/retry-test.prom: cannot create a file in /proc: "
        ),
        "{stderr}"
    );
    // A file system with O_TMPFILE leaves no probe behind either.
    let prom = dir.path().join("job.prom");
    retry()
        .args(["-q", "-n", "1", "--metrics-file"])
        .arg(&prom)
        .args(["--", "true"])
        .assert()
        .success();
    assert_eq!(listing(dir.path()), ["job.prom"]);
}

#[test]
fn a_metrics_file_that_cannot_be_created_is_refused_before_anything_runs() {
    let dir = scratch();
    let marker = dir.path().join("ran");
    let missing = dir.path().join("no-such-dir").join("backup.prom");
    let out = retry()
        .args(["-q", "-n", "1", "--name", "backup", "--metrics-file"])
        .arg(&missing)
        .args(["--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Before: found only after the run, and the job's 0 was retry's status.
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(!marker.exists(), "the command ran: {stderr}");
    assert_eq!(
        stderr,
        format!(
            "retry: error: --metrics-file {}: cannot create a file in {}: No such file or directory (os error 2)\n",
            missing.display(),
            missing.parent().unwrap().display()
        )
    );
    assert!(!missing.parent().unwrap().exists());
}
