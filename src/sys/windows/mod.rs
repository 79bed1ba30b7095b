//! Win32 pieces the Windows twins of `sys`'s modules share: a Job Object
//! (what an attempt runs in), a process's main thread resumed, an event
//! that wakes waiters. Every `unsafe` call of Windows' lives under
//! `sys/windows/`.
//!
//! Why Job Objects: Windows has no process groups that a signal reaches;
//! a job holds every process the attempt starts (a child created in it
//! cannot leave it unless the job allows a breakaway, which retry's do
//! not), `TerminateJobObject` ends them all at once, and
//! `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE` ends them when the last handle to
//! the job closes, so retry's own death (however it dies) ends the attempt
//! too: no watchdog process is needed. Cargo and nextest use them alike.

use std::io;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};

use windows_sys::Win32::Foundation::{HANDLE, WAIT_OBJECT_0};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JobObjectBasicAccountingInformation, JobObjectExtendedLimitInformation,
    QueryInformationJobObject, SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::Threading::{
    CreateEventW, OpenThread, ResumeThread, SetEvent, THREAD_SUSPEND_RESUME, WaitForSingleObject,
};

/// A handle from a call that returns null on failure, owned.
fn owned(handle: HANDLE) -> io::Result<OwnedHandle> {
    if handle.is_null() || handle == windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the call just returned this handle, valid and ours alone.
    Ok(unsafe { OwnedHandle::from_raw_handle(handle) })
}

/// A BOOL's failure as the thread's last error.
fn checked(ok: windows_sys::core::BOOL) -> io::Result<()> {
    if ok == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// A Job Object whose processes all end when its last handle closes.
pub(crate) struct Job {
    handle: OwnedHandle,
}

impl Job {
    /// A new, unnamed job with `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`.
    pub(crate) fn new() -> io::Result<Job> {
        // SAFETY: no security attributes, no name: a new job, ours.
        let handle = owned(unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) })?;
        let job = Job { handle };
        job.set_kill_on_close(true)?;
        Ok(job)
    }

    fn raw(&self) -> HANDLE {
        self.handle.as_raw_handle()
    }

    /// Turn the ending of every process on the job's close on or off (off:
    /// what a successful attempt started in the background runs on, as on
    /// Unix).
    pub(crate) fn set_kill_on_close(&self, on: bool) -> io::Result<()> {
        // SAFETY: a plain-data structure, all zeros is a valid value.
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        if on {
            limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        }
        // SAFETY: the job handle is ours and open; the structure is the one
        // this information class takes, with its size.
        checked(unsafe {
            SetInformationJobObject(
                self.raw(),
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast(),
                size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        })
    }

    /// Put `process` (a handle with `PROCESS_SET_QUOTA | PROCESS_TERMINATE`
    /// rights: std's child handle has all rights) in the job.
    pub(crate) fn assign(&self, process: HANDLE) -> io::Result<()> {
        // SAFETY: both handles are open for the length of the call.
        checked(unsafe { AssignProcessToJobObject(self.raw(), process) })
    }

    /// End every process in the job, each with exit code `code`; false if
    /// the system refused.
    pub(crate) fn terminate(&self, code: u32) -> bool {
        // SAFETY: the job handle is ours and open.
        unsafe { TerminateJobObject(self.raw(), code) != 0 }
    }

    /// How many processes of the job are running.
    pub(crate) fn active_processes(&self) -> u32 {
        // SAFETY: a plain-data structure, all zeros is a valid value.
        let mut info: JOBOBJECT_BASIC_ACCOUNTING_INFORMATION = unsafe { std::mem::zeroed() };
        // SAFETY: the job handle is ours; the buffer is the structure this
        // class fills, with its size.
        let ok = unsafe {
            QueryInformationJobObject(
                self.raw(),
                JobObjectBasicAccountingInformation,
                (&raw mut info).cast(),
                size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            )
        };
        if ok == 0 { 0 } else { info.ActiveProcesses }
    }
}

/// Resume every thread of process `pid` (a process created suspended has
/// one). std's `Child` gives no handle to the main thread, so its threads
/// are found in a snapshot of the system's.
pub(crate) fn resume_threads(pid: u32) -> io::Result<()> {
    // SAFETY: a snapshot of every thread; the handle is ours.
    let snapshot = owned(unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) })?;
    // SAFETY: a plain-data structure, all zeros is valid; dwSize set below.
    let mut entry: THREADENTRY32 = unsafe { std::mem::zeroed() };
    entry.dwSize = size_of::<THREADENTRY32>() as u32;
    let mut resumed = 0;
    // SAFETY: the snapshot is open; `entry` has its size set.
    let mut more = unsafe { Thread32First(snapshot.as_raw_handle(), &raw mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: a handle to one thread, closed when `thread` drops.
            let thread =
                owned(unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) })?;
            // SAFETY: the thread handle is open with the right to resume.
            if unsafe { ResumeThread(thread.as_raw_handle()) } == u32::MAX {
                return Err(io::Error::last_os_error());
            }
            resumed += 1;
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snapshot.as_raw_handle(), &raw mut entry) } != 0;
    }
    if resumed == 0 {
        return Err(io::Error::other("the new process has no thread to resume"));
    }
    Ok(())
}

/// A manual-reset event: set once, it stays set.
pub(crate) fn new_event() -> io::Result<OwnedHandle> {
    // SAFETY: an unnamed event, manual reset, not set: ours.
    owned(unsafe { CreateEventW(std::ptr::null(), 1, 0, std::ptr::null()) })
}

/// Set `event` (wake every waiter).
pub(crate) fn set_event(event: HANDLE) {
    // SAFETY: a handle to an event, open for the call.
    unsafe { SetEvent(event) };
}

/// Whether `handle` is signalled, waiting at most `ms` milliseconds.
pub(crate) fn signalled(handle: HANDLE, ms: u32) -> bool {
    // SAFETY: the handle is open for the call; waiting changes nothing.
    unsafe { WaitForSingleObject(handle, ms) == WAIT_OBJECT_0 }
}

/// Reset `event` (a manual-reset event) to not set.
pub(crate) fn reset_event(event: HANDLE) {
    // SAFETY: a handle to an event, open for the call.
    unsafe { windows_sys::Win32::System::Threading::ResetEvent(event) };
}
