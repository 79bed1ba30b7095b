//! Every shell example of the README and the guide (`docs/*.md`) is run with
//! the built binary, so that none can go stale; and every relative link of
//! the README, the guide, CONTRIBUTING.md, DESIGN.md and packaging/README.md
//! leads to a file, and to a heading of it when it names one.
//!
//! **What is an example.** In README.md and docs/*.md:
//!
//! - a fenced block marked `sh`, `shell`, `bash` or `console`: every command
//!   in it. A command is a line that is not a comment, with the lines that
//!   follow while a quote is open or a line ends in `\`; a leading `$ ` is
//!   dropped;
//! - an indented block whose first line starts with `retry ` or `$ retry `:
//!   each line that starts so. After a `$ ` line, the lines up to the next
//!   one are its output: for `--explain` they must be exactly what the
//!   binary prints (other output is not compared);
//! - a fenced `yaml` block: each `run:` or `script:` value that starts with
//!   `retry `;
//! - a fenced `cron` block: each line that is not a comment, without its
//!   five time fields.
//!
//! A marker in an HTML comment, on the last non-blank line before a block,
//! changes that: `<!-- not run: REASON -->` skips the block (the reason is
//! for the reader); `<!-- file: NAME -->` writes the block, executable, as
//! NAME into the directory of every later example of the same page instead
//! of running it; `<!-- exits N: REASON -->` expects status N of each of the
//! block's commands.
//!
//! **What is checked.** Each command exits 0, or N when a comment on its
//! line or the comment lines right above it say `exits N` (so a usage
//! error, 125, or a missing command, 127, always fails the test); a
//! `--metrics-file` it names is written; `--explain` prints what the page
//! shows. Each runs within 20 s (its process group is killed past that).
//!
//! **How each runs.** `sh -c COMMAND` in a scratch directory of its own
//! (also `HOME`; no `RETRY_*`, CI or colour variables from outside; no
//! presets file), stdin `/dev/null`, with a `PATH` that starts with a
//! directory of stand-ins, then the machine's `PATH`. Substitutions, all
//! made so that an example does what its page says, fast and on this
//! machine only:
//!
//! - `retry` there is a wrapper that runs the built binary ([`BIN`]) with
//!   short sleeps: before `--`, the values of `-d`/`--delay`, `-c`/`--cap`,
//!   `--splay` and `--throttle-delay` become `10ms`, and `--delay 10ms` is
//!   added when no delay is given; with `--explain` nothing is changed.
//!   (Examples give `--` before the command, so only retry's own options
//!   are changed.)
//! - Every `http://` or `https://` URL is sent to a server the test starts
//!   for the example, on 127.0.0.1 and a free port, the path kept: it
//!   answers the first request for a path `503 Service Unavailable`, every
//!   later one `200 OK` (a small JSON body), so an example sees a failure
//!   that is retried, then a success.
//! - Redis URLs (`redis://`, `rediss://`, `redis+sentinel://`, `valkey...`)
//!   lose their user, password and hosts for `127.0.0.1`: the suite's
//!   `redis-server` (`RETRY_TEST_REDIS_PORT`, set by scripts/test) or, when
//!   there is none, port 1, where nothing listens, so that retry warns and
//!   runs the command, as a store that cannot be used does.
//! - `retry-after=DURATION` (a hint word) becomes `retry-after=10ms`.
//! - `/usr/local/bin/NAME` and `/usr/bin/NAME` are `NAME`, found on `PATH`
//!   (the wrapper, or a stand-in); other absolute paths under `/var`,
//!   `/tmp`, `/etc`, `/srv`, `/opt` and `/home` are made relative to the
//!   scratch directory (their directories made first).
//! - The commands the examples stand for are stand-ins ([`STANDINS`]): each
//!   fails the way its example expects a real one to fail now and then, then
//!   succeeds (`kubectl` says `Pending`, then `Running`; `make` fails once;
//!   `./flaky-test.sh` fails on its third run; ...). curl, sh and grep are
//!   the real ones.
//!
//! Nothing leaves the machine: a URL that is not rewritten to 127.0.0.1
//! fails the test before anything runs.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use regex::Regex;

