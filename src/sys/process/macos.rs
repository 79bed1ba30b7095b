//! macOS's process table: libproc. Only the calls are here; what their
//! answers mean is `apple_records.rs`'s, tested on every system.

use super::ProcInfo;
use super::apple_records::{BsdInfo, from_bsdinfo};

/// `proc_pidinfo`'s argument for `PROC_PIDTBSDINFO` that asks for zombies
/// too. Without it the kernel looks the pid up among live processes only
/// (`proc_find`), so a process that ended and was not reaped yet (a dead
/// probe whose parent has not waited) was not found at all, while
/// `kill(pid, 0)` still succeeds on it: it read as alive. With it, xnu
/// looks among zombies next (`proc_find_zombref`; `bsd/kern/proc_info.c`,
/// `proc_pidinfo`: "Check if we need to look for zombies", `if (arg)
/// findzomb = 1`), and the record says `SZOMB`. Chosen over
/// `PROC_PIDTASKINFO` (which fails for a zombie, and for other reasons too)
/// and `sysctl kern.proc.pid` (a second, larger record format): one call,
/// the record retry reads anyway, and an answer rather than a failure.
const FIND_ZOMBIES: u64 = 1;

/// Process `pid`, zombies included, if it exists and we may look at it.
pub(crate) fn process_info(pid: i32) -> Option<ProcInfo> {
    let mut info = std::mem::MaybeUninit::<libc::proc_bsdinfo>::zeroed();
    let size = size_of::<libc::proc_bsdinfo>() as libc::c_int;
    // SAFETY: proc_pidinfo writes at most `size` bytes into `info` and
    // returns how many it wrote; the struct is read only when it is whole.
    let written = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTBSDINFO,
            FIND_ZOMBIES,
            info.as_mut_ptr().cast(),
            size,
        )
    };
    if written != size {
        return None;
    }
    // SAFETY: fully written above.
    let info = unsafe { info.assume_init() };
    from_bsdinfo(&BsdInfo {
        flags: info.pbi_flags,
        status: info.pbi_status,
        pid: info.pbi_pid,
        ppid: info.pbi_ppid,
        pgid: info.pbi_pgid,
        start_sec: info.pbi_start_tvsec,
        start_usec: info.pbi_start_tvusec,
    })
}

/// Every process we may look at (`proc_listallpids` lists zombies too).
pub(crate) fn process_table() -> Option<Vec<ProcInfo>> {
    // SAFETY: a null buffer asks only for the number of processes.
    let count = unsafe { libc::proc_listallpids(std::ptr::null_mut(), 0) };
    let room = usize::try_from(count).ok()? + 64;
    let mut pids = vec![0 as libc::pid_t; room];
    let bytes = libc::c_int::try_from(room * size_of::<libc::pid_t>()).ok()?;
    // SAFETY: the buffer holds `bytes` bytes; the call returns how many
    // pids it wrote into it.
    let found = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast(), bytes) };
    pids.truncate(usize::try_from(found).ok()?.min(room));
    Some(pids.into_iter().filter_map(process_info).collect())
}

/// Why the table could not be read, for a warning.
pub(crate) const UNREADABLE: &str = "libproc refused to list the processes";
