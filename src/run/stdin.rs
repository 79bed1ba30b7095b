//! What each attempt reads on its standard input (`--stdin`).
//!
//! - A terminal is always inherited: keystrokes cannot be replayed.
//! - A regular file is replayed by seeking back to the offset it had when
//!   retry started; the child shares the open file, nothing is copied.
//! - A pipe under `auto` is inherited and never read ahead, so a `while read`
//!   loop around retry keeps its lines; attempts after the first get what the
//!   first left, and a warning says so.
//! - A pipe under `replay` is teed into the first attempt as fast as it
//!   consumes it (we read only after the previous chunk was written: the
//!   attempt's own pace) and spooled to an unlinked temporary file; later
//!   attempts read the spool, then the rest of the live input. Memory stays
//!   at one chunk; the spool disappears with the process, even on SIGKILL.
//!   A spool that cannot take the whole input (a full `$TMPDIR`) never
//!   passes for complete: the attempt reading goes on getting the live
//!   input, and no later attempt is given a replay (the runner fails the
//!   run instead).

use std::fs::File;
use std::io::SeekFrom;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::cli::StdinMode;
use crate::process::ChildIo;
use crate::safe_fs;
use crate::sys::fd::{AsFd, BorrowedFd, HandleKind, OwnedFd, own_fd, wait_readable, wait_writable};

const CHUNK: usize = 64 * 1024;

/// The input source of one run, decided once at start.
pub(crate) enum StdinSource {
    Inherit,
    Null,
    /// A regular file: seek back to `offset` before every attempt.
    Rewind {
        offset: u64,
    },
    /// A pipe or socket under `auto`: inherited; warn from the 2nd attempt.
    SharedPipe,
    Replay(Spool),
}

/// Everything read from our stdin so far, on disk.
pub(crate) struct Spool {
    file: File,
    /// Where the spool lives (`$TMPDIR`), for messages.
    dir: PathBuf,
    length: u64,
    at_eof: bool,
    /// Writing the spool failed: it lacks part of the input, so no later
    /// attempt can be given the whole of it.
    broken: Option<io::Error>,
}

/// How one attempt's stdin is wired: what the child gets, and the feeding
/// work (for replay) that a thread must do while the attempt runs.
pub(crate) struct AttemptStdin<'a> {
    pub(crate) io: ChildIo,
    pub(crate) feeder: Option<Feeder<'a>>,
}

pub(crate) struct Feeder<'a> {
    spool: &'a mut Spool,
    pipe: OwnedFd,
}

impl StdinSource {
    pub(crate) fn new(mode: StdinMode) -> Result<StdinSource> {
        // Our descriptor 0 as it is: `io::stdin()` would set up a buffered
        // reader that nothing here uses.
        let fd = own_fd(0);
        if mode == StdinMode::Null {
            return Ok(StdinSource::Null);
        }
        if mode == StdinMode::Inherit || io::IsTerminal::is_terminal(&fd) {
            return Ok(StdinSource::Inherit);
        }
        let Some(kind) = crate::sys::fd::kind(fd) else {
            return Ok(StdinSource::Inherit);
        };
        match kind {
            HandleKind::Regular => match crate::sys::fd::seek(fd, SeekFrom::Current(0)) {
                Ok(offset) => Ok(StdinSource::Rewind { offset }),
                Err(_) => Ok(StdinSource::Inherit),
            },
            HandleKind::Pipe => {
                if mode == StdinMode::Replay {
                    let dir = safe_fs::temp_dir();
                    let file = tempfile::tempfile_in(&dir).with_context(|| {
                        format!(
                            "creating the --stdin replay spool in {}",
                            safe_fs::shown_temp_dir(&dir)
                        )
                    })?;
                    Ok(StdinSource::Replay(Spool {
                        file,
                        dir,
                        length: 0,
                        at_eof: false,
                        broken: None,
                    }))
                } else if crate::sys::fd::pipe_is_spent(fd) {
                    // Nothing left to read, ever: no attempt can miss anything.
                    Ok(StdinSource::Inherit)
                } else {
                    Ok(StdinSource::SharedPipe)
                }
            }
            HandleKind::Other => Ok(StdinSource::Inherit),
        }
    }

    /// True when attempts after the first read only what earlier ones left.
    pub(crate) fn is_shared_pipe(&self) -> bool {
        matches!(self, StdinSource::SharedPipe)
    }

    /// `--stdin replay` could not spool the whole input: where the spool
    /// is and the error writing it. No later attempt can be given the
    /// whole input.
    pub(crate) fn spool_failure(&self) -> Option<(&Path, &io::Error)> {
        match self {
            StdinSource::Replay(Spool {
                dir,
                broken: Some(error),
                ..
            }) => Some((dir, error)),
            _ => None,
        }
    }

