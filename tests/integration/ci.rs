//! CI logs: GitHub Actions groups, annotations and step files, GitLab CI
//! sections, read back the way the runners read them.

use std::collections::HashSet;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use crate::util::*;

/// Run retry with `env` set and stdin from /dev/null.
fn ci_run(env: &[(&str, &str)], args: &[&str]) -> Output {
    retry_std()
        .envs(env.iter().copied())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

const GITHUB: &[(&str, &str)] = &[("GITHUB_ACTIONS", "true")];
const GITLAB: &[(&str, &str)] = &[("GITLAB_CI", "true")];

/// A line as the GitHub runner reads it.
#[derive(Debug, PartialEq)]
enum Line {
    Group(String),
    EndGroup,
    Warning { title: String, message: String },
    Error { title: String, message: String },
    Text(String),
}

/// The runner's unescaping of a workflow command's message.
fn unescape_data(text: &str) -> String {
    text.replace("%0D", "\r")
        .replace("%0A", "\n")
        .replace("%25", "%")
}

fn unescape_property(text: &str) -> String {
    unescape_data(&text.replace("%3A", ":").replace("%2C", ","))
}

/// Split a stream as the runner does (`\n`, `\r\n` and a lone `\r` end a
/// line), and read every line that would be a workflow command: one
/// starting with `::` after leading blanks. Anything else that would be a
/// command (another `::` command, a legacy `##[` one) fails the test: only
/// retry's own may appear.
fn github_lines(stream: &[u8]) -> Vec<Line> {
    let text = String::from_utf8_lossy(stream);
    let mut parsed = Vec::new();
    for line in text.split(['\n', '\r']) {
        assert!(!line.contains("##["), "a legacy workflow command: {line:?}");
        let Some(command) = line.trim_start().strip_prefix("::") else {
            parsed.push(Line::Text(line.to_string()));
            continue;
        };
        let (info, data) = command
            .split_once("::")
            .unwrap_or_else(|| panic!("a broken workflow command: {line:?}"));
        let (name, properties) = info.split_once(' ').unwrap_or((info, ""));
        let title = properties
            .strip_prefix("title=")
            .map(unescape_property)
            .unwrap_or_default();
        assert!(!title.is_empty() || !properties.is_empty() || name != "warning");
        let message = unescape_data(data);
        parsed.push(match name {
            "group" => Line::Group(message),
            "endgroup" => {
                assert_eq!(data, "", "{line:?}");
                Line::EndGroup
            }
            "warning" if title.starts_with("retry") => Line::Warning { title, message },
            "error" if title.starts_with("retry") => Line::Error { title, message },
            _ => panic!("a workflow command that is not retry's: {line:?}"),
        });
    }
    parsed
}

/// The groups, checked for balance (they do not nest): the lines inside
/// each, by the group's title.
fn groups(lines: &[Line]) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    let mut open = false;
    for line in lines {
        match line {
            Line::Group(title) => {
                assert!(!open, "a group opened inside another: {lines:#?}");
                open = true;
                groups.push((title.clone(), Vec::new()));
            }
            Line::EndGroup => {
                assert!(open, "an end without a group: {lines:#?}");
                open = false;
            }
            Line::Text(text) if open && !text.is_empty() => {
                groups.last_mut().unwrap().1.push(text.clone());
            }
            _ => {}
        }
    }
    assert!(!open, "a group left open: {lines:#?}");
    groups
}

fn warnings(lines: &[Line]) -> Vec<(&str, &str)> {
    lines
        .iter()
        .filter_map(|line| match line {
            Line::Warning { title, message } => Some((title.as_str(), message.as_str())),
            _ => None,
        })
        .collect()
}

fn errors(lines: &[Line]) -> Vec<(&str, &str)> {
    lines
        .iter()
        .filter_map(|line| match line {
            Line::Error { title, message } => Some((title.as_str(), message.as_str())),
            _ => None,
        })
        .collect()
}

/// A script that says which attempt it is on stdout and stderr, and
/// fails until attempt `succeeds_at`.
fn chatty(dir: &Path, succeeds_at: u32) -> String {
    script(
        dir,
        "chatty.sh",
        &format!(
            "#!/bin/sh\necho \"out $RETRY_ATTEMPT\"\necho \"err $RETRY_ATTEMPT\" >&2\n[ \"$RETRY_ATTEMPT\" -ge {succeeds_at} ] || exit 7\n"
        ),
    )
    .display()
    .to_string()
}

