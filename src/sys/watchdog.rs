//! The watchdog: a process of retry's that outlives it just long enough to
//! end what retry was guarding, however retry ended (SIGKILL included).
//!
//! Forked once per run, while retry has one thread, it shares with retry a
//! page of memory (an anonymous shared mapping made before the fork) and
//! holds the read end of a pipe whose write end only retry holds
//! (close-on-exec, so commands never inherit it; the keeper, which never
//! executes anything, closes it itself; an `execve` drops the mapping
//! too). Retry writes nothing to the pipe: the watchdog sleeps in `read`
//! until the pipe ends, which is how it learns that retry is gone.
//!
//! The page holds the guarded records: a count and fixed-size records.
//! Retry writes a record for each attempt it starts (its process group, or
//! in retry's group its command and start, and what was there before it)
//! in place, past the count, then publishes it by raising the count
//! (release ordering); once the attempt is over it releases everything by
//! setting the count to 0. Neither is a system call, and neither wakes the
//! watchdog. A retry killed in the middle of an update leaves the state
//! before or after it: only whole, published records are below the count.
//! When the pipe ends, the watchdog reads the count and the records below
//! it and hands them to the caller's `on_gone` (`process::watchdog`, which
//! says how each is ended), then exits.
//!
//! The watchdog blocks every signal (a terminal's Ctrl-C or a hang-up meant
//! for the job leaves it alone), leads a process group of its own (a
//! `kill -9 -PGID` of retry's group does not take it), and holds no other
//! descriptor of retry's: its standard ones are `/dev/null`, every other
//! is closed, so no reader of retry's output waits for it. Only SIGKILL or
//! SIGSTOP sent to it, or its own process limit, defeat it: docs/processes.md says
//! so.
//!
//! Retry never waits for the watchdog: it only writes to memory, so a
//! watchdog that does not run (stopped) never holds retry up.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

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

/// One record: three words, a tag and a pid, a start time, a group.
const WORDS: usize = 3;
const GROUP: u32 = 1;
const SHARED: u32 = 2;
const SPARE: u32 = 3;

fn encode(tag: u32, pid: i32, start: u64, group: i32) -> [u64; WORDS] {
    [
        u64::from(tag) | u64::from(pid as u32) << 32,
        start,
        u64::from(group as u32),
    ]
}

