//! Fleet-wide circuits in a real Redis: several "hosts" (processes with
//! separate state directories) sharing one circuit, and Redis failing in
//! every way that must not block a job. `fleet_deployments` runs them all
//! again against Valkey, and tests clusters and Sentinel.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use predicates::prelude::*;

use crate::util::*;

/// A redis-server on 127.0.0.1: the one `scripts/test` (and so CI) started
/// for the suite, or a private one on a free port, stopped when dropped.
struct Redis {
    process: Option<Child>,
    port: u16,
    password: Option<&'static str>,
}

impl Redis {
    /// The suite's shared server when `scripts/test` started one
    /// (`RETRY_TEST_REDIS_PORT`), else a private one. Tests on it use
    /// circuit names of their own.
    fn shared() -> Option<Redis> {
        match std::env::var("RETRY_TEST_REDIS_PORT")
            .ok()
            .and_then(|p| p.parse().ok())
        {
            Some(port) => Some(Redis {
                process: None,
                port,
                password: None,
            }),
            None => Redis::start(None),
        }
    }

    /// `None` (with a message) when no redis-server exists here; in CI a
    /// missing server is a failure, not a skip.
    fn start(password: Option<&'static str>) -> Option<Redis> {
        if !redis_server_found() {
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut command = Command::new(server_binary());
        command.args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]);
        if let Some(password) = password {
            command.args(["--requirepass", password]);
        }
        let process = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let redis = Redis {
            process: Some(process),
            port,
            password,
        };
        let end = Instant::now() + Duration::from_secs(10);
        while redis.command("PING").is_none() {
            assert!(
                Instant::now() < end,
                "redis-server did not start on port {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(redis)
    }

    fn url(&self) -> String {
        match self.password {
            Some(password) => format!("redis://:{password}@127.0.0.1:{}/0", self.port),
            None => format!("redis://127.0.0.1:{}/0", self.port),
        }
    }

    /// Send one inline command; the first reply line.
    fn command(&self, line: &str) -> Option<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        if let Some(password) = self.password {
            write!(stream, "AUTH {password}\r\n").ok()?;
            let mut ok = [0u8; 5];
            stream.read_exact(&mut ok).ok()?;
        }
        write!(stream, "{line}\r\n").ok()?;
        let mut reply = Vec::new();
        let mut byte = [0u8; 1];
        while stream.read(&mut byte).ok()? == 1 && byte[0] != b'\n' {
            reply.push(byte[0]);
        }
        Some(String::from_utf8_lossy(&reply).trim().to_string())
    }

