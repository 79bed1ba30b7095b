//! The one room for code that talks to the operating system where systems
//! differ, and for every `unsafe` line that does. The rest of retry is
//! portable Rust over these functions, which say in their own words what
//! each system can do; no caller needs a `cfg` of its own.
//!
//! Two builds run on Linux: the native one (pidfd, the child subreaper, the
//! parent-death signal, `O_TMPFILE`, `/proc/self/fd`), and, with
//! `RUSTFLAGS='--cfg retry_posix'`, the portable path that macOS and FreeBSD
//! take, so that the test suite exercises it here. FreeBSD keeps its own
//! equivalents of the subreaper and the parent-death signal (`procctl`).

pub(crate) mod fd;
pub(crate) mod fs;
pub(crate) mod handoff;
pub(crate) mod machine;
pub(crate) mod process;
pub(crate) mod signal;
pub(crate) mod signal_pipe;
pub(crate) mod spawn;
pub(crate) mod stall;
pub(crate) mod thread;
pub(crate) mod tmpfile;
pub(crate) mod user;
pub(crate) mod wait;
pub(crate) mod watchdog;
