//! New files to be renamed over others: unnamed until they are named for
//! the rename where the system can (`sys::tmpfile`: Linux's `O_TMPFILE`),
//! else named and made exclusively.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::BorrowedFd;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

/// Whether a new file can be made in `dir`: unnamed, so nothing is left
/// behind whenever retry dies; a file system without `O_TMPFILE` (/proc
/// and /sys among them, where no file can be made at all) gets the named
/// way: a new file, removed at once.
pub(crate) fn try_create_in(dir: BorrowedFd<'_>, prefix: &str) -> io::Result<()> {
    match create_unnamed(dir, 0o600) {
        Ok(_) => Ok(()),
        Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL) => {
            let (_, name) = create_new_in(dir, prefix, 0o600)?;
            let _ = rustix::fs::unlinkat(dir, &name, AtFlags::empty());
            Ok(())
        }
        Err(err) => Err(err.into()),
    }
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

/// Hold `file` (a named temporary file of a writer's) for the life of the
/// run and of any process that holds it open: [`remove_stale`] of a later
/// run never removes a live one (`flock`).
pub(crate) fn hold(file: &File) {
    let _ = rustix::fs::flock(file, rustix::fs::FlockOperation::NonBlockingLockExclusive);
}

/// Remove the named temporary files (`PREFIX...SUFFIX`) that runs killed
/// in `dir` left behind: ours by name and owner, older than `stale_after`,
/// and held by no live run ([`hold`]).
pub(crate) fn remove_stale(dir: BorrowedFd<'_>, prefix: &str, suffix: &str, stale_after: Duration) {
    use rustix::fs::{FileType, FlockOperation};
    use std::os::unix::ffi::OsStrExt;
    let Ok(listing) = rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return;
    };
    let Ok(entries) = rustix::fs::Dir::new(listing) else {
        return;
    };
    let me = rustix::process::geteuid().as_raw();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    for entry in entries.flatten() {
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        let bytes = name.as_bytes();
        if !(bytes.starts_with(prefix.as_bytes()) && bytes.ends_with(suffix.as_bytes())) {
            continue;
        }
        let Ok(fd) = rustix::fs::openat(
            dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
            Mode::empty(),
        ) else {
            continue;
        };
        let Ok(stat) = rustix::fs::fstat(&fd) else {
            continue;
        };
        let modified = Duration::from_secs(u64::try_from(stat.st_mtime).unwrap_or(0));
        let stale = FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile
            && stat.st_uid == me
            && now.saturating_sub(modified) > stale_after;
        if stale && rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive).is_ok() {
            let _ = rustix::fs::unlinkat(dir, name, AtFlags::empty());
        }
    }
}
