//! A real 3-master Redis Cluster (and a Valkey one): circuits and budgets
//! work through whichever node a run is pointed at, and through the
//! comma-separated seed list; an update lands while its slot migrates.

use std::time::Duration;

use predicates::prelude::*;

use super::harness::{Deployment, Held, Resp, Server, call, on_redis_and_valkey};
use crate::util::*;

fn url(port: u16) -> String {
    format!("redis://127.0.0.1:{port}/0")
}

/// `redis://127.0.0.1:A,127.0.0.1:B,127.0.0.1:C/0`.
fn seeds(nodes: &[u16]) -> String {
    let hosts: Vec<String> = nodes.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    format!("redis://{}/0", hosts.join(","))
}

fn slot_of(node: u16, key: &str) -> i64 {
    match call(node, &["CLUSTER", "KEYSLOT", key]) {
        Resp::Int(slot) => slot,
        other => panic!("{other:?}"),
    }
}

/// The node serving `key`'s slot, as the first node's CLUSTER SLOTS says.
fn owner(nodes: &[u16], key: &str) -> u16 {
    let slot = slot_of(nodes[0], key);
    let Resp::Array(ranges) = call(nodes[0], &["CLUSTER", "SLOTS"]) else {
        panic!("CLUSTER SLOTS")
    };
    for range in ranges {
        if let Resp::Array(items) = range
            && let [Resp::Int(first), Resp::Int(last), Resp::Array(master), ..] = items.as_slice()
            && (*first..=*last).contains(&slot)
            && let Some(Resp::Int(port)) = master.get(1)
        {
            return *port as u16;
        }
    }
    panic!("no node serves slot {slot}")
}

/// A run of the circuit `name` (opens after `threshold` failed runs, for an
/// hour) through `urls` (each a `--state-url`).
fn circuit_run(name: &str, threshold: &str, urls: &[String]) -> assert_cmd::Command {
    let mut command = retry();
    command
        .args([
            "-n",
            "1",
            "--circuit",
            name,
            "--circuit-threshold",
            threshold,
        ])
        .args(["--circuit-cooldown", "1h"]);
    for url in urls {
        command.args(["--state-url", url]);
    }
    command
}

fn circuits_open_through_any_node(cluster: &Deployment) {
    let nodes = cluster.ports("nodes");
    let work = scratch();
    let names = [
        "any-node-a",
        "any-node-b",
        "any-node-c",
        "any-seed",
        "seed-flags",
    ];
    for (j, name) in names.iter().enumerate() {
        // Run i goes to node i + j: two of three runs reach a node that
        // does not serve the key (MOVED), whichever it is; the last names
        // go through the seed list, then through one --state-url per node.
        let via = |i: usize| match j {
            3 => vec![seeds(&nodes)],
            4 => nodes.iter().map(|&node| url(node)).collect(),
            _ => vec![url(nodes[(i + j) % 3])],
        };
        for i in 0..2 {
            circuit_run(name, "2", &via(i))
                .args(["--", "false"])
                .assert()
                .code(1)
                .stderr(predicate::str::contains("warning").not());
        }
        let ran = tally(work.path(), name);
        circuit_run(name, "2", &via(2))
            .args(["--", "sh", "-c", &ran])
            .assert()
            .code(75)
            .stderr(predicate::str::contains("is open"));
        assert_eq!(lines(work.path(), name), 0, "{name}");
        // One key, where its slot is served, with a TTL.
        let key = format!("retry:circuit:{name}");
        match call(owner(&nodes, &key), &["PTTL", &key]) {
            Resp::Int(ttl) => assert!(ttl > 0, "{key}: {ttl}"),
            other => panic!("{key}: {other:?}"),
        }
    }
}

