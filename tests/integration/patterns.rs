//! Output patterns as given on the command line or in a presets file: what
//! one run may compile in all, and how a pattern that is not text is told.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::process::{Output, Stdio};

use crate::util::*;

/// Peak RSS the worst run of huge patterns may reach (before the total
/// limit, 100 `\w{200}` patterns took 1.2 GB; after, about 100 MB).
const HUGE_RUN_KIB: u64 = 320 * 1024;

/// `retry args...` under GNU time: its output, and its peak RSS in KiB.
fn measured(args: &[OsString], env: &[(&str, &std::path::Path)]) -> (Output, u64) {
    let dir = scratch();
    let report = dir.path().join("rss");
    let mut timed = std::process::Command::new("/usr/bin/time");
    timed
        .arg("-o")
        .arg(&report)
        .args(["-f", "%M", BIN])
        .args(args)
        .stdin(Stdio::null());
    // The scrubbed environment of `retry_std`, and the test's own.
    for (key, value) in retry_std().get_envs() {
        match value {
            Some(value) => timed.env(key, value),
            None => timed.env_remove(key),
        };
    }
    for (key, value) in env {
        timed.env(key, value);
    }
    let out = timed
        .output()
        .expect("GNU time (/usr/bin/time) is needed for this test");
    let text = std::fs::read_to_string(&report).unwrap();
    let kib = text.trim().lines().last().unwrap().parse().unwrap();
    (out, kib)
}

fn words(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

#[test]
fn a_hundred_huge_patterns_are_refused_before_their_memory_is_spent() {
    let mut args = words(&["-n", "1"]);
    for i in 1..=100 {
        args.extend(words(&["--stop-on-output", &format!(r"\w{{200}}x{i}")]));
    }
    args.extend(words(&["--", "true"]));
    let (out, kib) = measured(&args, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(
        stderr.contains("'--stop-on-output <REGEX>'") && stderr.contains(r"\w{200}x"),
        "{stderr}"
    );
    assert!(stderr.contains("all the patterns of a run"), "{stderr}");
    assert!(kib < HUGE_RUN_KIB, "peak RSS {kib} KiB");
}

#[test]
fn a_presets_file_of_huge_patterns_is_refused_before_its_memory_is_spent() {
    let dir = scratch();
    let presets = dir.path().join("presets.toml");
    let mut text = String::from(
        "[preset.wide]\ndescription = \"many huge patterns\"\ncommands = [\"widetool\"]\nother_exit = \"transient\"\n",
    );
    for i in 1..=100 {
        text.push_str(&format!(
            "\n[[preset.wide.output]]\nkind = \"transient\"\npattern = '\\w{{200}}x{i}'\nmeans = \"rule {i}\"\n"
        ));
    }
    std::fs::write(&presets, text).unwrap();
    std::fs::set_permissions(&presets, std::fs::Permissions::from_mode(0o600)).unwrap();
    let tool = dir.path().join("widetool");
    std::os::unix::fs::symlink("/bin/true", &tool).unwrap();
    let mut args = words(&["-n", "1", "--"]);
    args.push(tool.into_os_string());
    let (out, kib) = measured(&args, &[("RETRY_PRESETS", &presets)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(
        stderr.contains(&presets.display().to_string()) && stderr.contains("line "),
        "{stderr}"
    );
    assert!(stderr.contains("all the patterns of a run"), "{stderr}");
    assert!(kib < HUGE_RUN_KIB, "peak RSS {kib} KiB");
}

#[test]
fn fifty_patterns_of_unicode_classes_cost_little() {
    // The README's benchmark: 50 patterns like `\w+\s+\p{L}+N$`.
    let mut args = words(&["-n", "1"]);
    for i in 1..=50 {
        args.extend(words(&[
            "--retry-on-output",
            &format!(r"\w+\s+\p{{L}}+{i}$"),
        ]));
    }
    args.extend(words(&["--", "true"]));
    let (out, kib) = measured(&args, &[]);
    assert!(out.status.success(), "{out:?}");
    assert!(kib < 64 * 1024, "peak RSS {kib} KiB");
}

#[test]
fn a_pattern_that_is_not_utf8_names_its_flag_and_how_to_match_bytes() {
    for flag in ["--retry-on-output", "--stop-on-output", "--until-output"] {
        let out = retry()
            .args(["-n", "1", flag])
            .arg(std::ffi::OsStr::from_bytes(b"ab\xff"))
            .args(["--", "true"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{stderr}");
        assert!(
            stderr.contains(&format!(
                r"invalid value 'ab\xff' for '{flag} <REGEX>': not UTF-8"
            )),
            "{stderr}"
        );
        assert!(stderr.contains(r"'ab(?-u:\xff)'"), "{stderr}");
    }
}

#[test]
fn the_suggested_form_of_a_byte_pattern_matches_that_byte() {
    let out = retry()
        .args(["-n", "3", "-d", "1ms", "--stop-on-output", r"ab(?-u:\xff)"])
        .args(["--", "sh", "-c", r"printf 'ab\377\n' >&2; exit 1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("(permanent)"), "{stderr}");
}

#[test]
fn a_thousand_patterns_match_in_little_memory_and_one_more_is_refused() {
    // Matching a line against 8 500 patterns asked for 10 GB and aborted.
    let mut args = words(&["-n", "1"]);
    for i in 1..=1000 {
        args.extend(words(&["--retry-on-output", &format!("a{i}")]));
    }
    let run = |extra: &[&str]| {
        let mut args = args.clone();
        args.extend(words(extra));
        args.extend(words(&["--", "sh", "-c", "echo a500 >&2; exit 1"]));
        measured(&args, &[])
    };
    let (out, kib) = run(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(kib < 64 * 1024, "{kib} KiB");
    let (out, _) = run(&["--retry-on-output", "a1001"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(
        stderr.contains(
            "'a1001' for '--retry-on-output <REGEX>': a run may have at most 1000 output patterns"
        ),
        "{stderr}"
    );
}

#[test]
fn a_byte_in_a_class_gets_a_suggestion_that_matches_that_byte_and_not_text() {
    // `[(?-u:\xfe\xff)]` would be a class of `(`, `?`, `-`, `u`...
    let out = retry()
        .args(["-n", "1", "--stop-on-output"])
        .arg(std::ffi::OsStr::from_bytes(b"[\xfe\xff]"))
        .args(["--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(stderr.contains(r"'(?-u)[\xfe\xff]'"), "{stderr}");
    let stops = |output: &str| {
        retry()
            .args([
                "-n",
                "3",
                "-d",
                "1ms",
                "--stop-on-output",
                r"(?-u)[\xfe\xff]",
                "--",
            ])
            .args(["sh", "-c", &format!("printf '{output}' >&2; exit 1")])
            .output()
            .unwrap()
            .stderr
            .windows(b"(permanent)".len())
            .any(|w| w == b"(permanent)")
    };
    assert!(!stops("hello\\n"));
    assert!(stops("\\376\\n"));
}
