//! Replacing a file atomically: the one way `-o`, the state store and
//! `--metrics-file` do it.
//!
//! A [`Replacement`] is a new file in the target's own directory (reached
//! through a descriptor, so no path can steer it): unnamed where the file
//! system can (`unnamed`), else named exclusively (`O_CREAT | O_EXCL |
//! O_NOFOLLOW`). It is written, given its mode on its descriptor, synced,
//! named if it had no name, renamed over the target (a rename replaces a
//! name and never writes through a symlink), and the directory is synced.
//! A replacement dropped before that leaves nothing behind.
//!
//! What stands at the target is replaced only when it is nothing or a
//! regular file that no other user planted in a sticky directory others can
//! write (as `fs.protected_regular` would refuse to open it): looked at
//! when the replacement is made and again just before the rename. A writer
//! in a directory only it can write (the state store's) may replace
//! whatever stands there ([`Options::guard`] off).
//!
//! Messages are the writers' own: this says which step failed and why.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use crate::sys::fs::{mode_bits, raw_mode};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

use super::planted_by_another_user;
use super::unnamed::{create_exclusive, create_unnamed, link_unnamed, no_unnamed_files};

/// How a writer replaces its file.
pub(crate) struct Options {
    pub(crate) mode: NewMode,
    /// Sync the file, and the directory after the rename.
    pub(crate) durable: bool,
    /// Refuse a target that is not a regular file, or that another user
    /// planted; off only in a directory no one else can write.
    pub(crate) guard: bool,
    /// Make the new file unnamed where the file system can (tests turn it
    /// off to try the named way).
    pub(crate) unnamed: bool,
}

/// The mode of the new file.
#[derive(Clone, Copy)]
pub(crate) enum NewMode {
    /// Exactly this, set on the descriptor whatever the umask.
    Exactly(u32),
    /// Like the file it replaces (and, for root, its owner, as `sed -i`
    /// keeps it); a new file gets this under the umask.
    LikeTarget(u32),
}

/// Why what stands at the target is not replaced.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// Not a regular file: its `st_mode`.
    NotRegular(u32),
    /// A regular file another user (`owner`) put in a sticky directory
    /// others can write (as /tmp): they would keep it, and so decide who
    /// reads what is written.
    Planted { owner: u32 },
}

/// The step of a replacement that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Looking at what stands at the target.
    Look,
    /// Creating the new file.
    Create,
    /// Setting its mode.
    Mode,
    Write,
    /// Syncing it to disk.
    Sync,
    /// Naming an unnamed file for the rename.
    Name,
    Rename,
    /// Syncing the directory, after the rename: the file was replaced.
    SyncDir,
}

/// What went wrong.
#[derive(Debug)]
pub(crate) enum Trouble {
    Refused(Refusal),
    Failed(Step, io::Error),
}

impl Trouble {
    fn failed(step: Step) -> impl FnOnce(Errno) -> Trouble {
        move |err| Trouble::Failed(step, err.into())
    }
}

/// A new file that is to replace `name` in `dir`.
pub(crate) struct Replacement {
    dir: OwnedFd,
    name: OsString,
    file: File,
    /// Its name in `dir` while it has one and is not renamed yet: removed
    /// on drop.
    named: Option<OsString>,
    fresh_name: Box<dyn Fn() -> OsString>,
    options: Options,
}