#[test]
fn github_groups_fold_every_attempt_and_retried_failures_are_warnings() {
    let dir = scratch();
    let chatty = chatty(dir.path(), 3);
    let out = ci_run(GITHUB, &["-d", "1ms", "--", &chatty]);
    assert_eq!(out.status.code(), Some(0));
    // Stdout is the command's alone: nothing of retry's in it.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "out 1\nout 2\nout 3\n"
    );
    let lines = github_lines(&out.stderr);
    let groups = groups(&lines);
    assert_eq!(groups.len(), 3, "{lines:#?}");
    for (n, (title, inside)) in groups.iter().enumerate() {
        let n = n + 1;
        assert_eq!(title, &format!("retry: attempt {n}/5: {chatty}"));
        assert_eq!(inside, &[format!("err {n}")], "{lines:#?}");
    }
    let warnings = warnings(&lines);
    assert_eq!(warnings.len(), 2, "{lines:#?}");
    for (n, (title, message)) in warnings.iter().enumerate() {
        assert_eq!(*title, format!("retry: attempt {}/5 failed", n + 1));
        assert!(
            message.starts_with("exit 7 (transient); retrying in "),
            "{message}"
        );
        assert!(
            message.ends_with(&format!("\ncommand: {chatty}")),
            "{message}"
        );
    }
    assert!(errors(&lines).is_empty(), "{lines:#?}");
    // Each warning comes right after its attempt's group, outside it.
    for (at, line) in lines.iter().enumerate() {
        if matches!(line, Line::Warning { .. }) {
            assert_eq!(lines[at - 1], Line::EndGroup, "{lines:#?}");
        }
    }
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("\nretry: succeeded on attempt 3/5 after "),
        "{text}"
    );
}

#[test]
fn giving_up_is_an_error_annotation_with_the_reason() {
    let dir = scratch();
    let chatty = chatty(dir.path(), 99);
    let out = ci_run(GITHUB, &["-n", "2", "-d", "1ms", "--", &chatty]);
    assert_eq!(out.status.code(), Some(7));
    let lines = github_lines(&out.stderr);
    assert_eq!(groups(&lines).len(), 2);
    assert_eq!(warnings(&lines).len(), 1, "{lines:#?}");
    let given_up = errors(&lines);
    assert_eq!(given_up.len(), 1, "{lines:#?}");
    let (title, message) = given_up[0];
    assert_eq!(title, "retry: gave up after 2 attempts");
    assert!(message.starts_with("exit 7 ("), "{message}");
    assert!(
        message.ends_with(&format!("command: {chatty}")),
        "{message}"
    );
    // The error is the last thing said.
    assert!(matches!(
        lines
            .iter()
            .rev()
            .find(|l| **l != Line::Text(String::new())),
        Some(Line::Error { .. })
    ));

    // A permanent failure says so.
    let out = ci_run(GITHUB, &["--stop-on-exit", "7", "--", &chatty]);
    let lines = github_lines(&out.stderr);
    assert_eq!(groups(&lines).len(), 1);
    assert!(warnings(&lines).is_empty(), "{lines:#?}");
    let errors = errors(&lines);
    assert_eq!(errors[0].0, "retry: gave up after 1 attempt");
    assert!(
        errors[0].1.starts_with("permanent failure, exit 7"),
        "{errors:?}"
    );
}

#[test]
fn groups_balance_when_an_attempt_is_killed_on_timeout() {
    let body = "echo started >&2; sleep 5";
    for extra in [&[][..], &["--retry-on-output", "nothing-matches"][..]] {
        let out = ci_run(
            GITHUB,
            &[
                &["-n", "2", "-d", "1ms", "-T", "150ms"],
                extra,
                &["--", "sh", "-c", body],
            ]
            .concat(),
        );
        assert_eq!(out.status.code(), Some(124));
        let lines = github_lines(&out.stderr);
        let groups = groups(&lines);
        assert_eq!(groups.len(), 2, "{lines:#?}");
        for (_, inside) in &groups {
            assert_eq!(inside, &["started"]);
        }
        let errors = errors(&lines);
        assert_eq!(errors.len(), 1, "{lines:#?}");
        assert!(errors[0].1.contains("timed out"), "{errors:?}");
    }
}

