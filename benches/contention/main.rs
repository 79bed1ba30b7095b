//! `cargo bench --bench contention`: Brooker's contention simulation, driven
//! by retry's own backoff code, against the published reference figures.
//! Prints a Markdown table (the one in BENCHMARKS.md).
//!
//! Options: `--runs N` (default 100), `--seed S`, `--clients 10,50,100`.

// A benchmark reports its figures on stdout.
#![allow(clippy::print_stdout)]

mod sim;

use sim::Strategy;

fn main() {
    let mut runs = 100;
    let mut seed = 1;
    let mut clients: Vec<usize> = (1..=19).map(|i| i * 10).collect();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => runs = args.next().and_then(|v| v.parse().ok()).expect("--runs N"),
            "--seed" => seed = args.next().and_then(|v| v.parse().ok()).expect("--seed S"),
            "--clients" => {
                clients = args
                    .next()
                    .expect("--clients LIST")
                    .split(',')
                    .map(|c| c.parse().expect("a number"))
                    .collect();
            }
            // cargo bench passes --bench; ignore what we do not know.
            _ => {}
        }
    }
    println!(
        "Contention simulation: {runs} runs per point, seed {seed}; ours vs. reference (mean of 5 seeds of the original)."
    );
    println!();
    println!(
        "| clients | strategy | calls (ours) | calls (ref) | diff | time ms (ours) | time ms (ref) | diff |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    let mut worst_calls: f64 = 0.0;
    for &count in &clients {
        for strategy in Strategy::ALL {
            let ours = sim::mean(count, strategy, runs, seed);
            let (ref_time, ref_calls) =
                sim::reference_point(count, strategy).unwrap_or((f64::NAN, f64::NAN));
            let calls_diff = (ours.calls - ref_calls) / ref_calls * 100.0;
            let time_diff = (ours.time - ref_time) / ref_time * 100.0;
            worst_calls = worst_calls.max(calls_diff.abs());
            println!(
                "| {count} | {} | {:.1} | {ref_calls:.1} | {calls_diff:+.1}% | {:.0} | {ref_time:.0} | {time_diff:+.1}% |",
                strategy.label(),
                ours.calls,
                ours.time
            );
        }
    }
    println!();
    println!("Largest difference in calls: {worst_calls:.1}%");
}
