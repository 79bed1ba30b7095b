//! Starting a program on Linux without copying retry's address space.
//!
//! `std::process::Command` uses `posix_spawn` (a vfork-like clone) only when
//! nothing has to run in the child before `execve`; the parent-death signal
//! needs a step there, and any such step makes `Command` use `fork`, which
//! copies retry's page tables and makes its pages copy-on-write until the
//! child has exec'd (measured in BENCHMARKS.md). Here the child is a
//! `clone(CLONE_VM | CLONE_VFORK)`, which is how glibc's own `posix_spawn`
//! makes it: the child shares retry's memory, retry's thread is suspended
//! until the child has called `execve` or exited, and the child makes only
//! system calls (no allocation, no lock, nothing that can panic) on a stack
//! of its own. Everything it reads is prepared before the clone.
//!
//! The child, in this order:
//! 1. starts with every signal blocked (the parent blocks them all around
//!    the clone), so no signal arrives during its steps;
//! 2. puts back the dispositions retry changed for itself that `execve`
//!    would not (`child_resets`: the signals it ignores, SIGPIPE, SIGXFSZ,
//!    SIGTTIN and SIGTTOU, and what the caller ignored) as the caller left
//!    them: ignored if the caller ignored them, else the default; a signal
//!    retry catches is left to `execve`, and should it arrive before, the
//!    handler sees that it runs in another process and takes the default
//!    action (`sys::signal_pipe`);
//! 3. leads a process group of its own, in group mode;
//! 4. gets its standard descriptors;
//! 5. asks for SIGKILL when retry dies, and exits 125 at once if retry is
//!    already gone;
//! 6. unblocks every signal (a child starts with an empty mask): from here
//!    to `execve` a signal retry catches runs retry's handler, on retry's
//!    memory, which only sees that it is not in retry's process and takes
//!    the signal's default action (`sys::signal_pipe`);
//! 7. runs the program (`exec`): each place of the PATH search in turn, as
//!    `execvp` does, and a script the kernel cannot execute (`ENOEXEC`, no
//!    `#!`) under `/bin/sh`, as `execvp` does too; never a binary.
//!
//! A step that fails writes its errno where the parent reads it once the
//! clone returns (the child then exits 127 and is reaped at once); the
//! parent reports it as `spawn`'s error, as `Command::spawn` did.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

use rustix::process::{Pid, WaitOptions};

use super::Request;
use super::exec::Prepared;

/// The child's stack: its frames and the C library's system-call wrappers
/// need a few KiB; everything larger was made by the parent.
const STACK_SIZE: usize = 64 * 1024;
/// Below the stack, never accessible, so an overflow faults instead of
/// writing into retry's memory (64 KiB: a whole page on any page size).
const GUARD_SIZE: usize = 64 * 1024;

/// What the child is given: plain data, and the slot it reports into.
pub(super) struct ChildArgs<'a> {
    candidates: &'a [CString],
    argv: *mut *const libc::c_char,
    envp: *const *const libc::c_char,
    pub(super) stdio: [Option<RawFd>; 3],
    own_group: bool,
    /// The process the child must still have as its parent once it has
    /// asked for the parent-death signal.
    pub(super) parent: libc::pid_t,
    /// The errno of the step that failed; 0 when `execve` succeeded.
    pub(super) error: AtomicI32,
    /// The dispositions to put back (`child_resets`).
    resets: std::sync::Arc<[super::Reset]>,
}

impl<'a> ChildArgs<'a> {
    pub(super) fn new(request: &Request<'_>, prepared: &'a mut Prepared) -> ChildArgs<'a> {
        ChildArgs {
            candidates: &prepared.candidates,
            argv: prepared.argv.as_mut_ptr(),
            envp: prepared.envp.as_ptr(),
            stdio: request.stdio.map(|fd| fd.map(|fd| fd.as_raw_fd())),
            own_group: request.own_group,
            parent: rustix::process::getpid().as_raw_nonzero().get(),
            error: AtomicI32::new(0),
            resets: super::child_resets(),
        }
    }
}

/// Run `f` with the top of the child's stack, which no other spawn uses
/// meanwhile (only the main thread spawns, but tests spawn from several
/// threads). A poisoned lock still guards it.
pub(super) fn with_stack<T>(f: impl FnOnce(*mut libc::c_void) -> T) -> io::Result<T> {
    let mut stack = STACK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if stack.is_none() {
        *stack = Some(Stack::map()?);
    }
    let top = stack.as_ref().map_or(std::ptr::null_mut(), Stack::top);
    Ok(f(top))
}

/// Clone the child that runs `args` on the stack at `top`: its pid, or -1.
///
/// # Safety
/// Every signal blocked in this thread; `top` from `with_stack`, whose
/// lock is held until this returns (the parent is suspended until the
/// child has exec'd or exited: `CLONE_VFORK`), and `args` alive as long.
pub(super) unsafe fn clone_child(args: &ChildArgs<'_>, top: *mut libc::c_void) -> libc::pid_t {
    // SAFETY: the caller's promise; `child_main` never returns into Rust
    // code the parent runs.
    unsafe {
        libc::clone(
            child_main,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&raw const *args).cast_mut().cast(),
        )
    }
}

