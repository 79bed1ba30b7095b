//! Job control and stopped time (issue 25, items 4 and 5): Ctrl-Z stops
//! the whole job and `fg` continues it, an attempt that wants the terminal
//! gets it, and time limits count the time retry was stopped, as
//! coreutils `timeout` does.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::*;

/// Drives an interactive bash (job control on) on a pseudo-terminal, as a
/// person at it would, through steps: `["send", TEXT]`, `["expect", REGEX,
/// SECONDS]` (in what comes from then on; a missing one is noted as
/// `[MISSING ...]`), `["sleep",
/// SECONDS]`, `["wait_file", PATH, SECONDS]`, and `["state", PIDFILE]`
/// (notes `[STATE PIDFILE=X]`, X the process's state letter: T when
/// stopped). Prints what the terminal showed.
const DRIVER: &str = r"
import json, os, pty, re, select, sys, time
steps = json.loads(sys.argv[1])
pid, fd = pty.fork()
if pid == 0:
    os.environ['PS1'] = 'PROMPT$ '
    os.environ['TERM'] = 'dumb'
    os.execvp('bash', ['bash', '--norc', '--noprofile', '-i'])
out = b''
def pump(seconds, pattern=None):
    global out
    start = len(out)
    end = time.time() + seconds
    while time.time() < end:
        if pattern is not None and re.search(pattern.encode(), out[start:]):
            return True
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return False
            if not data:
                return False
            out += data
    return pattern is None
def state(path):
    try:
        p = open(path).read().split()[0]
        return open('/proc/%s/stat' % p).read().rsplit(')', 1)[1].split()[0]
    except Exception:
        return 'gone'
pump(10, r'PROMPT\$ ')
for step in steps:
    kind = step[0]
    if kind == 'send':
        os.write(fd, step[1].encode())
    elif kind == 'expect':
        if not pump(step[2], step[1]):
            out += ('\n[MISSING %r]\n' % step[1]).encode()
    elif kind == 'sleep':
        pump(step[1])
    elif kind == 'wait_file':
        end = time.time() + step[2]
        while not os.path.exists(step[1]) and time.time() < end:
            pump(0.02)
    elif kind == 'state':
        out += ('\n[STATE %s=%s]\n' % (step[1], state(step[1]))).encode()
os.write(fd, b'exit\n')
pump(1)
try:
    os.kill(pid, 9)
except OSError:
    pass
sys.stdout.write(out.decode(errors='replace'))
";

