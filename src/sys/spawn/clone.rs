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
//!    the clone), so none of retry's handlers can run in it, on retry's
//!    memory;
//! 2. puts back every disposition retry changed for itself (the signals
//!    it handles; SIGPIPE, SIGXFSZ, SIGTTIN and SIGTTOU, which it ignores)
//!    as the caller left it: ignored if the caller ignored it, else the
//!    default (`child_dispositions`);
//! 3. leads a process group of its own, in group mode;
//! 4. gets its standard descriptors;
//! 5. asks for SIGKILL when retry dies, and exits 125 at once if retry is
//!    already gone;
//! 6. unblocks every signal (a child starts with an empty mask);
//! 7. runs the program: each place of the PATH search in turn, as `execvp`
//!    does, and a file the kernel cannot execute (`ENOEXEC`, a script
//!    without `#!`) under `/bin/sh`, as `execvp` does too.
//!
//! A step that fails writes its errno where the parent reads it once the
//! clone returns (the child then exits 127 and is reaped at once); the
//! parent reports it as `spawn`'s error, as `Command::spawn` did.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};

use rustix::process::{Pid, WaitOptions};

use super::Request;

/// What `execvp` searches when there is no PATH at all.
const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// The child's stack: its frames and the C library's system-call wrappers
/// need a few KiB; everything larger was made by the parent.
const STACK_SIZE: usize = 64 * 1024;
/// Below the stack, never accessible, so an overflow faults instead of
/// writing into retry's memory (64 KiB: a whole page on any page size).
const GUARD_SIZE: usize = 64 * 1024;

/// Everything the child reads, made by the parent before the clone. The
/// pointers point into `_strings`, owned alongside, and into the inherited
/// environment (`inherited_env`), which lives as long as retry.
struct Prepared {
    /// The paths to try, in the order of the PATH search.
    candidates: Vec<CString>,
    /// `/bin/sh`, then the program's argv, then null. The program runs with
    /// `argv[1..]`; the `/bin/sh` fallback puts the script's path in slot 1
    /// and runs `/bin/sh` with all of it.
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    _strings: Vec<CString>,
}

/// What the child is given: plain data, and the slot it reports into.
struct ChildArgs<'a> {
    candidates: &'a [CString],
    argv: *mut *const libc::c_char,
    envp: *const *const libc::c_char,
    stdio: [Option<RawFd>; 3],
    own_group: bool,
    parent: libc::pid_t,
    /// The errno of the step that failed; 0 when `execve` succeeded.
    error: AtomicI32,
}

/// `s` as a C string; an interior NUL (impossible for argv, environment and
/// paths from the system) is the error `execve` would give for a bad path.
fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Where `execvp` would look for `program`, in order: the program itself
/// when it names a path (has a `/`), else each directory of `path` (an
/// empty entry is the working directory), or of `/bin:/usr/bin` without one.
pub(super) fn candidates(program: &OsStr, path: Option<&OsStr>) -> Vec<Vec<u8>> {
    let name = program.as_bytes();
    if name.is_empty() {
        return Vec::new();
    }
    if name.contains(&b'/') {
        return vec![name.to_vec()];
    }
    let search = path.map_or(DEFAULT_PATH.as_bytes(), OsStr::as_bytes);
    search
        .split(|&b| b == b':')
        .map(|dir| {
            if dir.is_empty() {
                name.to_vec()
            } else {
                let mut full = Vec::with_capacity(dir.len() + 1 + name.len());
                full.extend_from_slice(dir);
                if !dir.ends_with(b"/") {
                    full.push(b'/');
                }
                full.extend_from_slice(name);
                full
            }
        })
        .collect()
}

/// Retry's own environment as `KEY=VALUE` C strings, with their keys, read
/// at the first spawn: retry never changes its environment (it sets no
/// variable), so every spawn shares them instead of copying them again.
fn inherited_env() -> &'static [(OsString, CString)] {
    static INHERITED: OnceLock<Vec<(OsString, CString)>> = OnceLock::new();
    INHERITED.get_or_init(|| {
        std::env::vars_os()
            .filter_map(|(key, value)| {
                let entry = env_entry(key.as_bytes(), value.as_bytes()).ok()?;
                Some((key, entry))
            })
            .collect()
    })
}

