//! The one room for code that talks to the operating system where systems
//! differ, and for every `unsafe` line that does. The rest of retry is
//! portable Rust over these functions; callers branch on [`CAPS`], not on
//! `cfg`.
//!
//! Two builds run on Linux: the native one (pidfd, the child subreaper, the
//! parent-death signal, `O_TMPFILE`, `/proc/self/fd`), and, with
//! `RUSTFLAGS='--cfg retry_posix'`, the portable path that macOS and FreeBSD
//! take, so that the test suite exercises it here. FreeBSD keeps its own
//! equivalents of the subreaper and the parent-death signal (`procctl`).

pub(crate) mod fd;
pub(crate) mod process;
pub(crate) mod signal;
pub(crate) mod thread;
pub(crate) mod user;

/// What this build of retry can count on from the system.
#[derive(Clone, Copy, Debug)]
#[allow(clippy::struct_excessive_bools)]
pub(crate) struct Caps {
    /// The command is SIGKILLed when retry dies, even of SIGKILL (Linux
    /// `PR_SET_PDEATHSIG`, FreeBSD `PROC_PDEATHSIG_CTL`).
    pub(crate) parent_death: bool,
    /// Orphans of an attempt are reparented to retry (Linux
    /// `PR_SET_CHILD_SUBREAPER`, FreeBSD `PROC_REAP_ACQUIRE`).
    pub(crate) subreaper: bool,
    /// A process named by pid can be signalled without a reuse race (Linux
    /// pidfd); elsewhere its start time is checked just before `kill`.
    pub(crate) race_free_kill: bool,
    /// Unnamed temporary files linked into place (`O_TMPFILE`); elsewhere a
    /// named temporary file is renamed over.
    pub(crate) unnamed_tmp: bool,
}

/// Linux, native.
#[cfg(all(target_os = "linux", not(retry_posix)))]
pub(crate) const CAPS: Caps = Caps {
    parent_death: true,
    subreaper: true,
    race_free_kill: true,
    unnamed_tmp: true,
};

/// FreeBSD: `procctl` gives the parent-death signal and the reaper.
#[cfg(all(target_os = "freebsd", not(retry_posix)))]
pub(crate) const CAPS: Caps = Caps {
    parent_death: true,
    subreaper: true,
    race_free_kill: false,
    unnamed_tmp: false,
};

/// macOS, and the portable path forced with `--cfg retry_posix`.
#[cfg(any(retry_posix, not(any(target_os = "linux", target_os = "freebsd"))))]
pub(crate) const CAPS: Caps = Caps {
    parent_death: false,
    subreaper: false,
    race_free_kill: false,
    unnamed_tmp: false,
};