fn record_of(what: Guarded) -> [u64; WORDS] {
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

/// A record as the watchdog reads it: `None` is no record (never
/// published ones are not read).
fn decode(record: [u64; WORDS]) -> Option<Guarded> {
    let [head, start, group] = record;
    let (tag, pid, group) = (head as u32, (head >> 32) as i32, group as i32);
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

/// The size of the shared mapping: 64 KiB of address space, of which only
/// the pages written are memory (the first, for a run's usual few records).
const MAPPING: usize = 64 * 1024;

/// How many records the page holds.
const CAPACITY: usize = (MAPPING - 8) / (WORDS * 8);

/// The page shared with the watchdog: every field an atomic, so that retry
/// writing and the watchdog reading share no plain memory. Zero-filled, as
/// a new mapping is, it guards nothing.
#[repr(C)]
struct Board {
    /// How many records below are published.
    count: AtomicU32,
    /// Not 0: a record could not be written (the page was full) since the
    /// last release; what is published is not all that was guarded.
    overflowed: AtomicU32,
    records: [[AtomicU64; WORDS]; CAPACITY],
}

const _: () = assert!(size_of::<Board>() <= MAPPING);

/// Retry's side of the page: the board, and the lock that keeps two of
/// retry's threads (hedged copies) from writing it at once. The watchdog
/// reads it only once retry is gone, so it needs no lock.
struct Page {
    board: &'static Board,
    writers: Mutex<()>,
}

impl Page {
    /// A new page, shared with the processes forked after this (the
    /// watchdog); an `execve` drops it.
    fn map() -> io::Result<Page> {
        // SAFETY: a new anonymous mapping at an address the system picks:
        // no memory of ours is touched.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                MAPPING,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANON,
                -1,
                0,
            )
        };
        if at == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the mapping is MAPPING bytes, at least a Board (checked
        // above), page-aligned (more than a Board needs), zero-filled (a
        // valid Board: every field an atomic integer) and never unmapped,
        // so it lives as long as the process; it is only ever used as
        // atomics.
        let board = unsafe { &*at.cast::<Board>() };
        Ok(Page {
            board,
            writers: Mutex::new(()),
        })
    }

    /// Write `what` past the count, then publish it.
    fn guard(&self, what: Guarded) {
        let _writer = self.writers.lock().unwrap_or_else(PoisonError::into_inner);
        let count = self.board.count.load(Ordering::Relaxed) as usize;
        let Some(slot) = self.board.records.get(count) else {
            // Full (thousands of records: processes in retry's group before
            // the attempt, times hedged copies). The record is dropped, as a
            // full pipe dropped it before, but said: the one that is
            // dangerous to lose is a Spare, a process that must not be
            // killed, so the watchdog then ends only what is recorded
            // exactly (an attempt's group; a command and what is below it)
            // and leaves out the search of retry's group for orphans. A
            // lost Group or Shared record leaves an attempt running, as a
            // dropped record always did.
            self.board.overflowed.store(1, Ordering::Release);
            return;
        };
        for (word, value) in slot.iter().zip(record_of(what)) {
            word.store(value, Ordering::Relaxed);
        }
        self.board.count.store(count as u32 + 1, Ordering::Release);
    }

    /// Nothing is guarded. The count goes first: a retry killed between the
    /// two leaves nothing guarded and the conservative flag, never records
    /// it lost some of without the flag.
    fn release(&self) {
        let _writer = self.writers.lock().unwrap_or_else(PoisonError::into_inner);
        self.board.count.store(0, Ordering::Release);
        self.board.overflowed.store(0, Ordering::Release);
    }

    /// What is published, and whether it is all that was guarded (no
    /// record was lost to a full page).
    fn published(&self) -> (Vec<Guarded>, bool) {
        let count = (self.board.count.load(Ordering::Acquire) as usize).min(CAPACITY);
        let whole = self.board.overflowed.load(Ordering::Acquire) == 0;
        let guarded = self.board.records[..count]
            .iter()
            .filter_map(|slot| decode(slot.each_ref().map(|word| word.load(Ordering::Relaxed))))
            .collect();
        (guarded, whole)
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
    /// The pipe's write end, held and never written: its closing, when
    /// retry is gone, is what the watchdog waits for.
    _write: OwnedFd,
    page: Page,
}

impl Watchdog {
    /// Fork the watchdog, which, when retry is gone, calls `on_gone` with
    /// what it still guards and whether that is all of it (`false`: a full
    /// page lost records, processes to spare among them maybe), then exits.
    /// Call while retry has one thread: the watchdog runs Rust code (and
    /// allocates) without executing anything.
    pub(crate) fn start(on_gone: fn(&[Guarded], bool)) -> io::Result<Watchdog> {
        let page = Page::map()?;
        let (read, write) = super::fs::pipe()?;
        // SAFETY: a fork while the process has one thread (the caller's
        // promise): the child owns a consistent copy of memory (and shares
        // the page), runs `watch`, which never returns, and exits with
        // `_exit`.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            watch(read.as_raw_fd(), write.as_raw_fd(), &page, on_gone);
        }
        drop(read);
        WRITE_END.store(write.as_raw_fd(), Ordering::SeqCst);
        Ok(Watchdog {
            _write: write,
            page,
        })
    }

    /// Guard `what` too, until the next [`release`](Self::release).
    pub(crate) fn guard(&self, what: Guarded) {
        self.page.guard(what);
    }

    /// The attempt is over: nothing is guarded any more.
    pub(crate) fn release(&self) {
        self.page.release();
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        WRITE_END.store(-1, Ordering::SeqCst);
    }
}

/// The watchdog's whole life (module doc).
fn watch(read: RawFd, write: RawFd, page: &Page, on_gone: fn(&[Guarded], bool)) -> ! {
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
    // Retry writes nothing: the read returns when the pipe ends.
    let mut buffer = [0u8; 64];
    loop {
        // SAFETY: reads into our own buffer.
        let got = unsafe { libc::read(3, buffer.as_mut_ptr().cast(), buffer.len()) };
        if got == 0 {
            break;
        }
        if got < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    let (guarded, whole) = page.published();
    on_gone(&guarded, whole);
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
            Guarded::Shared {
                child: i32::MAX,
                start: 0,
                group: -1,
            },
        ] {
            assert_eq!(decode(record_of(what)), Some(what));
        }
        // A slot never written.
        assert_eq!(decode([0; WORDS]), None);
        // And through the page, in order, until a release.
        let page = Page::map().unwrap();
        assert_eq!(page.published(), (vec![], true));
        let (a, b) = (
            Guarded::Group { group: 5 },
            Guarded::Spare { pid: 6, start: 7 },
        );
        page.guard(a);
        page.guard(b);
        assert_eq!(page.published(), (vec![a, b], true));
        page.release();
        assert_eq!(page.published(), (vec![], true));
    }

    #[test]
    fn a_full_page_says_it_lost_records_until_the_release() {
        let page = Page::map().unwrap();
        for pid in 0..CAPACITY as i32 + 5 {
            page.guard(Guarded::Spare { pid, start: 1 });
        }
        let (guarded, whole) = page.published();
        assert_eq!(guarded.len(), CAPACITY);
        assert!(!whole);
        assert_eq!(
            guarded[CAPACITY - 1],
            Guarded::Spare {
                pid: CAPACITY as i32 - 1,
                start: 1
            }
        );
        page.release();
        assert_eq!(page.published(), (vec![], true));
    }

    /// Record `k` of round `i` of the writer below: every field says `i`
    /// and `k`, and the kinds take turns, so a record mixed from two
    /// writes is no record of the sequence.
    fn nth(i: u32, k: u32) -> Guarded {
        let id = (i * 8 + k) as i32;
        let start = u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(k);
        match (i + k) % 3 {
            0 => Guarded::Group { group: id },
            1 => Guarded::Spare { pid: id, start },
            _ => Guarded::Shared {
                child: id,
                start,
                group: !id,
            },
        }
    }

    /// How many records round `i` guards.
    fn length(i: u32) -> u32 {
        1 + i % 5
    }

    /// The id every record of the sequence carries.
    fn id_of(what: Guarded) -> i32 {
        match what {
            Guarded::Group { group: id }
            | Guarded::Spare { pid: id, .. }
            | Guarded::Shared { child: id, .. } => id,
        }
    }

    #[test]
    fn a_writer_killed_mid_update_leaves_only_whole_published_records() {
        // A child writes round after round (a release, then a few records,
        // each round's different) through the page, and is killed with
        // SIGKILL at varied points: at a later round each time, after a
        // varied wait. Whenever it was killed, what is published is a
        // prefix of one round's records, each whole. Nothing depends on
        // timing: a kill that comes between updates proves less, never
        // fails.
        const ROUNDS: u32 = 1 << 22;
        let page = Page::map().unwrap();
        for trial in 0..400u32 {
            page.release();
            // Slot 0 says which round the child is at: not an earlier
            // child's (the rest is left, stale, as a torn read would see it).
            page.board.records[0][0].store(0, Ordering::Relaxed);
            // SAFETY: the child runs only atomics, an uncontended lock of
            // its own copy of the page's mutex and `_exit`: nothing that
            // allocates or takes a lock another thread of the test binary
            // might have held at the fork.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork: {}", io::Error::last_os_error());
            if pid == 0 {
                for i in 1..ROUNDS {
                    page.release();
                    for k in 0..length(i) {
                        page.guard(nth(i, k));
                    }
                }
                // SAFETY: ends the child at once, running nothing else.
                unsafe { libc::_exit(0) };
            }
            // Wait until the child is at round `target` or later (slot 0
            // holds the latest round's first record), or has ended.
            let target = (trial * 37) % 1000 + 1;
            let round_now = || {
                let head = page.board.records[0][0].load(Ordering::Relaxed);
                ((head >> 32) as u32) / 8
            };
            let mut status = 0;
            let reaped = loop {
                // SAFETY: polls our own child, into our own integer.
                let ended = unsafe { libc::waitpid(pid, &raw mut status, libc::WNOHANG) };
                // Ended, or reaped already by another test's reaping of
                // orphans (ECHILD): either way dead, and not to signal.
                let error = io::Error::last_os_error().raw_os_error();
                if ended == pid || (ended < 0 && error == Some(libc::ECHILD)) {
                    break true;
                }
                if round_now() >= target {
                    break false;
                }
                std::thread::yield_now();
            };
            if !reaped {
                for _ in 0..(trial * 131) % 5000 {
                    std::hint::spin_loop();
                }
                // SAFETY: signals and reaps our own child, not reaped yet
                // (so its pid is still its own). The wait returns once it
                // is dead (ECHILD: dead and reaped by another test).
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    while libc::waitpid(pid, &raw mut status, 0) < 0
                        && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
                    {
                    }
                }
            }
            let (guarded, whole) = page.published();
            assert!(whole, "trial {trial}: no record was lost");
            let Some(&first) = guarded.first() else {
                continue;
            };
            let round = id_of(first) as u32 / 8;
            let expected: Vec<Guarded> = (0..length(round)).map(|k| nth(round, k)).collect();
            assert!(
                guarded.len() <= expected.len() && guarded[..] == expected[..guarded.len()],
                "trial {trial}: published {guarded:?}, not a prefix of round {round}'s {expected:?}"
            );
        }
    }
}
