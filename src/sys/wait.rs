//! Waiting for descriptors, with or without a time limit: the one way every
//! wait of retry on a descriptor goes (the signal pipe, the input feeder,
//! the output pumps, a stalled reader of retry's output). Two things differ
//! by system, and are handled here once:
//!
//! - How long one call may wait. macOS has no `ppoll`: rustix hands `poll`
//!   its timeout in milliseconds in an `int`, and refuses more than
//!   `i32::MAX` ms (24.8 days) with EINVAL; its `select` refuses more than
//!   10^8 s (xnu `itimerfix`). A refusal read as "time is up" made
//!   `-T 30d` or `--max-time 40d` spin. So a wait is cut into slices of at
//!   most [`LONGEST_SLICE`], then goes on, on every system: Linux runs the
//!   same code.
//! - Devices on macOS. Apple's `poll` is built on kqueue: a descriptor
//!   kqueue cannot watch (`/dev/tty`, other devices; poll(2), BUGS: "does
//!   not support devices") comes back POLLNVAL at once, and the call does
//!   not wait for the others either (xnu `bsd/kern/sys_generic.c`,
//!   `poll_nocancel`: `KEVENT_FLAG_IMMEDIATE`), so a loop around it would
//!   spin and a caller that took POLLNVAL as "ready" would block in a read
//!   it cannot cancel. A wait that watches a character device is therefore
//!   made with `select`, which supports devices (fish shell and libuv do
//!   the same). The portable build (`--cfg retry_posix`) takes that way on
//!   Linux too, so that the tests run it (`/dev/null` as stdin is a
//!   character device).

use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};

/// The longest one `poll` or `select` is asked to wait: a day, far below
/// every system's limit; a longer wait is made of several.
pub(crate) const LONGEST_SLICE: Duration = Duration::from_secs(24 * 60 * 60);

/// Whether a wait that watches a character device is made with `select`
/// (see the module's words): Apple's systems, and the portable build, which
/// runs their code on Linux.
const SELECT_FOR_DEVICES: bool = cfg!(any(target_vendor = "apple", retry_posix));

/// One descriptor to wait for: what for, and what it was found ready for.
pub(crate) struct Watch<'fd> {
    fd: BorrowedFd<'fd>,
    wants: PollFlags,
    ready: PollFlags,
}

