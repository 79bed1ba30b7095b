//! What the run's watchdog (`sys::watchdog`) guards while an attempt runs,
//! and how it ends that once retry is gone, however retry ended (SIGKILL
//! included): an attempt in a group of its own by its group, SIGKILL to
//! every member, what the command started in the background included; an
//! attempt in retry's group by the command and what [`tree::abandoned`]
//! finds of it (below it, and what it orphaned into retry's group).
//!
//! The parent-death signal (Linux, FreeBSD) and the keeper (Linux, in
//! retry's group) stay: they act at once and need no watchdog; the
//! watchdog is what also works on macOS, and what reaches a command's
//! background processes in the own-group mode.

use std::sync::OnceLock;
use std::time::Duration;

use rustix::process::{Pid, Signal};

use super::tree::{self, Member, SharedAttempt};
use crate::sys::watchdog::{Guarded, Watchdog};

static WATCHDOG: OnceLock<Watchdog> = OnceLock::new();

/// Start the run's watchdog. Call once, while retry has one thread. A
/// watchdog that cannot be had (no process to spare) is said by the
/// caller: the run goes on without it.
pub(crate) fn start() -> std::io::Result<()> {
    if WATCHDOG.get().is_none() {
        let watchdog = Watchdog::start(end_what_was_guarded)?;
        let _ = WATCHDOG.set(watchdog);
    }
    Ok(())
}

/// Guard an attempt that leads process group `group`.
pub(super) fn guard_group(group: Pid) {
    if let Some(watchdog) = WATCHDOG.get() {
        watchdog.guard(Guarded::Group {
            group: group.as_raw_nonzero().get(),
        });
    }
}

/// Guard an attempt in retry's group: its command and what was there
/// before it (not its).
pub(super) fn guard_shared(child: Pid, start: u64, group: i32, before: &[Member]) {
    let Some(watchdog) = WATCHDOG.get() else {
        return;
    };
    for member in before {
        watchdog.guard(Guarded::Spare {
            pid: member.pid,
            start: member.start,
        });
    }
    watchdog.guard(Guarded::Shared {
        child: child.as_raw_nonzero().get(),
        start,
        group,
    });
}

/// The attempt is over and ended: nothing to guard.
pub(crate) fn release() {
    if let Some(watchdog) = WATCHDOG.get() {
        watchdog.release();
    }
}

/// In the watchdog, once retry is gone: SIGKILL to what it still guarded.
/// Looked at again until nothing is left (a process that forks while it
/// is looked for), a few times at most. Not `whole` (records were lost, a
/// process to spare maybe among them): an attempt in retry's group is
/// ended by its command and what is below it only, with no search of
/// retry's group that could take a process that was there before.
fn end_what_was_guarded(guarded: &[Guarded], whole: bool) {
    let spared: Vec<Member> = guarded
        .iter()
        .filter_map(|what| match *what {
            Guarded::Spare { pid, start } => Some(Member { pid, start }),
            _ => None,
        })
        .collect();
    for _ in 0..20 {
        let mut left = false;
        for what in guarded {
            match *what {
                Guarded::Group { group } => {
                    if let Some(group) = Pid::from_raw(group) {
                        left |= rustix::process::kill_process_group(group, Signal::KILL).is_ok();
                    }
                }
                Guarded::Shared {
                    child,
                    start,
                    group,
                } => {
                    let attempt = SharedAttempt {
                        child: Some(child),
                        start,
                        group,
                        adopter: None,
                        before: &spared,
                    };
                    let found = if whole {
                        tree::abandoned(&attempt)
                    } else {
                        tree::command_and_below(&attempt)
                    };
                    for member in found {
                        tree::signal(member, Signal::KILL);
                        left = true;
                    }
                }
                Guarded::Spare { .. } => {}
            }
        }
        if !left {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