impl Prepared {
    fn new(request: &Request<'_>, path: Option<&OsStr>) -> io::Result<Prepared> {
        let candidates = candidates(request.program, path)
            .into_iter()
            .map(|c| c_string(&c))
            .collect::<io::Result<Vec<_>>>()?;
        let mut strings = Vec::with_capacity(request.args.len() + 2 + request.env.len());
        strings.push(c_string(b"/bin/sh")?);
        strings.push(c_string(request.program.as_bytes())?);
        for arg in request.args {
            strings.push(c_string(arg.as_bytes())?);
        }
        let arg_count = strings.len();
        for (key, value) in request.env {
            strings.push(env_entry(key.as_bytes(), value.as_bytes())?);
        }
        // A CString's bytes stay where they are when the Vec holding it
        // moves: these pointers stay valid as long as `strings` lives (and
        // the inherited ones for good).
        let mut argv: Vec<*const libc::c_char> =
            strings[..arg_count].iter().map(|s| s.as_ptr()).collect();
        argv.push(std::ptr::null());
        let inherited = inherited_env();
        let mut envp = Vec::with_capacity(inherited.len() + request.env.len() + 1);
        for (key, entry) in inherited {
            if !request.env.iter().any(|(k, _)| OsStr::new(k) == key) {
                envp.push(entry.as_ptr());
            }
        }
        envp.extend(strings[arg_count..].iter().map(|s| s.as_ptr()));
        envp.push(std::ptr::null());
        Ok(Prepared {
            candidates,
            argv,
            envp,
            _strings: strings,
        })
    }
}

fn env_entry(key: &[u8], value: &[u8]) -> io::Result<CString> {
    let mut entry = Vec::with_capacity(key.len() + 1 + value.len());
    entry.extend_from_slice(key);
    entry.push(b'=');
    entry.extend_from_slice(value);
    c_string(&entry)
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
/// The program is looked for in the request's PATH if it gives one (as
/// `Command` does with a PATH given through `env`), else in retry's.
pub(super) fn start(request: &Request<'_>) -> io::Result<Pid> {
    let given = request.env.iter().find(|(key, _)| *key == "PATH");
    let own;
    let path = if let Some((_, path)) = given {
        Some(path.as_os_str())
    } else {
        own = std::env::var_os("PATH");
        own.as_deref()
    };
    let mut prepared = Prepared::new(request, path)?;
    if prepared.candidates.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    let args = ChildArgs {
        candidates: &prepared.candidates,
        argv: prepared.argv.as_mut_ptr(),
        envp: prepared.envp.as_ptr(),
        stdio: request.stdio.map(|fd| fd.map(|fd| fd.as_raw_fd())),
        own_group: request.own_group,
        parent: rustix::process::getpid().as_raw_nonzero().get(),
        error: AtomicI32::new(0),
    };
    // One spawn at a time uses the stack (only the main thread spawns, but
    // tests spawn from several threads). A poisoned lock still guards it.
    let mut stack = STACK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if stack.is_none() {
        *stack = Some(Stack::map()?);
    }
    let top = stack.as_ref().map_or(std::ptr::null_mut(), Stack::top);

    // SAFETY: the whole signal mask of this thread is saved, replaced and
    // restored; `clone` gets a function that never returns into Rust code
    // the parent runs, its own stack (held by the lock until the child has
    // exec'd or exited: CLONE_VFORK), and `args`, which outlives the child's
    // use of it for the same reason.
    let (pid, clone_error) = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&raw mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const all, &raw mut old);
        let pid = libc::clone(
            child_main,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&raw const args).cast_mut().cast(),
        );
        let clone_error = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const old, std::ptr::null_mut());
        (pid, clone_error)
    };
    drop(stack);
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

fn errno() -> i32 {
    // SAFETY: errno of this thread; a plain read.
    unsafe { *libc::__errno_location() }
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
        // Our handlers must not run here, on retry's memory.
        super::child_dispositions();

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

        // The PATH search of execvp: a place where the program is not
        // (or cannot be searched) moves on to the next; a place where it
        // is but may not be run is remembered (EACCES wins over ENOENT at
        // the end); any other failure ends the search.
        let program_argv = args.argv.add(1).cast_const();
        let mut error = libc::ENOENT;
        let mut denied = false;
        for candidate in args.candidates {
            libc::execve(candidate.as_ptr(), program_argv, args.envp);
            error = errno();
            match error {
                libc::EACCES => denied = true,
                libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
                libc::ENOEXEC => {
                    // A script without `#!`: `/bin/sh SCRIPT ARGS...`
                    // (slot 0 holds "/bin/sh").
                    *args.argv.add(1) = candidate.as_ptr();
                    libc::execve(
                        args.argv.cast_const().read(),
                        args.argv.cast_const(),
                        args.envp,
                    );
                    fail(args, errno());
                }
                _ => fail(args, error),
            }
        }
        fail(args, if denied { libc::EACCES } else { error })
    }
}