    fn stop(&mut self) {
        if let Some(process) = &mut self.process {
            let _ = process.kill();
            let _ = process.wait();
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One "host": its own state directory, the shared Redis; circuits it
/// opens cool down for `cooldown`.
fn host_std(redis: &Redis, state: &std::path::Path, name: &str, cooldown: &str) -> Command {
    let mut command = retry_std();
    command
        .arg("-v")
        .args(circuit_args_cooling(name, cooldown))
        .args(["--state-url", &redis.url(), "--state-dir"])
        .arg(state);
    command
}

/// A host whose circuits open for an hour: a refusal never races the
/// cooldown, however slowly a loaded machine starts the run.
fn host(redis: &Redis, state: &std::path::Path, name: &str) -> assert_cmd::Command {
    let mut command = assert_cmd::Command::from_std(host_std(redis, state, name, "1h"));
    command.timeout(Duration::from_secs(60));
    command
}

#[test]
fn three_hosts_share_one_circuit_through_redis() {
    let Some(redis) = Redis::shared() else {
        return;
    };
    let hosts: Vec<tempfile::TempDir> = (0..3).map(|_| scratch()).collect();
    let work = scratch();
    // Host 0 and host 1 each fail once: the shared circuit opens.
    host(&redis, hosts[0].path(), "fleet")
        .args(["--", "false"])
        .assert()
        .code(1);
    host(&redis, hosts[1].path(), "fleet")
        .args(["--", "false"])
        .assert()
        .code(1);
    // Host 2 never failed, yet is refused.
    let ran = tally(work.path(), "ran");
    host(&redis, hosts[2].path(), "fleet")
        .args(["--", "sh", "-c", &ran])
        .assert()
        .code(75);
    assert_eq!(lines(work.path(), "ran"), 0);
    // Nothing was written to the hosts' own state directories.
    for dir in &hosts {
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
    // The key carries a TTL.
    let ttl: i64 = redis
        .command("PTTL retry:circuit:fleet")
        .unwrap()
        .trim_start_matches(':')
        .parse()
        .unwrap();
    assert!(ttl > 0, "no TTL on the key: {ttl}");

    // After the cooldown (a minute, over), the three hosts try at once:
    // exactly one probes, held until the other two have been decided.
    let set = resp_command(
        redis.port,
        &[
            b"SET",
            b"retry:circuit:fleet",
            crate::circuit::cooldown_over().as_bytes(),
        ],
    );
    assert_eq!(set, "+OK");
    let runs = hosts
        .iter()
        .map(|dir| host_std(&redis, dir.path(), "fleet", "1h"))
        .collect();
    let outputs = crate::circuit::race_for_one_probe(runs, work.path());
    let (mut codes, runners) = crate::circuit::codes_and_runners(&outputs);
    codes.sort_unstable();
    assert_eq!(codes, [0, 75, 75], "{runners}");
    assert_eq!(lines(work.path(), "probes"), 1, "{runners}");
    assert!(runners.contains("circuit fleet: half-open"), "{runners}");
    // The probe succeeded: closed for everyone.
    for dir in &hosts {
        host(&redis, dir.path(), "fleet")
            .args(["--", "true"])
            .assert()
            .success();
    }
    retry()
        .args([
            "--circuit",
            "fleet",
            "--state-url",
            &redis.url(),
            "--circuit-status",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("circuit fleet: closed"))
        .stdout(predicate::str::contains("key retry:circuit:fleet"));
}

#[test]
fn redis_stopped_in_the_middle_of_a_run_does_not_stop_the_job() {
    let Some(mut redis) = Redis::start(None) else {
        return;
    };
    let work = scratch();
    let started = work.path().join("started");
    let go_on = work.path().join("go-on");
    let body = format!(
        "touch '{}'; while [ ! -e '{}' ]; do sleep 0.02; done; exit 3",
        started.display(),
        go_on.display()
    );
    let child = retry_std()
        .args([
            "-n",
            "1",
            "--circuit",
            "midrun",
            "--state-url",
            &redis.url(),
            "--",
            "sh",
            "-c",
            &body,
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&started, Duration::from_secs(5));
    redis.stop();
    std::fs::write(&go_on, "").unwrap();
    let began = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot record the result"));
    assert!(began.elapsed() < Duration::from_secs(3));
}

#[test]
fn a_wrong_password_gives_a_clear_error_and_the_job_runs() {
    let Some(redis) = Redis::start(Some("right-password")) else {
        return;
    };
    let url = format!("redis://:wrong-password@127.0.0.1:{}/0", redis.port);
    retry()
        .args([
            "-n",
            "1",
            "--circuit",
            "auth",
            "--state-url",
            &url,
            "--",
            "sh",
            "-c",
            "echo ran; exit 4",
        ])
        .assert()
        .code(4)
        .stdout("ran\n")
        .stderr(
            predicate::str::contains("authentication failed")
                .or(predicate::str::contains("AuthenticationFailed")),
        )
        .stderr(predicate::str::contains("running as if it were closed"))
        .stderr(predicate::str::contains("wrong-password").not());
    // The right password works, and the JSON log carries the warning event.
    let out = retry()
        .args([
            "--log-format",
            "json",
            "-n",
            "1",
            "--circuit",
            "auth",
            "--state-url",
            &url,
            "--",
            "true",
        ])
        .output()
        .unwrap();
    let events = json_events(&out.stderr);
    assert_eq!(events[0]["event"], "warning");
    assert_eq!(events[0]["kind"], "circuit");
    retry()
        .args([
            "-n",
            "1",
            "--circuit",
            "auth",
            "--state-url",
            &redis.url(),
            "--",
            "true",
        ])
        .assert()
        .success()
        .stderr("");
}

#[test]
fn an_unreachable_or_silent_redis_never_hangs_the_job() {
    // Nothing listens: refused at once.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = Instant::now();
    retry()
        .args([
            "-n",
            "1",
            "--circuit",
            "gone",
            "--state-url",
            &format!("redis://127.0.0.1:{port}/0"),
            "--",
            "true",
        ])
        .assert()
        .success()
        .stderr(predicate::str::contains("running as if it were closed"));
    assert!(started.elapsed() < Duration::from_secs(3));

    // A server that accepts and never answers: the command timeout ends it.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let holder = std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in silent.incoming().take(4) {
            held.push(stream);
        }
        std::thread::sleep(Duration::from_secs(5));
    });
    let started = Instant::now();
    retry()
        .args([
            "-n",
            "1",
            "--state-timeout",
            "200ms",
            "--circuit",
            "slow",
            "--state-url",
            &format!("redis://127.0.0.1:{port}/0"),
            "--",
            "sh",
            "-c",
            "exit 6",
        ])
        .assert()
        .code(6)
        .stderr(predicate::str::contains("running as if it were closed"));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    drop(holder);
}

#[test]
fn a_malformed_state_url_is_a_usage_error() {
    retry()
        .args([
            "--circuit",
            "x",
            "--state-url",
            "http://example",
            "--",
            "true",
        ])
        .assert()
        .code(125)
        .stderr(predicate::str::contains("--state-url"));
}

/// Send one command in RESP (binary-safe, any length); the first reply line.
fn resp_command(port: u16, args: &[&[u8]]) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    stream.write_all(&out).unwrap();
    let mut reply = Vec::new();
    let mut byte = [0u8; 1];
    while stream.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
        reply.push(byte[0]);
    }
    String::from_utf8_lossy(&reply).trim().to_string()
}

/// A fake Redis on 127.0.0.1: every connection gets `serve` on its own
/// thread. Lives as long as the test.
fn fake_redis(serve: fn(TcpStream)) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream));
        }
    });
    port
}