use crate::util::*;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The pages whose examples run.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![Path::new(ROOT).join("README.md")];
    let mut guide: Vec<PathBuf> = fs::read_dir(Path::new(ROOT).join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    guide.sort();
    pages.extend(guide);
    pages
}

/// One command of a page.
#[derive(Debug)]
struct Example {
    /// `page:line`, for messages.
    place: String,
    command: String,
    expected: i32,
    /// The output the page shows after a `$ ` command, for `--explain`.
    output: Option<String>,
}

/// What a page holds: its examples, and the files they use, in order
/// (a file serves the examples after it).
#[derive(Debug, Default)]
struct Page {
    examples: Vec<(Example, Vec<(String, String)>)>,
}

/// `exits N` in a comment.
fn exits_in(comment: &str) -> Option<i32> {
    let re = Regex::new(r"\bexits (\d+)\b").unwrap();
    re.captures(comment).map(|c| c[1].parse().unwrap())
}

/// Splits shell text into commands: `(first line index, command, comment
/// on its lines and the comment lines right above it)`.
fn commands(lines: &[&str]) -> Vec<(usize, String, String)> {
    let mut found = Vec::new();
    let mut above = String::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_start();
        if line.is_empty() {
            above.clear();
            i += 1;
            continue;
        }
        if line.starts_with('#') {
            above.push_str(line);
            above.push('\n');
            i += 1;
            continue;
        }
        let start = i;
        let mut text = String::new();
        let mut comment = std::mem::take(&mut above);
        // Quote state carried over lines.
        let (mut single, mut double) = (false, false);
        loop {
            let raw = lines[i];
            let raw = if i == start {
                raw.trim_start()
                    .strip_prefix("$ ")
                    .unwrap_or(raw.trim_start())
            } else {
                raw
            };
            let mut kept = String::new();
            let mut chars = raw.chars().peekable();
            let mut previous = ' ';
            while let Some(c) = chars.next() {
                if single {
                    single = c != '\'';
                } else if double {
                    if c == '\\' {
                        kept.push(c);
                        if let Some(n) = chars.next() {
                            kept.push(n);
                        }
                        previous = 'x';
                        continue;
                    }
                    double = c != '"';
                } else if c == '\\' {
                    kept.push(c);
                    if let Some(n) = chars.next() {
                        kept.push(n);
                    }
                    previous = 'x';
                    continue;
                } else if c == '\'' {
                    single = true;
                } else if c == '"' {
                    double = true;
                } else if c == '#' && previous.is_whitespace() {
                    comment.push_str(&chars.collect::<String>());
                    break;
                }
                kept.push(c);
                previous = c;
            }
            let continued = kept.trim_end().ends_with('\\');
            text.push_str(&kept);
            text.push('\n');
            i += 1;
            if !(single || double || continued) || i >= lines.len() {
                break;
            }
        }
        found.push((start, text.trim_end().to_string(), comment));
    }
    found
}

