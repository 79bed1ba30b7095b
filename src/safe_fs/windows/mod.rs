//! Windows' `safe_fs`: files in places others may write, with Windows'
//! protections. What the Unix room guards against (a FIFO, a device or a
//! symlink planted in `/tmp` by another user, a mode set by path) has other
//! shapes here: `%TEMP%` is the user's own (`%LOCALAPPDATA%\Temp`, whose
//! default ACL lets only the user, SYSTEM and the administrators in), so a
//! new directory there inherits that ACL and is the user's alone; files get
//! their directory's ACL (the modes the callers ask for are not applied);
//! a symlink at a path that is read is not followed
//! (`FILE_FLAG_OPEN_REPARSE_POINT`), and one that stands where a file is
//! replaced is refused.
//!
//! The same names as the Unix room, so that its callers read the same: a
//! directory is a handle (`open_directory`), replacing a file is
//! [`replace::Replacement`] (a new file, then `MoveFileExW` with
//! `MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH`).

use std::ffi::OsStr;
use std::fs::{File, FileType};
use std::io;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::sys::fd::OwnedFd;
use crate::sys::fs::{Mode, OFlags};

#[path = "../kinds.rs"]
mod kinds;
pub(crate) mod replace;

pub(crate) use kinds::{Kind, Unreadable, kind_at, read_bounded};

impl Kind {
    pub(crate) fn of(file_type: FileType) -> Kind {
        if file_type.is_symlink() {
            Kind::Symlink
        } else if file_type.is_dir() {
            Kind::Directory
        } else {
            Kind::Regular
        }
    }

    /// From mode bits as Unix writes them (what `replace` reports).
    pub(crate) fn of_mode(mode: u32) -> Kind {
        match mode & crate::sys::fs::S_IFMT {
            crate::sys::fs::S_IFDIR => Kind::Directory,
            crate::sys::fs::S_IFLNK => Kind::Symlink,
            crate::sys::fs::S_IFREG => Kind::Regular,
            _ => Kind::Device,
        }
    }
}

/// The content of the regular file at `path`, at most `limit` bytes;
/// `Ok(None)` when there is nothing there. A symlink is not followed.
pub(crate) fn read_small_regular(path: &Path, limit: usize) -> Result<Option<Vec<u8>>, Unreadable> {
    match kind_at(path) {
        Ok(None) => return Ok(None),
        Ok(Some(Kind::Regular)) => {}
        Ok(Some(kind)) => return Err(Unreadable::NotRegular(kind)),
        Err(err) => return Err(Unreadable::Io(err)),
    }
    let mut file = match open_read_nofollow(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
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

/// `path` opened for reading without following a symlink at its end.
pub(crate) fn open_read_nofollow(path: &Path) -> io::Result<File> {
    crate::sys::fs::open(path, OFlags::RDONLY | OFlags::NOFOLLOW, Mode::empty()).map(File::from)
}

/// The directory a file path names a file in (`.` for a bare name), and
/// the file's name; `None` for a path that names no file (a root, `..`, a
/// trailing separator).
pub(crate) fn split_file_path(path: &Path) -> Option<(&Path, &OsStr)> {
    let text = path.as_os_str().as_encoded_bytes();
    if text.ends_with(b"/")
        || text.ends_with(b"\\")
        || text.ends_with(b"/.")
        || text.ends_with(b"\\.")
    {
        return None;
    }
    let name = path.file_name()?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    Some((dir, name))
}

/// Why [`open_trusted`] opened nothing.
pub(crate) enum Unopened {
    /// Never on Windows (no sticky directories to plant a symlink in).
    #[allow(dead_code)]
    Untrusted(anyhow::Error),
    Failed(OpenError),
}

/// An open's failure, as Unix's `Errno` is one: an `io::Error` by `from`.
#[derive(Debug)]
pub(crate) struct OpenError(io::Error);

impl From<OpenError> for io::Error {
    fn from(err: OpenError) -> io::Error {
        err.0
    }
}

/// Open `path` with `flags`.
pub(crate) fn open_trusted(path: &Path, flags: OFlags, mode: Mode) -> Result<OwnedFd, Unopened> {
    crate::sys::fs::open(path, flags, mode).map_err(|err| Unopened::Failed(OpenError(err)))
}

/// Open `--log-file PATH` for appending (created where missing): a regular
/// file or a device (`NUL`, `CON`).
pub(crate) fn open_append_log(path: &Path) -> Result<File> {
    let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE;
    let file = crate::sys::fs::open(path, flags, Mode::empty())
        .map(File::from)
        .context("cannot open it")?;
    let meta = file.metadata().context("cannot look at the opened file")?;
    if meta.is_dir() {
        bail!("a directory stands there, not a regular file");
    }
    Ok(file)
}

/// A directory, opened (a handle that keeps it from being removed or
/// renamed while it is held).
pub(crate) fn open_directory(path: &Path) -> io::Result<OwnedFd> {
    crate::sys::fs::open(path, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())
}

/// Whether a new file can be made in `dir`: one is, and removed at once.
pub(crate) fn try_create_in(dir: crate::sys::fd::BorrowedFd<'_>, prefix: &str) -> io::Result<()> {
    let path = crate::sys::fs::path_of(dir)?.join(random_name(prefix));
    File::options().write(true).create_new(true).open(&path)?;
    std::fs::remove_file(&path)
}

/// Hold a writer's temporary file for the life of the run: nothing to do
/// on Windows, where stale ones are not removed ([`remove_stale`]).
pub(crate) fn hold(_file: &File) {}

/// Remove the temporary files runs killed left: not on Windows, where no
/// lock tells a live run's apart here; a killed run's `.retry-out-*.tmp`
/// stays.
pub(crate) fn remove_stale(
    _dir: crate::sys::fd::BorrowedFd<'_>,
    _prefix: &str,
    _suffix: &str,
    _stale_after: std::time::Duration,
) {
}

/// `prefix` and 16 random hex digits: a fresh name for a new file.
pub(crate) fn random_name(prefix: &str) -> String {
    format!("{prefix}{:016x}", rand::random::<u64>())
}

/// A directory only this user can enter, in the user's temporary
/// directory (whose ACL the new directory inherits: the user's own);
/// removed with all it holds when dropped.
pub(crate) struct PrivateDir(PathBuf);

impl PrivateDir {
    pub(crate) fn new(prefix: &str) -> Result<PrivateDir> {
        let base = temp_dir();
        let mut last = None;
        for _ in 0..16 {
            let path = base.join(random_name(prefix));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(PrivateDir(path)),
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => last = Some(err),
                Err(err) => {
                    last = Some(err);
                    break;
                }
            }
        }
        let err = last.expect("tried at least once");
        bail!(
            "creating a private directory in {}: {err}",
            shown_temp_dir(&base)
        )
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }

    /// Is the directory still there (and a directory, not a link)?
    pub(crate) fn is_ours(&self) -> bool {
        std::fs::symlink_metadata(&self.0).is_ok_and(|meta| meta.is_dir())
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        if std::fs::remove_dir(&self.0).is_err() && self.is_ours() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Where the spools and the run's private directory go: the user's
/// temporary directory (`%TEMP%`, as `GetTempPath2` finds it).
pub(crate) fn temp_dir() -> PathBuf {
    std::env::temp_dir()
}

/// [`temp_dir`]'s `dir` for messages.
pub(crate) fn shown_temp_dir(dir: &Path) -> String {
    format!("{} (TEMP)", dir.display())
}
