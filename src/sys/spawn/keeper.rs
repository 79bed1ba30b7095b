//! The keeper (Linux): a process of retry's between retry and an attempt
//! that shares retry's process group, so that the attempt's processes are
//! named exactly: they are the keeper's descendants, nothing else.
//!
//! In the shared-group mode no process group names an attempt apart from
//! retry and the caller's pipeline, and retry, a child subreaper, adopts
//! every orphan below it: what a sidecar started before `exec retry`
//! detaches would look like the attempt's. The keeper is a child
//! subreaper of its own: what the attempt orphans is reparented to the
//! keeper, and only that.
//!
//! A fork of retry with every signal blocked (none of retry's handlers
//! runs in it, and a terminal's Ctrl-C or Ctrl-Z, meant for the command,
//! leaves it alone); it makes only system calls on what retry prepared.
//! It clones the command as retry would (`clone::child_main`, parent-death
//! signal tied to the keeper), then reports on the `report` pipe: the
//! command's pid (or minus the errno of a failed start), later its wait
//! status, each followed by a SIGCHLD to retry. It reaps whatever ends
//! below it, and exits once nothing is left. When retry writes a byte on
//! the `hold` pipe it exits at once (what is left runs on, adopted by
//! retry: a successful attempt's service); when retry dies (the pipe
//! closes without that byte) it kills everything below it first, set-uid
//! commands included, which the parent-death signal misses.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::Ordering;

use rustix::process::Pid;

use super::clone::{ChildArgs, blocking_all, clone_child, with_stack};
use super::exec::Prepared;
use super::{Kept, Request};

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?)
}

/// Start the program under a keeper; the command's pid, or the errno of
/// what failed.
pub(crate) fn start(request: &Request<'_>) -> io::Result<Kept> {
    let mut prepared = Prepared::new(request)?;
    let mut args = ChildArgs::new(request, &mut prepared);
    let (report_read, report_write) = pipe()?;
    let (hold_read, hold_write) = pipe()?;
    let retry = rustix::process::getpid().as_raw_nonzero().get();
    // The keeper's ends, then retry's, which the keeper closes.
    let ends = [
        report_write.as_raw_fd(),
        hold_read.as_raw_fd(),
        report_read.as_raw_fd(),
        hold_write.as_raw_fd(),
    ];
    let keeper = with_stack(|top| {
        blocking_all(|| {
            // SAFETY: fork with every signal blocked; the child runs
            // `keeper_main`, which never returns and makes only system
            // calls on memory prepared here (its own copy of it).
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                // SAFETY: in the forked keeper; see keeper_main.
                unsafe { keeper_main(&mut args, top, ends, retry) }
            }
            (pid, io::Error::last_os_error())
        })
    })?;
    drop((report_write, hold_read));
    let (keeper, fork_error) = keeper;
    if keeper < 0 {
        return Err(fork_error);
    }
    let keeper = Pid::from_raw(keeper).ok_or_else(|| io::Error::from_raw_os_error(libc::ECHILD))?;
    let mut word = [0u8; 4];
    let first = rustix::io::read(&report_read, &mut word);
    let child = i32::from_ne_bytes(word);
    match first {
        Ok(4) if child > 0 => Ok(Kept {
            keeper,
            child: Pid::from_raw(child)
                .ok_or_else(|| io::Error::from_raw_os_error(libc::ECHILD))?,
            report: report_read,
            hold: hold_write,
        }),
        _ => {
            // The keeper exits once it has said why; no one else knows of it.
            while let Err(rustix::io::Errno::INTR) =
                rustix::process::waitpid(Some(keeper), rustix::process::WaitOptions::empty())
            {
            }
            let errno = if child < 0 { -child } else { libc::ECHILD };
            Err(io::Error::from_raw_os_error(errno))
        }
    }
}

fn write_word(fd: RawFd, word: i32) {
    let bytes = word.to_ne_bytes();
    // SAFETY: writes 4 bytes from a live buffer to a descriptor we own.
    unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
}

