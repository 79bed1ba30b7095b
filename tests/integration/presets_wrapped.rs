//! Wrapped commands choose the preset of the command they run (issue 25,
//! item 15), and curl's advice follows the rules in force (item 16): real
//! curl, git and pip behind real `env`, `nice`, `timeout`, `stdbuf` and
//! `python3 -m`, and a stand-in `sudo` (none is installed for tests)
//! that runs its command as sudo does.

use std::sync::atomic::Ordering;

use predicates::prelude::*;

use crate::presets::*;
use crate::util::*;

#[test]
fn wrapped_curl_and_git_get_their_presets_and_verbose_says_through_what() {
    assert!(curl_available(), "curl is needed for this test");
    let dir = scratch();
    let sudo = script(
        dir.path(),
        "sudo",
        "#!/bin/sh\nwhile case \"$1\" in -u) shift 2 ;; -*) shift ;; *) false ;; esac; do :; done\nexec \"$@\"\n",
    );
    let sudo = sudo.to_str().unwrap();
    // A 404 stops at once whatever wraps curl; before, no preset applied
    // and every attempt ran.
    for wrapper in [
        &["timeout", "30"][..],
        &["env", "A=1"],
        &["nice", "-n", "5"],
        &["stdbuf", "-oL"],
        &[sudo, "-u", "root", "-E"],
        &[sudo, "env", "A=1", "timeout", "-k", "5", "30"],
    ] {
        // timeout and stdbuf are GNU coreutils: not on every system.
        let tools = ["timeout", "stdbuf", "nice", "env"];
        if let Some(tool) = wrapper.iter().find(|w| tools.contains(w) && !on_path(w)) {
            eprintln!("{tool} is not installed here: skipping {wrapper:?}");
            continue;
        }
        let (port, served) = http_server(vec!["404 Not Found"]);
        let url = format!("http://127.0.0.1:{port}/");
        let mut args = vec!["-n", "3", "-d", "1ms", "--"];
        args.extend(wrapper);
        args.extend(["curl", "-fsS", &url]);
        let (out, events) = json(&[], &args);
        assert_eq!(out.status.code(), Some(22), "{wrapper:?}");
        let tried = attempts(&events);
        assert_eq!(tried.len(), 1, "{wrapper:?}: {events:?}");
        assert_eq!(
            tried[0]["reason"],
            "exit 22; curl reported HTTP 404, which a second try would get again (preset curl, chosen from the command name)",
            "{wrapper:?}"
        );
        assert_eq!(served.load(Ordering::SeqCst), 1);
    }
    // -v and --explain name the command and the wrappers.
    let (port, _) = http_server(vec!["200 OK"]);
    let url = format!("http://127.0.0.1:{port}/");
    retry()
        .args(["-v", "--", sudo, "nice", "-n", "1", "curl", "-fsS", &url])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "retry: preset curl from built-in (presets/http.toml), chosen from the command curl, run by sudo, run by nice (--preset none turns it off)",
        ));
    retry()
        .args(["--explain", "--", "nice", "git", "pull"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "preset git from built-in (presets/vcs.toml), chosen from the command git, run by nice (--preset none turns it off):",
        ));
    // A git daemon behind nice: transient.
    if have("git") {
        let url = format!("git://127.0.0.1:{}/r.git", closed_port());
        let (out, events) = json(
            &[],
            &[
                "-n",
                "2",
                "-d",
                "1ms",
                "--",
                "nice",
                "git",
                "ls-remote",
                &url,
            ],
        );
        assert_eq!(out.status.code(), Some(128));
        assert_eq!(attempts(&events).len(), 2, "{events:?}");
        assert_eq!(attempts(&events)[0]["outcome"], "transient");
    }
}

#[test]
fn a_wrapped_command_without_a_preset_says_why_none() {
    retry()
        .args(["-v", "-n", "1", "--", "env", "A=1", "true"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "retry: no preset: the command is true, run by env, and no preset claims it",
        ));
    retry()
        .args(["--explain", "--", "env", "-S", "curl -fsS http://x"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "no preset: env -S hides the command in a string, so the command env runs is not known (--preset NAME names one)",
        ));
    // A plain command without a preset says nothing of the kind.
    retry()
        .args(["-v", "-n", "1", "--", "true"])
        .assert()
        .success()
        .stderr(predicate::str::contains("no preset").not());
}

#[test]
fn python_m_pip_and_a_versioned_pip_get_the_pip_preset() {
    if pip_command().is_none() {
        return;
    }
    let dir = scratch();
    let wheel = demo_wheel(dir.path());
    // pip3.11 (any versioned name): a stand-in that runs this pip.
    let versioned = script(
        dir.path(),
        "pip3.11",
        "#!/bin/sh\nexec python3 -m pip \"$@\"\n",
    );
    for pip in ["python3 -m pip", versioned.to_str().unwrap()] {
        let (port, served) = pip_index(
            wheel.clone(),
            |_| "200 OK",
            |n| {
                if n < 1 {
                    "503 Service Unavailable"
                } else {
                    "200 OK"
                }
            },
        );
        let dest = dir.path().join("dest");
        let (out, events, said) = pip_download(pip, port, &dest, &[], &[]);
        assert!(out.status.success(), "{pip}: {said:?} {events:?}");
        let tried = attempts(&events);
        assert_eq!(tried.len(), 2, "{pip}: {events:?}");
        assert_eq!(
            tried[0]["reason"],
            "exit 2; the package server answered HTTP 503 to every try (preset pip, chosen from the command name)",
            "{pip}"
        );
        assert_eq!(count(&served, &format!("/files/{WHEEL}")), 2);
        std::fs::remove_dir_all(&dest).unwrap();
    }
}

