//! What each copy of a hedged attempt reads: the same whole input, or
//! nothing. Copies run at once, so one stream cannot be shared (each would
//! get part of it, measured: two readers of one pipe each got a part): a
//! replayed input is read to its end before the first copy starts, and each
//! copy is fed the spool through a pipe of its own. A terminal or a pipe
//! without `--stdin replay` is refused before anything runs.

use std::fs::File;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::fs::FileExt;

use anyhow::{Context, Result};
use rustix::fs::OFlags;

use super::stdin::StdinSource;
use crate::process::ChildIo;

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
            StdinSource::Inherit if rustix::termios::isatty(crate::sys::fd::own_fd(0)) => {
                Some("stdin is a terminal, which copies cannot share")
            }
            StdinSource::Inherit => {
                let fd = crate::sys::fd::own_fd(0);
                let kind = rustix::fs::fstat(fd)
                    .map(|stat| rustix::fs::FileType::from_raw_mode(stat.st_mode));
                match kind {
                    Ok(rustix::fs::FileType::CharacterDevice) | Err(_) => None,
                    Ok(_) => {
                        Some("stdin would be read by every copy at once, each getting a part of it")
                    }
                }
            }
            // A pipe whose writer is gone without a word (a harness that
            // gave an empty stdin) holds nothing to share: looked at for a
            // moment, as its writer may close it just after starting us.
            StdinSource::SharedPipe if spent_soon(crate::sys::fd::own_fd(0)) => None,
            StdinSource::SharedPipe | StdinSource::Rewind { .. } => {
                Some("stdin would be read by every copy at once, each getting a part of it")
            }
        }
    }

    /// Before the first copy: a replayed input is read to its end into the
    /// spool, so that every copy can be given all of it.
    pub(super) fn read_whole(&mut self) -> Result<()> {
        if let StdinSource::Replay(spool) = self {
            spool.read_to_end()?;
        }
        Ok(())
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
                let flags = rustix::fs::fcntl_getfl(&writer)?;
                rustix::fs::fcntl_setfl(&writer, flags | OFlags::NONBLOCK)?;
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
            let count = self
                .spool
                .read_at(&mut buffer[..want], offset)
                .context("reading the stdin spool")?;
            if count == 0 || !super::stdin::send(&self.pipe, &buffer[..count], cancel) {
                break;
            }
            offset += count as u64;
        }
        Ok(())
    }
}

/// Whether the pipe at `fd` ends (its writer gone) without a byte within a
/// quarter of a second.
fn spent_soon(fd: BorrowedFd<'_>) -> bool {
    let until = std::time::Instant::now() + std::time::Duration::from_millis(250);
    loop {
        let mut watch = [crate::sys::wait::Watch::new(
            fd,
            rustix::event::PollFlags::IN,
        )];
        let left = until.saturating_duration_since(std::time::Instant::now());
        match crate::sys::wait::wait_for(&mut watch, left) {
            Ok(_) => {
                let ready = watch[0].ready();
                if ready.contains(rustix::event::PollFlags::IN) {
                    return false;
                }
                if ready.contains(rustix::event::PollFlags::HUP) {
                    return true;
                }
                if left.is_zero() {
                    return false;
                }
            }
            Err(_) => return false,
        }
    }
}
