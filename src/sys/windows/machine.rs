//! Windows' `sys::machine`: where a process runs, so that a pid another
//! run wrote down is judged only where it names the same process. Windows
//! has no boot id retry reads and no PID namespaces: a pid is judged by the
//! host name and the process's creation time.

use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};

use windows_sys::Win32::Foundation::FILETIME;
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, GetExitCodeProcess, GetProcessTimes, OpenProcess,
    PROCESS_QUERY_LIMITED_INFORMATION,
};

/// This boot of this machine: not read on Windows.
pub(crate) fn boot_id() -> Option<String> {
    None
}

/// This process's PID namespace: Windows has none.
pub(crate) fn pid_namespace() -> Option<u64> {
    None
}

/// The machine's name, as the circuit's probe records it.
pub(crate) fn host_name() -> String {
    std::env::var("COMPUTERNAME").unwrap_or_default()
}

/// When `process` was created, in 100 ns since 1601; `None` if it cannot
/// be asked.
fn created(process: windows_sys::Win32::Foundation::HANDLE) -> Option<u64> {
    let zero = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
    // SAFETY: the handle is open for the call; four FILETIMEs to fill.
    let ok = unsafe {
        GetProcessTimes(
            process,
            &raw mut created,
            &raw mut exited,
            &raw mut kernel,
            &raw mut user,
        )
    };
    (ok != 0).then(|| u64::from(created.dwHighDateTime) << 32 | u64::from(created.dwLowDateTime))
}

/// This process's creation time, as [`look_for`] reads another's.
pub(crate) fn own_start() -> Option<u64> {
    // SAFETY: the pseudo handle of this process needs no closing.
    created(unsafe { GetCurrentProcess() })
}

/// What this process can see of process `pid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Seen {
    /// No such process (or it has ended).
    Gone,
    /// A process by that number; its creation time where it can be read.
    Running { start: Option<u64> },
}

/// Look for process `pid`: one that cannot be opened for lack of rights
/// (another user's) is there.
pub(crate) fn look_for(pid: u32) -> Seen {
    if pid == 0 {
        return Seen::Gone;
    }
    // SAFETY: a handle to read a process's times and exit code, or null.
    let raw = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if raw.is_null() {
        let denied = std::io::Error::last_os_error().kind() == std::io::ErrorKind::PermissionDenied;
        return if denied {
            Seen::Running { start: None }
        } else {
            Seen::Gone
        };
    }
    // SAFETY: OpenProcess just returned it: ours to close.
    let process = unsafe { OwnedHandle::from_raw_handle(raw) };
    let mut code = 0u32;
    // SAFETY: the handle is open with the right to read the exit code.
    let ok = unsafe { GetExitCodeProcess(process.as_raw_handle(), &raw mut code) };
    // STILL_ACTIVE (259) while it runs.
    if ok != 0 && code != 259 {
        return Seen::Gone;
    }
    Seen::Running {
        start: created(process.as_raw_handle()),
    }
}

/// Look for a process of another PID namespace: none on Windows.
pub(crate) fn look_into(_namespace: u64, _pid: u32) -> Option<Seen> {
    None
}
