//! File-system calls that differ by system: how a directory is opened for a
//! walk, whether a directory is Linux's `/proc`, reopening one of our own
//! pipes or terminals with a private `O_NONBLOCK` (and how a socket is sent
//! to without blocking), pipes themselves and their size, and FIFOs (for
//! tests).

use std::ffi::OsStr;
use std::os::fd::{BorrowedFd, OwnedFd};

/// The flags and mode of `open`, by the names every caller uses (Windows
/// has its own: `sys/windows/fs.rs`).
pub(crate) use rustix::fs::{Mode, OFlags};

/// How a directory is opened to be walked through: `O_PATH` where it exists
/// (Linux, FreeBSD), which needs only search permission, as a path lookup
/// does; on macOS `O_SEARCH` (open for searching only).
#[cfg(any(target_os = "linux", target_os = "freebsd"))]
const DIR_STEP: OFlags = OFlags::PATH.union(OFlags::DIRECTORY);
#[cfg(not(any(target_os = "linux", target_os = "freebsd")))]
const DIR_STEP: OFlags = OFlags::from_bits_retain(libc::O_SEARCH as _).union(OFlags::DIRECTORY);

/// What a directory step is opened with where the kernel refuses
/// [`DIR_STEP`]: macOS before 13 has no `O_SEARCH` (EINVAL), and takes
/// `O_RDONLY`, which needs read permission besides search permission (a
/// directory of mode 0711 on the way is then refused).
const DIR_STEP_BEFORE: Option<OFlags> = if cfg!(target_vendor = "apple") {
    Some(OFlags::RDONLY.union(OFlags::DIRECTORY))
} else {
    None
};

/// Open the directory `path` (relative to `at`, unless absolute) as one
/// step of a walk, with `extra` flags (`O_NOFOLLOW`, `O_CLOEXEC`): see
/// [`DIR_STEP`] and [`DIR_STEP_BEFORE`].
pub(crate) fn open_dir_step(
    at: BorrowedFd<'_>,
    path: &OsStr,
    extra: OFlags,
) -> rustix::io::Result<OwnedFd> {
    let open = |flags: OFlags| rustix::fs::openat(at, path, flags | extra, Mode::empty());
    with_fallback(DIR_STEP, DIR_STEP_BEFORE, open)
}

/// `open(first)`, and `open(fallback)` when the kernel refuses the flags
/// of the first (EINVAL).
fn with_fallback(
    first: OFlags,
    fallback: Option<OFlags>,
    open: impl Fn(OFlags) -> rustix::io::Result<OwnedFd>,
) -> rustix::io::Result<OwnedFd> {
    match (open(first), fallback) {
        (Err(rustix::io::Errno::INVAL), Some(fallback)) => open(fallback),
        (opened, _) => opened,
    }
}

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
        Mode::empty(),
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
        Mode::empty(),
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

/// Flush what was written to `fd` (a file, or a directory after a rename
/// in it) to stable storage. macOS's `fsync` only hands the data to the
/// drive, which may keep it in its cache across a power loss; there
/// `fcntl(F_FULLFSYNC)` asks the drive to flush too (fsync(2), fcntl(2);
/// std's `File::sync_all` does the same, without a way back). A file
/// system that refuses it (SMB and other network mounts answer ENOTSUP;
/// Go falls back the same way, golang/go#64215) gets a plain `fsync`.
/// Elsewhere `fsync` is the flush.
pub(crate) fn full_sync(fd: BorrowedFd<'_>) -> rustix::io::Result<()> {
    #[cfg(target_vendor = "apple")]
    return or_plain(rustix::fs::fcntl_fullfsync(fd), || rustix::fs::fsync(fd));
    #[cfg(not(target_vendor = "apple"))]
    rustix::fs::fsync(fd)
}

/// `full`'s result, or where the file system refused that kind of flush,
/// `plain()`'s. A failure of the flush itself (EIO) stays a failure: a
/// second try could report success for data that never reached the disk.
#[cfg_attr(not(target_vendor = "apple"), allow(dead_code))]
fn or_plain(
    full: rustix::io::Result<()>,
    plain: impl FnOnce() -> rustix::io::Result<()>,
) -> rustix::io::Result<()> {
    use rustix::io::Errno;
    match full {
        Err(err)
            if [Errno::NOTSUP, Errno::OPNOTSUPP, Errno::NOTTY, Errno::INVAL].contains(&err) =>
        {
            plain()
        }
        other => other,
    }
}

/// Open `path` (`open(2)`).
pub(crate) fn open(path: &std::path::Path, flags: OFlags, mode: Mode) -> std::io::Result<OwnedFd> {
    rustix::fs::open(path, flags, mode).map_err(std::io::Error::from)
}

/// `path` opened for reading without waiting for a FIFO's writer
/// (`O_NONBLOCK`).
pub(crate) fn open_without_waiting(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
}

