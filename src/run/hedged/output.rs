//! What reaches retry's own output from a decided group of copies: the
//! deciding copy's stdout (to retry's stdout, or into the held file of
//! `-o` and `--buffer-stdout`), each hedge's held stderr, marked, and the
//! other copies' reports; and what a copy's spools could not take. Read
//! from the spools a chunk at a time, so memory stays bounded whatever the
//! copies wrote (a hedge's stderr without a line end among them), and
//! written so that a reader that takes nothing holds retry neither past a
//! signal nor past `--max-time` (as the attempts' pumps and the delivery
//! of a held stdout are written).

use std::fs::File;
use std::io::{self, Write};
use std::time::Instant;

use anyhow::{Context, Result};

use super::copy::Copy;
use crate::contract::warning;
use crate::policy::classify::Class;
use crate::policy::hedging::CopyState;
use crate::report::Reporter;
use crate::run::Run;
use crate::run::deliver::HeldStdout;
use crate::run::error_text;
use crate::run::one_attempt::Judged;
use crate::run::wiring::{Outcome, Stream};
use crate::sys::fd::Outlet;

impl Run<'_> {
    /// The group is decided by copy `decided`: its stdout is delivered, the
    /// hedges' stderr said (marked), the other copies reported; the decided
    /// copy goes back to the schedule as the attempt.
    pub(super) fn settle_copies(
        &mut self,
        copies: Vec<Copy>,
        decided: usize,
        attempt: u64,
        reporter: &mut Reporter,
    ) -> Result<Judged> {
        // Neither a signal nor --max-time waits for a reader that takes
        // nothing.
        let deadline = self.setup.limits.deadline;
        let give_up = || {
            crate::process::signals::terminating_arrived()
                || deadline.is_some_and(|d| Instant::now() >= d)
        };
        let mut chosen = None;
        for (index, copy) in copies.into_iter().enumerate() {
            self.state.failures.hedges += u64::from(copy.number > 0);
            self.state.failures.superseded += u64::from(copy.state == CopyState::Superseded);
            if let Some(stderr) = &copy.stderr {
                say_marked(stderr, copy.number, &give_up);
            }
            let Some(mut judged) = copy.judged else {
                continue;
            };
            if index == decided {
                let delivered = match copy.lost_stdout {
                    Some(lost) => Delivered::Lost(lost),
                    None => deliver(&copy.stdout, self.files.held.as_ref(), &give_up),
                };
                match delivered {
                    Delivered::Whole => {}
                    // As a pump does: the reader went away, no retry helps.
                    Delivered::ReaderGone => judged.outcome.downstream_closed = true,
                    Delivered::Lost(what) => {
                        reporter.warning(
                            warning::OUTPUT,
                            &format!("{what}; the attempt's output is lost (the command itself saw no error)"),
                        );
                        self.state.lost.stdout_lost(what);
                    }
                }
                chosen = Some(judged);
                continue;
            }
            let superseded = copy.state == CopyState::Superseded;
            // No answer the backend gave counts (the adaptive throttle's
            // accepts): ended before one, or refused.
            let unanswered = superseded
                || matches!(
                    copy.state,
                    CopyState::AskedToWait | CopyState::Ended(Class::Transient | Class::Throttled)
                );
            self.state.failures.side_copies_unanswered += u64::from(unanswered);
            reporter.side_copy(&crate::run::schedule::copy_record(
                attempt,
                self.setup.config.attempts,
                &judged,
                copy.number,
                superseded,
            ));
        }
        chosen.context("no copy of the hedged attempt ended")
    }
}

