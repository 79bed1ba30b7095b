//! Raw descriptors: retry's own standard descriptors, pipes, waiting on a
//! descriptor with a way to be cancelled, and unbuffered writes.
//!
//! Shared by the attempt wiring, the output pumps, the stdin feeder and the
//! reporter; it knows nothing of any of them.

use std::cell::Cell;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use anyhow::{Context, Result};
use rustix::event::{PollFd, PollFlags, poll};

/// Retry's own standard descriptor `fd` (0, 1 or 2).
pub(crate) fn own_fd(fd: i32) -> BorrowedFd<'static> {
    // SAFETY: descriptors 0-2 stay open for the life of the process (the
    // Rust runtime reopens closed ones on /dev/null before main).
    unsafe { BorrowedFd::borrow_raw(fd) }
}

/// A close-on-exec pipe: (read end, write end).
pub(crate) fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).context("creating a pipe")
}

/// A way to tell threads blocked in [`wait_for`] to give up: they watch the
/// read end, and closing the write end (dropping the trigger) wakes them all.
pub(crate) struct CancelPipe {
    watch: OwnedFd,
    /// A cell, so that cancelling needs no exclusive borrow while threads
    /// hold the watch end.
    trigger: Cell<Option<OwnedFd>>,
}

impl CancelPipe {
    pub(crate) fn new() -> Result<CancelPipe> {
        let (watch, trigger) = pipe()?;
        Ok(CancelPipe {
            watch,
            trigger: Cell::new(Some(trigger)),
        })
    }

    /// What a waiting thread watches.
    pub(crate) fn watch(&self) -> BorrowedFd<'_> {
        self.watch.as_fd()
    }

    /// Wake every thread watching, now and from now on.
    pub(crate) fn cancel(&self) {
        drop(self.trigger.take());
    }
}

/// Block until `fd` is readable (or at end of file); false if cancelled.
pub(crate) fn wait_readable(fd: BorrowedFd<'_>, cancel: BorrowedFd<'_>) -> bool {
    wait_for(fd, PollFlags::IN, cancel)
}

/// Block until `fd` has `flags` ready; false if `cancel` fired first.
pub(crate) fn wait_for(fd: BorrowedFd<'_>, flags: PollFlags, cancel: BorrowedFd<'_>) -> bool {
    loop {
        let mut fds = [PollFd::new(&fd, flags), PollFd::new(&cancel, PollFlags::IN)];
        match poll(&mut fds, None) {
            Ok(_) => {
                if !fds[1].revents().is_empty() {
                    return false;
                }
                if !fds[0].revents().is_empty() {
                    return true;
                }
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return false,
        }
    }
}

/// `write_all` on a raw descriptor, unbuffered.
pub(crate) fn write_all_fd(fd: BorrowedFd<'_>, mut bytes: &[u8]) -> std::io::Result<()> {
    while !bytes.is_empty() {
        match rustix::io::write(fd, bytes) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(count) => bytes = &bytes[count..],
            Err(rustix::io::Errno::INTR) => {}
            Err(errno) => return Err(errno.into()),
        }
    }
    Ok(())
}

/// The same open file: two descriptors whose files have one device and inode.
pub(crate) fn same_file(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> bool {
    match (rustix::fs::fstat(a), rustix::fs::fstat(b)) {
        (Ok(a), Ok(b)) => a.st_dev == b.st_dev && a.st_ino == b.st_ino,
        _ => false,
    }
}
