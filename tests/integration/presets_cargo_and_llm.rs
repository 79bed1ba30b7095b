//! The cargo and LLM-client presets end to end: real cargo against a
//! sparse registry on 127.0.0.1 that answers 503, then 429; stand-ins for
//! the LLM clients (none is installed for tests) that print what their APIs
//! answer when overloaded or given a bad key.

use std::path::Path;
use std::sync::atomic::Ordering;

use crate::presets::*;
use crate::util::*;

/// A crate depending on serde in `dir`, and a cargo home `dir/cargo-home`
/// (read whatever the working directory) whose registry is the sparse
/// index on `port`.
fn cargo_project(dir: &Path, port: u16) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join("cargo-home")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nserde = \"1\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(
        dir.join("cargo-home/config.toml"),
        format!(
            "[source.crates-io]\nreplace-with = \"local\"\n\n[source.local]\nregistry = \"sparse+http://127.0.0.1:{port}/\"\n"
        ),
    )
    .unwrap();
}

#[test]
fn cargo_retries_a_503_from_the_registry_and_calls_a_429_throttled() {
    if !have("cargo") {
        return;
    }
    let dir = scratch();
    let (port, served) = http_server(vec!["503 Service Unavailable", "429 Too Many Requests"]);
    cargo_project(dir.path(), port);
    let home = dir.path().join("cargo-home");
    let manifest = dir.path().join("Cargo.toml");
    let (out, events) = json(
        &[("CARGO_HOME", &home)],
        &[
            "-n",
            "2",
            "-d",
            "1ms",
            "--",
            "env",
            "CARGO_NET_RETRY=0",
            "cargo",
            "fetch",
            "--manifest-path",
            manifest.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(101), "{events:?}");
    let tried = attempts(&events);
    assert_eq!(tried.len(), 2, "{events:?}");
    assert_eq!(tried[0]["outcome"], "transient");
    assert_eq!(
        tried[0]["reason"],
        "exit 101; the registry answered HTTP 503 (preset cargo, chosen from the command name)"
    );
    assert_eq!(tried[1]["outcome"], "throttled");
    assert_eq!(
        tried[1]["reason"],
        "exit 101; the registry answered HTTP 429 (rate limited) (preset cargo)"
    );
    assert_eq!(served.load(Ordering::SeqCst), 2);
}

/// An LLM client stand-in: the n-th run (from 1) prints line n of `lines`
/// (the last one repeats) and exits 1, or exits 0 on the word `ok`.
fn llm_client(dir: &Path, name: &str, lines: &[&str]) -> String {
    let mut body = String::from(
        "#!/bin/sh\nn=$(cat \"$0.count\" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > \"$0.count\"\n",
    );
    for (index, line) in lines.iter().enumerate() {
        let test = if index + 1 == lines.len() {
            "true".to_string()
        } else {
            format!("[ $n -eq {} ]", index + 1)
        };
        let action = if *line == "ok" {
            "echo done; exit 0".to_string()
        } else {
            format!("printf '%s\\n' '{line}' >&2; exit 1")
        };
        body.push_str(&format!("if {test}; then {action}; fi\n"));
    }
    script(dir, name, &body).to_str().unwrap().to_string()
}

#[test]
fn an_overloaded_llm_api_is_throttled_and_a_bad_key_stops_at_once() {
    let dir = scratch();
    let claude = llm_client(
        dir.path(),
        "claude",
        &[
            r#"API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            "ok",
        ],
    );
    let (out, events) = json(&[], &["-d", "1ms", "--", &claude, "-p", "hello"]);
    assert!(out.status.success(), "{events:?}");
    let tried = attempts(&events);
    assert_eq!(tried.len(), 2, "{events:?}");
    assert_eq!(tried[0]["outcome"], "throttled");
    assert_eq!(
        tried[0]["reason"],
        "exit 1; the API is rate-limiting requests or overloaded (preset llm, chosen from the command name)"
    );

    let llm = llm_client(
        dir.path(),
        "llm",
        &[
            "Error: Error code: 401 - {'error': {'message': 'Incorrect API key provided: sk-x.', 'type': 'invalid_request_error', 'code': 'invalid_api_key'}}",
        ],
    );
    let (out, events) = json(&[], &["-d", "1ms", "--", &llm, "hello"]);
    assert_eq!(out.status.code(), Some(1));
    let tried = attempts(&events);
    assert_eq!(tried.len(), 1, "{events:?}");
    assert_eq!(tried[0]["outcome"], "permanent");
    assert_eq!(
        tried[0]["reason"],
        "exit 1; the API key is missing or invalid (preset llm, chosen from the command name)"
    );
}