/// What a copy's output spools could not take (a full `$TMPDIR`): a
/// hedge's stderr is said now, its stdout kept with the copy (it
/// matters if the copy decides the attempt); the rest of `outcome`'s
/// losses are the attempt's, as without hedging.
pub(super) fn spooled_losses(
    copy: &mut Copy,
    mut outcome: Outcome,
    reporter: &mut Reporter,
) -> Outcome {
    let dir = crate::safe_fs::shown_temp_dir(&crate::safe_fs::temp_dir());
    let (spooled, rest) = outcome
        .lost
        .into_iter()
        .partition(|lost| lost.stream == Stream::Stdout || copy.number > 0);
    outcome.lost = rest;
    for lost in spooled {
        let what = format!(
            "holding the {} of copy {} in a spool in {dir}: {}",
            if lost.stream == Stream::Stdout {
                "stdout"
            } else {
                "stderr"
            },
            copy.number,
            error_text(&lost.error)
        );
        if lost.stream == Stream::Stdout {
            copy.lost_stdout.get_or_insert(what);
        } else {
            reporter.warning(
                warning::OUTPUT,
                &format!("{what}; the rest of it is lost (the command itself saw no error)"),
            );
        }
    }
    outcome
}

/// How much of a spool is read at once.
const CHUNK: usize = 64 * 1024;

/// What became of the deciding copy's stdout.
pub(super) enum Delivered {
    /// All of it reached its place.
    Whole,
    /// The reader of retry's stdout went away (`| head -1`).
    ReaderGone,
    /// Not all of it reached its place: what went wrong, in words.
    Lost(String),
}

/// Give the whole of `spool` to `write`, a chunk at a time.
fn each_chunk(spool: &File, mut write: impl FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
    let mut buffer = vec![0u8; CHUNK];
    let mut offset = 0;
    loop {
        let count = match crate::sys::fs::read_at(spool, &mut buffer, offset) {
            Ok(0) => return Ok(()),
            Ok(count) => count,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        write(&buffer[..count])?;
        offset += count as u64;
    }
}

/// The deciding copy's stdout, from its spool: into the held file
/// (`-o`, `--buffer-stdout`), else to retry's stdout, given up on when
/// `give_up` says so while its reader takes nothing.
pub(super) fn deliver(
    spool: &File,
    held: Option<&HeldStdout>,
    give_up: &dyn Fn() -> bool,
) -> Delivered {
    if let Some(held) = held {
        let copied = held
            .file()
            .try_clone()
            .and_then(|mut file| each_chunk(spool, |bytes| file.write_all(bytes)));
        return match copied {
            Ok(()) => Delivered::Whole,
            Err(err) => Delivered::Lost(format!(
                "holding the command's stdout in {}: {}",
                held.describe(),
                error_text(&err)
            )),
        };
    }
    let mut stdout = Outlet::new(1);
    match each_chunk(spool, |bytes| stdout.write_all(bytes, give_up)) {
        Ok(()) => Delivered::Whole,
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => Delivered::ReaderGone,
        Err(err) => Delivered::Lost(format!(
            "writing the command's stdout: {}",
            error_text(&err)
        )),
    }
}

/// A hedge's held stderr on retry's stderr, each line marked `[hedge N]`
/// (a last line without its end gets one), until `give_up` says so while
/// its reader takes nothing. Nothing of it is worth failing the run for.
pub(super) fn say_marked(spool: &File, number: u64, give_up: &dyn Fn() -> bool) {
    let mark = format!("[hedge {number}] ");
    let mut stderr = Outlet::new(2);
    let mut at_line_start = true;
    let mut said = Vec::with_capacity(CHUNK + mark.len());
    let mut marked = |bytes: &[u8]| {
        said.clear();
        for line in bytes.split_inclusive(|&b| b == b'\n') {
            if at_line_start {
                said.extend_from_slice(mark.as_bytes());
            }
            said.extend_from_slice(line);
            at_line_start = line.ends_with(b"\n");
        }
        stderr.write_all(&said, give_up)
    };
    if each_chunk(spool, &mut marked).is_ok() && !at_line_start {
        let _ = stderr.write_all(b"\n", give_up);
    }
}