impl Replacement {
    /// Look at what stands at `name` in `dir` (when guarded) and make the
    /// new file; `fresh_name` gives the temporary names it may take.
    pub(crate) fn new(
        dir: OwnedFd,
        name: &OsStr,
        options: Options,
        fresh_name: Box<dyn Fn() -> OsString>,
    ) -> Result<Replacement, Trouble> {
        if options.guard {
            check(dir.as_fd(), name)?;
        }
        let (exact, create_mode) = match options.mode {
            // Private until the mode is set on the descriptor.
            NewMode::Exactly(mode) => (Some(mode), 0o600),
            NewMode::LikeTarget(mode) => (None, mode),
        };
        let created = if options.unnamed {
            create_unnamed(dir.as_fd(), create_mode)
        } else {
            Err(Errno::OPNOTSUPP)
        };
        let (fd, named) = match created {
            Ok(fd) => (fd, None),
            Err(err) if no_unnamed_files(err) => {
                let (fd, temp) = create_exclusive(dir.as_fd(), &mut || fresh_name(), create_mode)
                    .map_err(Trouble::failed(Step::Create))?;
                (fd, Some(temp))
            }
            Err(err) => return Err(Trouble::failed(Step::Create)(err)),
        };
        let replacement = Replacement {
            dir,
            name: name.to_owned(),
            file: File::from(fd),
            named,
            fresh_name,
            options,
        };
        if let Some(mode) = exact {
            rustix::fs::fchmod(&replacement.file, Mode::from_raw_mode(raw_mode(mode)))
                .map_err(Trouble::failed(Step::Mode))?;
        }
        Ok(replacement)
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
        rustix::fs::statat(&self.dir, &self.name, AtFlags::SYMLINK_NOFOLLOW).is_ok()
    }

    /// Put the new file in place of the target. A failure at
    /// [`Step::SyncDir`] comes after the rename: the target was replaced.
    pub(crate) fn commit(mut self) -> Result<(), Trouble> {
        let target = if self.options.guard {
            check(self.dir.as_fd(), &self.name)?
        } else {
            None
        };
        if let (NewMode::LikeTarget(_), Some(stat)) = (self.options.mode, target) {
            if rustix::process::geteuid().is_root() {
                // Anyone else cannot give files away.
                let _ = rustix::fs::fchown(
                    &self.file,
                    Some(rustix::process::Uid::from_raw(stat.st_uid)),
                    Some(rustix::process::Gid::from_raw(stat.st_gid)),
                );
            }
            rustix::fs::fchmod(&self.file, Mode::from_raw_mode(stat.st_mode & 0o777))
                .map_err(Trouble::failed(Step::Mode))?;
        }
        if self.options.durable {
            crate::sys::fs::full_sync(self.file.as_fd())
                .map_err(|err| Trouble::Failed(Step::Sync, err.into()))?;
        }
        let temp = if let Some(temp) = &self.named {
            temp.clone()
        } else {
            let temp = link_unnamed(self.file.as_fd(), self.dir.as_fd(), &mut || {
                (self.fresh_name)()
            })
            .map_err(Trouble::failed(Step::Name))?;
            self.named = Some(temp.clone());
            temp
        };
        rustix::fs::renameat(&self.dir, &temp, &self.dir, &self.name)
            .map_err(Trouble::failed(Step::Rename))?;
        self.named = None;
        if self.options.durable {
            sync_dir(self.dir.as_fd()).map_err(Trouble::failed(Step::SyncDir))?;
        }
        Ok(())
    }
}

impl Drop for Replacement {
    fn drop(&mut self) {
        if let Some(temp) = self.named.take() {
            let _ = rustix::fs::unlinkat(&self.dir, &temp, AtFlags::empty());
        }
    }
}

/// What stands at `name` in `dir`, when it may be replaced: nothing
/// (`None`), or a regular file (its status) that no other user planted.
/// A symlink is not followed, and not replaced either.
pub(crate) fn check(dir: BorrowedFd<'_>, name: &OsStr) -> Result<Option<Stat>, Trouble> {
    let stat = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(Errno::NOENT) => return Ok(None),
        Err(err) => return Err(Trouble::failed(Step::Look)(err)),
    };
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(Trouble::Refused(Refusal::NotRegular(mode_bits(
            stat.st_mode,
        ))));
    }
    let dir_stat = rustix::fs::fstat(dir).map_err(Trouble::failed(Step::Look))?;
    if planted_by_another_user(mode_bits(dir_stat.st_mode), dir_stat.st_uid, stat.st_uid) {
        return Err(Trouble::Refused(Refusal::Planted { owner: stat.st_uid }));
    }
    Ok(Some(stat))
}

