//! Opening a state directory only through a path nobody else controls, the
//! way OpenSSH's `StrictModes` trusts a key file: every directory on the way
//! belongs to root or to us and is writable by no one else (unless it is
//! sticky, as /tmp is: then others cannot rename or remove what is ours),
//! and the state directory itself is ours and writable by us alone.
//!
//! The walk opens one component at a time, relative to the directory
//! already checked, with `O_NOFOLLOW`: what is checked is what is used, and
//! nothing can be swapped in behind the check. A symlink on the way is
//! followed only if root or we own it (as the kernel's `protected_symlinks`
//! does in sticky directories); its target is then walked the same way.
//! Missing directories are created 0700.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

use crate::sys::fs::open_dir_step;

/// Symlinks followed in one walk before giving up (the kernel's limit).
const MOST_LINKS: usize = 40;

/// Open `path` (creating what is missing) as a state directory, checked
/// as the module says; the descriptor is readable, for listing and fsync.
pub(super) fn open_private(path: &Path) -> Result<OwnedFd> {
    open_checked(path, true)
}

/// A state directory (or a directory on its way) that is not there, found
/// by a walk that makes nothing ([`open_existing`]): nothing is stored yet.
#[derive(Debug)]
pub(super) struct NotThere;

impl std::fmt::Display for NotThere {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no such directory")
    }
}

impl std::error::Error for NotThere {}

/// Open `path` as a state directory, checked the same way, without making
/// anything: for reading (`--circuit-status` on a read-only file system).
/// A missing directory is the error [`NotThere`].
pub(super) fn open_existing(path: &Path) -> Result<OwnedFd> {
    open_checked(path, false)
}

#[allow(
    clippy::too_many_lines,
    reason = "the checks of a state directory, one per step, in OpenSSH's order"
)]
fn open_checked(path: &Path, create: bool) -> Result<OwnedFd> {
    let uid = rustix::process::geteuid().as_raw();
    let shown = path.display();
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .context("finding the current directory")?
            .join(path)
    };
    let mut pending: VecDeque<OsString> = parts(&absolute).into();
    let root =
        open_dir_step(rustix::fs::CWD, "/".as_ref(), OFlags::CLOEXEC).context("opening /")?;
    // The directories opened so far, each inside the one before: ".."
    // goes back one, an absolute symlink back to the root.
    let mut stack: Vec<(OwnedFd, PathBuf)> = vec![(root, PathBuf::from("/"))];
    let mut links = 0;
    while let Some(part) = pending.pop_front() {
        if part == ".." {
            if stack.len() > 1 {
                stack.pop();
            }
            continue;
        }
        let Some((parent, parent_path)) = stack.last() else {
            bail!("state directory {shown}: lost track of the walk");
        };
        // A directory matters as a parent: whoever can write it can put
        // anything at the next step.
        trusted_parent(parent, parent_path, uid, path)?;
        let here = parent_path.join(&part);
        let stat = match rustix::fs::statat(parent, &part, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(Errno::NOENT) if !create => return Err(NotThere.into()),
            Err(Errno::NOENT) => {
                match rustix::fs::mkdirat(parent, &part, Mode::from_raw_mode(0o700)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(err) => {
                        return Err(err).with_context(|| {
                            format!("creating the state directory {}", here.display())
                        });
                    }
                }
                rustix::fs::statat(parent, &part, AtFlags::SYMLINK_NOFOLLOW)
                    .with_context(|| format!("state directory {shown}: {}", here.display()))?
            }
            Err(err) => {
                return Err(err)
                    .with_context(|| format!("state directory {shown}: {}", here.display()));
            }
        };
        if FileType::from_raw_mode(stat.st_mode) == FileType::Symlink {
            if stat.st_uid != 0 && stat.st_uid != uid {
                bail!(
                    "state directory {shown}: {} is a symlink owned by uid {}: refusing to follow it (only symlinks owned by root or by you are followed)",
                    here.display(),
                    stat.st_uid
                );
            }
            links += 1;
            if links > MOST_LINKS {
                bail!("state directory {shown}: too many levels of symbolic links");
            }
            let target = rustix::fs::readlinkat(parent, &part, Vec::new())
                .with_context(|| format!("reading the symlink {}", here.display()))?;
            let target = PathBuf::from(OsString::from_vec(target.into_bytes()));
            if target.is_absolute() {
                stack.truncate(1);
            }
            for (at, step) in parts(&target).into_iter().enumerate() {
                pending.insert(at, step);
            }
            continue;
        }
        let fd = match open_dir_step(parent.as_fd(), &part, OFlags::NOFOLLOW | OFlags::CLOEXEC) {
            Ok(fd) => fd,
            Err(Errno::NOTDIR) => {
                bail!(
                    "state directory {shown}: {} is not a directory",
                    here.display()
                )
            }
            Err(Errno::LOOP) => bail!(
                "state directory {shown}: {} changed while it was being checked",
                here.display()
            ),
            Err(err) => {
                return Err(err)
                    .with_context(|| format!("state directory {shown}: {}", here.display()));
            }
        };
        stack.push((fd, here));
    }
    let Some((fd, _)) = stack.pop() else {
        bail!("state directory {shown}: lost track of the walk");
    };
    let stat = rustix::fs::fstat(&fd).with_context(|| format!("state directory {shown}"))?;
    if stat.st_uid != uid {
        bail!(
            "state directory {shown} belongs to uid {}, not to us (uid {uid}): refusing it",
            stat.st_uid
        );
    }
    if stat.st_mode & 0o022 != 0 {
        bail!(
            "state directory {shown} is writable by others (mode {:o}): refusing it, since anyone who can write there can steer your circuits and budgets (chmod go-w it)",
            stat.st_mode & 0o7777
        );
    }
    rustix::fs::openat(
        &fd,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("opening the state directory {shown}"))
}