fn a_budget_is_shared_through_any_node(cluster: &Deployment) {
    let nodes = cluster.ports("nodes");
    let work = scratch();
    let body = format!("{}; exit 1", tally(work.path(), "attempts"));
    let run = |url: String| {
        let mut command = retry();
        command
            .args(["-q", "-d", "0", "-n", "10", "--budget", "cluster-budget"])
            .args(["--budget-burst", "2", "--budget-ratio", "0.5"])
            .args(["--budget-min", "0/s", "--state-url", &url])
            .args(["--", "sh", "-c", &body]);
        command
    };
    // Through node 0 a full bucket (2): two retries. Through node 1 the
    // run's 0.5 buys none; through node 2, with the next 0.5, one.
    for (node, attempts) in [(0, 3), (1, 4), (2, 6)] {
        run(url(nodes[node])).assert().code(1).stderr("");
        assert_eq!(lines(work.path(), "attempts"), attempts, "node {node}");
    }
    let status = retry()
        .args(["--budget", "cluster-budget", "--budget-status"])
        .args(["--state-url", &seeds(&nodes)])
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&status);
    assert!(
        stdout.contains("3 first attempts, 3 retries allowed"),
        "{stdout}{stderr}"
    );
}

fn an_update_lands_while_its_slot_migrates(cluster: &Deployment) {
    let nodes = cluster.ports("nodes");
    let name = "migrating";
    let key = format!("retry:circuit:{name}");
    let slot = slot_of(nodes[0], &key).to_string();
    let source = owner(&nodes, &key);
    let target = *nodes.iter().find(|&&p| p != source).unwrap();
    let third = *nodes.iter().find(|&&p| p != source && p != target).unwrap();
    let id = |port| call(port, &["CLUSTER", "MYID"]).text();
    let (source_id, target_id) = (id(source), id(target));
    let ok = Resp::Text("OK".into());
    // One failed run before: the key is on the source.
    circuit_run(name, "3", &[url(third)])
        .args(["--", "false"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("warning").not());
    let set = |port, how: &str, node: &str| call(port, &["CLUSTER", "SETSLOT", &slot, how, node]);
    assert_eq!(set(target, "IMPORTING", &source_id), ok);
    assert_eq!(set(source, "MIGRATING", &target_id), ok);
    // A run during which the key moves: it read the circuit on the
    // source, and records its result on the target (the source answers
    // ASK; ASKING and the script there). Through the third node: MOVED
    // first.
    let gate = Held::new();
    let migration = std::thread::spawn({
        let (started, go, key) = (gate.started.clone(), gate.go.clone(), key.clone());
        move || {
            wait_for_file(&started, Duration::from_secs(20));
            let port = target.to_string();
            let reply = call(source, &["MIGRATE", "127.0.0.1", &port, &key, "0", "5000"]);
            std::fs::write(&go, "").unwrap();
            reply
        }
    });
    let run = circuit_run(name, "3", &[url(third)])
        .args(["--", "sh", "-c", &gate.body])
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let moved = migration.join().unwrap();
    let (_, stderr) = texts(&run);
    assert_eq!(moved, ok, "MIGRATE");
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    assert_eq!(
        call(source, &["EXISTS", &key]),
        Resp::Error(format!("ASK {slot} 127.0.0.1:{target}"))
    );
    // A third failed run through the source itself (ASK) opens the circuit.
    circuit_run(name, "3", &[url(source)])
        .args(["--", "false"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("warning").not());
    // The migration ends; the circuit is open, seen through any node.
    for port in &nodes {
        assert_eq!(set(*port, "NODE", &target_id), ok);
    }
    for port in &nodes {
        circuit_run(name, "3", &[url(*port)])
            .args(["--", "true"])
            .assert()
            .code(75);
    }
    assert_eq!(owner(&nodes, &key), target);
}

/// One cluster for all the checks (starting one takes about 2 s).
fn a_cluster_shares_circuits_and_budgets(server: Server) {
    let Some(cluster) = Deployment::up("cluster", server) else {
        return;
    };
    circuits_open_through_any_node(&cluster);
    a_budget_is_shared_through_any_node(&cluster);
    an_update_lands_while_its_slot_migrates(&cluster);
}

#[test]
fn a_cluster_shares_circuits_and_budgets_through_any_node_and_while_a_slot_migrates() {
    on_redis_and_valkey(a_cluster_shares_circuits_and_budgets);
}
