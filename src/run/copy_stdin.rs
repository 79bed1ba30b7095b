//! What each copy of a hedged attempt reads: the same whole input, or
//! nothing. Copies run at once, so one stream cannot be shared (each would
//! get part of it, measured: two readers of one pipe each got a part): a
//! replayed input is read to its end before the first copy starts (cut
//! short by a signal to retry or `--max-time`: then no attempt starts),
//! and each copy is fed the spool through a pipe of its own; a regular
//! file under `--stdin replay` is fed to each from where retry found it,
//! read apart (`pread`), so the copies share no offset. A terminal, and a
//! pipe or file without `--stdin replay`, are refused before anything
//! runs; a pipe whose writer left it empty holds nothing to share.

use std::fs::File;
use std::time::Duration;

use anyhow::{Context, Result};

use super::stdin::StdinSource;
use crate::cli::StdinMode;
use crate::process::ChildIo;
use crate::sys::fd::{AsFd, BorrowedFd, HandleKind, OwnedFd, own_fd};

/// How long a pipe on stdin is looked at for its end before hedging is
/// refused (a harness that gives an empty stdin may close it just after
/// starting us).
const SPENT_WITHIN: Duration = Duration::from_millis(250);

/// One copy's stdin: what the child gets, and the spool to feed it, if
/// any (`Feed::run` on a thread of the copy's).
pub(super) struct CopyStdin {
    pub(super) io: ChildIo,
    pub(super) feed: Option<Feed>,
}

/// The whole input, to write into one copy's pipe: the replay's spool,
/// or the file on stdin from retry's offset to its end.
pub(super) struct Feed {
    spool: File,
    start: u64,
    length: u64,
    pipe: OwnedFd,
}

/// Why copies cannot be given stdin, and what to do instead.
const TERMINAL: &str = "stdin is a terminal, which copies cannot share: give --stdin null (what the default, --stdin auto, gives copies), or the input from a file or pipe with --stdin replay";
const SHARED: &str = "stdin would be read by every copy at once, each getting a part of it: give --stdin replay (each copy gets the whole input) or --stdin null";

impl StdinSource {
    /// Why copies of an attempt could not share this input, if so, and
    /// what to give instead: a terminal (keystrokes cannot be shared), a
    /// pipe, or a regular file without `--stdin replay` (one offset for
    /// all copies). `mode`: the `--stdin` given. A terminal under the
    /// default `auto` is no refusal: the copies read nothing from it (as
    /// `--stdin null`), so that a command typed at a prompt hedges.
    pub(super) fn unshareable(&self, mode: StdinMode) -> Option<&'static str> {
        let replay = mode == StdinMode::Replay;
        let fd = own_fd(0);
        let spent = || crate::sys::fd::pipe_spent_within(fd, SPENT_WITHIN);
        match self {
            StdinSource::Null | StdinSource::Replay(_) => None,
            StdinSource::Rewind { .. } if replay => None,
            StdinSource::Inherit if std::io::IsTerminal::is_terminal(&fd) => {
                (mode != StdinMode::Auto).then_some(TERMINAL)
            }
            StdinSource::Inherit => match crate::sys::fd::kind(fd) {
                Some(HandleKind::Other) | None => None,
                // A pipe found spent at the start (`true | retry ...`).
                Some(HandleKind::Pipe) if spent() => None,
                Some(HandleKind::Pipe | HandleKind::Regular) => Some(SHARED),
            },
            // A pipe whose writer is gone without a word (a harness that
            // gave an empty stdin) holds nothing to share: looked at for a
            // moment, as its writer may close it just after starting us.
            StdinSource::SharedPipe if spent() => None,
            StdinSource::SharedPipe | StdinSource::Rewind { .. } => Some(SHARED),
        }
    }

    /// Before the first copy: a replayed input is read to its end into the
    /// spool, so that every copy can be given all of it, unless `give_up`
    /// says so first. True when it was (or there is nothing to read).
    pub(super) fn read_whole(&mut self, give_up: &dyn Fn() -> bool) -> Result<bool> {
        match self {
            StdinSource::Replay(spool) => spool.read_to_end(give_up),
            _ => Ok(true),
        }
    }

    /// Whether each copy can be given the whole input now.
    pub(super) fn whole_for_copies(&self) -> bool {
        match self {
            StdinSource::Replay(spool) => spool.is_whole(),
            _ => true,
        }
    }

    /// One copy's stdin (after [`read_whole`](Self::read_whole)).
    pub(super) fn for_copy(&self) -> Result<CopyStdin> {
        Ok(match self {
            StdinSource::Null => CopyStdin {
                io: ChildIo::Null,
                feed: None,
            },
            StdinSource::Replay(spool) => {
                let (spool, length) = spool.whole();
                let spool = spool.try_clone().context("sharing the stdin spool")?;
                fed(spool, 0, length)?
            }
            // Read apart from where retry found it, to its end.
            StdinSource::Rewind { offset } => {
                let file = own_fd(0).try_clone_to_owned().context("sharing stdin")?;
                fed(File::from(file), *offset, u64::MAX)?
            }
            // A terminal under `--stdin auto`: keystrokes cannot be shared.
            StdinSource::Inherit if self.is_terminal() => CopyStdin {
                io: ChildIo::Null,
                feed: None,
            },
            _ => CopyStdin {
                io: ChildIo::Inherit,
                feed: None,
            },
        })
    }

    /// Whether copies would inherit a terminal.
    pub(super) fn is_terminal(&self) -> bool {
        matches!(self, StdinSource::Inherit) && std::io::IsTerminal::is_terminal(&own_fd(0))
    }
}

/// A copy's stdin fed `length` bytes of `spool` from `start` (or to its
/// end) through a pipe of its own.
fn fed(spool: File, start: u64, length: u64) -> Result<CopyStdin> {
    let (reader, writer) = crate::sys::fd::pipe().context("creating the stdin pipe")?;
    // Our end never blocks, so ending a copy cannot hang on one that
    // stopped reading.
    crate::sys::fd::set_nonblocking(writer.as_fd())?;
    Ok(CopyStdin {
        io: ChildIo::Fd(reader),
        feed: Some(Feed {
            spool,
            start,
            length,
            pipe: writer,
        }),
    })
}

impl Feed {
    /// Write the whole spool into the copy's pipe, then close it (the
    /// copy's end of file); stop early when the copy closes its end or
    /// `cancel` fires.
    pub(super) fn run(self, cancel: BorrowedFd<'_>) -> Result<()> {
        let mut buffer = vec![0u8; 64 * 1024];
        let mut offset = 0;
        while offset < self.length {
            let left = usize::try_from(self.length - offset).unwrap_or(usize::MAX);
            let want = buffer.len().min(left);
            let count =
                crate::sys::fs::read_at(&self.spool, &mut buffer[..want], self.start + offset)
                    .context("reading the stdin spool")?;
            if count == 0 || !super::stdin::send(&self.pipe, &buffer[..count], cancel) {
                break;
            }
            offset += count as u64;
        }
        Ok(())
    }
}
