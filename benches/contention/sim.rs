//! A discrete-event re-implementation of Marc Brooker's optimistic-
//! concurrency backoff simulator ("Exponential Backoff And Jitter", AWS
//! Architecture Blog), driven by retry's own `backoff` module.
//!
//! The model: N clients each read a row's version from one server, then
//! write it back; the write succeeds only if the version is unchanged, and
//! bumps it. A client whose write failed backs off, then reads again. Every
//! message leg takes |Normal(10 ms, sd 2 ms)|. Backoff base 5 ms, cap 2 s;
//! the first retry already uses n = 1 (ceiling 10 ms). "Calls" counts the
//! writes reaching the server; "time" is when the last client is done.
//!
//! Mapping onto retry's policy (whose n counts from 0): the exponential
//! strategies use `--delay 10ms` (so retry n=0 has ceiling 10 ms = 5 ms * 2^1);
//! decorrelated jitter uses `--delay 5ms` (its draws start from the base);
//! "no backoff" is `--delay 0`.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand_distr::{Distribution, Normal};
use retry::policy::backoff::{Backoff, Policy};
use retry::values::Jitter;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Strategy {
    NoJitter,
    Decorrelated,
    Equal,
    Full,
    NoBackoff,
}

impl Strategy {
    pub(crate) const ALL: [Strategy; 5] = [
        Strategy::NoJitter,
        Strategy::Decorrelated,
        Strategy::Equal,
        Strategy::Full,
        Strategy::NoBackoff,
    ];

    /// The name in the reference data (`brooker-reference.csv`).
    pub(crate) fn reference_name(self) -> &'static str {
        match self {
            Strategy::NoJitter => "Exponential",
            Strategy::Decorrelated => "Decorr",
            Strategy::Equal => "EqualJitter",
            Strategy::Full => "FullJitter",
            Strategy::NoBackoff => "None",
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Strategy::NoJitter => "no jitter",
            Strategy::Decorrelated => "decorrelated",
            Strategy::Equal => "equal",
            Strategy::Full => "full",
            Strategy::NoBackoff => "no backoff",
        }
    }

    fn policy(self) -> Policy {
        let ms = Duration::from_millis;
        let (delay, jitter) = match self {
            Strategy::NoJitter => (ms(10), Jitter::None),
            Strategy::Decorrelated => (ms(5), Jitter::Decorrelated),
            Strategy::Equal => (ms(10), Jitter::Equal),
            Strategy::Full => (ms(10), Jitter::Full),
            Strategy::NoBackoff => (Duration::ZERO, Jitter::None),
        };
        Policy {
            delay,
            multiplier: 2.0,
            cap: ms(2000),
            jitter,
        }
    }
}

/// What arrives where, and when (simulated milliseconds).
#[derive(Clone, Copy, Debug)]
enum Message {
    /// A read request reaches the server.
    Read,
    /// The server's version reaches the client.
    ReadReply(u64),
    /// A write with the version read reaches the server.
    Write(u64),
    /// The server's verdict reaches the client.
    WriteReply(bool),
}

struct Event {
    at: f64,
    /// Insertion order: breaks ties so runs are reproducible.
    order: u64,
    client: usize,
    message: Message,
}

impl PartialEq for Event {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Event {
    // Reversed: BinaryHeap is a max-heap, we want the earliest event.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .at
            .total_cmp(&self.at)
            .then(other.order.cmp(&self.order))
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Outcome {
    /// When the last client finished (simulated ms).
    pub time: f64,
    /// Writes that reached the server.
    pub calls: f64,
}

/// One run: `clients` clients updating one row under `strategy`.
pub(crate) fn run_once(clients: usize, strategy: Strategy, rng: &mut SmallRng) -> Outcome {
    let network = Normal::new(10.0, 2.0).expect("valid normal");
    let policy = strategy.policy();
    let mut backoffs: Vec<Backoff<'_>> = (0..clients).map(|_| policy.sleeps()).collect();
    let mut queue = BinaryHeap::new();
    let mut order = 0;
    let mut push = |queue: &mut BinaryHeap<Event>, at: f64, client: usize, message: Message| {
        order += 1;
        queue.push(Event {
            at,
            order,
            client,
            message,
        });
    };
    let leg = |rng: &mut SmallRng| f64::abs(network.sample(rng));

    for client in 0..clients {
        let at = leg(rng);
        push(&mut queue, at, client, Message::Read);
    }
    let mut version = 0u64;
    let mut outcome = Outcome::default();
    while let Some(event) = queue.pop() {
        outcome.time = event.at;
        let now = event.at;
        match event.message {
            Message::Read => {
                let at = now + leg(rng);
                push(&mut queue, at, event.client, Message::ReadReply(version));
            }
            Message::ReadReply(seen) => {
                let at = now + leg(rng);
                push(&mut queue, at, event.client, Message::Write(seen));
            }
            Message::Write(seen) => {
                outcome.calls += 1.0;
                let accepted = seen == version;
                if accepted {
                    version += 1;
                }
                let at = now + leg(rng);
                push(&mut queue, at, event.client, Message::WriteReply(accepted));
            }
            Message::WriteReply(true) => {}
            Message::WriteReply(false) => {
                let sleep = backoffs[event.client].next(rng).delay.as_secs_f64() * 1000.0;
                let at = now + leg(rng) + sleep;
                push(&mut queue, at, event.client, Message::Read);
            }
        }
    }
    outcome
}

/// The mean over `runs` runs, seeded.
pub(crate) fn mean(clients: usize, strategy: Strategy, runs: u32, seed: u64) -> Outcome {
    let mut rng = SmallRng::seed_from_u64(seed ^ (clients as u64) << 8 ^ strategy as u64);
    let (mut time, mut calls) = (0.0, 0.0);
    for _ in 0..runs {
        let outcome = run_once(clients, strategy, &mut rng);
        time += outcome.time;
        calls += outcome.calls;
    }
    Outcome {
        time: time / f64::from(runs),
        calls: calls / f64::from(runs),
    }
}

/// The published figures: (clients, strategy) -> (time mean, calls mean).
pub(crate) fn reference() -> Vec<(usize, String, f64, f64)> {
    let csv = include_str!("reference.csv");
    csv.lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            Some((
                fields[0].parse().ok()?,
                fields[1].to_string(),
                fields[2].parse().ok()?,
                fields[5].parse().ok()?,
            ))
        })
        .collect()
}

pub(crate) fn reference_point(clients: usize, strategy: Strategy) -> Option<(f64, f64)> {
    reference()
        .into_iter()
        .find(|(c, name, _, _)| *c == clients && name == strategy.reference_name())
        .map(|(_, _, time, calls)| (time, calls))
}