/// Read the request, then answer a status line that never ends, one byte
/// every 200 ms: each read gets something well within any timeout.
fn dribble(mut stream: TcpStream) {
    let mut request = [0u8; 4096];
    let _ = stream.read(&mut request);
    if stream.write_all(b"+").is_err() {
        return;
    }
    for _ in 0..150 {
        std::thread::sleep(Duration::from_millis(200));
        if stream.write_all(b"O").is_err() {
            return;
        }
    }
}

#[test]
fn a_dribbling_redis_is_cut_off_at_the_state_timeout() {
    let port = fake_redis(dribble);
    // Plain, and with AUTH and SELECT (answered just as slowly).
    for url in [
        format!("redis://127.0.0.1:{port}/0"),
        format!("redis://:secret@127.0.0.1:{port}/2"),
    ] {
        let started = Instant::now();
        retry()
            .args([
                "-n",
                "1",
                "--state-timeout",
                "1s",
                "--circuit",
                "dribble",
                "--state-url",
                &url,
                "--",
                "sh",
                "-c",
                "exit 6",
            ])
            .timeout(Duration::from_secs(40))
            .assert()
            .code(6)
            .stderr(
                predicate::str::contains("no answer from redis://127.0.0.1")
                    .and(predicate::str::contains("within 1s (gave up after 1."))
                    .and(predicate::str::contains("running as if it were closed"))
                    .and(predicate::str::contains("secret").not()),
            );
        let took = started.elapsed();
        assert!(took < Duration::from_millis(2300), "{url}: {took:?}");
    }
}