/// The child's stack, mapped once and used by one spawn at a time.
struct Stack {
    /// The lowest address of the mapping (the guard), as a number so the
    /// static can hold it.
    base: usize,
}

static STACK: Mutex<Option<Stack>> = Mutex::new(None);

impl Stack {
    fn map() -> io::Result<Stack> {
        // SAFETY: a new private anonymous mapping, aliasing nothing; its
        // lowest GUARD_SIZE bytes are then made inaccessible.
        unsafe {
            let base = libc::mmap(
                std::ptr::null_mut(),
                GUARD_SIZE + STACK_SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            );
            if base == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            if libc::mprotect(base, GUARD_SIZE, libc::PROT_NONE) != 0 {
                let err = io::Error::last_os_error();
                libc::munmap(base, GUARD_SIZE + STACK_SIZE);
                return Err(err);
            }
            Ok(Stack {
                base: base as usize,
            })
        }
    }

    /// The stack grows down from here.
    fn top(&self) -> *mut libc::c_void {
        (self.base + GUARD_SIZE + STACK_SIZE) as *mut libc::c_void
    }
}

/// Start the program; its pid, or the errno of what failed (the clone
/// itself, a step in the child, or the last `execve` that counts).
pub(super) fn start(request: &Request<'_>) -> io::Result<Pid> {
    let mut prepared = Prepared::new(request)?;
    let args = ChildArgs::new(request, &mut prepared);
    let (pid, clone_error) = with_stack(|top| {
        blocking_all(|| {
            // SAFETY: every signal is blocked around the clone
            // (`blocking_all`), on the stack `with_stack` lends, with
            // `args` alive throughout.
            let pid = unsafe { clone_child(&args, top) };
            (pid, io::Error::last_os_error())
        })
    })?;
    if pid < 0 {
        return Err(clone_error);
    }
    let pid = Pid::from_raw(pid).ok_or_else(|| io::Error::from_raw_os_error(libc::ECHILD))?;
    let error = args.error.load(Ordering::Acquire);
    if error != 0 {
        // The child has exited: reap it now; no one else knows of it.
        while let Err(rustix::io::Errno::INTR) =
            rustix::process::waitpid(Some(pid), WaitOptions::empty())
        {}
        return Err(io::Error::from_raw_os_error(error));
    }
    Ok(pid)
}

/// The child's last word: record `errno` for the parent, exit 127.
fn fail(args: &ChildArgs<'_>, errno: i32) -> ! {
    args.error.store(errno.max(1), Ordering::Release);
    // SAFETY: `_exit` ends the child without running anything of the
    // parent's (no atexit handlers, no buffers flushed).
    unsafe { libc::_exit(127) }
}

/// Run `f` with every signal blocked in this thread (none of retry's
/// handlers may run in a child on retry's memory), then restore the mask.
pub(super) fn blocking_all<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: the whole signal mask of this thread is saved, replaced and
    // restored; the sets are initialised before use.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&raw mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const all, &raw mut old);
        let result = f();
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const old, std::ptr::null_mut());
        result
    }
}

pub(super) fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EINVAL)
}

/// The child, between the clone and `execve`. It shares the parent's
/// memory, so it only makes system calls, reads what the parent prepared,
/// and writes only `args.error` and the `/bin/sh` slot of `args.argv`.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `ChildArgs` the parent passed to `clone`, alive
    // and unchanged while the parent is suspended (CLONE_VFORK).
    let args = unsafe { &*arg.cast::<ChildArgs<'_>>() };
    // SAFETY: this is the child process, before exec; every call below is
    // a system call wrapper of the C library that allocates nothing and
    // takes no lock (the calls glibc's posix_spawn child makes), on
    // arguments prepared by the parent.
    unsafe {
        // What execve would not put back as the command must have it.
        super::child_dispositions(&args.resets);

        if args.own_group && libc::setpgid(0, 0) != 0 {
            fail(args, errno());
        }

        for (target, fd) in (0..).zip(args.stdio) {
            let Some(fd) = fd else { continue };
            let done = if fd == target {
                // dup2 onto itself would leave close-on-exec set.
                libc::fcntl(fd, libc::F_SETFD, 0)
            } else {
                libc::dup2(fd, target)
            };
            if done < 0 {
                fail(args, errno());
            }
        }

        // If retry dies, even of SIGKILL, the attempt dies with it; if it
        // died already, the request came too late: give up at once.
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() != args.parent {
            libc::_exit(125);
        }

        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut empty);
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const empty, std::ptr::null_mut());

        // The PATH search of execvp, a binary never under `/bin/sh`.
        let error = super::exec::exec(args.candidates, args.argv, args.envp);
        fail(args, error)
    }
}
