//! Releasing: the licences and changelogs, what the crate ships, and the
//! workflows and action checked with actionlint and shellcheck, the action's
//! choice of release (its tag, or its `version` input when pinned by commit)
//! run with a stand-in installer (the install script that the GitHub Action
//! runs is tested in install.rs).
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
    // One heading per kind under each version (Added, Changed, ...).
    let mut kinds = Vec::new();
    for line in changelog.lines() {
        if line.starts_with("## ") {
            kinds.clear();
        } else if let Some(kind) = line.strip_prefix("### ") {
            assert!(
                !kinds.contains(&kind),
                "two \"### {kind}\" under one version"
            );
            kinds.push(kind);
        }
    }
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
    for body in action_run_blocks() {
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

/// The shell of action.yml's steps (their `run: |` blocks), unindented:
/// Linux's, then Windows'.
fn action_run_blocks() -> Vec<String> {
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
        assert!(body.len() > 5, "an empty run block in action.yml");
        blocks.push(body.join("\n"));
    }
    assert_eq!(blocks.len(), 2, "a run block for Linux and one for Windows");
    assert!(blocks[0].contains("scripts/install"));
    assert!(blocks[1].contains("x86_64-pc-windows-gnu"));
    blocks
}

/// The Linux step's shell.
fn action_run_block() -> String {
    action_run_blocks().swap_remove(0)
}

/// The action's step run by bash as the runner would run it, used at `git_ref`
/// with the input `version`, its scripts/install a stand-in that records its
/// arguments: (exit code, stdout, stderr, the installer's arguments).
fn action_at(git_ref: &str, version: &str) -> (Option<i32>, String, String, String) {
    let dir = scratch();
    let action = dir.path().join("action");
    fs::create_dir_all(action.join("scripts")).unwrap();
    let called = dir.path().join("called");
    script(
        &action.join("scripts"),
        "install",
        &format!(
            "#!/bin/sh\necho \"$@\" > '{}'\nwhile [ $# -gt 0 ]; do [ \"$1\" = --dir ] && d=$2; shift; done\nmkdir -p \"$d\"\nprintf '#!/bin/sh\\necho retry {VERSION}\\n' > \"$d/retry\"\nchmod +x \"$d/retry\"\necho \"$d/retry\"\n",
            called.display()
        ),
    );
    for file in ["github_path", "github_output"] {
        fs::write(dir.path().join(file), "").unwrap();
    }
    let out = Command::new("bash")
        .arg("-c")
        .arg(action_run_block())
        .env("GITHUB_ACTION_PATH", &action)
        .env("GITHUB_PATH", dir.path().join("github_path"))
        .env("GITHUB_OUTPUT", dir.path().join("github_output"))
        .env("RETRY_INSTALL_VERSION", version)
        .env("RETRY_INSTALL_REF", git_ref)
        .env("RETRY_INSTALL_REPOSITORY", "retry-runner/retry")
        .env("RETRY_INSTALL_BASE_URL", "")
        .env("RETRY_INSTALL_DIR", dir.path().join("bin"))
        .output()
        .unwrap();
    let args = fs::read_to_string(&called).unwrap_or_default();
    if out.status.success() {
        let outputs = fs::read_to_string(dir.path().join("github_output")).unwrap();
        assert!(
            outputs.contains(&format!("version=retry {VERSION}")),
            "{outputs}"
        );
    }
    (
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr),
        args.trim().to_string(),
    )
}

