//! Raw descriptors: retry's own standard descriptors, pipes, waiting on a
//! descriptor with a way to be cancelled, and unbuffered writes that a
//! stalled reader cannot hold.
//!
//! Shared by the attempt wiring, the output pumps, the stdin feeder and the
//! reporter; it knows nothing of any of them.

use std::cell::Cell;

/// Descriptors by the names every caller uses; on Windows these name
/// handles (`sys/windows/fd.rs`).
pub(crate) use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use anyhow::{Context, Result};
use rustix::event::PollFlags;

use super::handoff::Handoff;
pub(crate) use super::stall::{Abandoned, STALL_SLICE};
use super::wait::{Watch, wait};

/// Retry's own standard descriptor `fd` (0, 1 or 2).
pub(crate) fn own_fd(fd: i32) -> BorrowedFd<'static> {
    // SAFETY: descriptors 0-2 stay open for the life of the process (the
    // Rust runtime reopens closed ones on /dev/null before main).
    unsafe { BorrowedFd::borrow_raw(fd) }
}

/// A close-on-exec pipe: (read end, write end).
pub(crate) fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    super::fs::pipe().context("creating a pipe")
}

/// One read from `fd`; 0 at its end. A descriptor made non-blocking by
/// [`set_nonblocking`] answers `WouldBlock` when it is empty.
pub(crate) fn read(fd: BorrowedFd<'_>, buffer: &mut [u8]) -> std::io::Result<usize> {
    rustix::io::read(fd, buffer).map_err(std::io::Error::from)
}

/// Set `O_NONBLOCK` on `fd` (an open file description of our own).
pub(crate) fn set_nonblocking(fd: BorrowedFd<'_>) -> std::io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(fd)?;
    rustix::fs::fcntl_setfl(fd, flags | rustix::fs::OFlags::NONBLOCK)?;
    Ok(())
}

/// One write to `fd`; `WouldBlock` when a non-blocking pipe is full.
pub(crate) fn write(fd: BorrowedFd<'_>, bytes: &[u8]) -> std::io::Result<usize> {
    rustix::io::write(fd, bytes).map_err(std::io::Error::from)
}

/// Move `fd`'s offset (`lseek`); the new offset.
pub(crate) fn seek(fd: BorrowedFd<'_>, to: std::io::SeekFrom) -> std::io::Result<u64> {
    let to = match to {
        std::io::SeekFrom::Start(at) => rustix::fs::SeekFrom::Start(at),
        std::io::SeekFrom::End(at) => rustix::fs::SeekFrom::End(at),
        std::io::SeekFrom::Current(at) => rustix::fs::SeekFrom::Current(at),
    };
    rustix::fs::seek(fd, to).map_err(std::io::Error::from)
}

/// What a descriptor is, as far as reading it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HandleKind {
    /// A regular file: it can be read again from an offset.
    Regular,
    /// A pipe or a socket: what is read is gone.
    Pipe,
    Other,
}

/// What `fd` is; `None` if it cannot be asked.
pub(crate) fn kind(fd: BorrowedFd<'_>) -> Option<HandleKind> {
    use rustix::fs::FileType;
    let stat = rustix::fs::fstat(fd).ok()?;
    Some(match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => HandleKind::Regular,
        FileType::Fifo | FileType::Socket => HandleKind::Pipe,
        _ => HandleKind::Other,
    })
}

/// The writer is gone and nothing is left in the pipe.
pub(crate) fn pipe_is_spent(fd: BorrowedFd<'_>) -> bool {
    let mut watch = [Watch::new(fd, PollFlags::IN)];
    match super::wait::wait_for(&mut watch, std::time::Duration::ZERO) {
        Ok(_) => {
            let ready = watch[0].ready();
            ready.contains(PollFlags::HUP) && !ready.contains(PollFlags::IN)
        }
        Err(_) => false,
    }
}

/// Whether `fd` has bytes to read (or is at its end, or in error: the
/// read says which) within `within`.
pub(crate) fn readable_within(fd: BorrowedFd<'_>, within: std::time::Duration) -> bool {
    let mut watch = [Watch::new(fd, PollFlags::IN)];
    !matches!(super::wait::wait_for(&mut watch, within), Ok(0))
}

/// Whether pipe `fd` ends (its writer gone) without a byte within
/// `within`: a writer may close it just after starting us.
pub(crate) fn pipe_spent_within(fd: BorrowedFd<'_>, within: std::time::Duration) -> bool {
    let until = std::time::Instant::now() + within;
    loop {
        let mut watch = [Watch::new(fd, PollFlags::IN)];
        let left = until.saturating_duration_since(std::time::Instant::now());
        match super::wait::wait_for(&mut watch, left) {
            Ok(_) => {
                let ready = watch[0].ready();
                if ready.contains(PollFlags::IN) {
                    return false;
                }
                if ready.contains(PollFlags::HUP) {
                    return true;
                }
                if left.is_zero() {
                    return false;
                }
            }
            Err(_) => return false,
        }
    }
}

