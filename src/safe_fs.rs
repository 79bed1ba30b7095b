//! Opening files in places others can write: `$TMPDIR`, a shared textfile
//! collector directory, a log directory. Another local user may have put a
//! FIFO, a device or a symlink where retry expects a file, or may swap one
//! in while retry works; so:
//!
//! - what retry reads from a file another process wrote is opened with
//!   `O_NOFOLLOW | O_NONBLOCK`, must be a regular file, and is read only up
//!   to a bound;
//! - what retry replaces is replaced only when nothing or a regular file
//!   stands there, through a new file whose mode is set on its descriptor;
//! - a symlink in a sticky world-writable directory is followed only as the
//!   kernel's `fs.protected_symlinks` would, on the way to a file as at its
//!   end (`walk`);
//! - a run's private files live in a directory only its user can enter
//!   (`private_dir`);
//! - a file that replaces another is written unnamed (`O_TMPFILE`) and
//!   named only to be renamed into place, so a death at any moment leaves
//!   nothing behind ([`create_unnamed`], [`link_unnamed`]; where the file
//!   system cannot, [`create_exclusive`] makes a named one).

use std::ffi::{OsStr, OsString};
use std::fs::{File, FileType};
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;

use anyhow::{Context, Result, bail};
use rand::TryRng;
use rand::rngs::SysRng;
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use crate::sys::fd::own_fd;

mod private_dir;
mod walk;

pub(crate) use private_dir::{PrivateDir, temp_dir};
use walk::Walk;
pub(crate) use walk::{open_directory, planted_symlink};

/// What stands at a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Regular,
    Directory,
    Symlink,
    Fifo,
    Device,
    Socket,
}

impl Kind {
    pub(crate) fn of(file_type: FileType) -> Kind {
        if file_type.is_symlink() {
            Kind::Symlink
        } else if file_type.is_dir() {
            Kind::Directory
        } else if file_type.is_fifo() {
            Kind::Fifo
        } else if file_type.is_char_device() || file_type.is_block_device() {
            Kind::Device
        } else if file_type.is_socket() {
            Kind::Socket
        } else {
            Kind::Regular
        }
    }

    /// From the mode bits of a `stat`.
    pub(crate) fn of_mode(mode: u32) -> Kind {
        use rustix::fs::FileType as Raw;
        match Raw::from_raw_mode(mode) {
            Raw::Symlink => Kind::Symlink,
            Raw::Directory => Kind::Directory,
            Raw::Fifo => Kind::Fifo,
            Raw::CharacterDevice | Raw::BlockDevice => Kind::Device,
            Raw::Socket => Kind::Socket,
            _ => Kind::Regular,
        }
    }

    /// For messages: "a FIFO", "a symlink", ...
    pub(crate) fn described(self) -> &'static str {
        match self {
            Kind::Regular => "a regular file",
            Kind::Directory => "a directory",
            Kind::Symlink => "a symlink",
            Kind::Fifo => "a FIFO",
            Kind::Device => "a device",
            Kind::Socket => "a socket",
        }
    }
}

/// What stands at `path` itself (a symlink is not followed); `None` when
/// nothing does.
pub(crate) fn kind_at(path: &Path) -> io::Result<Option<Kind>> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some(Kind::of(meta.file_type()))),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// Why a small file another process wrote was not read.
#[derive(Debug)]
pub(crate) enum Unreadable {
    /// Something other than a regular file stands there.
    NotRegular(Kind),
    /// More than the bound.
    TooLong,
    Io(io::Error),
}

/// The content of the regular file at `path`, at most `limit` bytes;
/// `Ok(None)` when there is nothing there. A symlink is not followed and a
/// FIFO or device is not opened for reading (so nothing can block or feed
/// retry without end).
pub(crate) fn read_small_regular(path: &Path, limit: usize) -> Result<Option<Vec<u8>>, Unreadable> {
    match kind_at(path) {
        Ok(None) => return Ok(None),
        Ok(Some(Kind::Regular)) => {}
        Ok(Some(kind)) => return Err(Unreadable::NotRegular(kind)),
        Err(err) => return Err(Unreadable::Io(err)),
    }
    // Swapped since? The open does not follow a symlink nor wait on a
    // FIFO, and fstat says what was opened.
    let mut file = match open_read_nofollow(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) if err.raw_os_error() == Some(libc::ELOOP) => {
            return Err(Unreadable::NotRegular(Kind::Symlink));
        }
        Err(err) => return Err(Unreadable::Io(err)),
    };
    let kind = file
        .metadata()
        .map(|meta| Kind::of(meta.file_type()))
        .map_err(Unreadable::Io)?;
    if kind != Kind::Regular {
        return Err(Unreadable::NotRegular(kind));
    }
    read_bounded(&mut file, limit)
        .map_err(Unreadable::Io)?
        .map_or(Err(Unreadable::TooLong), |bytes| Ok(Some(bytes)))
}