#[allow(
    clippy::too_many_lines,
    reason = "one pass over a page, each kind of block and marker in turn"
)]
fn parse(page: &Path) -> Page {
    let text = fs::read_to_string(page).unwrap();
    let name = page.strip_prefix(ROOT).unwrap().display().to_string();
    let lines: Vec<&str> = text.lines().collect();
    let marker = Regex::new(r"^<!--\s*(not run|file|exits)\s*:?\s*(.*?)\s*-->$").unwrap();
    let runs_script = Regex::new(r"^\s*(?:-\s+)?(?:run|script):\s*(retry\s.*)$").unwrap();
    let cron_line = Regex::new(r"^\s*(?:\S+\s+){5}(.*)$").unwrap();
    let mut result = Page::default();
    let mut files: Vec<(String, String)> = Vec::new();
    let mut last_text = "";
    let mut i = 0;
    let push = |result: &mut Page,
                files: &Vec<(String, String)>,
                line: usize,
                command: String,
                expected: i32,
                output: Option<String>| {
        result.examples.push((
            Example {
                place: format!("{name}:{}", line + 1),
                command,
                expected,
                output,
            },
            files.clone(),
        ));
    };
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        let (kind, mark) = match marker.captures(last_text.trim()) {
            Some(c) => (c[1].to_string(), c[2].to_string()),
            None => (String::new(), String::new()),
        };
        if let Some(info) = trimmed.strip_prefix("```") {
            let indent = line.len() - trimmed.len();
            let language = info.trim().to_string();
            let start = i + 1;
            let mut end = start;
            while end < lines.len() && !lines[end].trim_start().starts_with("```") {
                end += 1;
            }
            let body: Vec<&str> = lines[start..end]
                .iter()
                .map(|l| l.get(indent..).unwrap_or(l.trim_start()))
                .collect();
            i = end + 1;
            last_text = "";
            if kind == "not run" {
                continue;
            }
            if kind == "file" {
                files.push((mark.clone(), body.join("\n") + "\n"));
                continue;
            }
            let block_exit = if kind == "exits" {
                Some(
                    mark.split(|c: char| !c.is_ascii_digit())
                        .next()
                        .unwrap()
                        .parse()
                        .unwrap(),
                )
            } else {
                None
            };
            let lines_at = |offset: usize| start + offset;
            match language.as_str() {
                "sh" | "shell" | "bash" | "console" => {
                    for (at, command, comment) in commands(&body) {
                        let expected = block_exit.or_else(|| exits_in(&comment)).unwrap_or(0);
                        push(&mut result, &files, lines_at(at), command, expected, None);
                    }
                }
                "yaml" | "yml" => {
                    for (at, l) in body.iter().enumerate() {
                        if let Some(c) = runs_script.captures(l) {
                            let expected = block_exit.unwrap_or(0);
                            push(
                                &mut result,
                                &files,
                                lines_at(at),
                                c[1].to_string(),
                                expected,
                                None,
                            );
                        }
                    }
                }
                "cron" => {
                    let mut above = String::new();
                    for (at, l) in body.iter().enumerate() {
                        if l.trim_start().starts_with('#') || l.trim().is_empty() {
                            above.push_str(l);
                            continue;
                        }
                        let c = cron_line
                            .captures(l)
                            .unwrap_or_else(|| panic!("{name}: not a cron line: {l}"));
                        let expected = block_exit.or_else(|| exits_in(&above)).unwrap_or(0);
                        push(
                            &mut result,
                            &files,
                            lines_at(at),
                            c[1].to_string(),
                            expected,
                            None,
                        );
                        above.clear();
                    }
                }
                _ => {}
            }
            continue;
        }
        // An indented block that starts with a retry command.
        let starts = |l: &str| {
            let l = l.strip_prefix("    ").unwrap_or("");
            l.starts_with("retry ") || l.starts_with("$ retry ")
        };
        let after_blank = i == 0 || lines[i - 1].trim().is_empty();
        if after_blank && starts(line) {
            let start = i;
            let mut end = i;
            while end < lines.len()
                && (lines[end].starts_with("    ") || lines[end].trim().is_empty())
            {
                end += 1;
            }
            i = end;
            let skip = kind == "not run";
            last_text = "";
            if skip {
                continue;
            }
            let block_exit: Option<i32> = if kind == "exits" {
                Some(
                    mark.split(|c: char| !c.is_ascii_digit())
                        .next()
                        .unwrap()
                        .parse()
                        .unwrap(),
                )
            } else {
                None
            };
            let body: Vec<&str> = lines[start..end]
                .iter()
                .map(|l| l.get(4..).unwrap_or(""))
                .collect();
            let mut k = 0;
            while k < body.len() {
                let l = body[k];
                if let Some(command) = l.strip_prefix("$ ") {
                    let mut output = Vec::new();
                    let mut n = k + 1;
                    while n < body.len() && !body[n].starts_with("$ ") {
                        output.push(body[n].trim_end());
                        n += 1;
                    }
                    while output.last().is_some_and(|l| l.is_empty()) {
                        output.pop();
                    }
                    let (command, comment) = split_comment(command);
                    let expected = block_exit.or_else(|| exits_in(&comment)).unwrap_or(0);
                    push(
                        &mut result,
                        &files,
                        start + k,
                        command,
                        expected,
                        Some(output.join("\n")),
                    );
                    k = n;
                    continue;
                }
                if l.starts_with("retry ") {
                    let (command, comment) = split_comment(l);
                    let expected = block_exit.or_else(|| exits_in(&comment)).unwrap_or(0);
                    push(&mut result, &files, start + k, command, expected, None);
                }
                k += 1;
            }
            continue;
        }
        if !line.trim().is_empty() {
            last_text = line;
        }
        i += 1;
    }
    result
}

