//! The watchdog: a process of retry's that outlives it just long enough to
//! end what retry was guarding, however retry ended (SIGKILL included).
//!
//! Forked once per run, while retry has one thread, it holds the read end
//! of a pipe whose write end only retry holds (close-on-exec, so commands
//! never inherit it; the keeper, which never executes anything, closes it
//! itself). Retry writes a record for each attempt it starts (its process
//! group, or in retry's own group its command and start) and releases it
//! once the attempt is over. The end of the pipe without a release means
//! retry is gone: the watchdog hands what it still guards to the caller's
//! `on_gone` (`process::watchdog`, which says how each is ended) and exits.
//!
//! The watchdog blocks every signal (a terminal's Ctrl-C or a hang-up meant
//! for the job leaves it alone), leads a process group of its own (a
//! `kill -9 -PGID` of retry's group does not take it), and holds no other
//! descriptor of retry's: its standard ones are `/dev/null`, every other
//! is closed, so no reader of retry's output waits for it. Only SIGKILL or
//! SIGSTOP sent to it, or its own process limit, defeat it: docs/processes.md says
//! so.
//!
//! Records are fixed-size and written in one `write` (atomic on a pipe);
//! the write end does not block: a watchdog that does not read (stopped)
//! never holds retry up.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};

/// What the watchdog ends if retry goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Guarded {
    /// An attempt that leads a process group of its own.
    Group { group: i32 },
    /// An attempt in retry's group (`group`): its command, by pid and start
    /// time; what it started is found from there (`process::watchdog`).
    Shared { child: i32, start: u64, group: i32 },
    /// A process in retry's group before the attempt started: not its.
    Spare { pid: i32, start: u64 },
}

/// One record: a tag, a pid, a start time, a group.
const RECORD: usize = 24;
const RELEASE: u32 = 0;
const GROUP: u32 = 1;
const SHARED: u32 = 2;
const SPARE: u32 = 3;

fn encode(tag: u32, pid: i32, start: u64, group: i32) -> [u8; RECORD] {
    let mut record = [0u8; RECORD];
    record[..4].copy_from_slice(&tag.to_ne_bytes());
    record[4..8].copy_from_slice(&pid.to_ne_bytes());
    record[8..16].copy_from_slice(&start.to_ne_bytes());
    record[16..20].copy_from_slice(&group.to_ne_bytes());
    record
}

fn record_of(what: Guarded) -> [u8; RECORD] {
    match what {
        Guarded::Group { group } => encode(GROUP, 0, 0, group),
        Guarded::Shared {
            child,
            start,
            group,
        } => encode(SHARED, child, start, group),
        Guarded::Spare { pid, start } => encode(SPARE, pid, start, 0),
    }
}

/// A record as the watchdog reads it: `None` is a release.
fn decode(record: &[u8]) -> Option<Guarded> {
    let word = |range: std::ops::Range<usize>| {
        i32::from_ne_bytes(record[range].try_into().unwrap_or_default())
    };
    let tag = u32::from_ne_bytes(record[..4].try_into().unwrap_or_default());
    let start = u64::from_ne_bytes(record[8..16].try_into().unwrap_or_default());
    let (pid, group) = (word(4..8), word(16..20));
    match tag {
        GROUP => Some(Guarded::Group { group }),
        SHARED => Some(Guarded::Shared {
            child: pid,
            start,
            group,
        }),
        SPARE => Some(Guarded::Spare { pid, start }),
        _ => None,
    }
}

/// The write end, for a process retry forks that never executes anything
/// (the keeper): it must close it, or the watchdog would wait for it too.
static WRITE_END: AtomicI32 = AtomicI32::new(-1);

/// The watchdog's pipe, as a fork that never executes must close it (-1:
/// none).
#[cfg(all(target_os = "linux", not(retry_posix)))]
pub(crate) fn write_end() -> RawFd {
    WRITE_END.load(Ordering::SeqCst)
}

/// Retry's end of the watchdog.
pub(crate) struct Watchdog {
    write: OwnedFd,
}

