//! Unnamed files (`O_TMPFILE`), named when they are complete: Linux only.
//! Elsewhere, and in the portable build, both calls fail with `EOPNOTSUPP`,
//! which the callers take as "make a named file instead"
//! (`safe_fs::unnamed`).

use std::ffi::OsString;
use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::io::Errno;

/// Whether this build makes unnamed files at all (file systems may still
/// refuse them: the callers fall back to named ones either way).
#[cfg(test)]
pub(crate) const UNNAMED_FILES: bool = cfg!(all(target_os = "linux", not(retry_posix)));

/// How many fresh random names are tried before giving up on a directory
/// (a collision of 64 random bits means something is wrong).
pub(crate) const NAME_TRIES: usize = 16;

#[cfg(all(target_os = "linux", not(retry_posix)))]
use {
    rustix::fs::{AtFlags, Mode, OFlags},
    std::os::fd::AsRawFd,
};

#[cfg(all(target_os = "linux", not(retry_posix)))]
/// An unnamed regular file in directory `dir` (`O_TMPFILE`), read-write,
/// mode `mode` under the umask. It has no name until [`link_unnamed`] gives
/// it one. Fails with `EOPNOTSUPP`, `EISDIR` or `EINVAL` where the file
/// system cannot make one.
pub(crate) fn create_unnamed(dir: BorrowedFd<'_>, mode: u32) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        dir,
        ".",
        OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    )
}

#[cfg(not(all(target_os = "linux", not(retry_posix))))]
pub(crate) fn create_unnamed(_dir: BorrowedFd<'_>, _mode: u32) -> rustix::io::Result<OwnedFd> {
    Err(Errno::OPNOTSUPP)
}

#[cfg(all(target_os = "linux", not(retry_posix)))]
/// Give the unnamed `file` a fresh `name()` in `dir`, to be renamed over
/// its target. Through `/proc/self/fd`, as any user may; with
/// `AT_EMPTY_PATH` (which needs `CAP_DAC_READ_SEARCH`) where `/proc` is not
/// mounted.
pub(crate) fn link_unnamed(
    file: BorrowedFd<'_>,
    dir: BorrowedFd<'_>,
    name: &mut dyn FnMut() -> OsString,
) -> rustix::io::Result<OsString> {
    let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    let mut tries = 0;
    loop {
        let candidate = name();
        let linked = match rustix::fs::linkat(
            rustix::fs::CWD,
            proc_path.as_str(),
            dir,
            &candidate,
            AtFlags::SYMLINK_FOLLOW,
        ) {
            Err(Errno::NOENT) => rustix::fs::linkat(file, "", dir, &candidate, AtFlags::EMPTY_PATH),
            other => other,
        };
        match linked {
            Ok(()) => return Ok(candidate),
            Err(Errno::EXIST) if tries < NAME_TRIES => tries += 1,
            Err(err) => return Err(err),
        }
    }
}

#[cfg(not(all(target_os = "linux", not(retry_posix))))]
pub(crate) fn link_unnamed(
    _file: BorrowedFd<'_>,
    _dir: BorrowedFd<'_>,
    _name: &mut dyn FnMut() -> OsString,
) -> rustix::io::Result<OsString> {
    Err(Errno::OPNOTSUPP)
}