#[test]
fn the_action_installs_the_release_its_tag_or_its_version_input_names() {
    let commit = "0123456789abcdef0123456789abcdef01234567";
    // At a release tag: that release.
    let (code, _, stderr, args) = action_at("v0.1.0", "");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(args.starts_with("--version v0.1.0 "), "{args}");
    assert!(args.contains("--repo retry-runner/retry"), "{args}");
    // Pinned by commit, with the release given: that release.
    let (code, _, stderr, args) = action_at(commit, "0.1.0");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(args.starts_with("--version 0.1.0 "), "{args}");
    // Pinned by commit without one: a clear failure, nothing installed.
    let (code, stdout, _, args) = action_at(commit, "");
    assert_eq!(code, Some(1));
    assert!(
        stdout.contains("::error") && stdout.contains(commit) && stdout.contains("version: X.Y.Z"),
        "{stdout}"
    );
    assert!(args.is_empty(), "the installer ran: {args}");
    // At a branch: the latest release.
    let (code, _, stderr, args) = action_at("main", "");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(args.starts_with("--version latest "), "{args}");
}

/// `[package.metadata.binstall]`'s template `key` (of the override for
/// `target`, if there is one) rendered for `target`, as cargo-binstall
/// renders it.
fn binstall(key: &str, target: &str) -> String {
    let manifest: toml::Table = toml::from_str(&read("Cargo.toml")).unwrap();
    let meta = &manifest["package"]["metadata"]["binstall"];
    let template = meta
        .get("overrides")
        .and_then(|o| o.get(target))
        .and_then(|o| o.get(key))
        .or_else(|| meta.get(key))
        .and_then(|v| v.as_str())
        .unwrap_or_else(|| panic!("no {key} in [package.metadata.binstall]"));
    template
        .replace(
            "{ repo }",
            manifest["package"]["repository"].as_str().unwrap(),
        )
        .replace("{ version }", VERSION)
        .replace("{ target }", target)
        .replace("{ bin }", "retry")
        .replace("{ binary-ext }", "")
}

/// The HTTPS server for cargo-binstall: `srv/` of its directory, on a free
/// port it prints, with the certificate of `server.pem`.
const SERVE: &str = r#"
import functools, http.server, ssl, sys
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory="srv"))
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain("server.pem", "server.key")
server.socket = context.wrap_socket(server.socket, server_side=True)
server.handle_error = lambda *args: None  # a client that stops reading (binstall's probe)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