impl Watchdog {
    /// Fork the watchdog, which calls `on_gone` with what it still guards
    /// when retry is gone, then exits. Call while retry has one thread:
    /// the watchdog runs Rust code (and allocates) without executing
    /// anything.
    pub(crate) fn start(on_gone: fn(&[Guarded])) -> io::Result<Watchdog> {
        let (read, write) = super::fs::pipe()?;
        rustix::fs::fcntl_setfl(&write, rustix::fs::OFlags::NONBLOCK)?;
        // SAFETY: a fork while the process has one thread (the caller's
        // promise): the child owns a consistent copy of memory, runs
        // `watch`, which never returns, and exits with `_exit`.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            watch(read.as_raw_fd(), write.as_raw_fd(), on_gone);
        }
        drop(read);
        WRITE_END.store(write.as_raw_fd(), Ordering::SeqCst);
        Ok(Watchdog { write })
    }

    /// Guard `what` until the next [`release`](Self::release).
    pub(crate) fn guard(&self, what: Guarded) {
        let _ = rustix::io::write(&self.write, &record_of(what));
    }

    /// The attempt is over: nothing is guarded any more.
    pub(crate) fn release(&self) {
        let _ = rustix::io::write(&self.write, &encode(RELEASE, 0, 0, 0));
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        WRITE_END.store(-1, Ordering::SeqCst);
    }
}

/// The watchdog's whole life (module doc).
fn watch(read: RawFd, write: RawFd, on_gone: fn(&[Guarded])) -> ! {
    // SAFETY: system calls on our own process and descriptors, in the
    // single-threaded child of a fork; the buffers are our own.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&raw mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const all, std::ptr::null_mut());
        libc::setpgid(0, 0);
        libc::close(write);
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        for fd in 0..3 {
            if null >= 0 && null != fd {
                libc::dup2(null, fd);
            }
        }
        // The pipe at 3, nothing above it.
        if read != 3 {
            libc::dup2(read, 3);
        }
        close_from(4);
    }
    let mut guarded: Vec<Guarded> = Vec::new();
    let mut buffer = [0u8; RECORD * 64];
    let mut held = 0;
    loop {
        // SAFETY: reads into the unfilled part of our own buffer.
        let got = unsafe { libc::read(3, buffer[held..].as_mut_ptr().cast(), buffer.len() - held) };
        match got {
            0 => break,
            n if n < 0 => {
                if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                break;
            }
            n => held += n as usize,
        }
        let whole = held - held % RECORD;
        for record in buffer[..whole].chunks_exact(RECORD) {
            match decode(record) {
                Some(what) => guarded.push(what),
                None => guarded.clear(),
            }
        }
        buffer.copy_within(whole..held, 0);
        held -= whole;
    }
    on_gone(&guarded);
    // SAFETY: ends the watchdog at once, running nothing of retry's.
    unsafe { libc::_exit(0) }
}

/// Close every descriptor from `first` on.
fn close_from(first: RawFd) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    // SAFETY: close_range closes descriptors of our own process only.
    let closed = unsafe { libc::syscall(libc::SYS_close_range, first, u32::MAX, 0) } == 0;
    #[cfg(target_os = "freebsd")]
    let closed = {
        // SAFETY: as above.
        unsafe { libc::closefrom(first) };
        true
    };
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    let closed = false;
    if closed {
        return;
    }
    // Linux before 5.9, macOS: one by one, up to the highest possible
    // (bounded: a limit of millions would take long, and retry opens few).
    // SAFETY: sysconf and close on our own process's descriptors.
    unsafe {
        let most = libc::sysconf(libc::_SC_OPEN_MAX).clamp(256, 65_536) as RawFd;
        for fd in first..most {
            libc::close(fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_as_written() {
        for what in [
            Guarded::Group { group: 4242 },
            Guarded::Shared {
                child: 7,
                start: u64::MAX - 3,
                group: 9,
            },
            Guarded::Spare { pid: 11, start: 12 },
        ] {
            assert_eq!(decode(&record_of(what)), Some(what));
        }
        assert_eq!(decode(&encode(RELEASE, 0, 0, 0)), None);
    }
}
