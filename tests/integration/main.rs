//! End-to-end tests of the built `retry` binary against real child
//! processes: counter scripts, real signals, real timeouts, real pipes.
//! Durations are milliseconds and timing bounds generous, so the suite
//! stays fast and robust on a loaded 2-core machine.

// A test that cannot run here says why on stderr.
#![allow(clippy::print_stderr)]

mod budget;
mod ci;
mod circuit;
mod core;
mod examples;
mod exec;
mod fleet;
mod fleet_deployments;
mod handoff;
mod hedging;
mod hedging_io;
mod hedging_signals;
mod hooks;
mod hostile;
mod house;
mod house_order;
mod house_proc;
mod install;
mod io;
mod jobs;
mod messages;
mod newcomer;
mod outputs;
mod package;
mod packaging;
mod patterns;
mod presets;
mod presets_locale;
mod presets_more;
mod presets_network;
mod presets_wrapped;
mod process;
mod ratelimit;
mod release;
mod shipping;
mod signals;
mod simulation;
mod state;
mod util;
