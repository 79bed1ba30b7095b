//! A real master, its replica and three sentinels (Redis, and Valkey):
//! runs find the master through the sentinels and follow a failover; a
//! replica's or a sentinel's URL given as a server's is said plainly; a
//! sentinel that names a replica is not believed.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use predicates::prelude::*;

use super::harness::{Deployment, Held, Resp, Server, call, fake_server, on_redis_and_valkey};
use crate::util::*;

/// The failed runs in a row stored on the server at `port`.
fn failures(port: u16, key: &str) -> u64 {
    match call(port, &["GET", key]) {
        Resp::Text(json) => serde_json::from_str::<serde_json::Value>(&json).unwrap()["failures"]
            .as_u64()
            .unwrap(),
        other => panic!("{key} on {port}: {other:?}"),
    }
}

/// The master every sentinel names now.
fn named_master(sentinels: &[u16]) -> Option<u16> {
    let named: Vec<Resp> = sentinels
        .iter()
        .map(|p| call(*p, &["SENTINEL", "get-master-addr-by-name", "mymaster"]))
        .collect();
    let first = named.first()?.clone();
    let Resp::Array(address) = &first else {
        return None;
    };
    named
        .iter()
        .all(|n| *n == first)
        .then(|| address[1].text().parse().ok())
        .flatten()
}

/// A sentinel that names 127.0.0.1:`port` as the master, whatever it is
/// asked.
fn naming(port: u16) -> impl Fn(TcpStream) + Send + Sync + 'static {
    move |mut stream| {
        let mut request = [0u8; 4096];
        let _ = stream.read(&mut request);
        let port = port.to_string();
        let reply = format!("*2\r\n$9\r\n127.0.0.1\r\n${}\r\n{port}\r\n", port.len());
        let _ = stream.write_all(reply.as_bytes());
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[allow(clippy::too_many_lines, reason = "a failover told step by step")]
fn sentinel_finds_the_master_and_follows_a_failover(server: Server) {
    let Some(deployment) = Deployment::up("sentinel", server) else {
        return;
    };
    let (master, replica) = (deployment.port("master"), deployment.port("replica"));
    let sentinels = deployment.ports("sentinels");
    let hosts: Vec<String> = sentinels.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let url = format!("redis+sentinel://{}/mymaster", hosts.join(","));
    let name = format!("failover-{server:?}");
    let key = format!("retry:circuit:{name}");
    let run = |state_url: &str| {
        let mut command = retry();
        command
            .args(["-n", "1", "--circuit", &name, "--circuit-threshold", "100"])
            .args(["--state-url", state_url, "--state-timeout", "5s", "--"]);
        command
    };
    // Through the sentinels: the master holds the record.
    run(&url)
        .arg("false")
        .assert()
        .code(1)
        .stderr(predicate::str::contains("warning").not());
    assert_eq!(failures(master, &key), 1);

    // A replica's URL: the job runs, and the warning says what to change.
    run(&format!("redis://127.0.0.1:{replica}/0"))
        .arg("false")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(format!(
            "this server is a replica (of 127.0.0.1:{master}), and takes no writes: point --state-url at the master, or at the sentinels with redis+sentinel://"
        )));
    // A sentinel's URL as a server's: said too.
    run(&format!("redis://127.0.0.1:{}/0", sentinels[0]))
        .arg("false")
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "this is a sentinel: name the sentinels with redis+sentinel://",
        ));
    // A sentinel naming the replica as the master is not believed: its
    // ROLE says replica; given up within --state-timeout, saying so.
    let fake = fake_server(naming(replica));
    let started = Instant::now();
    retry()
        .args(["-n", "1", "--circuit", &name, "--state-timeout", "1s"])
        .arg("--state-url")
        .arg(format!("redis+sentinel://127.0.0.1:{fake}/mymaster"))
        .args(["--", "true"])
        .assert()
        .code(0)
        .stderr(predicate::str::contains(format!(
            "names 127.0.0.1:{replica}, which answers as a replica"
        )));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    // A forced failover while a run's command runs, and during a series of
    // runs: every run ends with the command's status within the state
    // timeout (those in the middle may warn and run as if closed); the run
    // that started before records its result on the new master, and so
    // does the next one.
    let gate = Held::new();
    let mut waiting = Some({
        let mut command = run(&url);
        command.args(["sh", "-c", &gate.body]);
        std::thread::spawn(move || command.timeout(Duration::from_secs(60)).output().unwrap())
    });
    wait_for_file(&gate.started, Duration::from_secs(20));
    let ok = Resp::Text("OK".into());
    assert_eq!(
        call(sentinels[0], &["SENTINEL", "FAILOVER", "mymaster"]),
        ok
    );
    let failover = Instant::now();
    loop {
        let started = Instant::now();
        run(&url).arg("false").assert().code(1);
        assert!(
            started.elapsed() < Duration::from_secs(7),
            "{:?}",
            started.elapsed()
        );
        if named_master(&sentinels) == Some(replica) {
            break;
        }
        assert!(
            failover.elapsed() < Duration::from_secs(30),
            "the sentinels never named the replica"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    for _ in 0..2 {
        let before = failures(replica, &key);
        let started = Instant::now();
        let out = match waiting.take() {
            Some(run) => {
                std::fs::write(&gate.go, "").unwrap();
                run.join().unwrap()
            }
            None => run(&url).arg("false").output().unwrap(),
        };
        let (_, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(!stderr.contains("warning"), "{stderr}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(failures(replica, &key), before + 1);
    }
}

#[test]
fn sentinel_finds_the_master_and_follows_a_failover_on_redis_and_valkey() {
    on_redis_and_valkey(sentinel_finds_the_master_and_follows_a_failover);
}
