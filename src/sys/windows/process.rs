//! Windows' `sys::process`: waiting for a process or an event, a console
//! program's Ctrl-Break, and what Unix's callers ask of the process table
//! (here the Job Object names an attempt's processes: no table is read).

use std::os::windows::io::AsRawHandle;
use std::time::Instant;

use windows_sys::Win32::Foundation::{HANDLE, WAIT_OBJECT_0, WAIT_TIMEOUT};
use windows_sys::Win32::System::Console::{CTRL_BREAK_EVENT, GenerateConsoleCtrlEvent};
use windows_sys::Win32::System::Threading::WaitForMultipleObjects;

use super::fd::BorrowedFd;

/// The longest one wait is asked for (a day); a longer one is several.
const LONGEST_SLICE_MS: u32 = 24 * 60 * 60 * 1000;

/// Wait until one of `handles` is signalled (its index) or `until` passes
/// (`None`). At most 64 handles, as `WaitForMultipleObjects` takes.
pub(crate) fn wait_any(handles: &[BorrowedFd<'_>], until: Option<Instant>) -> Option<usize> {
    let handles: Vec<HANDLE> = handles.iter().map(AsRawHandle::as_raw_handle).collect();
    loop {
        let ms = until.map_or(LONGEST_SLICE_MS, |until| {
            let left = until.saturating_duration_since(Instant::now());
            // Rounded up, so that a wait never ends before `until`.
            let ms = left.as_millis() + u128::from(left.subsec_nanos() % 1_000_000 != 0);
            u32::try_from(ms)
                .unwrap_or(LONGEST_SLICE_MS)
                .min(LONGEST_SLICE_MS)
        });
        // SAFETY: every handle is open for the call (the caller holds them);
        // the count is the slice's length.
        let woke = unsafe { WaitForMultipleObjects(handles.len() as u32, handles.as_ptr(), 0, ms) };
        match woke {
            WAIT_TIMEOUT => {
                if until.is_some_and(|until| Instant::now() >= until) {
                    return None;
                }
            }
            index if (WAIT_OBJECT_0..WAIT_OBJECT_0 + handles.len() as u32).contains(&index) => {
                return Some((index - WAIT_OBJECT_0) as usize);
            }
            // WAIT_FAILED (a handle closed under us): nothing to wait for.
            _ => return None,
        }
    }
}

/// Send a Ctrl-Break to process group `group` (a process started with
/// `CREATE_NEW_PROCESS_GROUP`, whose id is the group's), sharing retry's
/// console. False where there is none to share, or the system refused
/// (wine does not deliver it: docs/platforms.md).
pub(crate) fn ctrl_break(group: u32) -> bool {
    // SAFETY: no memory is passed; a group that is gone is refused.
    unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, group) != 0 }
}

/// Why `--foreground` cannot be had on Windows.
pub(crate) const NO_FOREGROUND: Option<&str> = Some(
    "not available on Windows: a console has no foreground process group to keep the command in; each attempt runs in a Job Object and a console process group of its own",
);

/// Whether retry's stdin is a terminal whose foreground is retry's group:
/// Windows' consoles have no foreground group (never, here).
pub(crate) fn in_terminals_foreground(_fd: BorrowedFd<'_>) -> bool {
    false
}

/// Why the process table cannot be read: Windows reads none (the Job
/// Object names the attempt's processes).
pub(crate) const UNREADABLE_TABLE: &str = "Windows names an attempt's processes by its job";