#[test]
fn groups_balance_when_retry_is_interrupted_by_sigterm() {
    let dir = scratch();
    let marker = marker();
    let started = dir.path().join("started");
    let body = format!(
        "echo 'half a line' >&2; printf partial >&2; {}",
        sleeper(&started, &marker)
    );
    let output = dir.path().join("output");
    std::fs::write(&output, "").unwrap();
    let child = retry_std()
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_OUTPUT", &output)
        .args(["-n", "3", "--", "sh", "-c", &body])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&started, Duration::from_secs(5));
    send_signal(child.id(), "TERM");
    let out = child.wait_with_output().unwrap();
    assert_eq!(code_and_signal(out.status), (None, Some(libc::SIGTERM)));
    let lines = github_lines(&out.stderr);
    let groups = groups(&lines);
    assert_eq!(groups.len(), 1, "{lines:#?}");
    // The child left its line unfinished: the group still ends on a line
    // of its own.
    assert_eq!(groups[0].1, ["half a line", "partial"], "{lines:#?}");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("retry: interrupted by SIGTERM"), "{text}");
    // The step's outputs were written before retry died of the signal.
    let outputs = parse_outputs(&std::fs::read_to_string(&output).unwrap());
    assert_eq!(
        outputs[1..],
        [
            ("exit_code".to_string(), "143".to_string()),
            ("outcome".to_string(), "interrupted".to_string())
        ]
    );
    assert!(none_left(&marker, Duration::from_secs(2)));
}

#[test]
fn a_command_line_cannot_inject_a_workflow_command() {
    let hostile = [
        "x%0A::error::x",
        "y\n::error title=forged::z",
        "\r::warning::w",
        "##[error]legacy",
        "a,b:c%2C",
    ];
    let mut args = vec![
        "-n", "2", "-d", "1ms", "-v", "--", "sh", "-c", "exit 3", "sh",
    ];
    args.extend(hostile);
    let out = ci_run(GITHUB, &args);
    assert_eq!(out.status.code(), Some(3));
    // `github_lines` fails on any command that is not one of retry's own.
    let lines = github_lines(&out.stderr);
    assert!(
        github_lines(&out.stdout)
            .iter()
            .all(|l| matches!(l, Line::Text(_)))
    );
    let groups = groups(&lines);
    assert_eq!(groups.len(), 2);
    // What the runner shows is the command line as retry shows it.
    let (title, _) = &groups[0];
    assert_eq!(
        title,
        "retry: attempt 1/2: sh -c 'exit 3' sh x%0A::error::x $'y\\n::error title=forged::z' $'\\r::warning::w' '##\\[error]legacy' a,b:c%2C"
    );
    assert_eq!(warnings(&lines).len(), 1);
    assert_eq!(errors(&lines).len(), 1);
    for (title, message) in warnings(&lines).into_iter().chain(errors(&lines)) {
        assert!(title.starts_with("retry: "), "{title}");
        assert!(
            message.contains("x%0A::error::x $'y\\n::error title=forged::z'"),
            "{message}"
        );
    }
}

/// `$GITHUB_OUTPUT` as the runner reads it: `name=value` lines and
/// `name<<DELIMITER` ... `DELIMITER` blocks.
fn parse_outputs(text: &str) -> Vec<(String, String)> {
    let mut outputs = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some((name, delimiter)) = line.split_once("<<") {
            let mut value = Vec::new();
            for line in lines.by_ref() {
                if line == delimiter {
                    break;
                }
                value.push(line);
            }
            outputs.push((name.to_string(), value.join("\n")));
        } else {
            let (name, value) = line.split_once('=').unwrap_or_else(|| panic!("{line:?}"));
            outputs.push((name.to_string(), value.to_string()));
        }
    }
    outputs
}

/// The rows of the Markdown tables in a step summary, as cells.
fn summary_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|line| line.starts_with("| ") && !line.starts_with("| attempt "))
        .map(|line| {
            line.trim_matches('|')
                .split(" | ")
                .map(|cell| cell.trim().to_string())
                .collect()
        })
        .collect()
}

