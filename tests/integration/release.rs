//! Releasing: the licences and changelogs, what the crate ships, the install
//! script that the GitHub Action runs (against a local file server on
//! 127.0.0.1: download, verify, refuse a wrong checksum, install), and the
//! workflows and action checked with actionlint and shellcheck.
//!
//! The release build itself (`scripts/release`: two LTO builds, minutes) is
//! not run here; its scripts are checked with shellcheck, and the package it
//! makes is checked with lintian in package.rs.
//!
//! Needs curl or wget and python3 (installed by `scripts/test`), shellcheck
//! and actionlint (the same). Without them the tests that need them are
//! skipped with a message, except under `CI=true`, where they fail.

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use crate::util::*;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const VERSION: &str = env!("CARGO_PKG_VERSION");
const TARGET: &str = "x86_64-unknown-linux-musl";

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
fn tool(program: &str, why: &str) -> bool {
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
    // steps): the `run: |` block, through shellcheck as bash.
    if !tool("shellcheck", "the action's shell") {
        return;
    }
    let action = read("action.yml");
    let mut lines = action.lines().skip_while(|l| l.trim() != "run: |").skip(1);
    let indent = "        ";
    let body: Vec<&str> = lines
        .by_ref()
        .take_while(|l| l.is_empty() || l.starts_with(indent))
        .map(|l| l.strip_prefix(indent).unwrap_or(l))
        .collect();
    assert!(body.len() > 5, "no run block in action.yml");
    assert!(body.join("\n").contains("scripts/install"));
    let mut check = Command::new("shellcheck")
        .args(["--shell=bash", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(check.stdin.as_mut().unwrap(), body.join("\n").as_bytes()).unwrap();
    drop(check.stdin.take());
    let out = check.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stdout));
}

/// `python3 -m http.server` on 127.0.0.1 and a free port, serving `dir`;
/// stopped when dropped.
struct FileServer {
    child: Child,
    port: u16,
}

