//! `retry`: run a command until it succeeds, with capped exponential
//! backoff and jitter. The binary is `src/main.rs`; this library holds
//! everything, so that benchmarks and tests drive the very same code (the
//! contention simulation uses `policy::backoff`). Only what they need is public.
//!
//! Rooms, from the bottom up: a room imports only rooms below it
//! (`tests/integration/house.rs` checks that there is no loop).
//! `sys` (every unsafe call to the OS), `text`, `values`, `outcome` -
//! `exit`, `safe_fs`, `scan` - `process` - `policy` - `state` -
//! `circuit`, `budget`, `presets` - `report` - `cli` - `run` - `app`.

pub mod app;
mod budget;
mod circuit;
mod cli;
pub mod exit;
mod outcome;
pub mod policy;
mod presets;
mod process;
mod report;
mod run;
mod safe_fs;
mod scan;
mod state;
mod sys;
mod text;
pub mod values;