/// A one-line command and its trailing comment.
fn split_comment(line: &str) -> (String, String) {
    let found = commands(&[line]);
    let (_, command, comment) = found.into_iter().next().unwrap_or_default();
    (command, comment)
}

/// What the stand-ins do. Each counts its runs in `.runs-NAME` in the
/// current directory (the example's), so that "fails once, then succeeds"
/// is one line of shell.
const STANDINS: &[(&str, &str)] = &[
    // kubectl get pod ... -o jsonpath: not ready, then ready.
    (
        "kubectl",
        r#"[ "$n" -gt 1 ] && echo Running || echo Pending"#,
    ),
    // make integration-test: fails once.
    (
        "make",
        r#"[ "$n" -gt 1 ] || { echo "make: *** [integration-test] Error 1" >&2; exit 2; }"#,
    ),
    // ./sync.sh: temporarily unavailable (75) once.
    ("sync.sh", r#"[ "$n" -gt 1 ] || exit 75"#),
    // rsync to a host: the connection is reset once.
    (
        "rsync",
        r#"[ "$n" -gt 1 ] || { echo "rsync: read error: Connection reset by peer (104)" >&2; exit 12; }"#,
    ),
    (
        "ssh",
        r#"echo " 10:00:00 up 12 days,  1 user,  load average: 0.00, 0.01, 0.05""#,
    ),
    ("generate-report", "printf 'line 1\\nline 2\\n'"),
    // upload --from-stdin: reads its input; fails once.
    ("upload", r#"cat > "uploaded.$n"; [ "$n" -gt 1 ] || exit 1"#),
    ("notify", r#"echo "notify: $*" >&2"#),
    // deploy (the hint file's example): rate limited once.
    (
        "deploy",
        r#"[ "$n" -gt 1 ] && echo deployed || { echo "rate limited" >&2; exit 1; }"#,
    ),
    ("deploy.sh", r#"[ "$n" -gt 1 ] || exit 1"#),
    // ./flaky-test.sh: passes twice, fails on its third run.
    (
        "flaky-test.sh",
        r#"[ "$n" -lt 3 ] || { echo "FAIL: test_ordering" >&2; exit 1; }"#,
    ),
    ("server", r#"[ "$n" -gt 1 ] || exit 1"#),
    ("sync-payments", "true"),
    ("backup", r#"[ "$n" -gt 1 ] || exit 1"#),
    ("job", "true"),
    // ./migrate.sh (the nested deadline): must be given the outer deadline.
    (
        "migrate.sh",
        r#"[ -n "$RETRY_DEADLINE" ] || { echo "migrate.sh: no RETRY_DEADLINE" >&2; exit 3; }"#,
    ),
];

/// Files the examples read, relative to the scratch directory.
const FIXTURES: &[(&str, &str)] = &[("var/log/app.log", "INFO all good\n")];

/// The wrapper that stands for `retry` (see the module documentation).
fn wrapper() -> String {
    format!(
        r#"#!/usr/bin/env bash
# The examples test's retry: the built binary, with short sleeps.
for a in "$@"; do
    [ "$a" = -- ] && break
    [ "$a" = --explain ] && exec '{BIN}' "$@"
done
args=() rewrite="" delay="" rest=""
for a in "$@"; do
    if [ -n "$rest" ]; then args+=("$a"); continue; fi
    if [ -n "$rewrite" ]; then args+=(10ms); rewrite=""; continue; fi
    case "$a" in
        --) rest=1; args+=("$a") ;;
        -d | --delay) delay=1; rewrite=1; args+=("$a") ;;
        --delay=*) delay=1; args+=(--delay=10ms) ;;
        -c | --cap | --splay | --throttle-delay) rewrite=1; args+=("$a") ;;
        --cap=* | --splay=* | --throttle-delay=*) args+=("${{a%%=*}}=10ms") ;;
        *) args+=("$a") ;;
    esac
done
[ -n "$delay" ] || args=(--delay 10ms "${{args[@]}}")
exec '{BIN}' "${{args[@]}}"
"#
    )
}

