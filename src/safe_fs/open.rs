//! Opening a file others may have prepared (`--log-file`, the CI step
//! files) as the kernel's `fs.protected_symlinks` and
//! `fs.protected_regular` would allow, also where they are off.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use crate::sys::fs::mode_bits;
use anyhow::{Context, Result, bail};
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::walk::{Walk, planted_symlink};
use super::{Kind, planted_by_another_user, split_file_path};
use crate::sys::fd::own_fd;

/// Open `--log-file PATH` for appending (created 0644 under the umask).
///
/// A symlink at the path is followed, except where the kernel's
/// `fs.protected_symlinks` would refuse it (a symlink owned by neither us
/// nor the directory's owner, in a sticky world-writable directory), also
/// on machines where that protection is off; a regular file so owned there
/// is not opened either, as `fs.protected_regular` would refuse it
/// ([`open_trusted`]). A FIFO is refused (it could block retry, or stand
/// for nobody's reader), unless it is retry's own stdout or stderr
/// (`/dev/stderr` on a pipe); a regular file or a character device
/// (`/dev/null`, a terminal) is fine.
pub(crate) fn open_append_log(path: &Path) -> Result<File> {
    let flags =
        OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let mode = Mode::from_raw_mode(0o644);
    let fd = match open_trusted(path, flags, mode) {
        Ok(fd) => fd,
        Err(Unopened::Untrusted(err)) => return Err(err),
        Err(Unopened::Failed(err)) => return Err(open_error(path, err)),
    };
    let file = File::from(fd);
    let meta = file.metadata().context("cannot look at the opened file")?;
    match Kind::of(meta.file_type()) {
        Kind::Regular => {}
        Kind::Device if meta.file_type().is_char_device() => {}
        Kind::Fifo if is_own_output(&meta) => {}
        kind => bail!("{} stands there, not a regular file", kind.described()),
    }
    let status = rustix::fs::fcntl_getfl(&file).context("cannot read the file's flags")?;
    rustix::fs::fcntl_setfl(&file, status - OFlags::NONBLOCK)
        .context("cannot make the file blocking")?;
    Ok(file)
}

/// Why [`open_trusted`] opened nothing.
pub(crate) enum Unopened {
    /// A symlink another user planted: not followed.
    Untrusted(anyhow::Error),
    /// The open itself failed.
    Failed(Errno),
}

/// Open `path` with `flags`, following symlinks only where the kernel's
/// `fs.protected_symlinks` would (not one owned by neither us nor the
/// directory's owner in a sticky world-writable directory), also on
/// machines where that protection is off: the directories on the way are
/// walked as [`open_directory`] walks them; a symlink at the end is judged
/// before it is followed, and where it leads is walked the same way (but
/// for a link of `/proc`, as `/dev/stderr` leads to: the kernel follows
/// those). For paths others may have prepared: `--log-file`, the CI step
/// files.
pub(crate) fn open_trusted(path: &Path, flags: OFlags, mode: Mode) -> Result<OwnedFd, Unopened> {
    let Some((dir_path, name)) = split_file_path(path) else {
        return rustix::fs::open(path, flags, mode).map_err(Unopened::Failed);
    };
    let unopened = |err: io::Error| match planted_symlink(&err) {
        Some(planted) => Unopened::Untrusted(anyhow::anyhow!("{planted}")),
        None => Unopened::Failed(Errno::from_io_error(&err).unwrap_or(Errno::IO)),
    };
    let mut walk = Walk::start(dir_path).map_err(unopened)?;
    walk.down(dir_path).map_err(unopened)?;
    let mut name = name.to_os_string();
    loop {
        // First without following: a symlink planted after a check could
        // not steer this open; one that is there is judged before it is
        // followed. (A symlink there makes that open fail: ELOOP, or EACCES
        // when it is another user's in a sticky directory.)
        let refused = match rustix::fs::openat(&walk.here, &name, flags | OFlags::NOFOLLOW, mode) {
            Ok(fd) => return not_planted(&walk, fd, flags),
            Err(err) => err,
        };
        let link = match rustix::fs::statat(&walk.here, &name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat)
                if rustix::fs::FileType::from_raw_mode(stat.st_mode)
                    == rustix::fs::FileType::Symlink =>
            {
                stat
            }
            _ => return Err(Unopened::Failed(refused)),
        };
        if let Err(err) = walk.judge(&name, link.st_uid) {
            return Err(match planted_symlink(&err) {
                Some(_) => Unopened::Untrusted(anyhow::anyhow!(
                    "a symlink owned by another user (uid {}) in the sticky world-writable directory {}: not followed",
                    link.st_uid,
                    walk.shown().display()
                )),
                None => unopened(err),
            });
        }
        if walk.in_proc() {
            return rustix::fs::openat(&walk.here, &name, flags, mode).map_err(Unopened::Failed);
        }
        // Where it leads: walked from the symlink's directory, as the
        // kernel would (and from `/` when it is absolute).
        let target = walk.read_link(&name).map_err(unopened)?;
        if target.is_absolute() {
            walk.restart_at_root().map_err(unopened)?;
        }
        let Some((dir_path, next)) = split_file_path(&target) else {
            // No file's name (`/`, `..`, `DIR/`): a directory, which
            // open(2) refuses to write to as it would have.
            walk.down(&target).map_err(unopened)?;
            return rustix::fs::openat(&walk.here, ".", flags, mode).map_err(Unopened::Failed);
        };
        walk.down(dir_path).map_err(unopened)?;
        name = next.to_os_string();
    }
}

/// `fd`, opened with `flags` in the directory `walk` is at, unless it
/// was opened to be created (`O_CREAT`) and is a regular file another user
/// made in a sticky world-writable directory, which the kernel's
/// `fs.protected_regular` refuses to open so (also where that is off): a
/// log a root job appends to must not be one another user made to read it.
fn not_planted(walk: &Walk, fd: OwnedFd, flags: OFlags) -> Result<OwnedFd, Unopened> {
    if !flags.contains(OFlags::CREATE) {
        return Ok(fd);
    }
    let file = rustix::fs::fstat(&fd).map_err(Unopened::Failed)?;
    if rustix::fs::FileType::from_raw_mode(file.st_mode) != rustix::fs::FileType::RegularFile {
        return Ok(fd);
    }
    let dir = rustix::fs::fstat(&walk.here).map_err(Unopened::Failed)?;
    if planted_by_another_user(mode_bits(dir.st_mode), dir.st_uid, file.st_uid) {
        return Err(Unopened::Untrusted(anyhow::anyhow!(
            "a file owned by another user (uid {}) in the sticky world-writable directory {}: not written (as fs.protected_regular would refuse to open it)",
            file.st_uid,
            walk.shown().display()
        )));
    }
    Ok(fd)
}

fn open_error(path: &Path, err: Errno) -> anyhow::Error {
    if err == Errno::NXIO && matches!(std::fs::metadata(path), Ok(m) if m.file_type().is_fifo()) {
        anyhow::anyhow!("a FIFO stands there (with no reader), not a regular file")
    } else {
        io::Error::from(err).into()
    }
}

/// Is the opened file retry's own stdout or stderr (a pipe reached through
/// `/dev/stderr` or `/proc/self/fd/2`)?
fn is_own_output(meta: &std::fs::Metadata) -> bool {
    [1, 2].into_iter().any(|fd| {
        rustix::fs::fstat(own_fd(fd).as_fd())
            .is_ok_and(|own| crate::sys::fs::device(&own) == meta.dev() && own.st_ino == meta.ino())
    })
}