/// Run `steps` (see [`DRIVER`]) at an interactive bash on a terminal.
fn at_a_terminal(steps: &serde_json::Value) -> String {
    // The shell's Ctrl-C must reach its jobs even when this suite runs as a
    // script's background job (SIGINT ignored, and kept so by bash).
    let out = with_default_signals("python3")
        .args(["-c", DRIVER, &steps.to_string()])
        .env("XDG_CONFIG_HOME", "/nonexistent/retry-test-config")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn ctrl_z_stops_an_attempt_in_its_own_group_with_retry_and_fg_continues_it() {
    let dir = scratch();
    let pid = dir.path().join("pid");
    let pid = pid.to_str().unwrap();
    // Stdin redirected: the attempt leads a group of its own, which the
    // terminal's Ctrl-Z does not reach.
    let command = format!(
        "{BIN} -n 1 -T 30s -- sh -c 'echo $$ > {pid}; sleep 1; echo done-$((1+1))' < /dev/null\n"
    );
    let out = at_a_terminal(&serde_json::json!([
        ["send", command],
        ["wait_file", pid, 10],
        ["send", "\u{1a}"],
        ["expect", "Stopped", 5],
        // The group's SIGTSTP was sent before retry stopped; give the
        // kernel a moment to act on it.
        ["sleep", 0.3],
        ["state", pid],
        ["sleep", 1.2],
        ["state", pid],
        ["send", "fg\n"],
        ["expect", "done-2", 10],
        ["send", "echo rc=$?\n"],
        ["expect", "rc=[0-9]", 5],
    ]));
    let stopped = format!("[STATE {pid}=T]");
    assert_eq!(out.matches(&stopped).count(), 2, "{out}");
    let fg = out.find("fg").unwrap();
    assert!(out.rfind("done-2").unwrap() > fg, "{out}");
    assert!(out.contains("rc=0"), "{out}");
}

#[test]
fn fg_gives_a_background_attempt_the_terminal_it_waits_for() {
    // `retry ... &`: the attempt reads the terminal from the background and
    // is stopped (SIGTTIN); the job stops with it, and `fg` continues it
    // with the terminal.
    let command = format!("{BIN} -n 1 -T 30s -- sh -c 'read x; echo got:$x' &\n");
    let out = at_a_terminal(&serde_json::json!([
        ["send", command],
        ["expect", "retry: the command is stopped", 10],
        ["send", "jobs\n"],
        ["expect", "Stopped", 5],
        ["send", "fg\n"],
        ["sleep", 0.5],
        ["send", "hello\n"],
        ["expect", "got:hello", 10],
        ["send", "echo rc=$?\n"],
        ["expect", "rc=[0-9]", 5],
    ]));
    assert!(out.contains("got:hello"), "{out}");
    assert!(out.contains("`fg` gives it the terminal"), "{out}");
    assert!(out.contains("rc=0"), "{out}");
}

#[test]
fn a_command_that_prompts_on_dev_tty_while_stdin_is_a_pipe_gets_the_terminal() {
    // ssh, sudo and getpass read the password from /dev/tty.
    let command = format!(
        "echo data | {BIN} -n 1 -T 30s -- sh -c 'read secret </dev/tty; read piped; echo tty:$secret:$piped'\n"
    );
    let out = at_a_terminal(&serde_json::json!([
        ["send", command],
        ["sleep", 1],
        ["send", "hunter2\n"],
        ["expect", "tty:hunter2:data", 10],
        ["send", "echo rc=$?\n"],
        ["expect", "rc=[0-9]", 5],
    ]));
    assert!(out.contains("tty:hunter2:data"), "{out}");
    assert!(out.contains("rc=0"), "{out}");
}

#[test]
fn ctrl_c_reaches_an_attempt_that_holds_the_terminal_and_ends_the_run() {
    let dir = scratch();
    let count = dir.path().join("count");
    let command = format!(
        "echo data | {BIN} -n 3 -d 1ms -- sh -c 'echo x >> {}; read secret </dev/tty'\n",
        count.display()
    );
    let out = at_a_terminal(&serde_json::json!([
        ["send", command],
        ["sleep", 1],
        ["send", "\u{3}"],
        ["expect", "gave up", 10],
        ["send", "echo rc=$?\n"],
        ["expect", "rc=[0-9]", 5],
    ]));
    assert!(out.contains("rc=130"), "{out}");
    assert_eq!(lines(dir.path(), "count"), 1, "{out}");
}

#[test]
fn a_stop_does_not_lengthen_the_timeout() {
    let dir = scratch();
    let started = dir.path().join("started");
    let began = Instant::now();
    let mut child = retry_std()
        .args(["-n", "1", "-T", "3s", "--", "sh", "-c"])
        .arg(format!("touch '{}'; exec sleep 30", started.display()))
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_file(&started, Duration::from_secs(5));
    send_signal(child.id(), "STOP");
    std::thread::sleep(Duration::from_secs(2));
    send_signal(child.id(), "CONT");
    let status = child.wait().unwrap();
    let elapsed = began.elapsed();
    assert_eq!(status.code(), Some(124));
    // The limit is real time: 3 s from the start, stop included (5 s and
    // more when the stop was not counted).
    assert!(elapsed < Duration::from_millis(4300), "{elapsed:?}");
}

#[test]
fn a_deadline_passed_during_a_stop_starts_no_attempt_and_keeps_the_real_status() {
    let dir = scratch();
    let body = format!("{}; exit 7", tally(dir.path(), "attempts"));
    let child = retry_std()
        .args(["--log-format", "json", "--max-time", "2s", "-d", "500ms"])
        .args(["-j", "none", "-n", "5", "--", "sh", "-c", &body])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&dir.path().join("attempts"), Duration::from_secs(5));
    // Stopped during the sleep, continued past --max-time.
    std::thread::sleep(Duration::from_millis(100));
    send_signal(child.id(), "STOP");
    std::thread::sleep(Duration::from_millis(2500));
    send_signal(child.id(), "CONT");
    let out = child.wait_with_output().unwrap();
    let events = json_events(&out.stderr);
    let done = events.last().unwrap();
    assert_eq!(out.status.code(), Some(7), "{events:?}");
    assert_eq!(done["outcome"], "deadline", "{done}");
    assert_eq!(done["exit_code"], 7, "{done}");
    assert_eq!(lines(dir.path(), "attempts"), 1, "{events:?}");
}

#[test]
fn ctrl_z_stops_an_attempt_that_holds_the_terminal_and_fg_gives_it_back() {
    let command = format!(
        "echo data | {BIN} -n 1 -T 30s -- sh -c 'read a </dev/tty; echo first:$a; read b </dev/tty; echo second:$b'\n"
    );
    let out = at_a_terminal(&serde_json::json!([
        ["send", command],
        ["sleep", 1],
        ["send", "one\n"],
        ["expect", "first:one", 10],
        ["send", "\u{1a}"],
        ["expect", "Stopped", 5],
        ["send", "fg\n"],
        ["sleep", 0.5],
        ["send", "two\n"],
        ["expect", "second:two", 10],
        ["send", "echo rc=$?\n"],
        ["expect", "rc=[0-9]", 5],
    ]));
    assert!(out.contains("second:two"), "{out}");
    assert!(out.contains("rc=0"), "{out}");
}

#[test]
fn a_deadline_passed_during_a_stopped_splay_starts_no_attempt() {
    use std::io::BufRead;
    // The splay is drawn at random: a draw too short to be stopped in is
    // run again.
    for _ in 0..5 {
        let dir = scratch();
        let body = format!("{}; exit 3", tally(dir.path(), "attempts"));
        let mut child = retry_std()
            .args([
                "--log-format",
                "json",
                "--splay",
                "3s",
                "--max-time",
                "3200ms",
            ])
            .args(["--", "sh", "-c", &body])
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut first = String::new();
        stderr.read_line(&mut first).unwrap();
        let sleep: serde_json::Value = serde_json::from_str(&first).unwrap();
        assert_eq!(sleep["source"], "splay", "{first}");
        send_signal(child.id(), "STOP");
        let long_enough = sleep["delay_ms"].as_u64().unwrap() > 500;
        std::thread::sleep(Duration::from_millis(3400));
        send_signal(child.id(), "CONT");
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
        let status = child.wait().unwrap();
        if !long_enough {
            continue;
        }
        let events = json_events(rest.as_bytes());
        let done = events.last().unwrap();
        assert_eq!(done["outcome"], "deadline", "{rest}");
        assert_eq!(done["attempts"], 0, "{rest}");
        assert_eq!(status.code(), Some(124), "{rest}");
        assert_eq!(lines(dir.path(), "attempts"), 0, "{rest}");
        return;
    }
    panic!("five splays in a row were too short to be stopped in");
}