#[test]
fn a_paused_redis_costs_one_state_timeout() {
    // Accepts (the kernel does), never answers: AUTH and SELECT included,
    // the whole exchange ends at the one deadline.
    let port = fake_redis(|stream| {
        std::thread::sleep(Duration::from_secs(20));
        drop(stream);
    });
    let started = Instant::now();
    retry()
        .args([
            "-n",
            "1",
            "--state-timeout",
            "1s",
            "--circuit",
            "paused",
            "--state-url",
            &format!("redis://:pw@127.0.0.1:{port}/3"),
            "--",
            "true",
        ])
        .assert()
        .success()
        .stderr(predicate::str::contains("gave up after 1."));
    let took = started.elapsed();
    assert!(took < Duration::from_millis(1800), "{took:?}");
}

#[test]
fn redis_errors_and_garbage_replies_are_one_line_said_once() {
    fn answer(mut stream: TcpStream, reply: &[u8]) {
        let mut request = [0u8; 4096];
        let _ = stream.read(&mut request);
        let _ = stream.write_all(reply);
        std::thread::sleep(Duration::from_millis(500));
    }
    let error = fake_redis(|s| answer(s, b"-ERR something bad\r\nsecond line\r\n"));
    let garbage = fake_redis(|s| {
        answer(
            s,
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n\r\nno\x1b[31m\r\n",
        );
    });
    for (port, said) in [
        (error, "something bad"),
        (garbage, "HTTP/1.1 400 Bad Request"),
    ] {
        let out = retry()
            .args([
                "-n",
                "1",
                "--circuit",
                "odd",
                "--state-url",
                &format!("redis://127.0.0.1:{port}/0"),
                "--",
                "true",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert_eq!(stderr.matches(said).count(), 1, "{stderr}");
        assert!(!stderr.contains('\u{1b}'), "{stderr}");
        assert!(stderr.contains("running as if it were closed"), "{stderr}");
    }
}

#[test]
fn an_oversized_or_out_of_range_value_in_redis_is_corrupt_and_read_as_closed() {
    let Some(redis) = Redis::shared() else {
        return;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let open = serde_json::json!({
        "phase": "open", "failures": 3, "open_until_ms": now + 3_600_000,
        "cooldown_ms": 3_600_000, "probe": null, "updated_ms": now
    })
    .to_string();
    let url = redis.url();
    let run = |name: &str| {
        let mut command = retry();
        command.args(["-n", "1", "--circuit", name, "--state-url", &url]);
        command
    };
    // Larger than any record: never transferred whole, corrupt.
    let mut big = " ".repeat(100 * 1024);
    big.push_str(&open);
    let set = resp_command(
        redis.port,
        &[b"SET", b"retry:circuit:big-value", big.as_bytes()],
    );
    assert_eq!(set, "+OK");
    run("big-value")
        .args(["--", "true"])
        .assert()
        .success()
        .stderr(predicate::str::contains("corrupt").and(predicate::str::contains("64 KiB")));
    // Rewritten closed, small, with its TTL.
    let length = redis.command("STRLEN retry:circuit:big-value").unwrap();
    let length: usize = length.trim_start_matches(':').parse().unwrap();
    assert!(length < 1024, "{length}");
    // The same state, unpadded, is obeyed.
    resp_command(
        redis.port,
        &[b"SET", b"retry:circuit:big-value", open.as_bytes()],
    );
    run("big-value").args(["--", "true"]).assert().code(75);

    // A time past the year 9999: corrupt, not a crash, also for the status.
    let far = br#"{"phase":"open","failures":3,"open_until_ms":300000000000000,"cooldown_ms":60000,"probe":null,"updated_ms":0}"#;
    resp_command(redis.port, &[b"SET", b"retry:circuit:far-value", far]);
    run("far-value")
        .arg("--circuit-status")
        .assert()
        .success()
        .stdout(predicate::str::contains("corrupt").and(predicate::str::contains("closed")));
    resp_command(redis.port, &[b"SET", b"retry:circuit:far-value", far]);
    run("far-value")
        .args(["--", "true"])
        .assert()
        .success()
        .stderr(predicate::str::contains("corrupt"));
}

/// `retry` on budget `name` of `redis` from one "host" (its own state dir):
/// no sleeps, no time flowing in.
fn budget_host(redis: &Redis, state: &std::path::Path, name: &str) -> assert_cmd::Command {
    let mut command = retry();
    command
        .args(["-q", "-d", "0", "--budget", name, "--budget-burst", "2"])
        .args(["--budget-ratio", "0.5", "--budget-min", "0/s"])
        .args(["--state-url", &redis.url(), "--state-dir"])
        .arg(state);
    command
}

#[test]
fn two_hosts_share_one_budget_through_redis() {
    let Some(redis) = Redis::shared() else {
        return;
    };
    let name = format!("fleet-budget-{}", std::process::id());
    let hosts: Vec<tempfile::TempDir> = (0..2).map(|_| scratch()).collect();
    let work = scratch();
    let body = format!("{}; exit 1", tally(work.path(), "attempts"));
    // Host 0 deposits into a full bucket (capped at 2): two retries.
    budget_host(&redis, hosts[0].path(), &name)
        .args(["-n", "10", "--", "sh", "-c", &body])
        .assert()
        .code(1);
    assert_eq!(lines(work.path(), "attempts"), 3);
    // Host 1 finds it empty: its 0.5 buys no retry; a third run's does.
    for expected in [4, 6] {
        budget_host(&redis, hosts[1].path(), &name)
            .args(["-n", "10", "--", "sh", "-c", &body])
            .assert()
            .code(1);
        assert_eq!(lines(work.path(), "attempts"), expected);
    }
    let status = retry()
        .args([
            "--budget",
            &name,
            "--budget-status",
            "--state-url",
            &redis.url(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("3 first attempts, 3 retries allowed"),
        "{text}"
    );
    assert!(text.contains(&format!("retry:budget:{name}")), "{text}");
    for host in &hosts {
        assert_eq!(std::fs::read_dir(host.path()).unwrap().count(), 0);
    }
}

#[test]
fn an_unreachable_budget_store_still_lets_the_job_retry_at_once() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let work = scratch();
    let body = format!("{}; exit 1", tally(work.path(), "attempts"));
    let started = Instant::now();
    retry()
        .args(["-n", "3", "-d", "0", "--budget", "down", "--state-url"])
        .arg(format!("redis://127.0.0.1:{port}/0"))
        .args(["--", "sh", "-c", &body])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("retrying as if it allowed"));
    assert_eq!(lines(work.path(), "attempts"), 3);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

/// Run `openssl` in `dir`; whether it succeeded.
fn openssl(dir: &std::path::Path, args: &[&str]) -> bool {
    Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// A private CA in `dir` (`ca.pem`) and a certificate it signed for
/// 127.0.0.1 (`server.pem`, `server.key`); `false` without openssl.
fn make_private_ca(dir: &std::path::Path) -> bool {
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=retry test private CA",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
        ],
    ) && openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ],
    ) && openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ],
    )
}

