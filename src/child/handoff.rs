//! Scanned output that outlives its attempt. The attempt ends when its
//! process exits; what it left running (a server a successful attempt
//! started) may still hold the pipe retry reads its output from, and retry
//! itself ends soon. Closing the pipe then would make that process's next
//! write fail (EPIPE, or death by SIGPIPE): its output is handed to a small
//! process of its own instead, which passes it on, unscanned, to where it
//! was going until the last writer closes it, as if retry had never been in
//! between.
//!
//! The process is forked from a process that may have threads, so between
//! `fork` and `_exit` it makes only async-signal-safe calls and allocates
//! nothing.

use std::os::fd::{AsRawFd, OwnedFd};

/// The most streams handed off at once: stdout and stderr.
const MOST: usize = 2;

/// Pass each `(source, destination)` on in a process of its own: bytes
/// read from `source` are written to our descriptor `destination` (1 or 2).
/// Our copies of the sources are closed either way.
pub(crate) fn hand_off(streams: Vec<(OwnedFd, i32)>) {
    if streams.is_empty() || streams.len() > MOST {
        return;
    }
    let mut pairs = [(-1, -1); MOST];
    for (pair, (source, destination)) in pairs.iter_mut().zip(&streams) {
        *pair = (source.as_raw_fd(), *destination);
    }
    let count = streams.len();
    // SAFETY: the child runs `pass_on`, which makes only async-signal-safe
    // calls on descriptors and its own stack, and never returns.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: in the forked child, see above.
        unsafe { pass_on(&pairs[..count]) }
    }
    // Parent (or a failed fork: the output is then cut off, as before).
    drop(streams);
}

/// The handed-off process: set up, then copy until every source ends.
///
/// # Safety
///
/// Only in the child of `fork`, before anything else runs there.
unsafe fn pass_on(pairs: &[(i32, i32)]) -> ! {
    // SAFETY: async-signal-safe calls only (signal dispositions, mask,
    // descriptors, poll, read, write, prctl, _exit), on our own stack.
    unsafe {
        // Dispositions and mask as a new process's: retry's handlers write
        // to a signal pipe this process does not have.
        for signal in 1..32 {
            if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &raw const none, std::ptr::null_mut());
        libc::prctl(libc::PR_SET_NAME, c"retry-output".as_ptr());
        // Sources to 3 and 4 (by way of high numbers, as a source may be 3
        // or 4 already), everything else of retry's closed: no lock, no
        // socket, no spool stays open with us.
        let mut sources = [-1; MOST];
        for (slot, &(source, _)) in sources.iter_mut().zip(pairs) {
            *slot = libc::fcntl(source, libc::F_DUPFD_CLOEXEC, 100);
        }
        for (index, &high) in sources.iter().enumerate().take(pairs.len()) {
            libc::dup2(high, 3 + index as i32);
        }
        let first_closed = 3 + pairs.len() as u32;
        if libc::syscall(libc::SYS_close_range, first_closed, u32::MAX, 0) != 0 {
            for fd in first_closed..65_536 {
                libc::close(fd as i32);
            }
        }
        // Standard descriptors not written to: /dev/null, so that a reader
        // of retry's stdin, stdout or stderr is not kept waiting by us.
        let kept = |fd: i32| pairs.iter().any(|&(_, destination)| destination == fd);
        for fd in 0..3 {
            if !kept(fd) {
                let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
                if null >= 0 && null != fd {
                    libc::dup2(null, fd);
                    libc::close(null);
                }
            }
        }
        let mut open = [false; MOST];
        for slot in open.iter_mut().take(pairs.len()) {
            *slot = true;
        }
        let mut buffer = [0u8; 16 * 1024];
        loop {
            let mut fds = [libc::pollfd {
                fd: -1,
                events: libc::POLLIN,
                revents: 0,
            }; MOST];
            for (index, pollfd) in fds.iter_mut().enumerate().take(pairs.len()) {
                pollfd.fd = if open[index] { 3 + index as i32 } else { -1 };
            }
            if !open.iter().any(|&o| o) {
                libc::_exit(0);
            }
            if libc::poll(fds.as_mut_ptr(), MOST as libc::nfds_t, -1) < 0 {
                continue;
            }
            for index in 0..pairs.len() {
                if !open[index] || fds[index].revents == 0 {
                    continue;
                }
                let source = 3 + index as i32;
                let count = libc::read(source, buffer.as_mut_ptr().cast(), buffer.len());
                let ended = match count {
                    0 => true,
                    n if n > 0 => !write_all(pairs[index].1, &buffer[..n as usize]),
                    _ => !matches!(*libc::__errno_location(), libc::EINTR | libc::EAGAIN),
                };
                if ended {
                    // Closing our end: a writer still there meets EPIPE, as
                    // it would have writing to the reader that went away.
                    libc::close(source);
                    open[index] = false;
                }
            }
        }
    }
}

/// Write all of `bytes` to `fd`, waiting for room when it is non-blocking.
/// False when the reader is gone or writing failed.
///
/// # Safety
///
/// Async-signal-safe; for `pass_on`.
unsafe fn write_all(fd: i32, mut bytes: &[u8]) -> bool {
    // SAFETY: write and poll on a descriptor, from a valid slice.
    unsafe {
        while !bytes.is_empty() {
            let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
            if written > 0 {
                bytes = &bytes[written as usize..];
                continue;
            }
            match *libc::__errno_location() {
                libc::EINTR => {}
                libc::EAGAIN => {
                    let mut room = libc::pollfd {
                        fd,
                        events: libc::POLLOUT,
                        revents: 0,
                    };
                    libc::poll(&raw mut room, 1, -1);
                }
                _ => return false,
            }
        }
        true
    }
}
