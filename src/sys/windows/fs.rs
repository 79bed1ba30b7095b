//! Windows' `sys::fs`: what the callers of Unix's need of it here. A pipe's
//! size is the system's (std makes it); error numbers are Win32's, which
//! have no short names.

use super::fd::BorrowedFd;

/// Ask for a pipe of at least `size` bytes: nothing to ask on Windows (the
/// pipe's buffer is set when it is made).
pub(crate) fn set_pipe_size(_pipe: BorrowedFd<'_>, _size: usize) {}

/// How many bytes the pipe holds at most: unknown here.
pub(crate) fn pipe_size(_pipe: BorrowedFd<'_>) -> Option<usize> {
    None
}

/// What an error number is called: Win32's have no short names, only
/// their words and numbers.
pub(crate) fn error_name(_code: i32) -> Option<&'static str> {
    None
}

/// What an error's number is, where it has no name.
pub(crate) const ERROR_NUMBER: &str = "Windows error";

/// Unix's `open` flags, as far as retry's callers use them, so that a
/// caller opens a file the same way on both systems (`open` maps them to
/// std's `OpenOptions` and Win32's flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OFlags(u32);

impl OFlags {
    pub(crate) const RDONLY: OFlags = OFlags(0);
    pub(crate) const WRONLY: OFlags = OFlags(1);
    pub(crate) const RDWR: OFlags = OFlags(2);
    pub(crate) const APPEND: OFlags = OFlags(4);
    pub(crate) const CREATE: OFlags = OFlags(8);
    pub(crate) const EXCL: OFlags = OFlags(16);
    pub(crate) const TRUNC: OFlags = OFlags(32);
    /// Do not follow a symlink (a reparse point) at the end.
    pub(crate) const NOFOLLOW: OFlags = OFlags(64);
    /// Open a directory (`FILE_FLAG_BACKUP_SEMANTICS`).
    pub(crate) const DIRECTORY: OFlags = OFlags(128);
    /// No meaning on Windows (handles are not inherited unless asked).
    pub(crate) const CLOEXEC: OFlags = OFlags(0);
    pub(crate) const NONBLOCK: OFlags = OFlags(0);
    pub(crate) const NOCTTY: OFlags = OFlags(0);

