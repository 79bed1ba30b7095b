//! `retry`: run a command until it succeeds, with capped exponential
//! backoff and jitter. The binary is `src/main.rs`; this library holds
//! everything, so that benchmarks and tests drive the very same code (the
//! contention simulation uses `backoff`). Only what they need is public.
//!
//! Rooms, from the bottom up (a room imports only rooms below it;
//! `tests/integration/house.rs` checks it):
//! `text`, `values`, `fd`, `exit`, `signals` - `safe_fs`, `ci` - `backoff`,
//! `hint`, `child` - `output`, `rules`, `classify`, `decision`, `stdin`,
//! `deliver` - `presets`, `attempt`, `hook`, `report`, `circuit` - `generate`
//! - `cli` - `config` - `explain`, `runner`, `metrics` - `app`.

pub mod app;
mod attempt;
pub mod backoff;
mod budget;
mod child;
mod ci;
mod circuit;
mod classify;
mod cli;
mod config;
mod decision;
mod deliver;
pub mod exit;
mod explain;
mod fd;
mod generate;
mod hint;
mod hook;
mod metrics;
mod output;
mod presets;
mod report;
mod rules;
mod runner;
mod safe_fs;
mod signals;
mod stdin;
mod text;
pub mod values;
