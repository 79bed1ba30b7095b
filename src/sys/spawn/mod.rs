//! Starting an attempt's program: one request, two ways.
//!
//! - `portable`: `std::process::Command` with `process_group` and one
//!   `pre_exec` step (dispositions, the parent-death signal where the system
//!   has one, an empty mask). Every system, and Linux with
//!   `--cfg retry_posix`.
//! - `clone` (Linux): a `clone(CLONE_VM | CLONE_VFORK)` child that shares
//!   retry's memory until its `execve`, as glibc's `posix_spawn` makes it.
//!   Any `pre_exec` step makes `Command` `fork`, which copies retry's page
//!   tables and makes every page copy-on-write until the child execs: 50
//!   failing attempts took 1.45x a shell loop that way against 1.08x with
//!   the clone (BENCHMARKS.md, "One portable spawn"), over the 1.10x that
//!   retry holds itself to. Linux keeps the faster path, fenced here; the
//!   portable one is tested on Linux by the `retry_posix` build.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::BorrowedFd;

use rustix::process::Pid;

use crate::sys::signal::{caller_ignored, changed_by_retry};

#[cfg(all(target_os = "linux", not(retry_posix)))]
mod clone;
#[cfg(all(target_os = "linux", not(retry_posix)))]
mod keeper;
#[cfg_attr(all(target_os = "linux", not(retry_posix)), allow(dead_code))]
mod portable;
// One exec for both: the PATH search, and `/bin/sh` for scripts only.
mod exec;
#[cfg(test)]
mod tests;

/// One program to start.
pub(crate) struct Request<'a> {
    /// As given: a name to look for in retry's PATH, or a path (it has a
    /// `/`).
    pub(crate) program: &'a OsStr,
    /// The arguments after `argv[0]` (which is `program`).
    pub(crate) args: &'a [OsString],
    /// Added to (or replacing in) retry's own environment. A PATH here is
    /// where a name is looked for, as with `Command` (retry gives none; the
    /// tests do).
    pub(crate) env: &'a [(&'static str, OsString)],
    /// Descriptors to put at 0, 1 and 2; `None` leaves retry's own there.
    pub(crate) stdio: [Option<BorrowedFd<'a>>; 3],
    pub(crate) own_group: bool,
}

/// The argv that runs `line` in the shell: `/bin/sh -c LINE`.
pub(crate) fn shell(line: &OsStr) -> Vec<OsString> {
    vec!["/bin/sh".into(), "-c".into(), line.to_os_string()]
}

/// An attempt started under a keeper (`keeper`): the keeper's pid, the
/// command's, the pipe the keeper reports the command's wait status on,
/// and the one retry closes to let the keeper go.
pub(crate) struct Kept {
    pub(crate) keeper: Pid,
    pub(crate) child: Pid,
    pub(crate) report: std::os::fd::OwnedFd,
    pub(crate) hold: std::os::fd::OwnedFd,
}

/// Start the program under a keeper of its own, which names its processes
/// exactly (`keeper`); `None` where there is none (the keeper needs a child
/// subreaper: native Linux only).
#[allow(
    clippy::unnecessary_wraps,
    reason = "always Some on native Linux, always None elsewhere"
)]
pub(crate) fn start_kept(request: &Request<'_>) -> Option<io::Result<Kept>> {
    #[cfg(all(target_os = "linux", not(retry_posix)))]
    return Some(keeper::start(request));
    #[cfg(not(all(target_os = "linux", not(retry_posix))))]
    {
        let _ = request;
        None
    }
}

/// Whether the PATH search of [`start`] would find a file named
/// `program` in `path` (the PATH the caller read; `/bin:/usr/bin` without
/// one), or, for a name with a `/`, whether that file exists. A file
/// found but not executable counts as found: running it says why not.
pub(crate) fn found_on_path(program: &OsStr, path: Option<&OsStr>) -> bool {
    use std::os::unix::ffi::OsStrExt;
    exec::candidates(program, path)
        .iter()
        .any(|candidate| std::path::Path::new(OsStr::from_bytes(candidate)).is_file())
}