/// `path` opened for reading without following a symlink at its end and
/// without waiting for a FIFO's writer.
pub(crate) fn open_read_nofollow(path: &Path) -> io::Result<File> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, Mode::empty())?;
    Ok(File::from(fd))
}

/// At most `limit` bytes of `file`; `None` if it holds more.
pub(crate) fn read_bounded(file: &mut File, limit: usize) -> io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() <= limit).then_some(bytes))
}

/// `Ok` when `name` in the directory `dir` may be replaced: nothing stands
/// there, or a regular file. Anything else (a symlink, which could steer
/// the write, a FIFO, a device, a directory) is an error that says what
/// stands there.
pub(crate) fn check_replaceable(dir: BorrowedFd<'_>, name: &OsStr) -> Result<()> {
    let kind = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => Some(Kind::of_mode(stat.st_mode)),
        Err(Errno::NOENT) => None,
        Err(err) => return Err(io::Error::from(err)).context("cannot look at it"),
    };
    match kind {
        None | Some(Kind::Regular) => Ok(()),
        Some(kind) => bail!(
            "{} stands there, not a regular file: left as it is",
            kind.described()
        ),
    }
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

fn random_name(prefix: &str) -> String {
    // From the kernel directly: rand's thread-local generator would be set
    // up for this one draw on every run (BENCHMARKS.md).
    let random = SysRng.try_next_u64().unwrap_or_else(|_| rand::random());
    format!("{prefix}{random:016x}")
}

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
    if planted_by_another_user(dir.st_mode, dir.st_uid, file.st_uid) {
        return Err(Unopened::Untrusted(anyhow::anyhow!(
            "a file owned by another user (uid {}) in the sticky world-writable directory {}: not written (as fs.protected_regular would refuse to open it)",
            file.st_uid,
            walk.shown().display()
        )));
    }
    Ok(fd)
}

/// The directory a file path names a file in (`.` for a bare name), and
/// the file's name; `None` for a path that names no file (`/`, `..`, a
/// trailing slash, a trailing `/.`, which `Path::file_name` would read as
/// the name before it: `FILE/.` is no file).
pub(crate) fn split_file_path(path: &Path) -> Option<(&Path, &OsStr)> {
    let bytes = path.as_os_str().as_bytes();
    if bytes.ends_with(b"/") || bytes.ends_with(b"/.") {
        return None;
    }
    let name = path.file_name()?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    Some((dir, name))
}

fn open_error(path: &Path, err: Errno) -> anyhow::Error {
    if err == Errno::NXIO && matches!(std::fs::metadata(path), Ok(m) if m.file_type().is_fifo()) {
        anyhow::anyhow!("a FIFO stands there (with no reader), not a regular file")
    } else {
        io::Error::from(err).into()
    }
}

/// Whether a file owned by `owner`, in a directory of mode `dir_mode` owned
/// by `dir_owner`, was put there by another user, as the kernel's
/// `fs.protected_symlinks` and `fs.protected_regular` tell: the directory is
/// sticky and others can write it (as /tmp), and the file belongs to
/// neither us nor the directory's owner. Such a symlink is not followed and
/// such a file not written or replaced, also where those protections are
/// off.
pub(crate) fn planted_by_another_user(dir_mode: u32, dir_owner: u32, owner: u32) -> bool {
    dir_mode & 0o1002 == 0o1002
        && owner != rustix::process::geteuid().as_raw()
        && owner != dir_owner
}

