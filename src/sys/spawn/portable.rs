//! Starting a program: `std::process::Command`, the same on every system
//! (macOS, FreeBSD, and Linux with `--cfg retry_posix`).
//!
//! `Command` forks (a `pre_exec` step rules out its `posix_spawn` path),
//! and in the child, in this order:
//! 1. puts the standard descriptors in place (`Stdio`, made of duplicates
//!    of the caller's descriptors: the caller keeps its own);
//! 2. makes the child the leader of a process group of its own, in group
//!    mode (`process_group(0)`);
//! 3. gives SIGPIPE its default action (std's own step; retry ignores it);
//! 4. runs `child_steps` (`pre_exec`):
//!    - puts back the dispositions retry changed for itself that `execve`
//!      would not (`child_resets`: the signals it ignores, SIGPIPE,
//!      SIGXFSZ, SIGTTIN and SIGTTOU, and what the caller ignored) as the
//!      caller left them: ignored if the caller ignored them, else the
//!      default; and SIGPIPE again, after std;
//!    - asks for SIGKILL when retry dies, and exits 125 at once if retry is
//!      already gone (Linux and FreeBSD);
//!    - empties the signal mask (a program starts with none blocked);
//! 5. runs the program itself, at the end of `pre_exec` (`exec`, shared
//!    with the clone spawn): the PATH search, and a script the kernel
//!    cannot execute (`ENOEXEC`, no `#!`) run under `/bin/sh`, never a
//!    binary (the C library's `execvp`, which std would call next, hands
//!    any such file to the shell, or none on musl). The environment is
//!    retry's, with the request's variables added or replaced.
//!
//! Every signal is blocked from the fork on: the parent blocks them all
//! around `spawn`, so no signal arrives in the child before the mask is
//! emptied, and the order of steps 1 to 4 is not seen. A signal that
//! arrives after that and before the `execve` finds retry's handler, which
//! sees that it runs in another process and takes the default action
//! (`sys::signal_pipe`), as the program would.
//!
//! The parent-death signal is tied to the thread that forks: `spawn` runs
//! on the thread that calls it, and only the main thread, which lasts the
//! whole run, calls it (`child`).
//!
//! A step that fails in the child comes back as `spawn`'s error, with its
//! errno (std sends it back through a pipe and reaps the child).

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use rustix::process::Pid;

use super::Request;
use super::exec::Prepared;

/// Start the program; its pid, or the errno of what failed.
pub(super) fn start(request: &Request<'_>) -> io::Result<Pid> {
    // The program, its arguments and environment are run from `prepared`;
    // `Command` is given the name only for its own checks.
    let mut prepared = Prepared::new(request)?;
    let mut command = Command::new(request.program);
    let [stdin, stdout, stderr] = request.stdio;
    if let Some(fd) = stdin {
        command.stdin(Stdio::from(fd.try_clone_to_owned()?));
    }
    if let Some(fd) = stdout {
        command.stdout(Stdio::from(fd.try_clone_to_owned()?));
    }
    if let Some(fd) = stderr {
        command.stderr(Stdio::from(fd.try_clone_to_owned()?));
    }
    if request.own_group {
        command.process_group(0);
    }
    let steps = ChildSteps {
        parent: rustix::process::getpid(),
        empty: signal_set(false),
        resets: super::child_resets(),
        pipe: super::command_action(libc::SIGPIPE),
    };
    // SAFETY: the closure runs in the forked child before exec, and only
    // makes async-signal-safe system calls on the plain values copied into
    // it (`child_steps`) and on `prepared` (`exec`, which replaces the
    // child or returns an errno): no allocation, no lock, no panic.
    unsafe {
        command.pre_exec(move || {
            child_steps(&steps);
            let error = prepared.exec_in_child();
            Err(io::Error::from_raw_os_error(error))
        });
    }

    let blocked = set_mask(&signal_set(true));
    let spawned = command.spawn();
    set_mask(&blocked);
    // The `Child` is dropped without waiting: the pid is the caller's to
    // wait for (dropping it closes nothing of the child's).
    let child = spawned?;
    let pid = i32::try_from(child.id()).ok().and_then(Pid::from_raw);
    pid.ok_or_else(|| io::Error::from_raw_os_error(libc::ECHILD))
}

/// What the child does in `pre_exec`, made by the parent.
struct ChildSteps {
    /// Retry's pid, to see whether retry is still the parent.
    parent: Pid,
    /// The child's signal mask: empty.
    empty: libc::sigset_t,
    /// The dispositions to put back (`child_resets`).
    resets: std::sync::Arc<[super::Reset]>,
    /// SIGPIPE's, which std has given its default.
    pipe: libc::sighandler_t,
}

/// The child's steps between fork and exec (module doc, step 4). Only
/// async-signal-safe system calls: the process may have other threads,
/// whose locks the child's copy of memory holds.
fn child_steps(steps: &ChildSteps) {
    super::child_dispositions(&steps.resets);
    super::set_action(libc::SIGPIPE, steps.pipe);

    // If retry dies, even of SIGKILL, the attempt dies with it; if it died
    // already, the request came too late: give up at once.
    #[cfg(all(any(target_os = "linux", target_os = "freebsd"), not(retry_posix)))]
    {
        let _ =
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
        if rustix::process::getppid() != Some(steps.parent) {
            // SAFETY: `_exit` ends the child at once, running nothing of
            // the parent's (no atexit handlers, no buffers flushed).
            unsafe { libc::_exit(125) }
        }
    }
    // Elsewhere the kernel has no parent-death signal: the run's watchdog
    // ends the attempt if retry is killed with SIGKILL (`process::watchdog`).
    #[cfg(not(all(any(target_os = "linux", target_os = "freebsd"), not(retry_posix))))]
    let _ = steps.parent;

    set_mask(&steps.empty);
}

/// Every signal (`full`), or none.
fn signal_set(full: bool) -> libc::sigset_t {
    // SAFETY: the set is initialised by sigfillset or sigemptyset before it
    // is read; both only write the set they are given.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        if full {
            libc::sigfillset(&raw mut set);
        } else {
            libc::sigemptyset(&raw mut set);
        }
        set
    }
}

/// Make `set` this thread's signal mask; the previous mask.
/// (Async-signal-safe: used in the child too.)
fn set_mask(set: &libc::sigset_t) -> libc::sigset_t {
    // SAFETY: `pthread_sigmask` reads `set` and writes the previous mask
    // into `old`; it fails only for a bad `how`, and SIG_SETMASK is valid.
    unsafe {
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_SETMASK, set, &raw mut old);
        old
    }
}
