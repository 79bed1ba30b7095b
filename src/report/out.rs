//! Where retry's own lines go: its stderr, which every sink that writes
//! there shares, or the `--log-file`.
//!
//! A sink hands each line over whole, in one write, so that it never mixes
//! with other writers mid-line. A write that fails (a closed stderr, a full
//! disk) is dropped here, never reported: reporting must never make retry
//! fail or panic. Knows nothing of what the lines say.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, Write};
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::sys::fd::{Abandoned, Outlet};

struct StderrState {
    outlet: Outlet,
    /// The child's scanned stderr stopped mid-line: start ours on a new one.
    mid_line: bool,
    /// The run's deadline (`--max-time`), once the run has started.
    deadline: Option<Instant>,
    /// The last line was dropped: its reader took nothing for
    /// [`PATIENCE`]. Until a line goes through again, none is waited for.
    stalled: bool,
}

/// How long one of retry's own lines waits for a reader that takes
/// nothing, when neither a signal nor the deadline ends the wait first: a
/// stalled stderr (a socket or terminal nobody reads) costs the run at most
/// this once, then lines are dropped until the reader takes one again.
const PATIENCE: Duration = Duration::from_secs(1);

/// Retry's stderr, written so that a reader that takes nothing holds retry
/// neither past a signal nor past the run's deadline, nor longer than
/// [`PATIENCE`] at all. Clones share one
/// stderr (and whether the child left its last line open).
#[derive(Clone)]
pub(crate) struct Stderr(Rc<RefCell<StderrState>>);

impl Stderr {
    pub(crate) fn new() -> Stderr {
        Stderr(Rc::new(RefCell::new(StderrState {
            outlet: Outlet::new(2),
            mid_line: false,
            deadline: None,
            stalled: false,
        })))
    }

    /// Past `deadline` (or a signal), a line that a stalled stderr does not
    /// take is dropped rather than waited on.
    pub(crate) fn set_deadline(&self, deadline: Option<Instant>) {
        self.0.borrow_mut().deadline = deadline;
    }

    /// The child's scanned stderr ended without a line end (`open`): the
    /// next write starts with one.
    pub(crate) fn set_mid_line(&self, open: bool) {
        self.0.borrow_mut().mid_line = open;
    }
}

impl Write for Stderr {
    /// All of `buf` in one write, on a line of its own; never an error.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut state = self.0.borrow_mut();
        let mut bytes = Vec::with_capacity(buf.len() + 1);
        if state.mid_line {
            bytes.push(b'\n');
            state.mid_line = false;
        }
        bytes.extend_from_slice(buf);
        let deadline = state.deadline;
        let patience_ends = Instant::now()
            + if state.stalled {
                Duration::ZERO
            } else {
                PATIENCE
            };
        let give_up = || {
            let now = Instant::now();
            crate::sys::signal_pipe::ending_arrived()
                || deadline.is_some_and(|deadline| now >= deadline)
                || now >= patience_ends
        };
        let written = state.outlet.write_all(&bytes, &give_up);
        state.stalled = written.as_ref().is_err_and(Abandoned::is);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Where a sink's lines go: stderr, or the `--log-file` (appended to).
pub(crate) enum Out {
    Stderr(Stderr),
    File(LogFile),
}

/// The `--log-file`. A write that fails (a full disk, `ulimit -f`) is said
/// once on stderr, and the lines go there from then on: the run goes on
/// with its status, and its messages are not lost.
pub(crate) struct LogFile {
    file: File,
    path: std::path::PathBuf,
    stderr: Stderr,
    failed: bool,
}

impl LogFile {
    pub(crate) fn new(file: File, path: &std::path::Path, stderr: Stderr) -> LogFile {
        LogFile {
            file,
            path: path.to_path_buf(),
            stderr,
            failed: false,
        }
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Out::Stderr(stderr) => stderr.write(buf),
            Out::File(log) if log.failed => log.stderr.write(buf),
            Out::File(log) => match log.file.write_all(buf) {
                Ok(()) => Ok(buf.len()),
                Err(err) => {
                    log.failed = true;
                    let said = format!(
                        "retry: error: --log-file {}: cannot write: {err}; retry's messages go to stderr from here\n",
                        log.path.display()
                    );
                    let _ = log.stderr.write(said.as_bytes());
                    log.stderr.write(buf)
                }
            },
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Out::Stderr(stderr) => stderr.flush(),
            Out::File(log) => log.file.flush(),
        }
    }
}
