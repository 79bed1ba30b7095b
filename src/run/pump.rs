//! Passing a child's output on: a pump copies one of the child's pipes to
//! its destination (retry's own stdout or stderr, or the file that holds
//! stdout) at once, byte for byte, and feeds each chunk to the scanner
//! after it was written on. Memory is bounded whatever the output: one
//! chunk here, one line window in the scanner.

use crate::sys::fd::{AsFd, BorrowedFd, OwnedFd};
use std::fs::File;
use std::io::Write;

use crate::scan::{CHUNK, PatternSet, ScanResult, Scanner, is_line_end};
use crate::sys::fd::{Outlet, wait_readable};

/// Where a pump sends what it reads.
pub(crate) enum Destination<'a> {
    /// One of retry's own descriptors (stdout or stderr); `give_up` says
    /// when to stop waiting for a reader that takes nothing.
    Outlet {
        outlet: Outlet,
        give_up: &'a (dyn Fn() -> bool + Sync),
    },
    /// The file that holds stdout (`--buffer-stdout`, `-o`).
    File(File),
}

/// What a pump reports when its stream ends or it is cancelled.
#[derive(Debug, Default)]
pub(crate) struct PumpReport {
    pub(crate) scan: ScanResult,
    /// Writing on failed with EPIPE: the reader downstream is gone.
    pub(crate) downstream_closed: bool,
    /// Writing on failed otherwise (ENOSPC, EIO): the first such error.
    /// The rest of the stream was read, scanned and dropped.
    pub(crate) write_error: Option<std::io::Error>,
    /// The last byte passed on was not a line end.
    pub(crate) ends_mid_line: bool,
}

/// Copy `source` to `destination` until end of file or until `cancel`
/// becomes readable (its write end closed), scanning on the way. Takes
/// `source` to close it on return: a child still writing then meets SIGPIPE.
///
/// A write error other than EPIPE (a full disk, `/dev/full`, EIO) is ours,
/// not the child's: the pump records it and keeps reading and scanning
/// (dropping the bytes), so the child sees no error and no SIGPIPE that it
/// would not have seen without retry, and its verdict is unchanged.
#[allow(clippy::needless_pass_by_value)]
pub(crate) fn pump(
    source: OwnedFd,
    mut destination: Destination<'_>,
    patterns: Option<&PatternSet>,
    cancel: BorrowedFd<'_>,
) -> PumpReport {
    let mut scanner = patterns.map(Scanner::new);
    let mut report = PumpReport::default();
    let mut buffer = vec![0u8; CHUNK];
    loop {
        if !wait_readable(source.as_fd(), cancel) {
            // The attempt is over. What its process wrote before it ended
            // is still in the pipe: pass that on too (the reader downstream
            // may be slow), but no more than one pipe's worth, so that a
            // grandchild that keeps writing cannot hold us.
            drain(&source, &mut buffer, |chunk| {
                pass_on(chunk, &mut destination, scanner.as_mut(), &mut report)
            });
            break;
        }
        let count = match crate::sys::fd::read(source.as_fd(), &mut buffer) {
            Ok(0) => break,
            Ok(count) => count,
            Err(err)
                if matches!(
                    err.kind(),
                    std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock
                ) =>
            {
                continue;
            }
            Err(_) => break,
        };
        if !pass_on(
            &buffer[..count],
            &mut destination,
            scanner.as_mut(),
            &mut report,
        ) {
            break;
        }
    }
    if let Some(scanner) = scanner {
        report.scan = scanner.finish();
    }
    report
}

/// Write one chunk on and scan it; false when the reader downstream is
/// gone and the pump must stop.
fn pass_on(
    chunk: &[u8],
    destination: &mut Destination<'_>,
    scanner: Option<&mut Scanner<'_>>,
    report: &mut PumpReport,
) -> bool {
    if report.write_error.is_none() {
        let written = match destination {
            Destination::Outlet { outlet, give_up } => outlet.write_all(chunk, give_up),
            Destination::File(file) => file.write_all(chunk),
        };
        match written {
            Ok(()) => report.ends_mid_line = chunk.last().is_some_and(|&b| !is_line_end(b)),
            Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {
                // The reader downstream went away (`retry ... | head -1`):
                // stop and close our end, so the child meets SIGPIPE as it
                // would have without us in between.
                report.downstream_closed = true;
                return false;
            }
            Err(err) => report.write_error = Some(err),
        }
    }
    if let Some(scanner) = scanner {
        scanner.feed(chunk);
    }
    true
}

/// Read what `source` holds right now, without waiting for more, at most
/// the pipe's capacity, handing each chunk to `pass_on` until it says stop.
fn drain(source: &OwnedFd, buffer: &mut [u8], mut pass_on: impl FnMut(&[u8]) -> bool) {
    if crate::sys::fd::set_nonblocking(source.as_fd()).is_err() {
        return;
    }
    let mut budget = crate::sys::fs::pipe_size(source.as_fd()).unwrap_or(CHUNK);
    while budget > 0 {
        let want = budget.min(buffer.len());
        match crate::sys::fd::read(source.as_fd(), &mut buffer[..want]) {
            Ok(0) => return,
            Ok(count) => {
                budget -= count;
                if !pass_on(&buffer[..count]) {
                    return;
                }
            }
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}
