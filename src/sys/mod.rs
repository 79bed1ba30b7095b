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
//!
//! Windows (`windows/`): a module of the same name with the same functions
//! where the callers need one (`fd`, `fs`, `process`, `spawn`, ...), Win32
//! underneath (Job Objects, console control events, `LockFileEx`,
//! `MoveFileExW`); what has no Windows meaning (the signal pipe, the
//! watchdog, `poll`) is Unix's alone, and so are its callers.

// Each module with a `windows/` twin has the same functions on both
// systems; the others are Unix's alone, and their callers are too.
#[cfg_attr(windows, path = "windows/fd.rs")]
pub(crate) mod fd;
#[cfg_attr(windows, path = "windows/fs.rs")]
pub(crate) mod fs;
#[cfg(unix)]
pub(crate) mod handoff;
#[cfg_attr(windows, path = "windows/machine.rs")]
pub(crate) mod machine;
#[cfg_attr(windows, path = "windows/net.rs")]
pub(crate) mod net;
#[cfg_attr(windows, path = "windows/process.rs")]
pub(crate) mod process;
#[cfg_attr(windows, path = "windows/signal.rs")]
pub(crate) mod signal;
#[cfg_attr(windows, path = "windows/signal_pipe.rs")]
pub(crate) mod signal_pipe;
#[cfg_attr(windows, path = "windows/spawn.rs")]
pub(crate) mod spawn;
pub(crate) mod stall;
#[cfg_attr(windows, path = "windows/thread.rs")]
pub(crate) mod thread;
#[cfg(unix)]
pub(crate) mod tmpfile;
#[cfg_attr(windows, path = "windows/user.rs")]
pub(crate) mod user;
#[cfg(unix)]
pub(crate) mod wait;
#[cfg(unix)]
pub(crate) mod watchdog;
#[cfg(windows)]
pub(crate) mod windows;