    pub(crate) fn contains(self, other: OFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for OFlags {
    type Output = OFlags;
    fn bitor(self, other: OFlags) -> OFlags {
        OFlags(self.0 | other.0)
    }
}

/// Unix's file mode for a new file: not applied on Windows (a new file
/// gets its directory's ACL).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mode;

impl Mode {
    pub(crate) fn empty() -> Mode {
        Mode
    }
}

/// Open `path` as `flags` say.
pub(crate) fn open(
    path: &std::path::Path,
    flags: OFlags,
    _mode: Mode,
) -> std::io::Result<super::fd::OwnedFd> {
    use std::os::windows::fs::OpenOptionsExt;
    use windows_sys::Win32::Storage::FileSystem::{
        FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT,
    };
    let mut options = std::fs::OpenOptions::new();
    let write = flags.contains(OFlags::WRONLY) || flags.contains(OFlags::RDWR);
    options
        .read(!flags.contains(OFlags::WRONLY))
        .write(write && !flags.contains(OFlags::APPEND))
        .append(flags.contains(OFlags::APPEND))
        .truncate(flags.contains(OFlags::TRUNC));
    if flags.contains(OFlags::CREATE | OFlags::EXCL) {
        options.create_new(true);
    } else if flags.contains(OFlags::CREATE) {
        options.create(true);
    }
    let mut custom = 0;
    if flags.contains(OFlags::NOFOLLOW) {
        custom |= FILE_FLAG_OPEN_REPARSE_POINT;
    }
    if flags.contains(OFlags::DIRECTORY) {
        custom |= FILE_FLAG_BACKUP_SEMANTICS;
    }
    options.custom_flags(custom);
    options.open(path).map(super::fd::OwnedFd::from)
}

/// The path of an open file or directory (`GetFinalPathNameByHandleW`).
pub(crate) fn path_of(handle: BorrowedFd<'_>) -> std::io::Result<std::path::PathBuf> {
    use std::os::windows::ffi::OsStringExt;
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Storage::FileSystem::GetFinalPathNameByHandleW;
    let mut buffer = vec![0u16; 1024];
    loop {
        // SAFETY: the handle is open for the call; the buffer is writable
        // for its length in UTF-16 units.
        let len = unsafe {
            GetFinalPathNameByHandleW(
                handle.as_raw_handle(),
                buffer.as_mut_ptr(),
                buffer.len() as u32,
                0,
            )
        } as usize;
        if len == 0 {
            return Err(std::io::Error::last_os_error());
        }
        if len < buffer.len() {
            let path = std::ffi::OsString::from_wide(&buffer[..len]);
            return Ok(std::path::PathBuf::from(path));
        }
        buffer.resize(len + 1, 0);
    }
}

/// A path as a NUL-terminated UTF-16 string.
fn wide(path: &std::path::Path) -> Vec<u16> {
    use std::os::windows::ffi::OsStrExt;
    path.as_os_str().encode_wide().chain([0]).collect()
}

/// Move `from` over `to`, replacing it, the move on the disk when this
/// returns (`MoveFileExW(MOVEFILE_REPLACE_EXISTING |
/// MOVEFILE_WRITE_THROUGH)`).
pub(crate) fn replace_file(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
    use windows_sys::Win32::Storage::FileSystem::{
        MOVEFILE_REPLACE_EXISTING, MOVEFILE_WRITE_THROUGH, MoveFileExW,
    };
    let (from, to) = (wide(from), wide(to));
    // SAFETY: two NUL-terminated UTF-16 strings, alive for the call.
    let ok = unsafe {
        MoveFileExW(
            from.as_ptr(),
            to.as_ptr(),
            MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH,
        )
    };
    if ok == 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// How many fresh names a new file tries before giving up.
pub(crate) const NAME_TRIES: usize = 16;

/// Unix's file-type bits, in which `safe_fs::replace` reports what stands
/// at a target.
pub(crate) const S_IFMT: u32 = 0o170_000;
pub(crate) const S_IFDIR: u32 = 0o040_000;
pub(crate) const S_IFLNK: u32 = 0o120_000;
pub(crate) const S_IFREG: u32 = 0o100_000;

/// A path from the bytes of a URL, read as UTF-8.
pub(crate) fn path_from_bytes(bytes: &[u8]) -> std::path::PathBuf {
    std::path::PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}

/// `path` opened for reading (nothing at a path can make an open wait on
/// Windows); a directory opens too (`FILE_FLAG_BACKUP_SEMANTICS`), so that
/// the caller can say it is one.
pub(crate) fn open_without_waiting(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    open(path, OFlags::RDONLY | OFlags::DIRECTORY, Mode).map(std::fs::File::from)
}

/// Whether an open failed because nothing is there (the file, or a
/// directory on the way: `ERROR_PATH_NOT_FOUND`).
pub(crate) fn is_missing(err: &std::io::Error) -> bool {
    err.kind() == std::io::ErrorKind::NotFound || err.raw_os_error() == Some(3)
}

/// Read from `file` at `offset` (the handle's own position moves too).
pub(crate) fn read_at(
    file: &std::fs::File,
    buffer: &mut [u8],
    offset: u64,
) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buffer, offset)
}

/// What a file of Unix mode bits `mode` is, for messages.
pub(crate) fn kind_name(mode: u32) -> &'static str {
    match mode & S_IFMT {
        S_IFREG => "a regular file",
        S_IFDIR => "a directory",
        S_IFLNK => "a symbolic link",
        _ => "not a file retry knows",
    }
}

/// Lock all of `file` exclusively (`LockFileEx`); with `wait`, until it is
/// free, else only if it is free now (false: another holds it). The lock
/// goes with the handle.
pub(crate) fn lock_exclusive(file: &std::fs::File, wait: bool) -> std::io::Result<bool> {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Foundation::ERROR_LOCK_VIOLATION;
    use windows_sys::Win32::Storage::FileSystem::{
        LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY, LockFileEx,
    };
    use windows_sys::Win32::System::IO::OVERLAPPED;
    let flags = if wait {
        LOCKFILE_EXCLUSIVE_LOCK
    } else {
        LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY
    };
    // SAFETY: a plain-data structure, all zeros is a valid value (offset 0).
    let mut overlapped: OVERLAPPED = unsafe { std::mem::zeroed() };
    // SAFETY: the handle is open and synchronous; the OVERLAPPED gives the
    // range's start and lives through the call, which returns once the
    // lock is taken (or refused).
    let ok = unsafe {
        LockFileEx(
            file.as_raw_handle(),
            flags,
            0,
            u32::MAX,
            u32::MAX,
            &raw mut overlapped,
        )
    };
    if ok != 0 {
        return Ok(true);
    }
    let err = std::io::Error::last_os_error();
    if !wait && err.raw_os_error() == Some(ERROR_LOCK_VIOLATION as i32) {
        return Ok(false);
    }
    Err(err)
}