/// A redis-server that speaks only TLS, on 127.0.0.1, with the
/// certificate `make_private_ca` made in `dir`; `None` (saying why) when
/// this machine's redis-server has no TLS.
fn start_tls_redis(dir: &std::path::Path) -> Option<Redis> {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log = dir.join("redis.log");
    let mut process = Command::new("redis-server")
        .args(["--port", "0", "--tls-port", &port.to_string()])
        .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .args([
            "--tls-cert-file",
            "server.pem",
            "--tls-key-file",
            "server.key",
        ])
        .args(["--tls-auth-clients", "no"])
        .current_dir(dir)
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Some(status) = process.try_wait().unwrap() {
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            eprintln!(
                "SKIPPED: this redis-server has no TLS (it exited with {status} given --tls-port: {})",
                said.trim().lines().last().unwrap_or("")
            );
            return None;
        }
        assert!(
            Instant::now() < end,
            "redis-server did not listen on TLS port {port}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(Redis {
        process: Some(process),
        port,
        password: None,
    })
}

/// The server the tests start: `RETRY_TEST_REDIS_SERVER` (the Valkey run
/// of these tests, `fleet_deployments`, sets it to a valkey-server), else
/// redis-server.
fn server_binary() -> String {
    std::env::var("RETRY_TEST_REDIS_SERVER")
        .ok()
        .filter(|binary| !binary.is_empty())
        .unwrap_or_else(|| "redis-server".into())
}