#[test]
fn step_outputs_and_the_summary_are_appended() {
    let dir = scratch();
    let output = dir.path().join("output");
    let summary = dir.path().join("summary");
    std::fs::write(&output, "earlier=1\n").unwrap();
    std::fs::write(&summary, "# Earlier\n").unwrap();
    let env = [
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_OUTPUT", output.to_str().unwrap()),
        ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
    ];
    let chatty = chatty(dir.path(), 3);
    let out = ci_run(&env, &["-d", "1ms", "--", &chatty]);
    assert_eq!(out.status.code(), Some(0));
    let outputs = parse_outputs(&std::fs::read_to_string(&output).unwrap());
    let expect = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    };
    assert_eq!(
        outputs,
        expect(&[
            ("earlier", "1"),
            ("attempts", "3"),
            ("exit_code", "0"),
            ("outcome", "success")
        ])
    );
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(text.starts_with("# Earlier\n### retry: "), "{text}");
    assert!(text.contains("**success** after 3 attempts in "), "{text}");
    let rows = summary_rows(&text);
    let cells: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|row| (row[0].as_str(), row[1].as_str(), row[3].as_str()))
        .collect();
    assert_eq!(
        cells,
        [
            ("1", "7", "transient"),
            ("2", "7", "transient"),
            ("3", "0", "success")
        ]
    );
    for row in &rows {
        assert!(row[2].ends_with("ms") || row[2].ends_with('s'), "{row:?}");
    }

    // A second run, failing on a timeout, appends its own.
    let out = ci_run(
        &env,
        &["-n", "2", "-d", "1ms", "-T", "100ms", "--", "sleep", "5"],
    );
    assert_eq!(out.status.code(), Some(124));
    let outputs = parse_outputs(&std::fs::read_to_string(&output).unwrap());
    assert_eq!(
        outputs[4..],
        expect(&[
            ("attempts", "2"),
            ("exit_code", "124"),
            ("outcome", "exhausted")
        ])
    );
    let text = std::fs::read_to_string(&summary).unwrap();
    assert_eq!(text.matches("### retry: ").count(), 2, "{text}");
    assert!(text.contains("### retry: sleep 5\n"), "{text}");
    let rows = summary_rows(&text);
    assert_eq!(rows.len(), 5, "{text}");
    assert_eq!(rows[3][1], "timeout");
    assert_eq!(rows[4][3], "transient");
}

#[test]
fn step_files_are_written_whatever_the_log_format_and_never_block() {
    let dir = scratch();
    let output = dir.path().join("output");
    std::fs::write(&output, "").unwrap();
    let fifo = dir.path().join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let env = [
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_OUTPUT", output.to_str().unwrap()),
        ("GITHUB_STEP_SUMMARY", fifo.to_str().unwrap()),
    ];
    let out = ci_run(&env, &["--log-format", "json", "-n", "1", "--", "false"]);
    assert_eq!(out.status.code(), Some(1));
    let outputs = parse_outputs(&std::fs::read_to_string(&output).unwrap());
    assert_eq!(outputs.len(), 3);
    assert_eq!(outputs[2], ("outcome".to_string(), "exhausted".to_string()));
    // The FIFO is refused, not waited on, and said as a JSON warning.
    let events = json_events(&out.stderr);
    let warning = events.iter().find(|e| e["event"] == "warning").unwrap();
    assert_eq!(warning["kind"], "ci");
    assert!(
        warning["message"]
            .as_str()
            .unwrap()
            .contains("not a regular file"),
        "{warning}"
    );
}

