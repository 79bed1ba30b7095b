//! End-to-end tests of the built `retry` binary against real child
//! processes: counter scripts, real signals, real timeouts, real pipes.
//! Durations are milliseconds and timing bounds generous, so the suite
//! stays fast and robust on a loaded 2-core machine.

// A test that cannot run here says why on stderr.
#![allow(clippy::print_stderr)]

// The Windows build (run under wine here, and on a Windows runner in CI)
// runs `windows` (the core promises, with cmd.exe) and `simulation` (pure
// arithmetic). The others are Unix's: they drive `sh`, signals, process
// groups, /proc, FIFOs and file modes, or check the source tree, the
// scripts and the packages (the same for every build: the native build
// runs them).

#[cfg(unix)]
mod adaptive_throttling;
#[cfg(unix)]
mod budget;
#[cfg(unix)]
mod ci;
#[cfg(unix)]
mod circuit;
#[cfg(unix)]
mod core;
#[cfg(unix)]
mod deadlines_status_readiness;
#[cfg(unix)]
mod examples;
#[cfg(unix)]
mod exec;
#[cfg(unix)]
mod fleet;
#[cfg(unix)]
mod fleet_deployments;
#[cfg(unix)]
mod hedging;
#[cfg(unix)]
mod hedging_io;
#[cfg(unix)]
mod hedging_signals;
#[cfg(unix)]
mod hooks;
#[cfg(unix)]
mod house;
#[cfg(unix)]
mod house_order;
#[cfg(unix)]
mod house_proc;
#[cfg(unix)]
mod install;
#[cfg(unix)]
mod io;
#[cfg(unix)]
mod jobs;
#[cfg(unix)]
mod messages;
#[cfg(unix)]
mod output_readers;
#[cfg(unix)]
mod package;
#[cfg(unix)]
mod packaging;
#[cfg(unix)]
mod patterns;
#[cfg(unix)]
mod presets;
#[cfg(unix)]
mod presets_cargo_and_llm;
#[cfg(unix)]
mod presets_locale;
#[cfg(unix)]
mod presets_network;
#[cfg(unix)]
mod presets_wrapped;
#[cfg(unix)]
mod process;
#[cfg(unix)]
mod ratelimit;
#[cfg(unix)]
mod release;
#[cfg(unix)]
mod shipping;
#[cfg(unix)]
mod signals;
mod simulation;
#[cfg(unix)]
mod state;
#[cfg(unix)]
mod untrusted_inputs;
#[cfg(unix)]
mod usage_and_wording;
#[cfg(unix)]
mod util;
#[cfg(windows)]
mod windows;