/// The directory `dir` (which may be an `O_PATH` descriptor) synced, so
/// that a rename in it is on disk (`F_FULLFSYNC` on macOS: `sys::fs`).
fn sync_dir(dir: BorrowedFd<'_>) -> rustix::io::Result<()> {
    let opened = rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    crate::sys::fs::full_sync(opened.as_fd())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::safe_fs::open_directory;
    use crate::safe_fs::sorted_names as listing;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::path::Path;

    fn options(mode: NewMode, unnamed: bool) -> Options {
        Options {
            mode,
            durable: true,
            guard: true,
            unnamed,
        }
    }

    fn replacement(dir: &Path, name: &str, options: Options) -> Result<Replacement, Trouble> {
        Replacement::new(
            open_directory(dir).unwrap(),
            OsStr::new(name),
            options,
            Box::new(|| OsString::from(crate::safe_fs::random_name(".test-"))),
        )
    }

    #[test]
    fn both_ways_replace_the_file_and_leave_nothing_else() {
        for unnamed in [true, false]
            .into_iter()
            .filter(|&u| !u || crate::sys::tmpfile::UNNAMED_FILES)
        {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("f");
            std::fs::write(&path, "old").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
            let mut new = replacement(
                dir.path(),
                "f",
                options(NewMode::LikeTarget(0o644), unnamed),
            )
            .unwrap();
            assert_eq!(listing(dir.path()).len(), if unnamed { 1 } else { 2 });
            new.write_all(b"new").unwrap();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
            new.commit().unwrap();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
            let mode = std::fs::metadata(&path).unwrap().mode() & 0o7777;
            assert_eq!(mode, 0o640, "unnamed: {unnamed}");
            assert_eq!(listing(dir.path()), ["f"]);

            let mut exact =
                replacement(dir.path(), "f", options(NewMode::Exactly(0o604), unnamed)).unwrap();
            exact.write_all(b"exact").unwrap();
            exact.commit().unwrap();
            let mode = std::fs::metadata(&path).unwrap().mode() & 0o7777;
            assert_eq!(mode, 0o604, "unnamed: {unnamed}");
            // Dropped before the rename: nothing is left behind.
            drop(replacement(dir.path(), "f", options(NewMode::Exactly(0o600), unnamed)).unwrap());
            assert_eq!(listing(dir.path()), ["f"]);
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "exact");
        }
    }

    #[test]
    fn only_nothing_or_a_regular_file_is_replaced_unless_unguarded() {
        let dir = tempfile::tempdir().unwrap();
        let at = open_directory(dir.path()).unwrap();
        let check = |name: &str| check(at.as_fd(), OsStr::new(name));
        assert!(check("f").unwrap().is_none());
        std::fs::write(dir.path().join("f"), b"x").unwrap();
        assert!(check("f").unwrap().is_some());
        std::os::unix::fs::symlink(dir.path().join("f"), dir.path().join("link")).unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        for (name, kind) in [("link", FileType::Symlink), ("d", FileType::Directory)] {
            match check(name) {
                Err(Trouble::Refused(Refusal::NotRegular(mode))) => {
                    assert_eq!(FileType::from_raw_mode(raw_mode(mode)), kind);
                }
                other => panic!("{name}: {other:?}"),
            }
        }
        // Refused when it is made, and again at the rename.
        assert!(matches!(
            replacement(dir.path(), "link", options(NewMode::Exactly(0o644), true)),
            Err(Trouble::Refused(_))
        ));
        let new = replacement(dir.path(), "late", options(NewMode::Exactly(0o644), true)).unwrap();
        std::os::unix::fs::symlink("f", dir.path().join("late")).unwrap();
        assert!(matches!(new.commit(), Err(Trouble::Refused(_))));
        assert!(
            std::fs::symlink_metadata(dir.path().join("late"))
                .unwrap()
                .is_symlink()
        );
        // Unguarded (a private directory): the symlink itself is replaced.
        let unguarded = Options {
            guard: false,
            ..options(NewMode::Exactly(0o600), true)
        };
        let mut new = replacement(dir.path(), "link", unguarded).unwrap();
        new.write_all(b"fresh").unwrap();
        new.commit().unwrap();
        assert!(
            std::fs::symlink_metadata(dir.path().join("link"))
                .unwrap()
                .is_file()
        );
        assert_eq!(std::fs::read_to_string(dir.path().join("f")).unwrap(), "x");
    }
}