/// Whether an open failed because nothing is there (`ENOENT`, or a
/// `ENOTDIR` on the way).
pub(crate) fn is_missing(err: &std::io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR))
}

/// A path from the bytes of a URL (any bytes make a Unix path).
pub(crate) fn path_from_bytes(bytes: &[u8]) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStrExt;
    std::path::PathBuf::from(OsStr::from_bytes(bytes))
}

/// Read from `file` at `offset` (`pread`: the file's offset is left).
pub(crate) fn read_at(
    file: &std::fs::File,
    buffer: &mut [u8],
    offset: u64,
) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buffer, offset)
}

/// What a file of mode `mode` is, for messages: "a symbolic link".
pub(crate) fn kind_name(mode: u32) -> &'static str {
    use rustix::fs::FileType;
    match FileType::from_raw_mode(raw_mode(mode)) {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Unknown => "not a file retry knows",
    }
}

/// What an error number is called (`ENOSPC`), for messages that give the
/// name a user can search for.
pub(crate) fn error_name(code: i32) -> Option<&'static str> {
    Some(match code {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::ENXIO => "ENXIO",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::EXDEV => "EXDEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::ETXTBSY => "ETXTBSY",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::ESPIPE => "ESPIPE",
        libc::EROFS => "EROFS",
        libc::EMLINK => "EMLINK",
        libc::EPIPE => "EPIPE",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ELOOP => "ELOOP",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ECONNRESET => "ECONNRESET",
        libc::ESTALE => "ESTALE",
        libc::EDQUOT => "EDQUOT",
        _ => return None,
    })
}

/// What an error's number is, where it has no name.
pub(crate) const ERROR_NUMBER: &str = "errno";

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

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::io::Errno;

    #[test]
    fn a_refused_full_flush_falls_back_to_fsync_and_a_failed_one_fails() {
        let fsynced = std::cell::Cell::new(0);
        let plain = || {
            fsynced.set(fsynced.get() + 1);
            Ok(())
        };
        assert_eq!(or_plain(Ok(()), plain), Ok(()));
        assert_eq!(fsynced.get(), 0);
        // SMB: ENOTSUP; a file system without the ioctl: ENOTTY.
        for refused in [Errno::NOTSUP, Errno::NOTTY, Errno::INVAL] {
            assert_eq!(or_plain(Err(refused), plain), Ok(()));
        }
        assert_eq!(fsynced.get(), 3);
        assert_eq!(or_plain(Err(Errno::IO), plain), Err(Errno::IO));
        assert_eq!(fsynced.get(), 3);
    }

    #[test]
    fn a_directory_step_refused_for_its_flags_is_opened_read_only() {
        let tried = std::cell::RefCell::new(Vec::new());
        let dir = tempfile::tempdir().unwrap();
        // A kernel without O_SEARCH (macOS before 13): EINVAL, then the
        // read-only open.
        let old_kernel = |flags: OFlags| {
            tried.borrow_mut().push(flags);
            if flags.contains(OFlags::DIRECTORY) && tried.borrow().len() == 1 {
                Err(Errno::INVAL)
            } else {
                rustix::fs::open(
                    dir.path(),
                    OFlags::RDONLY | OFlags::DIRECTORY,
                    Mode::empty(),
                )
            }
        };
        let apple = Some(OFlags::RDONLY | OFlags::DIRECTORY);
        assert!(with_fallback(DIR_STEP, apple, old_kernel).is_ok());
        assert_eq!(
            *tried.borrow(),
            [DIR_STEP, OFlags::RDONLY | OFlags::DIRECTORY]
        );
        // Any other refusal is the answer; and without a fallback, EINVAL too.
        let denied = |_: OFlags| Err(Errno::ACCESS);
        assert_eq!(
            with_fallback(DIR_STEP, apple, denied).unwrap_err(),
            Errno::ACCESS
        );
        let invalid = |_: OFlags| Err(Errno::INVAL);
        assert_eq!(
            with_fallback(DIR_STEP, None, invalid).unwrap_err(),
            Errno::INVAL
        );
        // This system's own step, with its extra flags.
        let at = rustix::fs::CWD;
        let step = open_dir_step(at, dir.path().as_os_str(), OFlags::CLOEXEC).unwrap();
        assert!(rustix::fs::fstat(&step).is_ok());
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        assert_eq!(
            open_dir_step(at, file.as_os_str(), OFlags::CLOEXEC).unwrap_err(),
            Errno::NOTDIR
        );
    }

    #[test]
    fn files_and_directories_are_flushed() {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::File::create(dir.path().join("f")).unwrap();
        full_sync(std::os::fd::AsFd::as_fd(&file)).unwrap();
        let opened = std::fs::File::open(dir.path()).unwrap();
        full_sync(std::os::fd::AsFd::as_fd(&opened)).unwrap();
    }
}
