//! The contention simulation's correctness (the benchmark itself is
//! `cargo bench --bench contention`): with a fixed seed it keeps the
//! published orderings and lands near the published calls figures.

#[path = "../../benches/contention/sim.rs"]
#[allow(dead_code)]
mod sim;

use sim::Strategy;

#[test]
fn the_simulation_keeps_the_published_orderings_and_calls() {
    for clients in [50, 100] {
        let calls: Vec<f64> = Strategy::ALL
            .iter()
            .map(|&s| sim::mean(clients, s, 40, 7).calls)
            .collect();
        let [no_jitter, decorrelated, equal, full, no_backoff] = calls[..] else {
            unreachable!()
        };
        // Full jitter does the least work, no backoff the most.
        assert!(
            full < equal
                && equal < decorrelated
                && decorrelated < no_jitter
                && no_jitter < no_backoff,
            "{clients} clients: {calls:?}"
        );
        for (strategy, ours) in Strategy::ALL.iter().zip(&calls) {
            let (_, reference) = sim::reference_point(clients, *strategy).unwrap();
            let off = (ours - reference).abs() / reference;
            assert!(
                off < 0.05,
                "{clients} clients, {}: {ours:.1} calls vs {reference:.1}",
                strategy.label()
            );
        }
    }
}
