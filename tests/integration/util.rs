//! Test harness: the binary under test, scratch directories, counter scripts.

#![allow(dead_code)]

use std::fs;
use std::io::{BufRead, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_retry");

/// The binary with a clean environment: no RETRY_* from a surrounding run,
/// no colour, no CI variables (the suite reads the same inside GitHub
/// Actions or GitLab CI, and writes no step files of theirs), and a hard
/// timeout so a hang fails instead of blocking CI.
pub(crate) fn retry() -> assert_cmd::Command {
    let mut std_command = std::process::Command::new(BIN);
    scrub(&mut std_command);
    let mut command = assert_cmd::Command::from_std(std_command);
    command.timeout(Duration::from_secs(60));
    command
}

/// The same, as a plain `std::process::Command` for tests that need the
/// process itself (signals, background runs).
pub(crate) fn retry_std() -> std::process::Command {
    let mut command = std::process::Command::new(BIN);
    scrub(&mut command);
    command
}

/// [`retry_std`] with every signal at its default action, whatever the
/// suite inherited (`nohup` ignores SIGHUP; a script's background job
/// ignores SIGINT and SIGQUIT; an ignored signal stays ignored for retry,
/// as it should): for the tests that send retry those signals.
pub(crate) fn retry_std_default_signals() -> std::process::Command {
    let mut command = std::process::Command::new("env");
    command.arg("--default-signal").arg(BIN);
    scrub(&mut command);
    command
}

/// `program` started with every signal at its default action, for the
/// tests whose processes must die of a signal a surrounding shell may have
/// left ignored (see [`retry_std_default_signals`]).
pub(crate) fn with_default_signals(program: &str) -> std::process::Command {
    let mut command = std::process::Command::new("env");
    command.arg("--default-signal").arg(program);
    command
}

fn scrub(command: &mut std::process::Command) {
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        let ci = [
            "GITHUB_ACTIONS",
            "GITLAB_CI",
            "GITHUB_OUTPUT",
            "GITHUB_STEP_SUMMARY",
        ];
        if key.starts_with("RETRY_")
            || key == "NO_COLOR"
            || key == "XDG_STATE_HOME"
            || ci.contains(&key.as_str())
        {
            command.env_remove(&key);
        }
    }
    // No presets file of the machine's user: only the built-ins (and what a
    // test names in RETRY_PRESETS) apply.
    command.env("XDG_CONFIG_HOME", "/nonexistent/retry-test-config");
}

/// Command lines retry refuses (clap's refusal of a flag, of a value, and
/// the configuration's of two flags together) whose command has a
/// `--log-file app.log` of its own, and how the refusal starts.
pub(crate) const REFUSED_BEFORE_A_COMMANDS_LOG_FILE: [(&[&str], &str); 3] = [
    (
        &[
            "--atempts",
            "3",
            "sh",
            "-c",
            "true",
            "--log-file",
            "app.log",
        ],
        "unexpected argument '--atempts' found",
    ),
    (
        &["-n", "0", "sh", "-c", "true", "--log-file", "app.log"],
        "invalid value '0' for '--attempts <N>'",
    ),
    (
        &[
            "--splay",
            "5s",
            "-t",
            "1s",
            "sh",
            "-c",
            "true",
            "--log-file",
            "app.log",
        ],
        "--splay 5s must be shorter than --max-time 1s",
    ),
];

pub(crate) fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("retry-test-")
        .tempdir()
        .unwrap()
}

/// Write an executable script.
pub(crate) fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, body).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A script that counts its runs in `count` and fails with `code` until it
/// has failed `failures` times, then succeeds.
pub(crate) fn flaky(dir: &Path, failures: u32, code: i32) -> PathBuf {
    let count = dir.join("count");
    script(
        dir,
        "flaky.sh",
        &format!(
            "#!/bin/sh\nn=$(cat '{c}' 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > '{c}'\n[ $n -gt {failures} ] && exit 0\nexit {code}\n",
            c = count.display()
        ),
    )
}

/// How many times a counting script ran.
pub(crate) fn runs(dir: &Path) -> u32 {
    fs::read_to_string(dir.join("count")).map_or(0, |s| s.trim().parse().unwrap())
}

