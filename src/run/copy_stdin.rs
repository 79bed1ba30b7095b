//! What each copy of a hedged attempt reads: the same whole input, or
//! nothing. Copies run at once, so one stream cannot be shared (each would
//! get part of it, measured: two readers of one pipe each got a part): a
//! replayed input is read to its end before the first copy starts, and each
//! copy is fed the spool through a pipe of its own. A terminal or a pipe
//! without `--stdin replay` is refused before anything runs.

use std::fs::File;
use std::time::Duration;

use anyhow::{Context, Result};

use super::stdin::StdinSource;
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

/// The whole spooled input, to write into one copy's pipe.
pub(super) struct Feed {
    spool: File,
    length: u64,
    pipe: OwnedFd,
}

impl StdinSource {
    /// Why copies of an attempt could not share this input, if so: a
    /// terminal (keystrokes cannot be shared), a pipe or a regular file
    /// read as it is (one offset for all copies).
    pub(super) fn unshareable(&self) -> Option<&'static str> {
        match self {
            StdinSource::Null | StdinSource::Replay(_) => None,
            StdinSource::Inherit => {
                let fd = own_fd(0);
                if std::io::IsTerminal::is_terminal(&fd) {
                    return Some("stdin is a terminal, which copies cannot share");
                }
                match crate::sys::fd::kind(fd) {
                    Some(HandleKind::Regular | HandleKind::Pipe) => {
                        Some("stdin would be read by every copy at once, each getting a part of it")
                    }
                    Some(HandleKind::Other) | None => None,
                }
            }
            // A pipe whose writer is gone without a word (a harness that
            // gave an empty stdin) holds nothing to share: looked at for a
            // moment, as its writer may close it just after starting us.
            StdinSource::SharedPipe
                if crate::sys::fd::pipe_spent_within(own_fd(0), SPENT_WITHIN) =>
            {
                None
            }
            StdinSource::SharedPipe | StdinSource::Rewind { .. } => {
                Some("stdin would be read by every copy at once, each getting a part of it")
            }
        }
    }

    /// Before the first copy: a replayed input is read to its end into the
    /// spool, so that every copy can be given all of it. False when
    /// `cancel` (a signal) cut it short: the copies then start with what
    /// was read, and the signal ends them and the run.
    pub(super) fn read_whole(&mut self, cancel: BorrowedFd<'_>) -> Result<bool> {
        match self {
            StdinSource::Replay(spool) => spool.read_to_end(cancel),
            _ => Ok(true),
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
                let (reader, writer) = crate::sys::fd::pipe().context("creating the stdin pipe")?;
                crate::sys::fd::set_nonblocking(writer.as_fd())?;
                let (spool, length) = spool.whole();
                CopyStdin {
                    io: ChildIo::Fd(reader),
                    feed: Some(Feed {
                        spool: spool.try_clone().context("sharing the stdin spool")?,
                        length,
                        pipe: writer,
                    }),
                }
            }
            _ => CopyStdin {
                io: ChildIo::Inherit,
                feed: None,
            },
        })
    }
}

impl Feed {
    /// Write the whole spool into the copy's pipe, then close it (the
    /// copy's end of file); stop early when the copy closes its end or
    /// `cancel` fires.
    pub(super) fn run(self, cancel: BorrowedFd<'_>) -> Result<()> {
        let mut buffer = vec![0u8; 64 * 1024];
        let mut offset = 0;
        while offset < self.length {
            let want = buffer.len().min((self.length - offset) as usize);
            let count = crate::sys::fs::read_at(&self.spool, &mut buffer[..want], offset)
                .context("reading the stdin spool")?;
            if count == 0 || !super::stdin::send(&self.pipe, &buffer[..count], cancel) {
                break;
            }
            offset += count as u64;
        }
        Ok(())
    }
}
