//! Shipping and seeing it: generated files, the man page, metrics, the
//! nested-retry warning.

use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;

use predicates::prelude::*;

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
