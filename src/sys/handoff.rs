//! Writes handed to a thread of their own, for a descriptor that retry
//! cannot write without blocking: a pipe where it cannot be opened anew
//! (FreeBSD, macOS: no `/proc/self/fd`), a terminal that cannot be opened by
//! its name. The thread blocks in `write` in the caller's stead; the caller
//! waits for it in slices and may stop waiting. A thread left blocked for
//! good ends with retry.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};

use super::stall::{Abandoned, STALL_SLICE};

/// A writer thread for one descriptor, started at its first write.
pub(crate) struct Handoff {
    /// Where it writes (a duplicate goes to the thread).
    fd: BorrowedFd<'static>,
    thread: Option<Writer>,
}

struct Writer {
    chunks: Sender<Vec<u8>>,
    done: Receiver<io::Result<()>>,
    /// A chunk was handed over and is not known written yet.
    in_flight: bool,
}

impl Handoff {
    pub(crate) fn new(fd: BorrowedFd<'static>) -> Handoff {
        Handoff { fd, thread: None }
    }

    /// Write all of `bytes` through the thread; while it is blocked, ask
    /// `give_up` every slice, and fail with [`Abandoned`] when it says so
    /// (the chunk stays with the thread, and the next write first waits
    /// for it). Without a thread (none could be started), write here.
    pub(crate) fn write_all(&mut self, bytes: &[u8], give_up: &dyn Fn() -> bool) -> io::Result<()> {
        if self.thread.is_none() {
            self.thread = start(self.fd);
        }
        let Some(writer) = &mut self.thread else {
            return write_blocking(self.fd, bytes);
        };
        // What an earlier write left with the thread goes first.
        if writer.in_flight {
            writer.wait(give_up)??;
        }
        if writer.chunks.send(bytes.to_vec()).is_err() {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        writer.in_flight = true;
        writer.wait(give_up)?
    }
}

impl Writer {
    /// The result of the chunk in flight; `Err` when `give_up` said so
    /// first.
    fn wait(&mut self, give_up: &dyn Fn() -> bool) -> io::Result<io::Result<()>> {
        loop {
            match self.done.recv_timeout(STALL_SLICE) {
                Ok(result) => {
                    self.in_flight = false;
                    return Ok(result);
                }
                Err(RecvTimeoutError::Timeout) if give_up() => {
                    return Err(io::Error::other(Abandoned));
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    self.in_flight = false;
                    return Ok(Err(io::ErrorKind::BrokenPipe.into()));
                }
            }
        }
    }
}

/// Start the writer thread on a duplicate of `fd`; `None` if either cannot
/// be had (then writes block in the caller, as before).
fn start(fd: BorrowedFd<'static>) -> Option<Writer> {
    let own: OwnedFd = fd.try_clone_to_owned().ok()?;
    let (chunks, incoming) = mpsc::channel::<Vec<u8>>();
    let (finished, done) = mpsc::channel();
    let work = move || {
        for chunk in incoming {
            let result = write_blocking(own.as_fd(), &chunk);
            if finished.send(result).is_err() {
                return;
            }
        }
    };
    super::thread::spawn_with_signals_blocked("output", 64 * 1024, work).ok()?;
    Some(Writer {
        chunks,
        done,
        in_flight: false,
    })
}

/// `write_all` on a raw descriptor, blocking.
fn write_blocking(fd: BorrowedFd<'_>, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        match rustix::io::write(fd, bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(count) => bytes = &bytes[count..],
            Err(rustix::io::Errno::INTR) => {}
            Err(errno) => return Err(errno.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;
    use std::time::{Duration, Instant};

    use super::*;

    /// A pipe: (read end, write end borrowed for the life of the test).
    fn pipe() -> (OwnedFd, BorrowedFd<'static>) {
        let (read, write) = crate::sys::fs::pipe().unwrap();
        // Leaked on purpose: a Handoff borrows its descriptor for ever.
        let write: &'static OwnedFd = Box::leak(Box::new(write));
        (read, write.as_fd())
    }

    #[test]
    fn a_reader_that_takes_nothing_is_given_up_on_and_later_writes_wait_for_the_first() {
        let (read, write) = pipe();
        let mut handoff = Handoff::new(write);
        let started = Instant::now();
        let give_up = || started.elapsed() > Duration::from_millis(200);
        // More than the pipe holds: the thread blocks, the caller does not.
        let err = handoff
            .write_all(&vec![b'x'; 1 << 20], &give_up)
            .unwrap_err();
        assert!(Abandoned::is(&err), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
        // Still stalled: the next write gives up too, sending nothing more.
        let err = handoff.write_all(b"next", &|| true).unwrap_err();
        assert!(Abandoned::is(&err), "{err}");
        // The reader takes it all: the chunk in flight, then the next one.
        let taken = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = std::sync::Arc::clone(&taken);
        std::thread::spawn(move || {
            let mut buffer = vec![0u8; 65536];
            while let Ok(count @ 1..) = rustix::io::read(&read, &mut buffer) {
                counter.fetch_add(count, std::sync::atomic::Ordering::SeqCst);
            }
        });
        handoff.write_all(b"last", &|| false).unwrap();
        let all = (1 << 20) + 4;
        let waited = Instant::now();
        while taken.load(std::sync::atomic::Ordering::SeqCst) < all {
            assert!(
                waited.elapsed() < Duration::from_secs(10),
                "not all arrived"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(taken.load(std::sync::atomic::Ordering::SeqCst), all);
    }
}