#[test]
fn a_nested_retry_folds_nothing_and_leaves_the_step_files_to_the_outer_one() {
    let dir = scratch();
    let output = dir.path().join("output");
    let summary = dir.path().join("summary");
    std::fs::write(&output, "").unwrap();
    std::fs::write(&summary, "").unwrap();
    let env = [
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_OUTPUT", output.to_str().unwrap()),
        ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
    ];
    let out = ci_run(
        &env,
        &[
            "-n",
            "1",
            "--",
            BIN,
            "-n",
            "2",
            "-d",
            "1ms",
            "--",
            "sh",
            "-c",
            "echo inner >&2; exit 4",
        ],
    );
    assert_eq!(out.status.code(), Some(4));
    let lines = github_lines(&out.stderr);
    let outer = groups(&lines);
    assert_eq!(outer.len(), 1, "only the outer one's: {lines:#?}");
    assert!(
        outer[0]
            .0
            .starts_with(&format!("retry: attempt 1/1: {BIN} -n 2"))
    );
    // The inner one's two attempts, unfolded, inside the outer group.
    assert_eq!(
        outer[0].1.iter().filter(|l| *l == "inner").count(),
        2,
        "{lines:#?}"
    );
    let outputs = parse_outputs(&std::fs::read_to_string(&output).unwrap());
    assert_eq!(outputs.len(), 3, "{outputs:?}");
    assert_eq!(outputs[0], ("attempts".to_string(), "1".to_string()));
    let text = std::fs::read_to_string(&summary).unwrap();
    assert_eq!(text.matches("### retry").count(), 1, "{text}");

    // Whatever the inner one's format.
    std::fs::write(&output, "").unwrap();
    let out = ci_run(
        &env,
        &[
            "-n",
            "1",
            "--log-format",
            "text",
            "--",
            BIN,
            "--log-format",
            "github",
            "-n",
            "1",
            "--",
            "true",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let lines = github_lines(&out.stderr);
    assert!(groups(&lines).is_empty(), "{lines:#?}");
    let outputs = parse_outputs(&std::fs::read_to_string(&output).unwrap());
    assert_eq!(outputs.len(), 3, "{outputs:?}");
}

#[test]
fn an_explicit_log_format_beats_the_environment_and_empty_is_unset() {
    let plain = |env: &[(&str, &str)], args: &[&str]| {
        let out = ci_run(
            env,
            &[args, &["-n", "2", "-d", "1ms", "--", "false"]].concat(),
        );
        assert_eq!(out.status.code(), Some(1));
        let text = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!text.contains("::"), "{text}");
        assert!(!text.contains("section_"), "{text}");
        assert!(text.contains("retry: attempt 1/2 failed: exit 1"), "{text}");
        assert!(text.contains("retry: gave up after 2 attempts"), "{text}");
    };
    plain(GITHUB, &["--log-format", "text"]);
    plain(GITLAB, &["--log-format=text"]);
    plain(&[("GITHUB_ACTIONS", ""), ("GITLAB_CI", "")], &[]);
    plain(&[("GITHUB_ACTIONS", "false")], &[]);
    plain(&[], &[]);
    // JSON stays JSON.
    let out = ci_run(
        GITHUB,
        &[
            "--log-format",
            "json",
            "-n",
            "2",
            "-d",
            "1ms",
            "--",
            "false",
        ],
    );
    let events = json_events(&out.stderr);
    assert_eq!(events.len(), 4, "{events:?}");
    // And the flag works outside CI, or picks the other CI.
    let out = ci_run(&[], &["--log-format", "github", "-n", "1", "--", "false"]);
    assert_eq!(groups(&github_lines(&out.stderr)).len(), 1);
    let out = ci_run(
        GITHUB,
        &["--log-format", "gitlab", "-n", "1", "--", "false"],
    );
    assert_eq!(sections(&out.stderr).len(), 1);
    // -q: nothing per attempt, so no folds.
    let out = ci_run(GITHUB, &["-q", "-n", "2", "-d", "1ms", "--", "false"]);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

/// GitLab's section markers in a job log, found the way GitLab finds them
/// (anywhere in a line, its own pattern: lib/gitlab/regex.rb) and checked
/// for balance (each end closes the innermost open section): the names, in
/// order of start. Ours also begin with `ESC[0K` and are collapsed.
fn sections(log: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(log);
    let marker = regex::Regex::new(
        r"section_(start|end):(\d+):([a-zA-Z0-9_.-]+)(\[(?:\w+=\w+)(?:, ?(?:\w+=\w+))*\])?\r\x1b\[0K",
    )
    .unwrap();
    let mut names = Vec::new();
    let mut open: Vec<String> = Vec::new();
    for found in marker.captures_iter(&text) {
        let at = found.get(0).unwrap().start();
        assert!(text[..at].ends_with("\x1b[0K"), "{text:?}");
        assert!(found[2].parse::<u64>().unwrap() > 1_600_000_000);
        let name = found[3].to_string();
        if &found[1] == "start" {
            assert_eq!(found.get(4).map(|m| m.as_str()), Some("[collapsed=true]"));
            open.push(name.clone());
            names.push(name);
        } else {
            assert_eq!(open.pop(), Some(name), "unbalanced: {text:?}");
        }
    }
    assert!(open.is_empty(), "left open: {open:?}");
    names
}

#[test]
fn gitlab_sections_balance_with_unique_names_and_the_summary_outside() {
    let dir = scratch();
    let chatty = chatty(dir.path(), 99);
    let mut seen = HashSet::new();
    for _ in 0..2 {
        let out = ci_run(GITLAB, &["-n", "3", "-d", "1ms", "--", &chatty]);
        assert_eq!(out.status.code(), Some(7));
        let names = sections(&out.stderr);
        assert_eq!(names.len(), 3);
        for name in names {
            assert!(seen.insert(name.clone()), "{name} used twice");
        }
        let text = String::from_utf8_lossy(&out.stderr);
        // The header names the attempt; the verdicts come after each end.
        assert!(text.contains(&format!(
            "[collapsed=true]\r\x1b[0Kretry: attempt 2/3: {chatty}\n"
        )));
        let last_end = text.rfind("section_end:").unwrap();
        let tail = &text[last_end..];
        assert!(
            tail.contains("\nretry: attempt 3/3 failed: exit 7"),
            "{tail:?}"
        );
        assert!(
            tail.contains("\nretry: gave up after 3 attempts"),
            "{tail:?}"
        );
        // Stdout is untouched.
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "out 1\nout 2\nout 3\n"
        );
    }
    // A timeout and a header that tries to close a section early.
    let out = ci_run(
        GITLAB,
        &[
            "-n",
            "2",
            "-d",
            "1ms",
            "-T",
            "100ms",
            "--",
            "sh",
            "-c",
            "sleep 5",
            "x\r\x1b[0Ksection_end:1:x\r\x1b[0K",
        ],
    );
    assert_eq!(out.status.code(), Some(124));
    assert_eq!(sections(&out.stderr).len(), 2);
}

#[test]
fn with_a_log_file_the_lines_go_there_and_the_folds_stay_for_the_runner() {
    let dir = scratch();
    let log = dir.path().join("retry.log");
    let log_arg = log.to_str().unwrap();
    let out = ci_run(
        GITHUB,
        &["--log-file", log_arg, "-n", "2", "-d", "1ms", "--", "false"],
    );
    assert_eq!(out.status.code(), Some(1));
    let lines = github_lines(&out.stderr);
    assert_eq!(groups(&lines).len(), 2, "{lines:#?}");
    assert_eq!(warnings(&lines).len(), 1);
    assert_eq!(errors(&lines).len(), 1);
    // The file keeps the whole record as timestamped text lines.
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("::"), "{text}");
    for expected in [
        " retry: attempt 1/2 failed: exit 1 (transient); retrying in ",
        " retry: attempt 2/2 failed: exit 1 (transient)\n",
        " retry: gave up after 2 attempts in ",
    ] {
        assert!(text.contains(expected), "{expected:?} in {text}");
    }
}

