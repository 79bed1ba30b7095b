//! Opening files in places others can write: `$TMPDIR`, a shared textfile
//! collector directory, a log directory. Another local user may have put a
//! FIFO, a device or a symlink where retry expects a file, or may swap one
//! in while retry works; so:
//!
//! - what retry reads from a file another process wrote is opened with
//!   `O_NOFOLLOW | O_NONBLOCK`, must be a regular file, and is read only up
//!   to a bound;
//! - what retry replaces is replaced only when nothing or a regular file
//!   no other user planted stands there, through a new file whose mode is
//!   set on its descriptor, renamed into place (`replace`: the one way
//!   `-o`, the state store and `--metrics-file` replace a file);
//! - a symlink in a sticky world-writable directory is followed only as the
//!   kernel's `fs.protected_symlinks` would, on the way to a file as at its
//!   end (`walk`);
//! - a run's private files live in a directory only its user can enter
//!   (`private_dir`);
//! - a file that replaces another is written unnamed (`O_TMPFILE`) and
//!   named only to be renamed into place, so a death at any moment leaves
//!   nothing behind (`unnamed`, the only place that knows `O_TMPFILE` and
//!   `/proc/self/fd`; where the file system cannot, a named one);
//! - a log or step file is opened as the kernel's protections would allow
//!   (`open`).

use std::ffi::OsStr;
use std::fs::{File, FileType};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use rustix::fs::{Mode, OFlags};

mod kinds;
mod open;
mod private_dir;
pub(crate) mod replace;
mod unnamed;
mod walk;

pub(crate) use kinds::{Kind, Unreadable, kind_at, read_bounded};
pub(crate) use open::{Unopened, open_append_log, open_trusted};
pub(crate) use private_dir::{PrivateDir, shown_temp_dir, temp_dir};
pub(crate) use unnamed::{hold, random_name, remove_stale, try_create_in};
pub(crate) use walk::open_directory;

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
        match Raw::from_raw_mode(crate::sys::fs::raw_mode(mode)) {
            Raw::Symlink => Kind::Symlink,
            Raw::Directory => Kind::Directory,
            Raw::Fifo => Kind::Fifo,
            Raw::CharacterDevice | Raw::BlockDevice => Kind::Device,
            Raw::Socket => Kind::Socket,
            _ => Kind::Regular,
        }
    }
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

/// The names in `dir`, sorted (tests look at what a writer left behind).
#[cfg(test)]
pub(crate) fn sorted_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::fs::MetadataExt;

    /// Whether the directory `fd` stands for is the one at `path` (its
    /// device and inode: no `/proc/self/fd` to name it on macOS).
    fn is_at(fd: &OwnedFd, path: &Path) -> bool {
        let opened = rustix::fs::fstat(fd).unwrap();
        let there = std::fs::metadata(path).unwrap();
        (crate::sys::fs::device(&opened), opened.st_ino) == (there.dev(), there.ino())
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
            assert!(is_at(&fd, &top_path.join(expected)), "{path}");
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
        crate::sys::fs::make_fifo(&fifo).unwrap();
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
    fn new_files_get_their_mode_on_the_descriptor() {
        let dir = tempfile::tempdir().unwrap();
        let at = open_directory(dir.path()).unwrap();
        let (_file, name) = unnamed::create_new_in(at.as_fd(), ".x-", 0o644).unwrap();
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
        crate::sys::fs::make_fifo(&fifo).unwrap();
        let err = open_append_log(&fifo).unwrap_err().to_string();
        assert!(err.contains("a FIFO"), "{err}");
    }
}
