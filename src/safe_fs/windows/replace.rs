//! Replacing a file atomically on Windows: a new file in the target's
//! directory (created exclusively under a fresh name), written, flushed to
//! the disk when asked (`FlushFileBuffers`), then moved over the target
//! with `MoveFileExW(MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)`,
//! which returns once the move is on the disk. A replacement dropped
//! before that removes its file (a crash can leave it behind: the state
//! directory cleans its own).
//!
//! The same names as the Unix room's; the modes asked for are not applied
//! (a new file gets its directory's ACL), and no file is "planted" (there
//! are no sticky directories). A symlink or a directory at the target is
//! refused when guarded.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;

use crate::sys::fd::{AsFd, BorrowedFd, OwnedFd};

/// How a writer replaces its file.
pub(crate) struct Options {
    #[allow(dead_code)]
    pub(crate) mode: NewMode,
    /// Flush the file to the disk before the move (the move itself is
    /// written through).
    pub(crate) durable: bool,
    /// Refuse a target that is not a regular file.
    pub(crate) guard: bool,
    /// Unix's unnamed files: none on Windows.
    #[allow(dead_code)]
    pub(crate) unnamed: bool,
}

/// The mode of the new file (Unix's; not applied on Windows).
#[derive(Clone, Copy)]
#[allow(dead_code)]
pub(crate) enum NewMode {
    Exactly(u32),
    LikeTarget(u32),
}

/// Why what stands at the target is not replaced.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// Not a regular file: its mode bits as Unix writes them (`S_IFDIR`,
    /// `S_IFLNK`).
    NotRegular(u32),
    /// Never on Windows.
    #[allow(dead_code)]
    Planted { owner: u32 },
}

/// The step of a replacement that failed (Unix's steps; Windows sets no
/// mode, names no unnamed file and syncs no directory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(dead_code)]
pub(crate) enum Step {
    Look,
    Create,
    Mode,
    Write,
    Sync,
    Name,
    Rename,
    SyncDir,
}

/// What went wrong.
#[derive(Debug)]
pub(crate) enum Trouble {
    Refused(Refusal),
    Failed(Step, io::Error),
}

/// A new file that is to replace `name` in `dir`.
pub(crate) struct Replacement {
    /// Held so that the directory stays where it is.
    _dir: OwnedFd,
    target: PathBuf,
    file: File,
    /// The new file's path while it is not moved yet: removed on drop.
    temp: Option<PathBuf>,
    options: Options,
}

impl Replacement {
    /// Look at what stands at `name` in `dir` (when guarded) and make the
    /// new file; `fresh_name` gives the temporary names it may take.
    #[allow(
        clippy::needless_pass_by_value,
        reason = "Unix's keeps `fresh_name`; the callers are the same"
    )]
    pub(crate) fn new(
        dir: OwnedFd,
        name: &OsStr,
        options: Options,
        fresh_name: Box<dyn Fn() -> OsString>,
    ) -> Result<Replacement, Trouble> {
        let dir_path =
            crate::sys::fs::path_of(dir.as_fd()).map_err(|err| Trouble::Failed(Step::Look, err))?;
        if options.guard {
            check(dir.as_fd(), name)?;
        }
        let mut last = io::Error::from(io::ErrorKind::AlreadyExists);
        for _ in 0..crate::sys::fs::NAME_TRIES {
            let temp = dir_path.join(fresh_name());
            match File::options()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&temp)
            {
                Ok(file) => {
                    return Ok(Replacement {
                        _dir: dir,
                        target: dir_path.join(name),
                        file,
                        temp: Some(temp),
                        options,
                    });
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => last = err,
                Err(err) => return Err(Trouble::Failed(Step::Create, err)),
            }
        }
        Err(Trouble::Failed(Step::Create, last))
    }

    /// The new file, to write into.
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// Write all of `bytes` into the new file.
    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> Result<(), Trouble> {
        self.file
            .write_all(bytes)
            .map_err(|err| Trouble::Failed(Step::Write, err))
    }

    /// Something stands at the target now (not following a symlink).
    pub(crate) fn target_exists(&self) -> bool {
        std::fs::symlink_metadata(&self.target).is_ok()
    }

    /// Put the new file in place of the target.
    pub(crate) fn commit(mut self) -> Result<(), Trouble> {
        if self.options.guard {
            let parent = self.target.parent().map(PathBuf::from).unwrap_or_default();
            let name = self
                .target
                .file_name()
                .map(OsStr::to_os_string)
                .unwrap_or_default();
            check_path(&parent.join(name))?;
        }
        if self.options.durable {
            self.file
                .sync_all()
                .map_err(|err| Trouble::Failed(Step::Sync, err))?;
        }
        let temp = self.temp.clone().expect("named until moved");
        crate::sys::fs::replace_file(&temp, &self.target)
            .map_err(|err| Trouble::Failed(Step::Rename, err))?;
        self.temp = None;
        Ok(())
    }
}

impl Drop for Replacement {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = std::fs::remove_file(temp);
        }
    }
}

/// What stands at `name` in `dir`, when it may be replaced: nothing, or a
/// regular file (not a symlink, which is not followed).
pub(crate) fn check(dir: BorrowedFd<'_>, name: &OsStr) -> Result<Option<()>, Trouble> {
    let dir_path = crate::sys::fs::path_of(dir).map_err(|err| Trouble::Failed(Step::Look, err))?;
    check_path(&dir_path.join(name))
}

fn check_path(path: &std::path::Path) -> Result<Option<()>, Trouble> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(Trouble::Failed(Step::Look, err)),
    };
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Err(Trouble::Refused(Refusal::NotRegular(
            crate::sys::fs::S_IFLNK,
        )));
    }
    if kind.is_dir() {
        return Err(Trouble::Refused(Refusal::NotRegular(
            crate::sys::fs::S_IFDIR,
        )));
    }
    Ok(Some(()))
}
