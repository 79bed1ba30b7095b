//! Walking to a directory one component at a time, as the kernel would,
//! but not through a symlink another user planted in a sticky
//! world-writable directory (`fs.protected_symlinks`, also where it is off).

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::sys::fs::mode_bits;
use rustix::fs::{AtFlags, OFlags};
use rustix::io::Errno;

use super::planted_by_another_user;
use crate::sys::fs::open_dir_step;

/// A symlink on the way to a directory that another user planted: not
/// followed (see [`open_directory`]).
#[derive(Debug)]
pub(crate) struct PlantedSymlink {
    link: PathBuf,
    owner: u32,
}

impl std::fmt::Display for PlantedSymlink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is a symlink owned by another user (uid {}) in a sticky world-writable directory: not followed",
            self.link.display(),
            self.owner
        )
    }
}

impl std::error::Error for PlantedSymlink {}

/// Symlinks followed in one walk before giving up (the kernel's limit).
const MOST_LINKS: usize = 40;

/// Open the directory `path` (`O_PATH`) one component at a time, following
/// a symlink anywhere on the way only where the kernel's
/// `fs.protected_symlinks` would: not one that another user planted in a
/// sticky world-writable directory ([`planted_by_another_user`]), also on
/// machines where that protection is off. What is checked is what is
/// opened: each step is opened relative to the one before, with
/// `O_NOFOLLOW`. For a directory a file is then written into by a job that
/// may run as root (`-o FILE`): `/tmp/reports` made a symlink to `/etc`
/// must not steer it.
///
/// Otherwise as `open(2)` resolves `path`: a relative one from the working
/// directory itself (not from its name, which may lead through directories
/// this user may not search), `..` to the parent of where the walk is, and a
/// link of `/proc` (`/proc/PID/root`, `/proc/self/cwd`, `/proc/self/fd/N`)
/// to what it stands for, which its text may not name (another mount
/// namespace, a removed directory): the kernel follows those.
pub(crate) fn open_directory(path: &Path) -> io::Result<OwnedFd> {
    let mut walk = Walk::start(path)?;
    walk.down(path)?;
    Ok(walk.here)
}

/// A walk of [`open_directory`]: where it is, and how many symlinks it
/// followed on the way.
pub(super) struct Walk {
    /// The directory reached (`O_PATH`).
    pub(super) here: OwnedFd,
    /// Its path, for messages: as written, with links' text put in place.
    shown: PathBuf,
    links: usize,
}

/// A step of the walk: not through a symlink.
const STEP: OFlags = OFlags::NOFOLLOW.union(OFlags::CLOEXEC);

impl Walk {
    /// At `/` for an absolute `path`, else at the working directory.
    pub(super) fn start(path: &Path) -> io::Result<Walk> {
        let (here, shown) = if path.is_absolute() {
            (open_dir_step(rustix::fs::CWD, OsStr::new("/"), STEP)?, "/")
        } else {
            let cwd = rustix::fs::CWD;
            (open_dir_step(cwd, OsStr::new("."), STEP)?, "")
        };
        Ok(Walk {
            here,
            shown: PathBuf::from(shown),
            links: 0,
        })
    }

    /// Where the walk is, for messages.
    pub(super) fn shown(&self) -> &Path {
        if self.shown.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.shown
        }
    }

    /// Back at `/`, for an absolute symlink.
    pub(super) fn restart_at_root(&mut self) -> io::Result<()> {
        self.here = open_dir_step(rustix::fs::CWD, OsStr::new("/"), STEP)?;
        self.shown = PathBuf::from("/");
        Ok(())
    }

    /// Go down the directories of `path` from here (where [`Walk::start`]
    /// or an absolute symlink put the walk).
    pub(super) fn down(&mut self, path: &Path) -> io::Result<()> {
        let mut pending: std::collections::VecDeque<OsString> = steps(path).into();
        while let Some(step) = pending.pop_front() {
            let stat = rustix::fs::statat(&self.here, &step, AtFlags::SYMLINK_NOFOLLOW)?;
            if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::Symlink {
                self.here = open_dir_step(self.here.as_fd(), &step, STEP)?;
                self.step_shown(&step);
                continue;
            }
            self.judge(&step, stat.st_uid)?;
            if self.in_proc() {
                // One of /proc's: the kernel takes the walk where it leads.
                self.here = open_dir_step(self.here.as_fd(), &step, OFlags::CLOEXEC)?;
                self.step_shown(&step);
                continue;
            }
            let target = self.read_link(&step)?;
            if target.is_absolute() {
                self.restart_at_root()?;
            }
            for (at, next) in steps(&target).into_iter().enumerate() {
                pending.insert(at, next);
            }
        }
        Ok(())
    }

    /// May the symlink `name` here, owned by `owner`, be followed? Not
    /// when another user planted it ([`PlantedSymlink`]), nor past the
    /// kernel's count of links in one walk (`ELOOP`). Counted.
    pub(super) fn judge(&mut self, name: &OsStr, owner: u32) -> io::Result<()> {
        let dir = rustix::fs::fstat(&self.here)?;
        if planted_by_another_user(mode_bits(dir.st_mode), dir.st_uid, owner) {
            return Err(io::Error::other(PlantedSymlink {
                link: self.shown.join(name),
                owner,
            }));
        }
        self.links += 1;
        if self.links > MOST_LINKS {
            return Err(Errno::LOOP.into());
        }
        Ok(())
    }

    /// Is the walk in `/proc`? Its links (`/proc/PID/root`,
    /// `/proc/self/cwd`, `/proc/self/fd/N`) lead to what they stand for,
    /// which their text may not name (another mount namespace, a removed
    /// directory, a pipe): only the kernel can follow them, and no other
    /// user can plant one there.
    pub(super) fn in_proc(&self) -> bool {
        crate::sys::fs::is_proc(self.here.as_fd())
    }

    /// The text of the symlink `name` here.
    pub(super) fn read_link(&self, name: &OsStr) -> io::Result<PathBuf> {
        let target = rustix::fs::readlinkat(&self.here, name, Vec::new())?;
        Ok(PathBuf::from(OsStr::from_bytes(target.as_bytes())))
    }

    fn step_shown(&mut self, step: &OsStr) {
        let up = step == ".."
            && matches!(
                self.shown.components().next_back(),
                Some(std::path::Component::Normal(_))
            );
        if up {
            self.shown.pop();
        } else {
            self.shown.push(step);
        }
    }
}

/// The components of `path` to step through: names and `..` (`/` and `.`
/// say nothing more).
fn steps(path: &Path) -> Vec<OsString> {
    path.components()
        .filter_map(|component| match component {
            std::path::Component::Normal(name) => Some(name.to_os_string()),
            std::path::Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect()
}

/// The planted symlink that stopped an [`open_directory`] walk, if that is
/// what `err` is.
pub(crate) fn planted_symlink(err: &io::Error) -> Option<&PlantedSymlink> {
    err.get_ref()?.downcast_ref::<PlantedSymlink>()
}
