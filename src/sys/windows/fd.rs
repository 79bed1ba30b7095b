//! Windows' `sys::fd`: handles where Unix has descriptors, under the same
//! names (`OwnedFd` is an `OwnedHandle`), so that the attempt's wiring,
//! the pumps and the reporter read the same on both systems.
//!
//! Anonymous pipes cannot be waited on with the wait functions, so a pump
//! looks at its pipe with `PeekNamedPipe` between short waits on its
//! cancel event (1 ms, growing to 20 ms while nothing comes). A write to
//! retry's own stdout or stderr blocks: a reader that stops reading can
//! hold retry (on Unix it cannot; docs/platforms.md).

use std::fs::File;
use std::io::{self, Write};
use std::os::windows::io::{AsRawHandle, BorrowedHandle};

use anyhow::{Context, Result};
use windows_sys::Win32::Foundation::{ERROR_BROKEN_PIPE, ERROR_NO_DATA};
use windows_sys::Win32::Storage::FileSystem::{
    BY_HANDLE_FILE_INFORMATION, GetFileInformationByHandle, ReadFile, WriteFile,
};
use windows_sys::Win32::System::Console::{
    GetStdHandle, STD_ERROR_HANDLE, STD_INPUT_HANDLE, STD_OUTPUT_HANDLE,
};
use windows_sys::Win32::System::Pipes::{PIPE_NOWAIT, PeekNamedPipe, SetNamedPipeHandleState};

pub(crate) use super::stall::{Abandoned, STALL_SLICE};
pub(crate) use std::os::windows::io::{BorrowedHandle as BorrowedFd, OwnedHandle as OwnedFd};

/// `as_fd` for whatever holds a handle, as Unix's `AsFd` is for
/// descriptors.
pub(crate) trait AsFd {
    fn as_fd(&self) -> BorrowedFd<'_>;
}

impl<T: std::os::windows::io::AsHandle> AsFd for T {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.as_handle()
    }
}

/// Retry's own standard handle `fd` (0, 1 or 2); a null handle where the
/// process has none (std's own stdio handles are the same).
pub(crate) fn own_fd(fd: i32) -> BorrowedFd<'static> {
    let which = match fd {
        0 => STD_INPUT_HANDLE,
        1 => STD_OUTPUT_HANDLE,
        _ => STD_ERROR_HANDLE,
    };
    // SAFETY: the standard handles stay open for the life of the process
    // (retry never closes them); GetStdHandle only reads the table.
    unsafe { BorrowedHandle::borrow_raw(GetStdHandle(which)) }
}

/// A pipe: (read end, write end), not inherited (std hands the child a
/// duplicate of its end).
pub(crate) fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let (reader, writer) = io::pipe().context("creating a pipe")?;
    Ok((OwnedFd::from(reader), OwnedFd::from(writer)))
}

/// A way to tell threads blocked in [`wait_readable`] to give up: an event
/// they look at, set once by [`CancelPipe::cancel`].
pub(crate) struct CancelPipe {
    event: OwnedFd,
}

impl CancelPipe {
    pub(crate) fn new() -> Result<CancelPipe> {
        let event = super::windows::new_event().context("creating an event")?;
        Ok(CancelPipe { event })
    }

    /// What a waiting thread watches.
    pub(crate) fn watch(&self) -> BorrowedFd<'_> {
        self.event.as_fd()
    }

    /// Wake every thread watching, now and from now on.
    pub(crate) fn cancel(&self) {
        super::windows::set_event(self.event.as_raw_handle());
    }
}

/// What a pipe holds: `Some(n)` bytes ready (0: none yet), `None` at its
/// end (the writers are gone) or when it is no pipe.
fn available(pipe: BorrowedFd<'_>) -> Option<u32> {
    let mut ready = 0u32;
    // SAFETY: the handle is open for the call; only the count is asked for.
    let ok = unsafe {
        PeekNamedPipe(
            pipe.as_raw_handle(),
            std::ptr::null_mut(),
            0,
            std::ptr::null_mut(),
            &raw mut ready,
            std::ptr::null_mut(),
        )
    };
    (ok != 0).then_some(ready)
}

