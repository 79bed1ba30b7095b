//! Confused or hostile deployments: nodes that redirect in a loop or to a
//! host that is gone, a seed whose slot map never ends, seeds that are no
//! cluster. Each costs one warning within `--state-timeout`, and the job
//! runs as if the circuit were closed.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use predicates::prelude::*;

use super::harness::{Deployment, Server, fake_server};
use crate::util::*;

/// Answer each command read with what `reply` makes of its name and the
/// server's own port, for as long as the client talks.
fn answering(reply: fn(&[u8], u16) -> Vec<u8>) -> impl Fn(TcpStream) + Send + Sync + 'static {
    move |mut stream: TcpStream| {
        let own = stream.local_addr().unwrap().port();
        let mut request = vec![0u8; 65536];
        while let Ok(n) = stream.read(&mut request) {
            if n == 0 {
                return;
            }
            // A command is `*N`, `$LEN`, its name, ...
            let lines: Vec<&[u8]> = request[..n].split(|&b| b == b'\n').collect();
            for (i, line) in lines.iter().enumerate() {
                if line.first() == Some(&b'*') {
                    let name = lines.get(i + 2).map_or(&b""[..], |name| name.trim_ascii());
                    if stream.write_all(&reply(name, own)).is_err() {
                        return;
                    }
                }
            }
        }
    }
}

/// A run through `url` that must end well within its `--state-timeout`
/// of 5 s, with the command's status and one warning containing `said`.
fn warned_within_a_moment(url: &str, said: &str) {
    let started = Instant::now();
    retry()
        .args(["-n", "1", "--circuit", "hostile", "--state-timeout", "5s"])
        .args(["--state-url", url, "--", "true"])
        .assert()
        .code(0)
        .stderr(
            predicate::str::contains(said)
                .and(predicate::str::contains("running as if it were closed")),
        );
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "{url}: {took:?}");
}

#[test]
fn a_node_that_redirects_to_itself_forever_is_left_after_five_redirections() {
    let looping = fake_server(answering(|_, own| {
        format!("-MOVED 258 127.0.0.1:{own}\r\n").into_bytes()
    }));
    warned_within_a_moment(
        &format!("redis://127.0.0.1:{looping}/0"),
        "more than 5 redirections for one key",
    );
    let asking = fake_server(answering(|name, own| match name {
        b"ASKING" => b"+OK\r\n".to_vec(),
        _ => format!("-ASK 258 127.0.0.1:{own}\r\n").into_bytes(),
    }));
    warned_within_a_moment(
        &format!("redis://127.0.0.1:{asking}/0"),
        "more than 5 redirections for one key",
    );
}

#[test]
fn a_redirection_to_a_host_that_is_gone_names_it() {
    let gone = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // The port is free again: nobody listens there.
    let redirect = fake_server(move |mut stream: TcpStream| {
        let mut request = [0u8; 4096];
        let _ = stream.read(&mut request);
        let _ = stream.write_all(format!("-MOVED 258 127.0.0.1:{gone}\r\n").as_bytes());
        std::thread::sleep(Duration::from_millis(300));
    });
    warned_within_a_moment(
        &format!("redis://127.0.0.1:{redirect}/0"),
        &format!("127.0.0.1:{gone}: connection refused"),
    );
}

#[test]
fn a_slot_map_that_never_ends_is_refused_not_read() {
    // Arrays of 16384 arrays, nested: far more replies than any slot map.
    let endless = |mut stream: TcpStream| {
        let mut request = [0u8; 4096];
        let _ = stream.read(&mut request);
        if stream
            .write_all(b"*16384\r\n*16384\r\n*16384\r\n*16384\r\n")
            .is_err()
        {
            return;
        }
        let leaf = b":0\r\n".repeat(4096);
        for _ in 0..20_000 {
            if stream.write_all(&leaf).is_err() {
                return;
            }
        }
    };
    let too_many = |mut stream: TcpStream| {
        let mut request = [0u8; 4096];
        let _ = stream.read(&mut request);
        let _ = stream.write_all(b"*99999999\r\n");
        std::thread::sleep(Duration::from_millis(300));
    };
    let (a, b) = (fake_server(endless), fake_server(too_many));
    warned_within_a_moment(
        &format!("redis://127.0.0.1:{a},127.0.0.1:{b}/0"),
        "no seed node gave the cluster's slot map",
    );
}

#[test]
fn seeds_that_are_no_cluster_say_so() {
    let Some(single) = Deployment::up("single", Server::Redis) else {
        return;
    };
    let port = single.port("port");
    warned_within_a_moment(
        &format!("redis://127.0.0.1:{port},127.0.0.1:{port}/0"),
        "is not a cluster node",
    );
}
