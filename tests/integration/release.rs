//! Releasing: the licences and changelogs, what the crate ships, and the
//! workflows and action checked with actionlint and shellcheck (the install
//! script that the GitHub Action runs is tested in install.rs).
//!
//! The release build itself (`scripts/release`: two LTO builds, minutes) is
//! not run here; its scripts are checked with shellcheck, and the package it
//! makes is checked with lintian in package.rs.
//!
//! Needs shellcheck and actionlint (installed by `scripts/test`). Without
//! them the tests that need them are skipped with a message, except under
//! `CI=true`, where they fail.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util::*;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const VERSION: &str = env!("CARGO_PKG_VERSION");

fn root(path: &str) -> PathBuf {
    Path::new(ROOT).join(path)
}

fn read(path: &str) -> String {
    fs::read_to_string(root(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Is `program` runnable? If not: a failure under CI, else a skip message.
pub(crate) fn tool(program: &str, why: &str) -> bool {
    if Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    {
        return true;
    }
    let message = format!("{program} is needed to check {why} (scripts/test installs it)");
    assert!(!std::env::var("CI").is_ok_and(|v| v == "true"), "{message}");
    eprintln!("\n*** SKIPPED: {message} ***\n");
    false
}

#[test]
fn the_licences_are_the_full_texts_cargo_toml_names() {
    assert_eq!(env!("CARGO_PKG_LICENSE"), "MIT OR Apache-2.0");
    let mit = read("LICENSE-MIT");
    for words in [
        "Copyright (c) 2026 the retry authors",
        "Permission is hereby granted, free of charge",
        "THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND",
    ] {
        assert!(mit.contains(words), "LICENSE-MIT lacks {words:?}");
    }
    let apache = read("LICENSE-APACHE");
    for words in [
        "Apache License",
        "Version 2.0, January 2004",
        "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION",
        "9. Accepting Warranty or Additional Liability.",
        "END OF TERMS AND CONDITIONS",
        "APPENDIX: How to apply the Apache License to your work.",
    ] {
        assert!(apache.contains(words), "LICENSE-APACHE lacks {words:?}");
    }
    assert!(apache.len() > 11_000, "LICENSE-APACHE is not the full text");
}

#[test]
fn the_changelogs_have_this_version() {
    let changelog = read("CHANGELOG.md");
    assert!(
        changelog.starts_with("# Changelog\n"),
        "not Keep a Changelog"
    );
    assert!(changelog.contains("keepachangelog.com"));
    let headings: Vec<&str> = changelog.lines().filter(|l| l.starts_with("## ")).collect();
    assert_eq!(headings.first(), Some(&"## [Unreleased]"), "{headings:?}");
    let this = headings
        .iter()
        .find(|h| h.starts_with(&format!("## [{VERSION}] - ")))
        .unwrap_or_else(|| panic!("no entry for {VERSION}: {headings:?}"));
    let date = this.rsplit(' ').next().unwrap();
    assert!(
        date.len() == 10 && date.as_bytes()[4] == b'-' && date.as_bytes()[7] == b'-',
        "{this}"
    );

    // The Debian changelog: its newest entry is this version, revision 1.
    let debian = read("debian/changelog");
    let first = debian.lines().next().unwrap();
    assert!(
        first.starts_with(&format!("retry-rs ({VERSION}-1) ")) && first.contains("urgency="),
        "{first}"
    );
    let trailer = debian.lines().find(|l| l.starts_with(" -- ")).unwrap();
    assert!(
        trailer.contains('<') && trailer.contains(">  "),
        "{trailer}"
    );
}

#[test]
fn the_command_is_retry_whatever_the_crate_is_called() {
    assert_eq!(env!("CARGO_PKG_NAME"), "retry-runner");
    let out = retry().arg("--version").output().unwrap();
    assert!(out.status.success());
    assert_eq!(text(&out.stdout).trim(), format!("retry {VERSION}"));
}

#[test]
fn the_crate_ships_what_it_needs_and_not_the_release_machinery() {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["package", "--list", "--allow-dirty", "--offline"])
        .current_dir(ROOT)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    let files: Vec<&str> = listed.lines().collect();
    for needed in [
        "Cargo.toml",
        "Cargo.lock",
        "src/main.rs",
        "src/lib.rs",
        "presets/http.toml",
        "man/retry.1",
        "completions/retry.bash",
        "tests/integration/main.rs",
        "benches/contention/main.rs",
        "README.md",
        "CHANGELOG.md",
        "LICENSE-MIT",
        "LICENSE-APACHE",
    ] {
        assert!(files.contains(&needed), "the crate lacks {needed}");
    }
    for file in &files {
        assert!(
            !["scripts/", ".github/", ".ci/", "debian/", "target/"]
                .iter()
                .any(|dir| file.starts_with(dir))
                && *file != "BENCHMARKS.md"
                && *file != "action.yml",
            "the crate ships {file}"
        );
    }
}

#[test]
fn the_release_scripts_pass_shellcheck() {
    if !tool("shellcheck", "the release scripts") {
        return;
    }
    let out = Command::new("shellcheck")
        .args([
            "scripts/release",
            "scripts/install",
            "scripts/package",
            "scripts/test",
            "scripts/stress-tests",
            "scripts/windows-env",
            "scripts/cross-check",
        ])
        .current_dir(ROOT)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stdout));
}

#[test]
fn the_workflows_and_the_action_pass_actionlint() {
    if !tool("actionlint", "the GitHub workflows and action.yml") {
        return;
    }
    // actionlint checks every workflow; it reads action.yml where a workflow
    // uses it (`uses: ./`, in the release workflow), checking its metadata
    // and the inputs given to it. Shell in `run:` goes through shellcheck
    // when that is on PATH.
    assert!(read(".github/workflows/release.yml").contains("uses: ./\n"));
    let out = Command::new("actionlint")
        .arg("-no-color")
        .current_dir(ROOT)
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "actionlint:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );

    // The action's own shell (actionlint does not read a composite action's
    // steps): each `run: |` block (Linux's, Windows'), through shellcheck as
    // bash.
    if !tool("shellcheck", "the action's shell") {
        return;
    }
    let action = read("action.yml");
    let indent = "        ";
    let mut blocks = Vec::new();
    let mut lines = action.lines();
    while lines.by_ref().any(|l| l.trim() == "run: |") {
        let body: Vec<&str> = lines
            .clone()
            .take_while(|l| l.is_empty() || l.starts_with(indent))
            .map(|l| l.strip_prefix(indent).unwrap_or(l))
            .collect();
        blocks.push(body.join("\n"));
    }
    assert_eq!(blocks.len(), 2, "a run block for Linux and one for Windows");
    assert!(blocks[0].contains("scripts/install"));
    assert!(blocks[1].contains("x86_64-pc-windows-gnu"));
    for body in blocks {
        assert!(body.lines().count() > 5, "no run block in action.yml");
        let mut check = Command::new("shellcheck")
            .args(["--shell=bash", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(check.stdin.as_mut().unwrap(), body.as_bytes()).unwrap();
        drop(check.stdin.take());
        let out = check.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stdout));
    }
}