/// A shell command that appends a line to `dir/count`-style file `name`.
pub(crate) fn tally(dir: &Path, name: &str) -> String {
    format!("echo x >> '{}'", dir.join(name).display())
}

pub(crate) fn lines(dir: &Path, name: &str) -> usize {
    fs::read_to_string(dir.join(name)).map_or(0, |s| s.lines().count())
}

/// Run retry with `--log-format json` and `args`: its output and events.
/// Stdin is /dev/null (`assert_cmd` would hand it a pipe, which makes retry
/// warn from the second attempt on).
pub(crate) fn json_run(args: &[&str]) -> (std::process::Output, Vec<serde_json::Value>) {
    let out = retry_std()
        .args(["--log-format", "json"])
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let events = json_events(&out.stderr);
    (out, events)
}

/// A shell body that touches `started`, then sleeps with `marker` as its
/// argument (so the sleeper can be found in /proc afterwards).
pub(crate) fn sleeper(started: &Path, marker: &str) -> String {
    format!("touch '{}'; sleep {marker}", started.display())
}

pub(crate) fn json_events(stderr: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stderr)
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON: {line:?}: {e}"))
        })
        .collect()
}

/// Processes whose command line contains `marker` (found through /proc).
pub(crate) fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        // Zombies have an empty command line and are not running anything.
        if cmdline.contains(marker) && !cmdline.contains("pgrep") {
            found.push(pid);
        }
    }
    found
}

/// How many processes with `marker` are running now; they are then ended
/// (a service a test left running on purpose). Not counted: retry's own
/// watchdog, a fork of retry with its command line, which outlives it by
/// the moment it takes to see that retry is gone (under load, a few runs
/// in a hundred are looked at within that moment).
pub(crate) fn running_then_ended(marker: &str) -> usize {
    let retry = fs::canonicalize(BIN).unwrap();
    let running: Vec<u32> = processes_with(marker)
        .into_iter()
        .filter(|pid| fs::read_link(format!("/proc/{pid}/exe")).ok().as_ref() != Some(&retry))
        .collect();
    for &pid in &running {
        unsafe_kill(pid);
    }
    running.len()
}

/// Wait up to `limit` for no process with `marker` to be left.
pub(crate) fn none_left(marker: &str, limit: Duration) -> bool {
    let end = std::time::Instant::now() + limit;
    loop {
        if processes_with(marker).is_empty() {
            return true;
        }
        if std::time::Instant::now() > end {
            for pid in processes_with(marker) {
                unsafe_kill(pid);
            }
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn unsafe_kill(pid: u32) {
    let _ = std::process::Command::new("kill")
        .arg("-KILL")
        .arg(pid.to_string())
        .status();
}

/// A unique marker for grandchildren: `sleep 300.<n>`.
pub(crate) fn marker() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    format!("300.{}{:03}", std::process::id() % 100_000, n)
}

pub(crate) fn send_signal(pid: u32, signal: &str) {
    let status = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

/// Wait until `path` exists (a child announcing it is running).
pub(crate) fn wait_for_file(path: &Path, limit: Duration) {
    let end = std::time::Instant::now() + limit;
    while !path.exists() {
        assert!(
            std::time::Instant::now() < end,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A finished command's stdout and stderr, as text.
pub(crate) fn texts(out: &std::process::Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `(exit code, signal)` of a finished std child.
pub(crate) fn code_and_signal(status: std::process::ExitStatus) -> (Option<i32>, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    (status.code(), status.signal())
}

/// Run `retry ARGS -- sh -c BODY` where BODY first counts the attempt;
/// returns the output and the number of attempts that ran.
pub(crate) fn counted(args: &[&str], body: &str) -> (std::process::Output, usize) {
    let dir = scratch();
    let script = format!("{}; {body}", tally(dir.path(), "attempts"));
    let output = retry()
        .args(args)
        .args(["--", "sh", "-c", &script])
        .output()
        .unwrap();
    (output, lines(dir.path(), "attempts"))
}

/// One attempt behind circuit `name`, which opens after 2 failed runs for
/// 300 ms: the settings every circuit test shares.
pub(crate) fn circuit_args(name: &str) -> [&str; 8] {
    circuit_args_cooling(name, "300ms")
}

/// [`circuit_args`] with another cooldown: a test that asserts a refusal
/// must not race the cooldown (a loaded machine takes more than 300 ms to
/// start the next run).
pub(crate) fn circuit_args_cooling<'a>(name: &'a str, cooldown: &'a str) -> [&'a str; 8] {
    [
        "-n",
        "1",
        "--circuit",
        name,
        "--circuit-threshold",
        "2",
        "--circuit-cooldown",
        cooldown,
    ]
}

/// The names in `dir`, sorted.
pub(crate) fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A tmpfs of `size` (`1m`) mounted on a scratch directory, unmounted on
/// drop: a disk that fills up. `None` (and a line on stderr saying why the
/// test is skipped) when not root or the mount is refused.
pub(crate) struct SmallDisk {
    pub(crate) path: PathBuf,
    _scratch: tempfile::TempDir,
}

impl SmallDisk {
    pub(crate) fn mount(size: &str, test: &str) -> Option<SmallDisk> {
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipping {test}: mounting a small tmpfs needs root");
            return None;
        }
        let scratch = scratch();
        let path = scratch.path().join("disk");
        fs::create_dir(&path).unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            eprintln!("skipping {test}: mount -t tmpfs failed here");
            return None;
        }
        Some(SmallDisk {
            path,
            _scratch: scratch,
        })
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.path)
            .status();
    }
}

/// A one-thread server on 127.0.0.1: for each connection, reads the
/// request's header block and hands its first line and the stream to
/// `answer`. Returns the port.
pub(crate) fn serve<F>(mut answer: F) -> u16
where
    F: FnMut(&str, std::net::TcpStream) + Send + 'static,
{
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                if line == "\r\n" || line == "\n" {
                    break;
                }
                if request.is_empty() {
                    request.clone_from(&line);
                }
                line.clear();
            }
            answer(&request, stream);
        }
    });
    port
}

