//! `retry`: run a command until it succeeds, with capped exponential
//! backoff and jitter. The binary is `src/main.rs`; this library holds
//! everything, so that benchmarks and tests drive the very same code (the
//! contention simulation uses `policy::backoff`). Only what they need is public.
//!
//! Rooms, from the bottom up: `sys`, `contract`, `text`, `values`, `scan` -
//! `exit`, `safe_fs` - `outcome` - `process`, `policy` - `state`, `presets`,
//! `report` - `circuit`, `budget`, `latency` - `cli` - `run` - `app`. A comma stands
//! between rooms of one level, which know nothing of each other; a dash
//! between levels: a room imports only rooms of the levels before it.
//! `sys` is the operating system (every `unsafe` line); `contract` the
//! words of the public interface (exit statuses, environment, warning
//! kinds); `outcome` the words every level shares about how things ended;
//! `policy` decides and is pure (no process, run, command line or system);
//! `run` carries out what it decides; `app` is argv to exit status.
//! `tests/integration/house.rs` and `house_order.rs` check the order, that
//! no room's files import each other in a loop, that no source file passes
//! 450 lines and that `unsafe` lives in `sys` alone.

pub mod app;
mod budget;
mod circuit;
mod cli;
mod contract;
pub mod exit;
mod latency;
mod outcome;
pub mod policy;
mod presets;
// Windows has a process room of its own (Job Objects and console events,
// no signals, groups or process table), with the same functions.
#[cfg_attr(windows, path = "process/windows/mod.rs")]
mod process;
mod report;
mod run;
// Windows' files are guarded with its own means (ACLs, handles): the same
// functions in `safe_fs/windows/`.
#[cfg_attr(windows, path = "safe_fs/windows/mod.rs")]
mod safe_fs;
mod scan;
mod state;
mod sys;
mod text;
pub mod values;