/// Whether a redis-server can be started here; `false` (with a message)
/// skips a test, except in CI, where a missing server is a failure.
fn redis_server_found() -> bool {
    let found = Command::new(server_binary())
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok();
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "redis-server is required in CI (scripts/test installs it)"
        );
        eprintln!("SKIPPED: no redis-server binary found (apt-get install redis-server)");
    }
    found
}

#[test]
fn a_rediss_server_with_a_private_ca_is_trusted_with_state_ca_and_only_then() {
    if !redis_server_found() {
        return;
    }
    let work = scratch();
    let dir = work.path();
    if !make_private_ca(dir) {
        eprintln!("SKIPPED: no openssl to make the test's CA");
        return;
    }
    let Some(redis) = start_tls_redis(dir) else {
        return;
    };
    let url = format!("rediss://127.0.0.1:{}/0", redis.port);
    let ca = dir.join("ca.pem");
    let ca = ca.to_str().unwrap();
    // Opens after 2 failed runs: two runs that record a failure through
    // Redis open it, and the next is refused, which only a store that
    // really kept the state can tell.
    let run = |name: &str| {
        let mut command = retry();
        command
            .args(["-n", "1", "--circuit", name, "--circuit-threshold", "2"])
            .args(["--circuit-cooldown", "10m", "--state-url", &url])
            // A debug build reads the system's trust store and shakes hands
            // slowly on a loaded machine (a musl build most of all): the
            // 1 s default is not what this test is about.
            .args(["--state-timeout", "10s"]);
        command
    };

    // Not trusted: the public roots and the system's store do not have
    // the CA. As for any store that cannot be used, the job runs anyway,
    // and the warning says what to do.
    let out = run("tls-untrusted")
        .args(["--", "sh", "-c", "echo ran; exit 3"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n");
    assert!(
        stderr.contains(&format!("Redis at {url}: invalid peer certificate"))
            && stderr.contains("no trusted CA signed the server's certificate")
            && stderr.contains("--state-ca FILE or RETRY_STATE_CA")
            && stderr.contains("running as if it were closed"),
        "{stderr}"
    );

    // --state-ca: trusted; the state is in Redis.
    for _ in 0..2 {
        run("tls-flag")
            .args(["--state-ca", ca, "--", "false"])
            .assert()
            .code(1)
            .stderr(predicate::str::contains("warning").not());
    }
    run("tls-flag")
        .args(["--state-ca", ca, "--", "true"])
        .assert()
        .code(75)
        .stderr(predicate::str::contains("circuit tls-flag is open"));
    retry()
        .args([
            "--circuit",
            "tls-flag",
            "--state-url",
            &url,
            "--state-ca",
            ca,
        ])
        .arg("--circuit-status")
        .assert()
        .success()
        .stdout(predicate::str::contains("circuit tls-flag: open"))
        .stdout(predicate::str::contains(format!(
            "stored in: Redis at {url}, key retry:circuit:tls-flag"
        )));

    // RETRY_STATE_CA: the same.
    for _ in 0..2 {
        run("tls-variable")
            .env("RETRY_STATE_CA", ca)
            .args(["--", "false"])
            .assert()
            .code(1)
            .stderr(predicate::str::contains("warning").not());
    }
    run("tls-variable")
        .env("RETRY_STATE_CA", ca)
        .args(["--", "true"])
        .assert()
        .code(75);

    // A CA installed in the system's store (here through SSL_CERT_FILE,
    // which OpenSSL and the store's reader both honour) needs no flag.
    run("tls-system")
        .env("SSL_CERT_FILE", ca)
        .args(["--", "true"])
        .assert()
        .success()
        .stderr("");
    drop(redis);
}

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "a list of bad CA files, each refused by flag and by variable"
)]
fn a_bad_state_ca_is_a_usage_error_naming_the_flag_or_the_variable() {
    let work = scratch();
    let not_pem = work.path().join("not.pem");
    std::fs::write(&not_pem, "not a certificate\n").unwrap();
    let not_pem = not_pem.to_str().unwrap();
    let empty = work.path().join("empty.pem");
    std::fs::write(&empty, "").unwrap();
    let empty = empty.to_str().unwrap();
    // A FIFO nobody writes to: refused at once, not waited on for ever.
    let fifo = work.path().join("fifo.pem");
    crate::untrusted_inputs::mkfifo(&fifo);
    let fifo = fifo.to_str().unwrap();
    let missing = "/nonexistent/retry-test/ca.pem";
    let rediss = "rediss://127.0.0.1:1/0";
    let refused = |out: std::process::Output, prefix: &str| {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{stderr}");
        assert!(out.stdout.is_empty(), "the command ran: {stderr}");
        assert!(stderr.starts_with(prefix), "{stderr}");
    };
    let ran = ["--", "sh", "-c", "echo ran"];
    // Missing, a directory, empty, not PEM: before anything runs.
    refused(
        retry()
            .args([
                "--circuit",
                "x",
                "--state-url",
                rediss,
                "--state-ca",
                missing,
            ])
            .args(ran)
            .output()
            .unwrap(),
        &format!("retry: error: --state-ca {missing}: cannot read it ("),
    );
    for (file, why) in [
        ("/", "cannot read it (a directory, not a regular file)"),
        ("/dev/null", "cannot read it (a device, not a regular file)"),
        (fifo, "cannot read it (a FIFO, not a regular file)"),
        (empty, "no certificate in it"),
        (not_pem, "no certificate in it"),
    ] {
        refused(
            retry()
                .args(["--budget", "x", "--state-url", rediss, "--state-ca", file])
                .args(ran)
                .output()
                .unwrap(),
            &format!("retry: error: --state-ca {file}: {why}"),
        );
    }
    // The variable, named as the variable; the flag wins over it.
    refused(
        retry()
            .env("RETRY_STATE_CA", missing)
            .args(["--circuit", "x", "--state-url", rediss])
            .args(ran)
            .output()
            .unwrap(),
        &format!("retry: error: RETRY_STATE_CA {missing}: cannot read it ("),
    );
    refused(
        retry()
            .env("RETRY_STATE_CA", not_pem)
            .args([
                "--circuit",
                "x",
                "--state-url",
                rediss,
                "--state-ca",
                missing,
            ])
            .args(ran)
            .output()
            .unwrap(),
        &format!("retry: error: --state-ca {missing}: "),
    );
    // On the command line without a circuit or a budget, or without a
    // rediss:// URL, it would do nothing: refused, like the other state
    // flags.
    refused(
        retry()
            .args(["--state-ca", not_pem])
            .args(ran)
            .output()
            .unwrap(),
        &format!(
            "retry: error: --state-ca {not_pem}: only a circuit or a budget uses it, and none is named"
        ),
    );
    for url in ["redis://127.0.0.1:1/0", "redis+unix:///nonexistent.sock"] {
        refused(
            retry()
                .args(["--circuit", "x", "--state-url", url, "--state-ca", not_pem])
                .args(ran)
                .output()
                .unwrap(),
            &format!("retry: error: --state-ca {not_pem}: only a rediss:// state URL"),
        );
    }
    let state = scratch();
    refused(
        retry()
            .env("RETRY_STATE_URL", rediss)
            .args(["--circuit", "x", "--state-ca", not_pem, "--state-dir"])
            .arg(state.path())
            .args(ran)
            .output()
            .unwrap(),
        &format!("retry: error: --state-ca {not_pem}: only a rediss:// state URL"),
    );
    // The variable is read only by runs that use TLS (exported for every
    // job, it leaves the others alone); empty counts as unset.
    retry()
        .env("RETRY_STATE_CA", missing)
        .args(["--circuit", "x", "--state-dir"])
        .arg(state.path())
        .args(ran)
        .assert()
        .success()
        .stdout("ran\n");
    retry()
        .env("RETRY_STATE_CA", "")
        .args(["-n", "1", "--state-timeout", "200ms", "--circuit", "x"])
        .args(["--state-url", rediss])
        .args(ran)
        .assert()
        .success()
        .stdout("ran\n")
        .stderr(predicate::str::contains("running as if it were closed"));
}

