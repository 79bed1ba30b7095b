//! New files to be renamed over others: unnamed until they are named for
//! the rename where the system can (`sys::tmpfile`: Linux's `O_TMPFILE`),
//! else named and made exclusively.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::BorrowedFd;

pub(crate) use crate::sys::tmpfile::{NAME_TRIES, create_unnamed, link_unnamed};
use std::os::unix::fs::PermissionsExt;

use crate::sys::fs::raw_mode;
use rand::TryRng;
use rand::rngs::SysRng;
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use std::os::fd::OwnedFd;

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
        match rustix::fs::openat(dir, &candidate, flags, Mode::from_raw_mode(raw_mode(mode))) {
            Ok(fd) => return Ok((fd, candidate)),
            Err(Errno::EXIST) if tries < NAME_TRIES => tries += 1,
            Err(err) => return Err(err),
        }
    }
}
