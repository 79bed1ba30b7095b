//! File-system calls that differ by system: how a directory is opened for a
//! walk, whether a directory is Linux's `/proc`, reopening one of our own
//! pipes or terminals with a private `O_NONBLOCK` (and how a socket is sent
//! to without blocking), pipes themselves and their size, and FIFOs (for
//! tests).

use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::fs::OFlags;

/// How a directory is opened to be walked through: `O_PATH` where it exists
/// (Linux, FreeBSD), which needs only search permission, as a path lookup
/// does; on macOS `O_SEARCH` (open for searching only).
#[cfg(any(target_os = "linux", target_os = "freebsd"))]
pub(crate) const DIR_STEP: OFlags = OFlags::PATH.union(OFlags::DIRECTORY);
#[cfg(not(any(target_os = "linux", target_os = "freebsd")))]
pub(crate) const DIR_STEP: OFlags =
    OFlags::from_bits_retain(libc::O_SEARCH as _).union(OFlags::DIRECTORY);

/// Is `dir` in Linux's `/proc` (whose links only the kernel can follow)?
/// No other system has one that retry reads.
pub(crate) fn is_proc(dir: BorrowedFd<'_>) -> bool {
    #[cfg(target_os = "linux")]
    return rustix::fs::fstatfs(dir).is_ok_and(|fs| fs.f_type == rustix::fs::PROC_SUPER_MAGIC);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        false
    }
}

/// Our own descriptor `fd`, a pipe, opened anew for writing with
/// `O_NONBLOCK` of its own (setting the flag on the inherited description
/// would change it for every process sharing it). Linux only: opening
/// `/dev/fd/N` elsewhere duplicates the descriptor, flags and all.
pub(crate) fn reopen_pipe_nonblocking(fd: i32) -> Option<OwnedFd> {
    #[cfg(all(target_os = "linux", not(retry_posix)))]
    return rustix::fs::open(
        format!("/proc/self/fd/{fd}"),
        OFlags::WRONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        rustix::fs::Mode::empty(),
    )
    .ok();
    #[cfg(not(all(target_os = "linux", not(retry_posix))))]
    {
        let _ = fd;
        None
    }
}

/// Our own descriptor `fd`, a terminal, opened anew by its name for
/// writing with `O_NONBLOCK` of its own (and without becoming our
/// controlling terminal). `None` when it has no name we can open (a
/// terminal of another user, no `/proc` to name it on Linux) or the name
/// now leads to another device.
pub(crate) fn reopen_terminal_nonblocking(fd: BorrowedFd<'_>) -> Option<OwnedFd> {
    let name = rustix::termios::ttyname(fd, Vec::new()).ok()?;
    let own = rustix::fs::open(
        name.as_c_str(),
        OFlags::WRONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        rustix::fs::Mode::empty(),
    )
    .ok()?;
    let same = match (rustix::fs::fstat(fd), rustix::fs::fstat(&own)) {
        (Ok(ours), Ok(again)) => ours.st_rdev == again.st_rdev,
        _ => false,
    };
    same.then_some(own)
}

/// Flags for a `send` that must not block, and must not raise SIGPIPE
/// where the system has a flag for that (macOS has none; retry ignores
/// SIGPIPE for itself anyway).
#[cfg(not(target_vendor = "apple"))]
pub(crate) const SEND_NOW: rustix::net::SendFlags =
    rustix::net::SendFlags::DONTWAIT.union(rustix::net::SendFlags::NOSIGNAL);
#[cfg(target_vendor = "apple")]
pub(crate) const SEND_NOW: rustix::net::SendFlags = rustix::net::SendFlags::DONTWAIT;

/// A close-on-exec pipe: (read end, write end). Without `pipe2` (macOS) the
/// flag is set just after; only the main thread spawns, so no child can
/// inherit the pipe in between.
pub(crate) fn pipe() -> rustix::io::Result<(OwnedFd, OwnedFd)> {
    #[cfg(not(target_vendor = "apple"))]
    return rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC);
    #[cfg(target_vendor = "apple")]
    {
        let (read, write) = rustix::pipe::pipe()?;
        for end in [&read, &write] {
            rustix::io::fcntl_setfd(end, rustix::io::FdFlags::CLOEXEC)?;
        }
        Ok((read, write))
    }
}

/// Ask for a pipe buffer of `size` bytes (Linux; elsewhere pipes keep their
/// size).
pub(crate) fn set_pipe_size(pipe: BorrowedFd<'_>, size: usize) {
    #[cfg(target_os = "linux")]
    let _ = rustix::pipe::fcntl_setpipe_size(pipe, size);
    #[cfg(not(target_os = "linux"))]
    let _ = (pipe, size);
}

/// The size of a pipe's buffer, where the system says (Linux).
pub(crate) fn pipe_size(pipe: BorrowedFd<'_>) -> Option<usize> {
    #[cfg(target_os = "linux")]
    return rustix::pipe::fcntl_getpipe_size(pipe).ok();
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pipe;
        None
    }
}

/// Make a FIFO at `path`, mode 0600 (tests plant them where files are
/// expected).
#[cfg(test)]
pub(crate) fn make_fifo(path: &std::path::Path) -> std::io::Result<()> {
    let path = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()))?;
    // SAFETY: a NUL-terminated path; mkfifo reads nothing else.
    if unsafe { libc::mkfifo(path.as_ptr(), 0o600) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// `st_mode` as the `u32` that std's `MetadataExt::mode` gives (`mode_t` is
/// `u16` on macOS and FreeBSD).
#[allow(clippy::useless_conversion)]
pub(crate) fn mode_bits(st_mode: rustix::fs::RawMode) -> u32 {
    u32::from(st_mode)
}

/// Mode bits for rustix's calls, from the `u32` retry keeps them in (only
/// the low 16 bits are ever set).
#[allow(clippy::unnecessary_cast)]
pub(crate) fn raw_mode(bits: u32) -> rustix::fs::RawMode {
    (bits & 0o177_777) as rustix::fs::RawMode
}

/// `st_dev` as the `u64` that std's `MetadataExt::dev` gives (`dev_t` is
/// `i32` on macOS).
#[allow(clippy::unnecessary_cast)]
pub(crate) fn device(stat: &rustix::fs::Stat) -> u64 {
    stat.st_dev as u64
}