#[test]
fn one_probe_across_pid_namespaces_through_redis() {
    if !crate::circuit::pid_namespaces_work("one_probe_across_pid_namespaces_through_redis") {
        return;
    }
    let Some(redis) = Redis::shared() else {
        return;
    };
    let key = "retry:circuit:fleet-pidns";
    let set = resp_command(
        redis.port,
        &[
            b"SET",
            key.as_bytes(),
            crate::circuit::cooldown_over().as_bytes(),
        ],
    );
    assert_eq!(set, "+OK");
    let url = redis.url();
    crate::circuit::one_probe_across_pid_namespaces(&["--state-url", &url], "fleet-pidns");
}

#[test]
fn status_through_redis_only_reads() {
    // A user that may read, and neither write nor run a script: the status
    // needs no more, also for a corrupt value (left for a run to replace)
    // and a budget nobody made yet.
    let Some(redis) = Redis::start(None) else {
        return;
    };
    let acl = redis
        .command("ACL SETUSER reader on >secret ~retry:* +@read +watch +select +ping +auth")
        .unwrap();
    assert_eq!(acl, "+OK");
    let corrupt = br#"{"phase":"op"#;
    let set = resp_command(redis.port, &[b"SET", b"retry:circuit:read-only", corrupt]);
    assert_eq!(set, "+OK");
    let url = format!("redis://reader:secret@127.0.0.1:{}/0", redis.port);
    let out = retry()
        .args([
            "--circuit",
            "read-only",
            "--state-url",
            &url,
            "--circuit-status",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("corrupt"), "{stdout}");
    assert!(stdout.contains("circuit read-only: closed"), "{stdout}");
    // Left as it was.
    let kept = redis.command("STRLEN retry:circuit:read-only").unwrap();
    assert_eq!(kept, format!(":{}", corrupt.len()));
    let out = retry()
        .args([
            "--budget",
            "read-only",
            "--state-url",
            &url,
            "--budget-status",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("10 of 10 tokens"), "{stdout}");
    assert_eq!(
        redis.command("EXISTS retry:budget:read-only").unwrap(),
        ":0"
    );
}

#[test]
fn an_unreachable_redis_is_said_under_quiet_and_in_done() {
    let (out, events) = json_run(&[
        "-q",
        "--circuit",
        "far",
        "--budget",
        "far",
        "--state-url",
        "redis://127.0.0.1:1/0",
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let kinds: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "warning")
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["circuit", "budget"], "{events:?}");
    let done: Vec<_> = events.iter().filter(|e| e["event"] == "done").collect();
    assert_eq!(done.len(), 1, "{events:?}");
    assert_eq!(done[0]["circuit_in_force"], false, "{events:?}");
    assert_eq!(done[0]["budget_in_force"], false, "{events:?}");
}