#[test]
fn curl_without_f_is_said_once_and_only_then() {
    assert!(curl_available(), "curl is needed for this test");
    // A 503 without -f: curl exits 0 and the run succeeds; retry says why
    // that may not be what was meant.
    let (port, served) = http_server(vec!["503 Service Unavailable"]);
    let url = format!("http://127.0.0.1:{port}/");
    let (out, events) = json(
        &[],
        &["-d", "1ms", "--", "timeout", "30", "curl", "-sS", &url],
    );
    assert!(out.status.success());
    assert_eq!(served.load(Ordering::SeqCst), 1);
    let said: Vec<String> = warnings(&events)
        .into_iter()
        .filter(|w| w.contains("without -f"))
        .collect();
    assert_eq!(said.len(), 1, "{events:?}");
    assert!(said[0].contains("add -f (as in curl -fsS)"), "{said:?}");
    // With -f, --fail-with-body, -w (the caller reads the status) or
    // --preset none: nothing said.
    for args in [
        &["curl", "-fsS"][..],
        &["curl", "-sS", "--fail-with-body"],
        &["curl", "-sS", "-w", "%{http_code}"],
        &["--preset", "none", "curl", "-sS"],
    ] {
        let (port, _) = http_server(vec!["200 OK"]);
        let url = format!("http://127.0.0.1:{port}/");
        let mut all = vec!["-n", "1"];
        let split = args.iter().position(|a| *a == "curl").unwrap();
        all.extend(&args[..split]);
        all.push("--");
        all.extend(&args[split..]);
        all.push(&url);
        let (_, events) = json(&[], &all);
        assert!(
            !warnings(&events).iter().any(|w| w.contains("without -f")),
            "{args:?}: {events:?}"
        );
    }
}

#[test]
fn the_silent_curl_advice_follows_the_rules_in_force() {
    assert!(curl_available(), "curl is needed for this test");
    // --stop-on-exit 22: every exit 22 stops, whatever the status; advice
    // that says it is retried, or what to add to read the status or a
    // Retry-After, would be false.
    for curl_flags in ["-fs", "-fsS"] {
        let (port, served) = http_server(vec!["503 Service Unavailable|Retry-After: 1\r\n"]);
        let url = format!("http://127.0.0.1:{port}/");
        let (out, events) = json(
            &[],
            &[
                "-d",
                "1ms",
                "--stop-on-exit",
                "22",
                "--",
                "curl",
                curl_flags,
                &url,
            ],
        );
        assert_eq!(out.status.code(), Some(22));
        assert_eq!(served.load(Ordering::SeqCst), 1);
        let said = warnings(&events);
        assert!(
            !said
                .iter()
                .any(|w| w.contains("add -S") || w.contains("Retry-After")),
            "{curl_flags}: {said:?}"
        );
    }

    // A user preset for curl whose silent 22 is permanent (the README's).
    let dir = scratch();
    let file = dir.path().join("presets.toml");
    std::fs::write(
        &file,
        "[preset.curl]\ndescription = \"curl, silent 22 stops\"\ncommands = [\"curl\"]\nother_exit = \"permanent\"\n\n\
         [[preset.curl.output]]\nkind = \"transient\"\npattern = 'returned error: (503)'\nmeans = \"curl reported HTTP {1}\"\n\n\
         [[preset.curl.exit]]\nkind = \"transient\"\ncodes = \"7\"\nmeans = \"no connection\"\n",
    )
    .unwrap();
    let (port, _) = http_server(vec!["503 Service Unavailable"]);
    let url = format!("http://127.0.0.1:{port}/");
    let (out, events) = json(
        &[("RETRY_PRESETS", &file)],
        &["-d", "1ms", "--", "curl", "-fs", &url],
    );
    assert_eq!(out.status.code(), Some(22));
    let said: Vec<String> = warnings(&events)
        .into_iter()
        .filter(|w| w.contains("-S"))
        .collect();
    assert_eq!(said.len(), 1, "{events:?}");
    assert!(said[0].contains("a 503 stops like a 404"), "{said:?}");
}

#[test]
fn headers_on_stdout_are_said_to_be_unscanned() {
    assert!(curl_available(), "curl is needed for this test");
    for flag in [&["-i"][..], &["-D", "-"]] {
        let (port, _) = http_server(vec!["429 Too Many Requests|Retry-After: 1\r\n"]);
        let url = format!("http://127.0.0.1:{port}/");
        let mut args = vec!["-n", "2", "-d", "1ms", "--", "curl", "-fsS"];
        args.extend(flag);
        args.push(&url);
        let (out, events) = json(&[], &args);
        assert_eq!(out.status.code(), Some(22));
        let said: Vec<String> = warnings(&events)
            .into_iter()
            .filter(|w| w.contains("Retry-After"))
            .collect();
        assert_eq!(said.len(), 1, "{flag:?}: {events:?}");
        assert!(
            said[0].contains("to stdout (-i or -D -), which retry does not scan")
                && said[0].contains("--scan-stdout"),
            "{said:?}"
        );
    }
}