impl FileServer {
    fn start(dir: &Path) -> FileServer {
        // Port 0: the kernel picks a free one, and the server says which.
        let mut child = Command::new("python3")
            .args(["-u", "-m", "http.server", "0", "--bind", "127.0.0.1"])
            .arg("--directory")
            .arg(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 is needed for the file server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // "Serving HTTP on 127.0.0.1 port 41234 (http://127.0.0.1:41234/) ..."
        let port = line
            .split_whitespace()
            .skip_while(|w| *w != "port")
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        FileServer { child, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A release laid out as GitHub's `releases/download`: `v{VERSION}/` with
/// the tarball (this test build's binary in it) and SHA256SUMS, whose line
/// for the tarball is `sums` applied to the real one.
fn release_dir(dir: &Path, sums: impl Fn(&str, &str) -> String) -> PathBuf {
    let name = format!("retry-{VERSION}-{TARGET}");
    let staging = dir.join("staging").join(&name);
    fs::create_dir_all(&staging).unwrap();
    fs::copy(BIN, staging.join("retry")).unwrap();
    fs::copy(root("README.md"), staging.join("README.md")).unwrap();
    let served = dir.join("www").join(format!("v{VERSION}"));
    fs::create_dir_all(&served).unwrap();
    let tarball = format!("{name}.tar.gz");
    let status = Command::new("tar")
        .arg("-czf")
        .arg(served.join(&tarball))
        .arg("-C")
        .arg(dir.join("staging"))
        .arg(&name)
        .status()
        .unwrap();
    assert!(status.success());
    let hash = Command::new("sha256sum")
        .arg(served.join(&tarball))
        .output()
        .unwrap();
    let hash = text(&hash.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    fs::write(served.join("SHA256SUMS"), sums(&hash, &tarball)).unwrap();
    dir.join("www")
}

fn install(server: &FileServer, version: &str, into: &Path) -> Output {
    Command::new(root("scripts/install"))
        .args(["--base-url", &server.url(), "--version", version])
        .args(["--target", TARGET])
        .arg("--dir")
        .arg(into)
        .env_remove("CI")
        .output()
        .unwrap()
}

fn entries(dir: &Path) -> Vec<String> {
    fs::read_dir(dir).map_or_else(
        |_| Vec::new(),
        |d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        },
    )
}

fn can_download() -> bool {
    tool("python3", "the install script (its file server)")
        && (tool("curl", "the install script") || tool("wget", "the install script"))
}

#[test]
fn the_install_script_downloads_verifies_and_installs_a_release() {
    if !can_download() {
        return;
    }
    let dir = scratch();
    let www = release_dir(dir.path(), |hash, file| {
        format!("0000  some-other-file.deb\n{hash}  {file}\n")
    });
    let server = FileServer::start(&www);
    let into = dir.path().join("bin");
    let out = install(&server, &format!("v{VERSION}"), &into);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let installed = into.join("retry");
    assert_eq!(
        text(&out.stdout).lines().last(),
        Some(installed.to_str().unwrap())
    );
    assert!(
        text(&out.stderr).contains("checksum OK"),
        "{}",
        text(&out.stderr)
    );
    let mode = fs::metadata(&installed).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755);
    assert_eq!(entries(&into), ["retry"]);
    let version = Command::new(&installed).arg("--version").output().unwrap();
    assert_eq!(text(&version.stdout).trim(), format!("retry {VERSION}"));

    // Again over an existing install: replaced in place.
    let again = install(&server, VERSION, &into);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(entries(&into), ["retry"]);
}

#[test]
fn the_install_script_refuses_a_tarball_whose_checksum_is_wrong() {
    if !can_download() {
        return;
    }
    let dir = scratch();
    let www = release_dir(dir.path(), |hash, file| {
        // The right length, one digit changed.
        let wrong = if hash.starts_with('0') { "1" } else { "0" };
        format!("{wrong}{}  {file}\n", &hash[1..])
    });
    let server = FileServer::start(&www);
    let into = dir.path().join("bin");
    let out = install(&server, VERSION, &into);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("checksum mismatch") && stderr.contains("nothing installed"),
        "{stderr}"
    );
    assert!(text(&out.stdout).is_empty());
    assert!(entries(&into).is_empty(), "{:?}", entries(&into));
}

#[test]
fn the_install_script_refuses_a_tarball_sha256sums_does_not_list() {
    if !can_download() {
        return;
    }
    let dir = scratch();
    let www = release_dir(dir.path(), |hash, _| {
        format!("{hash}  retry-{VERSION}-riscv64gc-unknown-linux-musl.tar.gz\n")
    });
    let server = FileServer::start(&www);
    let into = dir.path().join("bin");
    let out = install(&server, VERSION, &into);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("not listed in SHA256SUMS"), "{stderr}");
    assert!(entries(&into).is_empty());
}

#[test]
fn the_install_script_says_so_when_a_release_is_not_there() {
    if !can_download() {
        return;
    }
    let dir = scratch();
    let www = release_dir(dir.path(), |hash, file| format!("{hash}  {file}\n"));
    let server = FileServer::start(&www);
    let into = dir.path().join("bin");
    let out = install(&server, "9.9.9", &into);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("could not download") && stderr.contains("/v9.9.9/SHA256SUMS"),
        "{stderr}"
    );
    assert!(entries(&into).is_empty());

    // And a machine with no prebuilt binary is sent to cargo install.
    let out = Command::new(root("scripts/install"))
        .args(["--base-url", &server.url(), "--version", VERSION])
        .args(["--dir", "/nonexistent"])
        .env("PATH", fake_uname(dir.path()))
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no prebuilt retry for Darwin/arm64")
            && stderr.contains("cargo install retry-runner"),
        "{stderr}"
    );
}

/// A PATH whose `uname` says macOS on Apple silicon, before the real PATH.
fn fake_uname(dir: &Path) -> String {
    let bin = dir.join("fake-bin");
    fs::create_dir_all(&bin).unwrap();
    script(
        &bin,
        "uname",
        "#!/bin/sh\ncase \"$1\" in -s) echo Darwin ;; -m) echo arm64 ;; esac\n",
    );
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}