/// The keeper's whole life (module doc). `ends` are its ends of the
/// report and hold pipes; `retry` is its parent's pid.
///
/// # Safety
/// Only in the process `fork` just made, every signal blocked; `args` and
/// `top` as for `clone_child` (its own copies, after the fork).
unsafe fn keeper_main(
    args: &mut ChildArgs<'_>,
    top: *mut libc::c_void,
    ends: [RawFd; 4],
    retry: libc::pid_t,
) -> ! {
    let [report, hold, retrys_report, retrys_hold] = ends;
    // SAFETY: system calls on plain values; the keeper never returns.
    unsafe {
        // Retry's ends: the hold pipe must close when retry closes its own,
        // and the watchdog's when retry goes (the keeper never executes
        // anything, so close-on-exec does not close it here).
        libc::close(retrys_report);
        libc::close(retrys_hold);
        let watchdog = crate::sys::watchdog::write_end();
        if watchdog >= 0 {
            libc::close(watchdog);
        }
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        if libc::getppid() != retry {
            libc::_exit(125);
        }
        args.parent = libc::getpid();
        let child = clone_child(args, top);
        let error = args.error.load(Ordering::Acquire);
        if child < 0 || error != 0 {
            let errno = if child < 0 {
                super::clone::errno()
            } else {
                error
            };
            if child > 0 {
                libc::waitpid(child, std::ptr::null_mut(), 0);
            }
            write_word(report, -errno.max(1));
            libc::_exit(0);
        }
        write_word(report, child);
        let mut sigchld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut sigchld);
        libc::sigaddset(&raw mut sigchld, libc::SIGCHLD);
        let signals = libc::signalfd(-1, &raw const sigchld, libc::SFD_CLOEXEC);
        let mut reported = false;
        loop {
            // Reap what ended; the command's status goes to retry.
            loop {
                let mut status = 0;
                let pid = libc::waitpid(-1, &raw mut status, libc::WNOHANG);
                if pid == child && !reported {
                    reported = true;
                    write_word(report, status);
                    libc::kill(retry, libc::SIGCHLD);
                }
                if pid < 0 && reported {
                    // Nothing left below us.
                    libc::_exit(0);
                }
                if pid <= 0 {
                    break;
                }
            }
            let mut fds = [
                libc::pollfd {
                    fd: signals,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: hold,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // Without a signalfd, look again every 50 ms.
            let wait = if signals < 0 { 50 } else { -1 };
            libc::poll(fds.as_mut_ptr(), 2, wait);
            if fds[0].revents != 0 {
                let mut info = [0u8; 128];
                libc::read(signals, info.as_mut_ptr().cast(), info.len());
            }
            if fds[1].revents != 0 {
                // A byte: retry lets us go. The end of the pipe without
                // one: retry died (its descriptors close before its
                // children are reparented, so the parent cannot tell).
                let mut byte = 0u8;
                if libc::read(hold, (&raw mut byte).cast(), 1) != 1 {
                    kill_all_below();
                }
                libc::_exit(0);
            }
        }
    }
}

/// Retry is gone: SIGKILL to every process below the keeper, until none is
/// left (what a killed process orphans is reparented to the keeper).
///
/// # Safety
/// In the keeper only: it reads its own children's list and reaps them.
unsafe fn kill_all_below() {
    // SAFETY: open, read, close and kill on buffers of our own; the path
    // is a C string literal.
    unsafe {
        loop {
            let fd = libc::open(
                c"/proc/thread-self/children".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            );
            let mut list = [0u8; 4096];
            let read = if fd < 0 {
                0
            } else {
                libc::read(fd, list.as_mut_ptr().cast(), list.len())
            };
            if fd >= 0 {
                libc::close(fd);
            }
            let mut pid: libc::pid_t = 0;
            for &byte in &list[..usize::try_from(read).unwrap_or(0)] {
                if byte.is_ascii_digit() {
                    pid = pid * 10 + libc::pid_t::from(byte - b'0');
                } else if pid > 0 {
                    libc::kill(pid, libc::SIGKILL);
                    pid = 0;
                }
            }
            if pid > 0 {
                libc::kill(pid, libc::SIGKILL);
            }
            // Reap one; none left to reap ends it.
            if libc::waitpid(-1, std::ptr::null_mut(), 0) < 0 {
                return;
            }
        }
    }
}