/// Start the program; its pid, or the errno of what failed.
pub(crate) fn start(request: &Request<'_>) -> io::Result<Pid> {
    #[cfg(all(target_os = "linux", not(retry_posix)))]
    return clone::start(request);
    #[cfg(not(all(target_os = "linux", not(retry_posix))))]
    portable::start(request)
}

/// The disposition the command must start with for `signal`, one retry
/// changed for itself (handled: retry's handlers must not survive into the
/// command; ignored: SIGPIPE, SIGXFSZ, SIGTTIN, SIGTTOU): as the caller left
/// it, ignored if the caller ignored it (nohup, `trap '' PIPE`), else its
/// default. SIGCHLD always gets its default, and so does SIGTERM, the
/// signal a time limit ends an attempt with: a caller's `trap '' TERM` must
/// not disarm `-T` and `--max-time` (coreutils `timeout` likewise lets its
/// term signal reach the command).
fn command_action(signal: i32) -> libc::sighandler_t {
    let always_default = signal == libc::SIGCHLD || signal == libc::SIGTERM;
    if !always_default && caller_ignored(signal) {
        libc::SIG_IGN
    } else {
        libc::SIG_DFL
    }
}

/// The child's dispositions, between fork (or clone) and exec: `resets`
/// from [`child_resets`]. Only `sigaction` calls on the stack:
/// async-signal-safe, no allocation.
fn child_dispositions(resets: &[Reset]) {
    for &(signal, action) in resets {
        set_action(signal, action);
    }
}

/// A disposition the child sets before its `execve`.
type Reset = (i32, libc::sighandler_t);

/// The dispositions the child must set itself: only those
/// that `execve` would not leave as [`command_action`] asks. `execve` gives
/// a caught signal its default and leaves an ignored one ignored, so a
/// signal retry catches needs no call when the command gets its default;
/// should it arrive between the clone and `execve`, retry's handler sees
/// that it runs in another process and takes the default action itself
/// (`sys::signal_pipe`). What is left: the signals retry ignores for itself
/// (SIGPIPE, SIGXFSZ, SIGTTIN, SIGTTOU), and what the caller ignored and
/// the command must not (SIGTERM) or must (SIGCONT, which retry catches
/// anyway): a handful of `sigaction` calls in the child where there were
/// one per signal retry catches (about 50).
///
/// Worked out from the dispositions themselves, once for each change of
/// them (`sys::signal::generation`), not once an attempt.
fn child_resets() -> std::sync::Arc<[Reset]> {
    use std::sync::{Arc, Mutex, PoisonError};
    static WORKED_OUT: Mutex<Option<(u64, Arc<[Reset]>)>> = Mutex::new(None);
    // Read first: a change while the table is worked out makes the next
    // call work it out again.
    let generation = crate::sys::signal::generation();
    let mut cache = WORKED_OUT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((at, resets)) = cache.as_ref()
        && *at == generation
    {
        return Arc::clone(resets);
    }
    let resets: Arc<[Reset]> = changed_by_retry()
        .filter_map(|signal| {
            let wanted = command_action(signal);
            let needed = match crate::sys::signal::handler_of(signal) {
                // Ignored now: still ignored after execve.
                Some(libc::SIG_IGN) => wanted != libc::SIG_IGN,
                Some(libc::SIG_DFL) => wanted != libc::SIG_DFL,
                // Retry's handler: the default after execve, and before it
                // the handler acts as the default in the child.
                Some(handler) if handler == crate::sys::signal_pipe::handler() => {
                    wanted != libc::SIG_DFL
                }
                // Someone else's handler, or a disposition that cannot be
                // read: set it.
                _ => true,
            };
            needed.then_some((signal, wanted))
        })
        .collect();
    *cache = Some((generation, Arc::clone(&resets)));
    resets
}

/// Set `signal`'s action to `handler`. Only for the child
/// (`child_dispositions`): it changes the dispositions of the whole
/// process.
fn set_action(signal: i32, handler: libc::sighandler_t) {
    // SAFETY: a zeroed sigaction holding a handler constant (SIG_DFL or
    // SIG_IGN, no function) is a valid argument.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler;
        libc::sigaction(signal, &raw const action, std::ptr::null_mut());
    }
}