/// The example's text with the substitutions of the module documentation.
fn rewritten(text: &str, http_port: u16, scratch: &Path) -> String {
    let redis_port = std::env::var("RETRY_TEST_REDIS_PORT")
        .ok()
        .filter(|p| p.parse::<u16>().is_ok())
        .unwrap_or_else(|| "1".to_string());
    let redis =
        Regex::new(r#"\b((?:redis|rediss|valkey|valkeys)(?:\+sentinel)?)://[^/\s'"]*"#).unwrap();
    let text = redis.replace_all(text, format!("${{1}}://127.0.0.1:{redis_port}"));
    let http = Regex::new(r#"\bhttps?://[^/\s'"]+"#).unwrap();
    let text = http.replace_all(&text, format!("http://127.0.0.1:{http_port}"));
    let hint = Regex::new(r"retry-after=[0-9.]+[a-z]*").unwrap();
    let text = hint.replace_all(&text, "retry-after=10ms");
    let bin = Regex::new(r#"(^|[\s'"=;|&(])/usr/(?:local/)?bin/"#).unwrap();
    let text = bin.replace_all(&text, "$1");
    let path = Regex::new(r#"(^|[\s'"=])(/(?:var|tmp|etc|srv|opt|home)/[^\s'";|&)>]*)"#).unwrap();
    for found in path.captures_iter(&text) {
        let inside = scratch.join(found[2].trim_start_matches('/'));
        fs::create_dir_all(inside.parent().unwrap()).unwrap();
    }
    let text = path.replace_all(&text, format!("${{1}}{}$2", scratch.display()));
    // Nothing may leave the machine.
    let url = Regex::new(r"://([^/\s'@]*@)?([^/:\s'\x22]+)").unwrap();
    for found in url.captures_iter(&text) {
        assert_eq!(&found[2], "127.0.0.1", "not rewritten: {text}");
    }
    text.into_owned()
}

/// Runs `example` (with the page's `files`) and says what is wrong, if
/// anything.
#[allow(
    clippy::too_many_lines,
    reason = "one example's setting up, running and checking, in order"
)]
fn run(example: &Example, files: &[(String, String)], standins: &Path) -> Result<(), String> {
    let scratch = scratch();
    let dir = scratch.path();
    let (port, _served) = http_routes(|_path, n| {
        if n == 0 {
            ("503 Service Unavailable", b"busy\n".to_vec())
        } else {
            (
                "200 OK|Content-Type: application/json\r\n",
                b"{\"ok\":true}\n".to_vec(),
            )
        }
    });
    for (path, content) in FIXTURES {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }
    for (name, body) in STANDINS {
        if Path::new(name).extension().is_some_and(|e| e == "sh")
            || ["server", "job", "sync-payments"].contains(name)
        {
            script(dir, name, &standin(name, body));
        }
    }
    for (name, content) in files {
        script(dir, name, &rewritten(content, port, dir));
    }
    let command = rewritten(&example.command, port, dir);
    let path = format!(
        "{}:{}",
        standins.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut child = Command::new("sh");
    child
        .arg("-c")
        .arg(&command)
        .current_dir(dir)
        .env("PATH", path)
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join(".config"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("RETRY_")
            || key.starts_with("GITHUB_")
            || key.starts_with("GITLAB_")
            || [
                "CI",
                "NO_COLOR",
                "CLICOLOR_FORCE",
                "XDG_STATE_HOME",
                "XDG_RUNTIME_DIR",
            ]
            .contains(&key.as_str())
        {
            child.env_remove(&key);
        }
    }
    let started = Instant::now();
    let child = child.spawn().unwrap();
    let pid = child.id();
    let waiter = std::thread::spawn(move || child.wait_with_output());
    while !waiter.is_finished() {
        if started.elapsed() > Duration::from_secs(20) {
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(format!("-{pid}"))
                .status();
            let _ = waiter.join();
            return Err(format!("still running after 20 s: {command}"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = waiter.join().unwrap().unwrap();
    let (stdout, stderr) = texts(&out);
    let code = out.status.code();
    let say =
        |what: String| format!("{what}\n  ran: {command}\n  stdout: {stdout}\n  stderr: {stderr}");
    if code != Some(example.expected) {
        return Err(say(format!(
            "exited {code:?}, not {} as the page says",
            example.expected
        )));
    }
    let metrics = Regex::new(r"--metrics-file[ =](\S+)").unwrap();
    if let Some(found) = metrics.captures(&command)
        && !Path::new(&found[1]).is_file()
    {
        return Err(say(format!("wrote no metrics file at {}", &found[1])));
    }
    if let Some(shown) = &example.output
        && example.command.contains("--explain")
    {
        let printed: Vec<&str> = stdout.lines().map(str::trim_end).collect();
        let printed = printed.join("\n");
        if printed.trim_end() != shown.as_str() {
            return Err(say(format!(
                "--explain printed another text than the page shows:\n--- page\n{shown}\n--- binary\n{printed}"
            )));
        }
    }
    Ok(())
}

fn standin(name: &str, body: &str) -> String {
    format!(
        "#!/bin/sh\n# The examples test's stand-in for {name}.\nn=$(($(cat .runs-{name} 2>/dev/null || echo 0) + 1))\necho $n > .runs-{name}\n{body}\n"
    )
}

#[test]
fn every_example_of_the_readme_and_the_guide_runs_as_its_page_says() {
    let started = Instant::now();
    let standins = scratch();
    script(standins.path(), "retry", &wrapper());
    for (name, body) in STANDINS {
        script(standins.path(), name, &standin(name, body));
    }
    let mut examples = Vec::new();
    for page in pages() {
        examples.extend(parse(&page).examples);
    }
    if std::env::var_os("RETRY_EXAMPLES_LIST").is_some() {
        for (example, _) in &examples {
            eprintln!(
                "{} [exits {}] {}",
                example.place, example.expected, example.command
            );
        }
    }
    // The README's recipes are there, and so is a good part of the guide.
    let readme = examples
        .iter()
        .filter(|(e, _)| e.place.starts_with("README.md:"))
        .count();
    assert!(readme >= 8, "only {readme} examples found in README.md");
    assert!(
        examples.len() >= 30,
        "only {} examples found",
        examples.len()
    );

    // Two at a time: the machine has two cores, and most of an example's
    // time is waiting.
    let failures = std::sync::Mutex::new(BTreeMap::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some((example, files)) = examples.get(i) else {
                        break;
                    };
                    if let Err(why) = run(example, files, standins.path()) {
                        failures.lock().unwrap().insert(example.place.clone(), why);
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    let report: Vec<String> = failures
        .iter()
        .map(|(place, why)| format!("{place}: {why}"))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} examples failed:\n\n{}",
        failures.len(),
        examples.len(),
        report.join("\n\n")
    );
    eprintln!(
        "examples: {} ran as their pages say, in {:.1?}",
        examples.len(),
        started.elapsed()
    );
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces
/// as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The text outside fenced blocks.
fn prose(text: &str) -> String {
    let mut inside = false;
    let mut kept = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            inside = !inside;
            continue;
        }
        if !inside {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

#[test]
fn every_relative_link_of_the_docs_leads_to_a_file_and_a_heading() {
    let mut documents = pages();
    for extra in ["CONTRIBUTING.md", "DESIGN.md", "packaging/README.md"] {
        documents.push(Path::new(ROOT).join(extra));
    }
    let link = Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let mut broken = Vec::new();
    for document in documents {
        let text =
            fs::read_to_string(&document).unwrap_or_else(|e| panic!("{}: {e}", document.display()));
        for found in link.captures_iter(&prose(&text)) {
            let target = &found[1];
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, heading) = target.split_once('#').unwrap_or((target, ""));
            let path = if file.is_empty() {
                document.clone()
            } else {
                document.parent().unwrap().join(file)
            };
            let shown = format!(
                "{}: {target}",
                document.strip_prefix(ROOT).unwrap().display()
            );
            if !path.exists() {
                broken.push(format!("{shown}: no such file"));
                continue;
            }
            if !heading.is_empty() {
                let headings: Vec<String> = prose(&fs::read_to_string(&path).unwrap())
                    .lines()
                    .filter_map(|l| {
                        l.trim_start_matches('#')
                            .strip_prefix(' ')
                            .filter(|_| l.starts_with('#'))
                    })
                    .map(anchor)
                    .collect();
                if !headings.iter().any(|h| h == heading) {
                    broken.push(format!("{shown}: no such heading"));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links that lead nowhere:\n{}",
        broken.join("\n")
    );
}