    pub(crate) fn for_attempt(&mut self) -> Result<AttemptStdin<'_>> {
        let inherit = |feeder| AttemptStdin {
            io: ChildIo::Inherit,
            feeder,
        };
        Ok(match self {
            StdinSource::Inherit | StdinSource::SharedPipe => inherit(None),
            StdinSource::Null => AttemptStdin {
                io: ChildIo::Null,
                feeder: None,
            },
            StdinSource::Rewind { offset } => {
                crate::sys::fd::seek(own_fd(0), SeekFrom::Start(*offset))
                    .context("rewinding stdin for the next attempt")?;
                inherit(None)
            }
            StdinSource::Replay(spool) => {
                if let Some(error) = &spool.broken {
                    // Never hand an attempt a replay with a hole in it.
                    anyhow::bail!(
                        "--stdin replay: the spool in {} lacks part of the input: {error}",
                        safe_fs::shown_temp_dir(&spool.dir)
                    );
                }
                let (reader, writer) = crate::sys::fd::pipe().context("creating the stdin pipe")?;
                // Our end never blocks, so cancelling an attempt cannot hang
                // on a child (or grandchild) that stopped reading.
                crate::sys::fd::set_nonblocking(writer.as_fd())?;
                AttemptStdin {
                    io: ChildIo::Fd(reader),
                    feeder: Some(Feeder {
                        spool,
                        pipe: writer,
                    }),
                }
            }
        })
    }
}

impl Feeder<'_> {
    /// Feed the spool, then live input, into the attempt until end of input,
    /// until the attempt closes its stdin, or until `cancel` fires. Closing
    /// the pipe at the end gives the child its end of file.
    pub(crate) fn run(self, cancel: BorrowedFd<'_>) -> Result<()> {
        let Feeder { spool, pipe } = self;
        let mut buffer = vec![0u8; CHUNK];
        let mut offset = 0;
        while offset < spool.length {
            let want = CHUNK.min((spool.length - offset) as usize);
            let count = crate::sys::fs::read_at(&spool.file, &mut buffer[..want], offset)
                .context("reading the stdin spool")?;
            if count == 0 {
                break;
            }
            if !send(&pipe, &buffer[..count], cancel) {
                return Ok(());
            }
            offset += count as u64;
        }
        let stdin = own_fd(0);
        while !spool.at_eof {
            let Some(count) = read_more(stdin, &mut buffer, cancel)? else {
                return Ok(());
            };
            if count == 0 {
                spool.at_eof = true;
                break;
            }
            // Spool first: whatever the child does not take, the next
            // attempt still gets. A spool that cannot take it (a full
            // disk) is marked broken, and this attempt still gets the
            // rest of the input: it must not see an early end of file.
            if spool.broken.is_none() {
                match spool.file.write_all(&buffer[..count]) {
                    Ok(()) => spool.length += count as u64,
                    Err(err) => spool.broken = Some(err),
                }
            }
            if !send(&pipe, &buffer[..count], cancel) {
                return Ok(());
            }
        }
        Ok(())
    }
}

/// The next bytes of `stdin` into `buffer`, waiting for them: how many (0
/// at its end), or `None` when `cancel` fired first.
fn read_more(
    stdin: BorrowedFd<'_>,
    buffer: &mut [u8],
    cancel: BorrowedFd<'_>,
) -> Result<Option<usize>> {
    loop {
        if !wait_readable(stdin, cancel) {
            return Ok(None);
        }
        match crate::sys::fd::read(stdin, buffer) {
            Ok(count) => return Ok(Some(count)),
            Err(err)
                if matches!(
                    err.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                ) => {}
            Err(err) => return Err(err).context("reading stdin"),
        }
    }
}

impl Spool {
    /// Read the rest of our stdin into the spool, to its end (hedged
    /// attempts: every copy is given all of it), unless `give_up` says so
    /// first (a signal to retry, `--max-time`: an input that never ends
    /// is not waited for past them). True when the input was read whole.
    pub(super) fn read_to_end(&mut self, give_up: &dyn Fn() -> bool) -> Result<bool> {
        let stdin = own_fd(0);
        let mut buffer = vec![0u8; CHUNK];
        while !self.at_eof {
            if give_up() {
                return Ok(false);
            }
            // Read only what is there: a read that waits could not be cut
            // short by a signal.
            if !crate::sys::fd::readable_within(stdin, crate::sys::fd::STALL_SLICE) {
                continue;
            }
            let count = match crate::sys::fd::read(stdin, &mut buffer) {
                Ok(count) => count,
                Err(err)
                    if matches!(
                        err.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                    ) =>
                {
                    continue;
                }
                Err(err) => return Err(err).context("reading stdin"),
            };
            if count == 0 {
                self.at_eof = true;
                break;
            }
            self.file.write_all(&buffer[..count]).with_context(|| {
                format!(
                    "--stdin replay: the spool in {}",
                    safe_fs::shown_temp_dir(&self.dir)
                )
            })?;
            self.length += count as u64;
        }
        Ok(true)
    }

    /// Whether the spool holds the whole input (its end was read).
    pub(super) fn is_whole(&self) -> bool {
        self.at_eof
    }

    /// The spool's file and how much of it holds the input.
    pub(super) fn whole(&self) -> (&File, u64) {
        (&self.file, self.length)
    }
}

/// Write all of `bytes` to the non-blocking pipe; false when the child
/// closed its end (EPIPE: it is done with its input, not an error) or the
/// attempt was cancelled.
pub(super) fn send(pipe: &OwnedFd, mut bytes: &[u8], cancel: BorrowedFd<'_>) -> bool {
    while !bytes.is_empty() {
        match crate::sys::fd::write(pipe.as_fd(), bytes) {
            Ok(count) => bytes = &bytes[count..],
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                if !wait_writable(pipe.as_fd(), cancel) {
                    return false;
                }
            }
            Err(_) => return false,
        }
    }
    true
}