/// Block until `fd` has bytes (or is at its end); false if cancelled.
pub(crate) fn wait_readable(fd: BorrowedFd<'_>, cancel: BorrowedFd<'_>) -> bool {
    let mut pause = 1;
    loop {
        match available(fd) {
            Some(0) => {}
            Some(_) | None => return true,
        }
        if super::windows::signalled(cancel.as_raw_handle(), pause) {
            return false;
        }
        pause = (pause * 2).min(20);
    }
}

/// One read from `fd`; 0 at its end. A pipe made non-blocking by
/// [`set_nonblocking`] answers `WouldBlock` when it is empty.
pub(crate) fn read(fd: BorrowedFd<'_>, buffer: &mut [u8]) -> io::Result<usize> {
    let want = u32::try_from(buffer.len()).unwrap_or(u32::MAX);
    let mut got = 0u32;
    // SAFETY: the handle is open; the buffer is writable for `want` bytes;
    // a synchronous read (no OVERLAPPED).
    let ok = unsafe {
        ReadFile(
            fd.as_raw_handle(),
            buffer.as_mut_ptr(),
            want,
            &raw mut got,
            std::ptr::null_mut(),
        )
    };
    if ok != 0 {
        return Ok(got as usize);
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error().map(|code| code as u32) {
        Some(ERROR_BROKEN_PIPE) => Ok(0),
        Some(ERROR_NO_DATA) => Err(io::ErrorKind::WouldBlock.into()),
        _ => Err(err),
    }
}

/// Make reads and writes of pipe `fd` return at once when it is empty or
/// full (`PIPE_NOWAIT`).
pub(crate) fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    let mode = PIPE_NOWAIT;
    // SAFETY: the handle is open; only the wait mode changes.
    let ok = unsafe {
        SetNamedPipeHandleState(
            fd.as_raw_handle(),
            &raw const mode,
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One write to `fd`; `WouldBlock` when a non-blocking pipe is full, and
/// `BrokenPipe` when its reader is gone.
pub(crate) fn write(fd: BorrowedFd<'_>, bytes: &[u8]) -> io::Result<usize> {
    let want = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
    let mut put = 0u32;
    // SAFETY: the handle is open; the bytes are readable for `want`; a
    // synchronous write (no OVERLAPPED).
    let ok = unsafe {
        WriteFile(
            fd.as_raw_handle(),
            bytes.as_ptr(),
            want,
            &raw mut put,
            std::ptr::null_mut(),
        )
    };
    if ok == 0 {
        let err = io::Error::last_os_error();
        return match err.raw_os_error().map(|code| code as u32) {
            Some(ERROR_NO_DATA | ERROR_BROKEN_PIPE) => Err(io::ErrorKind::BrokenPipe.into()),
            _ => Err(err),
        };
    }
    if put == 0 && !bytes.is_empty() {
        return Err(io::ErrorKind::WouldBlock.into());
    }
    Ok(put as usize)
}

/// Move `fd`'s position (`SetFilePointerEx`); the new position.
pub(crate) fn seek(fd: BorrowedFd<'_>, to: io::SeekFrom) -> io::Result<u64> {
    use windows_sys::Win32::Storage::FileSystem::{
        FILE_BEGIN, FILE_CURRENT, FILE_END, SetFilePointerEx,
    };
    let (distance, from) = match to {
        io::SeekFrom::Start(at) => (i64::try_from(at).unwrap_or(i64::MAX), FILE_BEGIN),
        io::SeekFrom::End(at) => (at, FILE_END),
        io::SeekFrom::Current(at) => (at, FILE_CURRENT),
    };
    let mut now = 0i64;
    // SAFETY: the handle is open; `now` receives the new position.
    let ok = unsafe { SetFilePointerEx(fd.as_raw_handle(), distance, &raw mut now, from) };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(now as u64)
}

/// What a handle is, as far as reading it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HandleKind {
    /// A file on a disk: it can be read again from a position.
    Regular,
    /// A pipe: what is read is gone.
    Pipe,
    Other,
}

/// What `fd` is (`GetFileType`); `None` if it cannot be asked.
pub(crate) fn kind(fd: BorrowedFd<'_>) -> Option<HandleKind> {
    use windows_sys::Win32::Storage::FileSystem::{
        FILE_TYPE_DISK, FILE_TYPE_PIPE, FILE_TYPE_UNKNOWN, GetFileType,
    };
    // SAFETY: the handle is open for the call.
    match unsafe { GetFileType(fd.as_raw_handle()) } {
        FILE_TYPE_UNKNOWN => None,
        FILE_TYPE_DISK => Some(HandleKind::Regular),
        FILE_TYPE_PIPE => Some(HandleKind::Pipe),
        _ => Some(HandleKind::Other),
    }
}

/// The writer is gone and nothing is left in the pipe.
pub(crate) fn pipe_is_spent(fd: BorrowedFd<'_>) -> bool {
    available(fd).is_none()
}

/// Whether `fd` has bytes to read (or is at its end, or is no pipe: the
/// read says) within `within`, looked at 1 to 20 ms apart (a pipe cannot
/// be waited on).
pub(crate) fn readable_within(fd: BorrowedFd<'_>, within: std::time::Duration) -> bool {
    let until = std::time::Instant::now() + within;
    let mut pause = 1;
    loop {
        if available(fd) != Some(0) {
            return true;
        }
        if std::time::Instant::now() >= until {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(pause));
        pause = (pause * 2).min(20);
    }
}

/// Whether pipe `fd` ends (its writer gone) without a byte within
/// `within` (looked at every 10 ms: a pipe cannot be waited on).
pub(crate) fn pipe_spent_within(fd: BorrowedFd<'_>, within: std::time::Duration) -> bool {
    let until = std::time::Instant::now() + within;
    loop {
        match available(fd) {
            None => return true,
            Some(0) => {}
            Some(_) => return false,
        }
        if std::time::Instant::now() >= until {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Wait a moment for room in pipe `fd` (a pipe's free room cannot be
/// waited for on Windows: the write is tried again after it); false if
/// cancelled.
pub(crate) fn wait_writable(_fd: BorrowedFd<'_>, cancel: BorrowedFd<'_>) -> bool {
    !super::windows::signalled(cancel.as_raw_handle(), 5)
}

/// Retry's own stdout or stderr, for passing output on: the bytes go as
/// they are (`WriteFile`, no conversion: the command's output is already in
/// the console's code page), through a duplicate of the standard handle.
/// The write blocks while the reader takes nothing; `give_up` is asked
/// between two chunks only.
pub(crate) struct Outlet {
    fd: i32,
    file: Option<File>,
}

impl Outlet {
    /// For our own handle `fd` (1 or 2).
    pub(crate) fn new(fd: i32) -> Outlet {
        Outlet { fd, file: None }
    }

    /// Write all of `bytes`.
    pub(crate) fn write_all(&mut self, bytes: &[u8], give_up: &dyn Fn() -> bool) -> io::Result<()> {
        if give_up() && bytes.is_empty() {
            return Ok(());
        }
        if self.file.is_none() {
            let handle = own_fd(self.fd);
            if handle.as_raw_handle().is_null() {
                // No handle at all: what would go there is dropped, as a
                // closed descriptor's output is on Unix.
                return Ok(());
            }
            self.file = Some(File::from(handle.try_clone_to_owned()?));
        }
        let file = self.file.as_mut().expect("opened above");
        match file.write_all(bytes) {
            // A pipe whose reader is gone reads as Unix's EPIPE.
            Err(err) if err.raw_os_error() == Some(ERROR_NO_DATA as i32) => {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            other => other,
        }
    }
}

/// Ready retry's stderr for colour escapes: a console takes them once its
/// `ENABLE_VIRTUAL_TERMINAL_PROCESSING` is on, which anstream turns on
/// (through anstyle-query) when it wraps a console.
pub(crate) fn prepare_colour() {
    let _ = anstream::AutoStream::always_ansi(io::stderr());
}

/// The same open file: two handles of one volume and file index.
pub(crate) fn same_file(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> bool {
    fn identity(handle: BorrowedFd<'_>) -> Option<(u32, u32, u32)> {
        // SAFETY: a plain-data structure, all zeros is a valid value.
        let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
        // SAFETY: the handle is open for the call; `info` is the buffer the
        // call fills.
        let ok = unsafe { GetFileInformationByHandle(handle.as_raw_handle(), &raw mut info) };
        (ok != 0).then_some((
            info.dwVolumeSerialNumber,
            info.nFileIndexHigh,
            info.nFileIndexLow,
        ))
    }
    match (identity(a), identity(b)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}