#[test]
fn on_github_a_usage_error_is_an_error_annotation_like_any_other_error() {
    let dir = scratch();
    for (args, first) in REFUSED_BEFORE_A_COMMANDS_LOG_FILE {
        let out = retry_std()
            .current_dir(dir.path())
            .env("GITHUB_ACTIONS", "true")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(125), "{args:?}");
        let lines = github_lines(&out.stderr);
        let errors = errors(&lines);
        assert_eq!(errors.len(), 1, "{args:?}: {lines:#?}");
        assert_eq!(errors[0].0, "retry");
        assert!(errors[0].1.starts_with(first), "{errors:?}");
        // The annotation is for a log: no tip to try --help.
        assert!(!errors[0].1.contains("For more information"), "{errors:?}");
        // Nothing but the annotation: no plain `retry: error:` line.
        let plain: Vec<&Line> = lines
            .iter()
            .filter(|line| matches!(line, Line::Text(text) if !text.is_empty()))
            .collect();
        assert!(plain.is_empty(), "{args:?}: {plain:?}");
        assert!(!dir.path().join("app.log").exists());
    }
}

#[test]
fn a_hedged_attempt_is_one_group_and_its_copies_are_rows_of_the_summary() {
    let dir = scratch();
    let summary = dir.path().join("summary");
    std::fs::write(&summary, "").unwrap();
    let env = [
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
    ];
    // Copy 0 speaks and hangs; copy 1 speaks and succeeds.
    let body = "echo \"err $RETRY_HEDGE\" >&2; [ \"$RETRY_HEDGE\" = 1 ] || exec sleep 20";
    let args = ["--hedge-after", "300ms", "--", "sh", "-c", body];
    let out = ci_run(&env, &args);
    assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);
    let lines = github_lines(&out.stderr);
    let groups = groups(&lines);
    assert_eq!(groups.len(), 1, "{groups:#?}");
    let inside = groups[0].1.join("\n");
    assert!(inside.contains("err 0"), "{inside}");
    assert!(inside.contains("[hedge 1] err 1"), "{inside}");
    assert!(inside.contains("superseded"), "{inside}");
    let rows = summary_rows(&std::fs::read_to_string(&summary).unwrap());
    let cells: Vec<(&str, &str)> = rows
        .iter()
        .map(|row| (row[0].as_str(), row[3].as_str()))
        .collect();
    assert_eq!(cells, [("1", "superseded"), ("1 (hedge 1)", "success")]);
}
