//! The program's `execve`, the same for both ways of starting it (`clone`
//! and `portable`): what the child runs is prepared by the parent, and the
//! child searches the PATH and executes with system calls only.
//!
//! The search is `execvp`'s: a place where the program is not (or cannot
//! be searched) moves on to the next; a place where it is but may not be
//! run is remembered (EACCES wins over ENOENT at the end); any other
//! failure ends the search. A file the kernel cannot execute (ENOEXEC) runs
//! under `/bin/sh` when it is text (a script without `#!`), as with
//! `execvp`; a binary one (an ELF file for another architecture, say) is
//! not handed to the shell: that is ENOEXEC, exit 126. The C libraries'
//! `execvp` cannot be told so (glibc's and the BSDs' give any ENOEXEC file
//! to the shell, musl's none), hence this search of our own.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::sync::OnceLock;

use super::Request;

/// What `execvp` searches when there is no PATH at all.
const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// Everything the child reads to exec, made by the parent. The pointers
/// point into `_strings`, owned alongside, and into the inherited
/// environment (`inherited_env`), which lives as long as retry.
pub(super) struct Prepared {
    /// The paths to try, in the order of the PATH search.
    pub(super) candidates: Vec<CString>,
    /// `/bin/sh`, then the program's argv, then null. The program runs with
    /// `argv[1..]`; the `/bin/sh` fallback puts the script's path in slot 1
    /// and runs `/bin/sh` with all of it.
    pub(super) argv: Vec<*const libc::c_char>,
    pub(super) envp: Vec<*const libc::c_char>,
    _strings: Vec<CString>,
}

// SAFETY: the pointers point into `_strings` (owned, never changed after
// `new`) or into the inherited environment, which is never freed; nothing
// is shared that another thread could change.
unsafe impl Send for Prepared {}
// SAFETY: as for Send: the data is read only.
unsafe impl Sync for Prepared {}

/// `bytes` as a C string; an interior NUL (impossible for argv, environment
/// and paths from the system) is the error `execve` would give for a bad
/// path.
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

fn env_entry(key: &[u8], value: &[u8]) -> io::Result<CString> {
    let mut entry = Vec::with_capacity(key.len() + 1 + value.len());
    entry.extend_from_slice(key);
    entry.push(b'=');
    entry.extend_from_slice(value);
    c_string(&entry)
}

impl Prepared {
    /// The program looked for in the request's PATH if it gives one (as
    /// `Command` does with a PATH given through `env`), else in retry's.
    pub(super) fn new(request: &Request<'_>) -> io::Result<Prepared> {
        let given = request.env.iter().find(|(key, _)| *key == "PATH");
        let own;
        let path = if let Some((_, path)) = given {
            Some(path.as_os_str())
        } else {
            own = std::env::var_os("PATH");
            own.as_deref()
        };
        let candidates = candidates(request.program, path)
            .into_iter()
            .map(|c| c_string(&c))
            .collect::<io::Result<Vec<_>>>()?;
        if candidates.is_empty() {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
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

impl Prepared {
    /// In a forked child: `exec` with what was prepared. Returns only if
    /// that failed, with the errno.
    ///
    /// # Safety
    /// As `exec`: only in a child process before it runs anything else.
    pub(super) unsafe fn exec_in_child(&mut self) -> i32 {
        // SAFETY: the caller's promise; the arrays are this value's own.
        unsafe { exec(&self.candidates, self.argv.as_mut_ptr(), self.envp.as_ptr()) }
    }
}

fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EINVAL)
}

/// Whether the file at `path` is a binary, not a script: an ELF header, or
/// a NUL byte before the first line end in its first 80 bytes (the test
/// bash applies before it runs a file as a script). Async-signal-safe:
/// open, read and close on the stack.
fn is_binary(path: &CString) -> bool {
    let mut head = [0u8; 80];
    // SAFETY: `path` is a NUL-terminated string; `read` writes at most
    // `head.len()` bytes into `head`; the descriptor is ours to close.
    let read = unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let read = libc::read(fd, head.as_mut_ptr().cast(), head.len());
        libc::close(fd);
        read
    };
    let Ok(read) = usize::try_from(read) else {
        return false;
    };
    let head = &head[..read];
    head.starts_with(b"\x7fELF") || head.iter().take_while(|&&b| b != b'\n').any(|&b| b == 0)
}

/// In the child: run the program (module doc). Returns only if that failed,
/// with the errno to report.
///
/// # Safety
/// Only in a child process before it runs anything else (it replaces the
/// process); `argv` is `Prepared::argv`'s pointer, writable (slot 1 takes
/// the script's path for `/bin/sh`), `envp` `Prepared::envp`'s.
pub(super) unsafe fn exec(
    candidates: &[CString],
    argv: *mut *const libc::c_char,
    envp: *const *const libc::c_char,
) -> i32 {
    // SAFETY: the caller's promise: `argv` and `envp` are null-terminated
    // arrays of C strings that outlive this call, `argv` with the
    // `/bin/sh` slot first.
    unsafe {
        let program_argv = argv.add(1).cast_const();
        let mut error = libc::ENOENT;
        let mut denied = false;
        for candidate in candidates {
            libc::execve(candidate.as_ptr(), program_argv, envp);
            error = errno();
            match error {
                libc::EACCES => denied = true,
                libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
                libc::ENOEXEC if !is_binary(candidate) => {
                    // A script without `#!`: `/bin/sh SCRIPT ARGS...`
                    // (slot 0 holds "/bin/sh").
                    *argv.add(1) = candidate.as_ptr();
                    libc::execve(argv.cast_const().read(), argv.cast_const(), envp);
                    return errno();
                }
                _ => return error,
            }
        }
        if denied { libc::EACCES } else { error }
    }
}