/// Block until `fd` has room to write; false if cancelled.
pub(crate) fn wait_writable(fd: BorrowedFd<'_>, cancel: BorrowedFd<'_>) -> bool {
    wait_for(fd, PollFlags::OUT, cancel)
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

/// Block until `fd` has `flags` ready; false if `cancel` fired first. A
/// terminal or other device is waited for with `select` where `poll`
/// cannot watch it (macOS: `sys::wait`).
pub(crate) fn wait_for(fd: BorrowedFd<'_>, flags: PollFlags, cancel: BorrowedFd<'_>) -> bool {
    loop {
        let mut watches = [Watch::new(fd, flags), Watch::new(cancel, PollFlags::IN)];
        match wait(&mut watches, None) {
            Ok(_) => {
                if !watches[1].ready().is_empty() {
                    return false;
                }
                if !watches[0].ready().is_empty() {
                    return true;
                }
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return false,
        }
    }
}

/// Retry's own stdout or stderr, for passing output on, such that a reader
/// that stops reading (a stalled pipe, a socket nobody reads, a terminal
/// stopped with Ctrl-S or a pty whose master nobody reads) cannot hold
/// retry for ever: writes wait for room in slices, asking between two
/// whether to give up.
///
/// How a write is kept from blocking depends on what the descriptor is:
/// - a pipe or FIFO is written through a descriptor of our own, opened
///   anew with `O_NONBLOCK` (`sys::fs::reopen_pipe_nonblocking`: Linux's
///   `/proc/self/fd`);
/// - a terminal likewise, opened anew by its name
///   (`sys::fs::reopen_terminal_nonblocking`, every system);
/// - a socket is sent to with `MSG_DONTWAIT`, which asks for a
///   non-blocking write of that one call;
/// - a pipe or terminal that cannot be opened anew (FreeBSD and macOS have
///   no `/proc/self/fd`; a terminal of another user) is written by a thread
///   of its own (`sys::handoff`), which blocks in our stead;
/// - anything else (a regular file, `/dev/null`: nothing a reader can
///   stall) is written as it is, blocking.
///
/// Setting `O_NONBLOCK` on the inherited descriptor itself would change it
/// for every process that shares it, the command among them.
///
/// The kind is looked at on the first write, not before: most runs never
/// write to their stderr, and reopening costs a path lookup.
pub(crate) struct Outlet {
    fd: i32,
    way: Option<Way>,
}

/// How an [`Outlet`] writes without blocking, if it can.
enum Way {
    Blocking,
    Reopened(OwnedFd),
    Socket,
    Handed(Handoff),
}

impl Outlet {
    /// For our own descriptor `fd` (1 or 2).
    pub(crate) fn new(fd: i32) -> Outlet {
        Outlet { fd, way: None }
    }

    /// How to write to `fd` without blocking, if it can be helped.
    fn way_for(fd: i32) -> Way {
        let inherited = own_fd(fd);
        let kind = rustix::fs::fstat(inherited)
            .map(|stat| rustix::fs::FileType::from_raw_mode(stat.st_mode))
            .ok();
        match kind {
            Some(rustix::fs::FileType::Fifo) => super::fs::reopen_pipe_nonblocking(fd)
                .map_or_else(|| Way::Handed(Handoff::new(inherited)), Way::Reopened),
            Some(rustix::fs::FileType::Socket) => Way::Socket,
            Some(rustix::fs::FileType::CharacterDevice) if rustix::termios::isatty(inherited) => {
                super::fs::reopen_terminal_nonblocking(inherited)
                    .map_or_else(|| Way::Handed(Handoff::new(inherited)), Way::Reopened)
            }
            _ => Way::Blocking,
        }
    }

    /// One write to `inherited` that does not block where `way` can help it.
    fn write_some(inherited: BorrowedFd<'_>, way: &Way, bytes: &[u8]) -> rustix::io::Result<usize> {
        match way {
            Way::Blocking | Way::Handed(_) => rustix::io::write(inherited, bytes),
            Way::Reopened(own) => rustix::io::write(own, bytes),
            Way::Socket => rustix::net::send(inherited, bytes, super::fs::SEND_NOW),
        }
    }

    /// Write all of `bytes`; while the reader takes nothing, ask
    /// `give_up` every 50 ms, and fail with [`Abandoned`] when it says so.
    pub(crate) fn write_all(
        &mut self,
        mut bytes: &[u8],
        give_up: &dyn Fn() -> bool,
    ) -> std::io::Result<()> {
        let (fd, inherited) = (self.fd, own_fd(self.fd));
        let way = self.way.get_or_insert_with(|| Outlet::way_for(fd));
        if let Way::Handed(handoff) = way {
            return handoff.write_all(bytes, give_up);
        }
        let way = &*way;
        while !bytes.is_empty() {
            match Outlet::write_some(inherited, way, bytes) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(count) => bytes = &bytes[count..],
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::AGAIN) => {
                    if give_up() {
                        return Err(std::io::Error::other(Abandoned));
                    }
                    let watched = match way {
                        Way::Reopened(own) => own.as_fd(),
                        Way::Blocking | Way::Socket | Way::Handed(_) => inherited,
                    };
                    let mut watch = [Watch::new(watched, PollFlags::OUT)];
                    match super::wait::wait_for(&mut watch, STALL_SLICE) {
                        Ok(_) | Err(rustix::io::Errno::INTR) => {}
                        Err(errno) => return Err(errno.into()),
                    }
                }
                Err(errno) => return Err(errno.into()),
            }
        }
        Ok(())
    }
}

/// Ready retry's stderr for colour escapes: a terminal takes them as they
/// are (Windows' console must be asked to: `sys/windows/fd.rs`).
pub(crate) fn prepare_colour() {}

/// The same open file: two descriptors whose files have one device and inode.
pub(crate) fn same_file(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> bool {
    match (rustix::fs::fstat(a), rustix::fs::fstat(b)) {
        (Ok(a), Ok(b)) => a.st_dev == b.st_dev && a.st_ino == b.st_ino,
        _ => false,
    }
}