/// Is the opened file retry's own stdout or stderr (a pipe reached through
/// `/dev/stderr` or `/proc/self/fd/2`)?
fn is_own_output(meta: &std::fs::Metadata) -> bool {
    [1, 2].into_iter().any(|fd| {
        rustix::fs::fstat(own_fd(fd).as_fd())
            .is_ok_and(|own| own.st_dev == meta.dev() && own.st_ino == meta.ino())
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::path::PathBuf;

    /// The directory an `O_PATH` descriptor stands for.
    fn path_of(fd: &OwnedFd) -> PathBuf {
        std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap()
    }

    #[test]
    fn directories_are_walked_as_the_kernel_walks_them() {
        let top = tempfile::tempdir().unwrap();
        let top_path = top.path().canonicalize().unwrap();
        std::fs::create_dir_all(top_path.join("a/b")).unwrap();
        std::os::unix::fs::symlink("..", top_path.join("a/b/up")).unwrap();
        std::os::unix::fs::symlink(top_path.join("a"), top_path.join("abs")).unwrap();
        for (path, expected) in [
            ("a/b", "a/b"),
            ("a/b/up/b/..", "a"),
            ("abs/b", "a/b"),
            ("a/./b/../b", "a/b"),
        ] {
            let fd = open_directory(&top_path.join(path)).unwrap();
            assert_eq!(path_of(&fd), top_path.join(expected), "{path}");
        }
        std::fs::write(top_path.join("file"), "").unwrap();
        let err = open_directory(&top_path.join("file")).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOTDIR));
        let err = open_directory(&top_path.join("missing/x")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        std::os::unix::fs::symlink("loop", top_path.join("loop")).unwrap();
        let err = open_directory(&top_path.join("loop")).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ELOOP));
    }

    #[test]
    fn small_regular_files_are_read_others_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        assert!(matches!(read_small_regular(&file, 10), Ok(None)));
        std::fs::write(&file, b"0123456789").unwrap();
        assert_eq!(
            read_small_regular(&file, 10).unwrap().unwrap(),
            b"0123456789"
        );
        File::options()
            .append(true)
            .open(&file)
            .unwrap()
            .write_all(b"!")
            .unwrap();
        assert!(matches!(
            read_small_regular(&file, 10),
            Err(Unreadable::TooLong)
        ));

        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(matches!(
            read_small_regular(&link, 100),
            Err(Unreadable::NotRegular(Kind::Symlink))
        ));
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(matches!(
            read_small_regular(&fifo, 100),
            Err(Unreadable::NotRegular(Kind::Fifo))
        ));
        assert!(matches!(
            read_small_regular(Path::new("/dev/zero"), 100),
            Err(Unreadable::NotRegular(Kind::Device))
        ));
    }

    #[test]
    fn only_nothing_or_a_regular_file_is_replaceable() {
        let dir = tempfile::tempdir().unwrap();
        let at = open_directory(dir.path()).unwrap();
        let check = |dir: &OwnedFd, name: &str| check_replaceable(dir.as_fd(), OsStr::new(name));
        check(&at, "f").unwrap();
        std::fs::write(dir.path().join("f"), b"x").unwrap();
        check(&at, "f").unwrap();
        std::os::unix::fs::symlink(dir.path().join("f"), dir.path().join("link")).unwrap();
        let err = check(&at, "link").unwrap_err().to_string();
        assert!(err.contains("a symlink"), "{err}");
        let err = check(&open_directory(Path::new("/dev")).unwrap(), "null")
            .unwrap_err()
            .to_string();
        assert!(err.contains("a device"), "{err}");
        std::fs::create_dir(dir.path().join("d")).unwrap();
        let err = check(&at, "d").unwrap_err().to_string();
        assert!(err.contains("a directory"), "{err}");
    }

    #[test]
    fn new_files_get_their_mode_on_the_descriptor() {
        let dir = tempfile::tempdir().unwrap();
        let at = open_directory(dir.path()).unwrap();
        let (_file, name) = create_new_in(at.as_fd(), ".x-", 0o644).unwrap();
        let path = dir.path().join(name);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(meta.mode() & 0o7777, 0o644);
        assert!(
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".x-")
        );
    }

    #[test]
    fn the_private_directory_is_0700_and_absolute() {
        let dir = PrivateDir::new("retry-test-").unwrap();
        let path = dir.path().to_path_buf();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o700);
        assert!(path.is_absolute());
        std::fs::create_dir(path.join("sub")).unwrap();
        std::fs::write(path.join("sub/file"), "x").unwrap();
        drop(dir);
        assert!(!path.exists());
    }

    #[test]
    fn a_log_file_may_be_a_regular_file_or_a_character_device() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        open_append_log(&log).unwrap().write_all(b"a\n").unwrap();
        open_append_log(&log).unwrap().write_all(b"b\n").unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "a\nb\n");
        open_append_log(Path::new("/dev/null")).unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let err = open_append_log(&fifo).unwrap_err().to_string();
        assert!(err.contains("a FIFO"), "{err}");
    }
}