/// A directory on the way: root's or ours, and writable by no one else
/// unless sticky.
fn trusted_parent(fd: &OwnedFd, here: &Path, uid: u32, path: &Path) -> Result<()> {
    let stat: Stat = rustix::fs::fstat(fd).with_context(|| format!("{}", here.display()))?;
    if stat.st_uid != 0 && stat.st_uid != uid {
        bail!(
            "state directory {}: {} belongs to uid {}: refusing it, since its owner can replace what is inside (every directory above the state must belong to root or to you)",
            path.display(),
            here.display(),
            stat.st_uid
        );
    }
    let sticky = stat.st_mode & 0o1000 != 0;
    if stat.st_mode & 0o022 != 0 && !sticky {
        bail!(
            "state directory {}: {} is writable by others (mode {:o}) without the sticky bit: refusing it, since anyone who can write there can replace what is inside (chmod go-w or +t it)",
            path.display(),
            here.display(),
            stat.st_mode & 0o7777
        );
    }
    Ok(())
}

/// The steps of a path: names and "..", without the root and ".".
fn parts(path: &Path) -> Vec<OsString> {
    path.components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::print_stderr)] // a test that cannot run here says why
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn private() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    fn set_mode(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    fn is_root() -> bool {
        rustix::process::geteuid().is_root()
    }

    #[test]
    fn missing_directories_are_created_private() {
        let top = private();
        let path = top.path().join("a/b/c");
        open_private(&path).unwrap();
        for dir in ["a", "a/b", "a/b/c"] {
            let mode = std::fs::metadata(top.path().join(dir))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700, "{dir}");
        }
    }

    #[test]
    fn a_directory_others_can_write_on_the_way_is_refused_unless_sticky() {
        let top = private();
        let open = top.path().join("open");
        std::fs::create_dir(&open).unwrap();
        set_mode(&open, 0o777);
        let err = open_private(&open.join("state")).unwrap_err().to_string();
        assert!(
            err.contains("writable by others") && err.contains("sticky"),
            "{err}"
        );
        assert!(!open.join("state").exists());
        set_mode(&open, 0o1777);
        open_private(&open.join("state")).unwrap();
        // Group-writable counts too.
        set_mode(&open, 0o770);
        assert!(open_private(&open.join("state")).is_err());
    }

    #[test]
    fn our_own_symlinks_are_followed_and_checked_at_their_target() {
        let top = private();
        std::fs::create_dir(top.path().join("real")).unwrap();
        set_mode(&top.path().join("real"), 0o700);
        std::os::unix::fs::symlink("real", top.path().join("link")).unwrap();
        std::os::unix::fs::symlink(top.path().join("real/../real"), top.path().join("abs"))
            .unwrap();
        let fd = open_private(&top.path().join("link")).unwrap();
        let real = std::fs::metadata(top.path().join("real")).unwrap();
        let opened = rustix::fs::fstat(&fd).unwrap();
        assert_eq!(
            (crate::sys::fs::device(&opened), opened.st_ino),
            (
                std::os::unix::fs::MetadataExt::dev(&real),
                std::os::unix::fs::MetadataExt::ino(&real)
            )
        );
        open_private(&top.path().join("abs")).unwrap();
        // A loop ends in an error, not a hang.
        std::os::unix::fs::symlink("loop", top.path().join("loop")).unwrap();
        let err = open_private(&top.path().join("loop"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("symbolic links"), "{err}");
    }

    #[test]
    fn another_users_symlink_or_directory_is_refused() {
        if !is_root() {
            eprintln!("SKIPPED: needs root to give files to another user");
            return;
        }
        let top = private();
        let real = top.path().join("real");
        std::fs::create_dir(&real).unwrap();
        set_mode(&real, 0o700);
        let link = top.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
        let err = open_private(&link).unwrap_err().to_string();
        assert!(err.contains("symlink owned by uid 65534"), "{err}");
        // A directory of theirs above ours.
        let theirs = top.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        set_mode(&theirs, 0o755);
        std::fs::create_dir(theirs.join("state")).unwrap();
        set_mode(&theirs.join("state"), 0o700);
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        let err = open_private(&theirs.join("state")).unwrap_err().to_string();
        assert!(err.contains("belongs to uid 65534"), "{err}");
        // The state directory itself theirs.
        std::os::unix::fs::chown(&real, Some(65534), Some(65534)).unwrap();
        let err = open_private(&real).unwrap_err().to_string();
        assert!(err.contains("not to us"), "{err}");
    }

    #[test]
    fn a_file_in_the_way_is_not_a_directory() {
        let top = private();
        std::fs::write(top.path().join("file"), "").unwrap();
        let err = open_private(&top.path().join("file"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a directory"), "{err}");
    }
}