/// A one-thread HTTP server on 127.0.0.1 that answers requests with the
/// given responses in turn (the last one repeats). Returns its port and a
/// handle to the count of requests served.
pub(crate) fn http_server(
    responses: Vec<&'static str>,
) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = served.clone();
    let port = serve(move |_, mut stream| {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let response = responses[n.min(responses.len() - 1)];
        let (status, extra) = response.split_once('|').unwrap_or((response, ""));
        let body = format!("body of {status}\n");
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    });
    (port, served)
}

pub(crate) fn curl_available() -> bool {
    std::process::Command::new("curl")
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What [`http_routes`] answers: a status line (`"503 Service
/// Unavailable"`, with header lines after a `|` as for [`http_server`]:
/// `"200 OK|Content-Type: text/html\r\n"`) and a body.
pub(crate) type Answer = (&'static str, Vec<u8>);

/// The requests a server from [`http_routes`] has answered: their paths, in
/// order.
pub(crate) type Served = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// A one-thread HTTP server on 127.0.0.1 that answers each GET by its
/// path, as `answer(path, n)` says, `n` being how many times that path was
/// asked for before (so that "503 twice, then the file" is one closure).
/// One request per connection (`Connection: close`); the server reads what
/// the client sent after it before closing, so that a pipelining client
/// (apt) gets its answer and not a reset. Returns the port and the paths
/// served.
pub(crate) fn http_routes<F>(answer: F) -> (u16, Served)
where
    F: Fn(&str, usize) -> Answer + Send + 'static,
{
    let served = Served::default();
    let log = served.clone();
    let mut asked: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let port = serve(move |request, mut stream| {
        let Some(path) = request.split_whitespace().nth(1).map(str::to_string) else {
            return;
        };
        let n = asked.entry(path.clone()).or_default();
        let (status, body) = answer(&path, *n);
        *n += 1;
        log.lock().unwrap().push(path);
        let (status, extra) = status.split_once('|').unwrap_or((status, ""));
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(&body);
        let _ = stream.shutdown(std::net::Shutdown::Write);
        // What the client still sends is read and dropped, so that closing
        // never resets the connection under an unread request body.
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        let _ = std::io::copy(&mut stream, &mut std::io::sink());
    });
    (port, served)
}
