//! New files to be renamed over others: unnamed (`O_TMPFILE`) until they
//! are named for the rename, through `/proc/self/fd`. This file is the only
//! place that knows either, so that a platform without them changes it
//! alone; where the file system cannot make an unnamed file, a named one
//! is made exclusively.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;

use rand::TryRng;
use rand::rngs::SysRng;
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

/// How a kernel or file system says it cannot make an unnamed file: the
/// caller makes a named one instead.
pub(crate) fn no_unnamed_files(err: Errno) -> bool {
    matches!(
        err,
        Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL | Errno::NOENT
    )
}

/// A new file in the directory `dir` named `prefix` and random
/// characters, created exclusively (never through a symlink or over
/// anything that exists), with `mode` set on its descriptor, so no path can
/// steer it.
pub(crate) fn create_new_in(
    dir: BorrowedFd<'_>,
    prefix: &str,
    mode: u32,
) -> io::Result<(File, OsString)> {
    let (fd, name) = create_exclusive(dir, &mut || OsString::from(random_name(prefix)), 0o600)?;
    let file = File::from(fd);
    if let Err(err) = file.set_permissions(std::fs::Permissions::from_mode(mode)) {
        let _ = rustix::fs::unlinkat(dir, &name, AtFlags::empty());
        return Err(err);
    }
    Ok((file, name))
}

/// `prefix` and 16 random hex digits: a fresh name for a new file.
pub(crate) fn random_name(prefix: &str) -> String {
    // From the kernel directly: rand's thread-local generator would be set
    // up for this one draw on every run (BENCHMARKS.md).
    let random = SysRng.try_next_u64().unwrap_or_else(|_| rand::random());
    format!("{prefix}{random:016x}")
}

/// How many fresh random names are tried before giving up on a directory
/// (a collision of 64 random bits means something is wrong).
const NAME_TRIES: usize = 16;

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

/// A new regular file in `dir` under a fresh `name()`, never following or
/// reusing what stands there (`O_CREAT | O_EXCL | O_NOFOLLOW`), read-write,
/// mode `mode` under the umask.
pub(crate) fn create_exclusive(
    dir: BorrowedFd<'_>,
    name: &mut dyn FnMut() -> OsString,
    mode: u32,
) -> rustix::io::Result<(OwnedFd, OsString)> {
    let mut tries = 0;
    loop {
        let candidate = name();
        let flags = OFlags::CREATE
            | OFlags::EXCL
            | OFlags::RDWR
            | OFlags::NOFOLLOW
            | OFlags::CLOEXEC
            | OFlags::NOCTTY;
        match rustix::fs::openat(dir, &candidate, flags, Mode::from_raw_mode(mode)) {
            Ok(fd) => return Ok((fd, candidate)),
            Err(Errno::EXIST) if tries < NAME_TRIES => tries += 1,
            Err(err) => return Err(err),
        }
    }
}

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
