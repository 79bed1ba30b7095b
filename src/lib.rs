//! `retry`: run a command until it succeeds, with capped exponential
//! backoff and jitter. The binary is `src/main.rs`; this library holds
//! everything, so that benchmarks and tests drive the very same code
//! (the contention simulation uses `backoff`).

pub mod app;
pub mod attempt;
pub mod backoff;
pub mod child;
pub mod circuit;
pub mod classify;
pub mod cli;
pub mod config;
pub mod exit;
pub mod explain;
pub mod generate;
pub mod hint;
pub mod metrics;
pub mod output;
pub mod preset;
pub mod report;
pub mod runner;
pub mod signals;
pub mod stdin;
pub mod values;