#[test]
fn the_binstall_metadata_names_the_release_tarballs_and_cargo_binstall_installs_one() {
    // The names scripts/release gives: retry-VERSION-TARGET.tar.gz, holding
    // retry-VERSION-TARGET/retry; for the glibc targets, the musl build.
    let release = read("scripts/release");
    assert!(release.contains(r#"name="retry-$version-$target""#));
    assert!(release.contains(r#"install -m 755 "$bin" "$dir/retry""#));
    assert!(release.contains(r#"> "$out/$name.tar.gz""#));
    let manifest: toml::Table = toml::from_str(&read("Cargo.toml")).unwrap();
    let meta = &manifest["package"]["metadata"]["binstall"];
    assert_eq!(meta["pkg-fmt"].as_str(), Some("tgz"));
    assert_eq!(
        meta["disabled-strategies"].as_array().map(Vec::len),
        Some(1),
        "only quick-install (a third party's builds) is disabled"
    );
    for (target, built) in [
        ("x86_64-unknown-linux-musl", "x86_64-unknown-linux-musl"),
        ("aarch64-unknown-linux-musl", "aarch64-unknown-linux-musl"),
        ("x86_64-unknown-linux-gnu", "x86_64-unknown-linux-musl"),
        ("aarch64-unknown-linux-gnu", "aarch64-unknown-linux-musl"),
    ] {
        let name = format!("retry-{VERSION}-{built}");
        assert_eq!(
            binstall("pkg-url", target),
            format!(
                "https://github.com/retry-runner/retry/releases/download/v{VERSION}/{name}.tar.gz"
            ),
            "{target}"
        );
        assert_eq!(
            binstall("bin-dir", target),
            format!("{name}/retry"),
            "{target}"
        );
    }

    // cargo-binstall itself, against a local HTTPS server (it refuses plain
    // HTTP) serving a release tarball made as scripts/release makes it, for
    // a musl and a glibc target. Not installed by scripts/test (a long
    // compile: `cargo install cargo-binstall --version 1.15.0 --locked`):
    // skipped without it, also under CI.
    let have = |program: &str, arg: &str| {
        Command::new(program)
            .arg(arg)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !(have("cargo-binstall", "-V") && have("openssl", "version") && have("python3", "--version"))
    {
        eprintln!(
            "\n*** SKIPPED: cargo-binstall, openssl and python3 are needed to install from the metadata \
             (cargo install cargo-binstall --version 1.15.0 --locked) ***\n"
        );
        return;
    }
    let dir = scratch();
    let work = dir.path();
    let sh = |script: &str| {
        let out = Command::new("bash")
            .args(["-euo", "pipefail", "-c", script])
            .current_dir(work)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{script}\n{}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    };
    // The tarball, as scripts/release packs it.
    let name = format!("retry-{VERSION}-x86_64-unknown-linux-musl");
    let served = format!("srv/retry-runner/retry/releases/download/v{VERSION}");
    sh(&format!(
        "mkdir -p staging/{name}/man staging/{name}/completions {served} crate bin
         strip -o staging/{name}/retry '{BIN}'
         cp '{ROOT}'/man/retry.1 staging/{name}/man/
         cp '{ROOT}'/completions/* staging/{name}/completions/
         cp '{ROOT}'/LICENSE-MIT '{ROOT}'/LICENSE-APACHE '{ROOT}'/README.md '{ROOT}'/CHANGELOG.md staging/{name}/
         tar --sort=name --owner=0 --group=0 --numeric-owner --format=gnu -C staging -cf - {name} | gzip -n > {served}/{name}.tar.gz"
    ));
    // A CA and a certificate for 127.0.0.1, and the server.
    sh("openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj '/CN=retry test CA' \
            -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1 2>/dev/null
        printf 'subjectAltName=IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\nextendedKeyUsage=serverAuth\\n' > ext.cnf
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 \
            -extfile ext.cnf 2>/dev/null");
    let mut https = Command::new("python3")
        .args(["-c", SERVE])
        .current_dir(work)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut port = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(https.stdout.take().unwrap()),
        &mut port,
    )
    .unwrap();
    assert!(!port.trim().is_empty(), "the HTTPS server did not start");
    // The crate's own manifest, its repository on the local server.
    let manifest = read("Cargo.toml").replace(
        "repository = \"https://github.com/retry-runner/retry\"",
        &format!(
            "repository = \"https://127.0.0.1:{}/retry-runner/retry\"",
            port.trim()
        ),
    );
    fs::write(work.join("crate/Cargo.toml"), manifest).unwrap();
    let mut results = Vec::new();
    for target in ["x86_64-unknown-linux-musl", "x86_64-unknown-linux-gnu"] {
        let _ = fs::remove_file(work.join("bin/retry"));
        let out = Command::new("cargo-binstall")
            .args([
                "binstall",
                "--manifest-path",
                "crate",
                "--no-confirm",
                "--no-track",
            ])
            .args([
                "--install-path",
                "bin",
                "--targets",
                target,
                "--root-certificates",
                "ca.pem",
            ])
            .args(["--disable-strategies", "compile", "--disable-telemetry"])
            .args(["--no-discover-github-token", "retry-runner"])
            .current_dir(work)
            .env_remove("GITHUB_TOKEN")
            .env_remove("GH_TOKEN")
            .output()
            .unwrap();
        let version = Command::new(work.join("bin/retry"))
            .arg("--version")
            .output();
        results.push((target, out, version));
    }
    let _ = https.kill();
    let _ = https.wait();
    for (target, out, version) in results {
        assert!(
            out.status.success(),
            "cargo binstall for {target}:\n{}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        let version = version.unwrap_or_else(|e| panic!("{target}: no bin/retry: {e}"));
        assert_eq!(
            text(&version.stdout).trim(),
            format!("retry {VERSION}"),
            "{target}"
        );
    }
}
