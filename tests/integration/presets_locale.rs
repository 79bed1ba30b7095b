//! Verdicts that do not depend on the locale (issue 25, item 12): with a
//! preset's patterns in force the command's messages are in the C locale,
//! so a German wget 404 stops at once as an English one does. Real wget
//! under a de_DE.UTF-8 locale built with localedef into a scratch
//! directory (LOCPATH), and a fake tool that speaks German, French or
//! Japanese when its messages' locale says so.

use std::path::Path;
use std::sync::atomic::Ordering;

use crate::presets::*;
use crate::util::*;

/// The locale variables a test sets; everything else of the kind removed.
const LOCALE_VARS: [&str; 5] = ["LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE", "LC_CTYPE"];

/// Run retry (JSON events) with exactly the locale variables `locale`.
fn run_in_locale(
    locale: &[(&str, &str)],
    extra_env: &[(&str, &Path)],
    args: &[&str],
) -> (std::process::Output, Vec<serde_json::Value>) {
    let mut command = retry_std();
    for name in LOCALE_VARS {
        command.env_remove(name);
    }
    command.envs(locale.iter().copied());
    command.envs(extra_env.iter().copied());
    command
        .args(["--log-format", "json"])
        .args(args)
        .stdin(std::process::Stdio::null());
    let out = command.output().unwrap();
    let events = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .collect();
    (out, events)
}

/// de_DE.UTF-8 compiled into `dir` (for LOCPATH), if localedef and the
/// locale's source are there.
fn german_locale(dir: &Path) -> bool {
    let built = std::process::Command::new("localedef")
        .args(["-i", "de_DE", "-f", "UTF-8"])
        .arg(dir.join("de_DE.UTF-8"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        eprintln!("localedef cannot build de_DE.UTF-8 here: skipping the real-wget locale test");
    }
    built
}

#[test]
fn a_german_wget_404_stops_at_once_as_under_the_c_locale() {
    if !have("wget") {
        return;
    }
    let dir = scratch();
    if !german_locale(dir.path()) {
        return;
    }
    // The locale really speaks German to wget without retry in between.
    let (port, _) = http_server(vec!["404 Not Found"]);
    let url = format!("http://127.0.0.1:{port}/");
    let alone = std::process::Command::new("wget")
        .args(["--tries=1", "-O", "/dev/null", &url])
        .env("LOCPATH", dir.path())
        .env("LANG", "de_DE.UTF-8")
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .env_remove("LANGUAGE")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&alone.stderr);
    if !said.contains("FEHLER 404") {
        eprintln!("wget has no German messages here ({said}): skipping");
        return;
    }
    for locale in [
        &[("LANG", "de_DE.UTF-8")][..],
        &[("LC_ALL", "de_DE.UTF-8"), ("LANGUAGE", "de")],
        &[("LANG", "C")],
    ] {
        let (port, served) = http_server(vec!["404 Not Found"]);
        let url = format!("http://127.0.0.1:{port}/");
        let (out, events) = run_in_locale(
            locale,
            &[("LOCPATH", dir.path())],
            &[
                "-n",
                "3",
                "-d",
                "1ms",
                "--",
                "wget",
                "--tries=1",
                "-O",
                "/dev/null",
                &url,
            ],
        );
        assert_eq!(out.status.code(), Some(8), "{locale:?}");
        let tried = attempts(&events);
        assert_eq!(tried.len(), 1, "{locale:?}: {events:?}");
        assert_eq!(tried[0]["outcome"], "permanent", "{locale:?}");
        assert_eq!(
            tried[0]["reason"],
            "exit 8; wget reported HTTP 404, which a second try would get again (preset wget, chosen from the command name)",
            "{locale:?}"
        );
        assert_eq!(served.load(Ordering::SeqCst), 1);
    }
}

/// A wget stand-in that reports a 404 in the language of its messages'
/// locale (`LC_ALL`, else `LC_MESSAGES`, else `LANG`; then `LANGUAGE`, as gettext
/// reads them) and records the locale variables it got.
const POLYGLOT: &str = r#"#!/bin/sh
env | grep -E '^(LC_|LANG)' | sort > "$(dirname "$0")/env.$RETRY_ATTEMPT"
locale=${LC_ALL:-${LC_MESSAGES:-$LANG}}
case "$locale" in C|C.*|POSIX|"") lang=en ;; *) lang=${LANGUAGE:-$locale} ;; esac
case "$lang" in
  de*) echo "2026-12-02 07:03:01 FEHLER 404: Not Found." >&2 ;;
  fr*) echo "2026-12-02 07:03:01 ERREUR 404 : Not Found." >&2 ;;
  ja*) echo "2026-12-02 07:03:01 エラー 404: Not Found。" >&2 ;;
  *) echo "2026-12-02 07:03:01 ERROR 404: Not Found." >&2 ;;
esac
exit 8
"#;

#[test]
fn a_tool_that_speaks_the_users_language_is_judged_as_under_c() {
    let dir = scratch();
    let tool = script(dir.path(), "wget", POLYGLOT);
    let tool = tool.to_str().unwrap();
    for locale in [
        &[("LANG", "C")][..],
        &[("LANG", "de_DE.UTF-8")],
        &[("LANG", "fr_FR.UTF-8"), ("LC_MESSAGES", "fr_FR.UTF-8")],
        &[("LC_ALL", "ja_JP.UTF-8")],
        &[("LANG", "C.UTF-8"), ("LANGUAGE", "de")],
    ] {
        let (out, events) = run_in_locale(locale, &[], &["-n", "3", "-d", "1ms", "--", tool]);
        assert_eq!(out.status.code(), Some(8), "{locale:?}");
        let tried = attempts(&events);
        assert_eq!(tried.len(), 1, "{locale:?}: {events:?}");
        assert_eq!(tried[0]["outcome"], "permanent", "{locale:?}");
    }
    // Only the messages change: LC_ALL's value goes to every other category.
    let (_, _) = run_in_locale(&[("LC_ALL", "de_DE.UTF-8")], &[], &["-n", "1", "--", tool]);
    let env = std::fs::read_to_string(dir.path().join("env.1")).unwrap();
    for line in [
        "LC_ALL=\n",
        "LC_MESSAGES=C\n",
        "LC_CTYPE=de_DE.UTF-8\n",
        "LC_TIME=de_DE.UTF-8\n",
    ] {
        assert!(env.contains(line), "{line:?} in {env}");
    }

    // -v and --explain say so.
    let out = retry()
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .env("LANG", "de_DE.UTF-8")
        .args(["-v", "-n", "1", "--", tool])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("retry: the command's messages are in the C locale, as the preset's patterns are: LC_MESSAGES=C (it was de_DE.UTF-8)"),
        "{said}"
    );
    let out = retry()
        .env_remove("LC_ALL")
        .env_remove("LC_MESSAGES")
        .env("LANG", "de_DE.UTF-8")
        .args(["--explain", "--", "wget", "u"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("LC_MESSAGES=C (it was de_DE.UTF-8)"),
        "{said}"
    );

    // Without a preset the locale is the user's.
    let (_, _) = run_in_locale(
        &[("LANG", "de_DE.UTF-8")],
        &[],
        &["--preset", "none", "-n", "1", "--", tool],
    );
    let env = std::fs::read_to_string(dir.path().join("env.1")).unwrap();
    assert!(env.contains("LANG=de_DE.UTF-8\n"), "{env}");
    assert!(!env.contains("LC_MESSAGES"), "{env}");
}