impl<'fd> Watch<'fd> {
    /// Wait for `fd` to be ready for `wants` (`IN`, `OUT`).
    pub(crate) fn new(fd: BorrowedFd<'fd>, wants: PollFlags) -> Watch<'fd> {
        Watch {
            fd,
            wants,
            ready: PollFlags::empty(),
        }
    }

    /// What the last wait found (as `poll` says it: `IN`, `OUT`, `HUP`,
    /// `ERR`, `NVAL`; a `select` says only `IN` and `OUT`).
    pub(crate) fn ready(&self) -> PollFlags {
        self.ready
    }
}

/// Wait until one of `watches` is ready, or until `until` (`None`: for as
/// long as it takes). How many are ready; 0 once `until` has passed (a
/// time already past still looks once). A signal's EINTR is the caller's
/// to handle, as it is `poll`'s.
pub(crate) fn wait(watches: &mut [Watch<'_>], until: Option<Instant>) -> rustix::io::Result<usize> {
    let select = SELECT_FOR_DEVICES && watches.iter().any(|watch| is_device(watch.fd));
    loop {
        let slice = next_slice(until, Instant::now());
        let ready = if select {
            select_once(watches, slice)?
        } else {
            poll_once(watches, slice)?
        };
        if ready > 0 || until.is_some_and(|until| Instant::now() >= until) {
            return Ok(ready);
        }
    }
}

/// Wait at most `longest` for one of `watches`, in slices as [`wait`]
/// does (a `longest` past what the clock can count waits without limit).
pub(crate) fn wait_for(watches: &mut [Watch<'_>], longest: Duration) -> rustix::io::Result<usize> {
    wait(watches, Instant::now().checked_add(longest))
}

/// How long the next call may wait, at `now`, for a wait that ends at
/// `until` (`None`: no limit): the time left, at most [`LONGEST_SLICE`].
fn next_slice(until: Option<Instant>, now: Instant) -> Option<Duration> {
    until.map(|until| until.saturating_duration_since(now).min(LONGEST_SLICE))
}

fn timespec(slice: Duration) -> Timespec {
    Timespec {
        tv_sec: i64::try_from(slice.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: slice.subsec_nanos().into(),
    }
}

/// A character device (a terminal, `/dev/null`, `/dev/urandom`)?
fn is_device(fd: BorrowedFd<'_>) -> bool {
    rustix::fs::fstat(fd).is_ok_and(|stat| {
        rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::CharacterDevice
    })
}

/// One `poll`.
fn poll_once(watches: &mut [Watch<'_>], slice: Option<Duration>) -> rustix::io::Result<usize> {
    let mut fds: Vec<PollFd<'_>> = watches
        .iter()
        .map(|watch| PollFd::from_borrowed_fd(watch.fd, watch.wants))
        .collect();
    let timeout = slice.map(timespec);
    let ready = rustix::event::poll(&mut fds, timeout.as_ref())?;
    for (watch, fd) in watches.iter_mut().zip(&fds) {
        watch.ready = fd.revents();
    }
    Ok(ready)
}

/// One `select`, for the same watches: `IN` in the read set, `OUT` in the
/// write set.
fn select_once(watches: &mut [Watch<'_>], slice: Option<Duration>) -> rustix::io::Result<usize> {
    use rustix::event::{FdSetElement, fd_set_insert, fd_set_num_elements};
    let bound = watches
        .iter()
        .map(|watch| watch.fd.as_raw_fd() + 1)
        .max()
        .unwrap_or(0);
    let size = fd_set_num_elements(watches.len(), bound);
    let mut readable = vec![FdSetElement::default(); size];
    let mut writable = vec![FdSetElement::default(); size];
    for watch in watches.iter() {
        if watch.wants.intersects(PollFlags::IN | PollFlags::RDNORM) {
            fd_set_insert(&mut readable, watch.fd.as_raw_fd());
        }
        if watch.wants.intersects(PollFlags::OUT | PollFlags::WRNORM) {
            fd_set_insert(&mut writable, watch.fd.as_raw_fd());
        }
    }
    let timeout = slice.map(timespec);
    // SAFETY: every descriptor in the sets is a `BorrowedFd`, open for
    // the length of the call; both sets have room for `bound` descriptors
    // (`fd_set_num_elements`).
    unsafe {
        rustix::event::select(
            bound,
            Some(&mut readable),
            Some(&mut writable),
            None,
            timeout.as_ref(),
        )
    }?;
    let mut ready = 0;
    for watch in watches.iter_mut() {
        let fd = watch.fd.as_raw_fd();
        watch.ready = PollFlags::empty();
        if is_set(&readable, fd) {
            watch.ready |= PollFlags::IN;
        }
        if is_set(&writable, fd) {
            watch.ready |= PollFlags::OUT;
        }
        if !watch.ready.is_empty() {
            ready += 1;
        }
    }
    Ok(ready)
}

fn is_set(set: &[rustix::event::FdSetElement], fd: i32) -> bool {
    rustix::event::FdSetIter::new(set).any(|set| set == fd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn a_long_wait_is_cut_into_slices_of_a_day_and_a_short_one_is_not() {
        let now = Instant::now();
        let day = Duration::from_secs(86_400);
        assert_eq!(next_slice(None, now), None);
        let forty_days = now + day * 40;
        assert_eq!(next_slice(Some(forty_days), now), Some(day));
        // The last slice is what is left.
        let later = now + day * 39 + Duration::from_millis(86_400_000 - 1500);
        assert_eq!(
            next_slice(Some(forty_days), later),
            Some(Duration::from_millis(1500))
        );
        // Past: no wait at all, but still one look.
        assert_eq!(next_slice(Some(now), now + day), Some(Duration::ZERO));
        assert_eq!(next_slice(Some(now + day * 5000), now), Some(day));
        // Every slice fits every system's call: macOS's poll takes an int
        // of milliseconds, its select at most 10^8 s.
        let millis = LONGEST_SLICE.as_millis();
        assert!(millis < i32::MAX as u128 && LONGEST_SLICE.as_secs() < 100_000_000);
    }

    #[test]
    fn a_wait_for_forty_days_wakes_when_its_pipe_is_readable() {
        let (read, write) = crate::sys::fs::pipe().unwrap();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            rustix::io::write(&write, b"x").unwrap();
        });
        let mut watches = [Watch::new(read.as_fd(), PollFlags::IN)];
        let started = Instant::now();
        let far = Instant::now() + Duration::from_secs(40 * 86_400);
        assert_eq!(wait(&mut watches, Some(far)), Ok(1));
        assert!(watches[0].ready().contains(PollFlags::IN));
        assert!(started.elapsed() < Duration::from_secs(10));
        // A short limit runs out: 0, no error.
        let (idle, _keep) = crate::sys::fs::pipe().unwrap();
        let mut watches = [Watch::new(idle.as_fd(), PollFlags::IN)];
        assert_eq!(wait_for(&mut watches, Duration::from_millis(20)), Ok(0));
        assert_eq!(wait(&mut watches, Some(Instant::now())), Ok(0));
    }

    #[test]
    fn select_says_what_poll_says_for_a_device_and_a_pipe() {
        // `/dev/null`: a character device, always ready both ways.
        let null = std::fs::File::options()
            .read(true)
            .write(true)
            .open("/dev/null")
            .unwrap();
        let (read, write) = crate::sys::fs::pipe().unwrap();
        let mut watches = [
            Watch::new(null.as_fd(), PollFlags::OUT),
            Watch::new(read.as_fd(), PollFlags::IN),
            Watch::new(write.as_fd(), PollFlags::OUT),
        ];
        let ten_ms = Some(Duration::from_millis(10));
        assert_eq!(select_once(&mut watches, ten_ms), Ok(2));
        let selected: Vec<PollFlags> = watches.iter().map(Watch::ready).collect();
        assert_eq!(
            selected,
            [PollFlags::OUT, PollFlags::empty(), PollFlags::OUT]
        );
        assert_eq!(poll_once(&mut watches, ten_ms), Ok(2));
        assert_eq!(watches[1].ready(), PollFlags::empty());
        rustix::io::write(&write, b"x").unwrap();
        let mut reading = [Watch::new(read.as_fd(), PollFlags::IN)];
        assert_eq!(select_once(&mut reading, ten_ms), Ok(1));
        assert_eq!(reading[0].ready(), PollFlags::IN);
        assert!(is_device(null.as_fd()) && !is_device(read.as_fd()));
        // The wait picks `select` where the build says so, and answers the same.
        let mut both = [
            Watch::new(null.as_fd(), PollFlags::IN),
            Watch::new(read.as_fd(), PollFlags::IN),
        ];
        assert_eq!(wait(&mut both, None), Ok(2));
    }
}
