//! Processes named by pid and start time: reading one, listing all of them,
//! signalling one only while it is still the process it was, adopting
//! orphans, and the parent-death signal.
//!
//! | | Linux | FreeBSD | macOS |
//! |---|---|---|---|
//! | one process, the table | `/proc/PID/stat` | `sysctl` `KERN_PROC` | `proc_pidinfo`, `proc_listallpids` |
//! | signal by pid + start | pidfd, then the check | the check, then `kill` | the check, then `kill` |
//! | adopt orphans | `PR_SET_CHILD_SUBREAPER` | `PROC_REAP_ACQUIRE` | none (launchd adopts them) |
//! | parent death | `PR_SET_PDEATHSIG` | `PROC_PDEATHSIG_CTL` | none |
//!
//! The portable build (`--cfg retry_posix`) keeps `/proc` on Linux for the
//! table (POSIX has no process listing) and takes the portable path for the
//! rest.

use rustix::process::{Pid, Signal};

/// One process: its pid, its parent's, and its start time (in units of the
/// system's own, only compared with another start time of the same system),
/// which tell it from a later process given the same pid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ProcInfo {
    pub(crate) pid: i32,
    pub(crate) parent: i32,
    /// Its process group.
    pub(crate) group: i32,
    pub(crate) start: u64,
    /// Ended, and not yet reaped by its parent.
    pub(crate) zombie: bool,
}

/// Whether process group `group` has a member that has not ended (zombies,
/// which only their parent can reap, do not count). `None` when the
/// process table cannot be read.
pub(crate) fn group_has_live_members(group: i32) -> Option<bool> {
    Some(
        process_table()?
            .iter()
            .any(|p| p.group == group && !p.zombie),
    )
}

/// Retry's own process group: 0 where it has no number (retry is the first
/// process of a PID namespace whose group lies outside it: `unshare -pf`).
/// (rustix's `getpgrp` asserts a number, and would panic there.)
pub(crate) fn own_group() -> i32 {
    // SAFETY: getpgrp has no arguments and cannot fail.
    unsafe { libc::getpgrp() }
}

/// Whether this build adopts what an attempt orphans ([`adopt_orphans`]).
pub(crate) const ADOPTS_ORPHANS: bool = cfg!(all(
    any(target_os = "linux", target_os = "freebsd"),
    not(retry_posix)
));

/// Process `pid`, if it exists and can be read.
#[cfg(target_os = "linux")]
pub(crate) fn process_info(pid: i32) -> Option<ProcInfo> {
    // Bytes: COMM, the program's name, need not be UTF-8.
    let bytes = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    // `PID (COMM) STATE PPID ...`: COMM may hold spaces and parentheses, so
    // the fields are counted from the last `)`. The start time is field 22.
    let rest = &bytes[bytes.iter().rposition(|&b| b == b')')? + 1..];
    let rest = std::str::from_utf8(rest).ok()?;
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    Some(ProcInfo {
        pid,
        parent: fields.get(1)?.parse().ok()?,
        group: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
        zombie: fields.first() == Some(&"Z"),
    })
}

/// Every process that can be read; `None` when the system will not list
/// them (no `/proc` mounted, or one of another PID namespace).
#[cfg(target_os = "linux")]
pub(crate) fn process_table() -> Option<Vec<ProcInfo>> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let table: Vec<ProcInfo> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .filter_map(process_info)
        .collect();
    // Our own process is always there, under our own pid: a table without
    // it is another PID namespace's `/proc` (where `/proc/self` names us by
    // another pid), or no `/proc` at all (a tmpfs over it).
    let us = rustix::process::getpid().as_raw_nonzero().get();
    (proc_is_ours() && table.iter().any(|p| p.pid == us)).then_some(table)
}

/// Whether `/proc` is the one of our PID namespace: `/proc/self` names us
/// by our own pid.
#[cfg(target_os = "linux")]
fn proc_is_ours() -> bool {
    let us = rustix::process::getpid().as_raw_nonzero().get();
    std::fs::read_link("/proc/self")
        .is_ok_and(|link| link.to_str() == Some(us.to_string().as_str()))
}

/// Whether the process table can be read, cheaply (our own entry, and on
/// Linux a `/proc` of our PID namespace).
pub(crate) fn table_readable() -> bool {
    let us = rustix::process::getpid().as_raw_nonzero().get();
    #[cfg(target_os = "linux")]
    if !proc_is_ours() {
        return false;
    }
    process_info(us).is_some()
}

#[cfg(target_os = "macos")]
pub(crate) fn process_info(pid: i32) -> Option<ProcInfo> {
    let mut info = std::mem::MaybeUninit::<libc::proc_bsdinfo>::zeroed();
    let size = size_of::<libc::proc_bsdinfo>() as libc::c_int;
    // SAFETY: proc_pidinfo writes at most `size` bytes into `info` and
    // returns how many it wrote; the struct is read only when it is whole.
    let written = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTBSDINFO,
            0,
            info.as_mut_ptr().cast(),
            size,
        )
    };
    if written != size {
        return None;
    }
    // SAFETY: fully written above.
    let info = unsafe { info.assume_init() };
    Some(ProcInfo {
        pid,
        parent: info.pbi_ppid as i32,
        group: info.pbi_pgid as i32,
        // SZOMB in xnu's bsd/sys/proc.h.
        zombie: info.pbi_status == 5,
        start: info.pbi_start_tvsec * 1_000_000 + info.pbi_start_tvusec,
    })
}

#[cfg(target_os = "macos")]
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

#[cfg(target_os = "freebsd")]
fn kinfo(name: &[libc::c_int]) -> Option<Vec<libc::kinfo_proc>> {
    let mut size: libc::size_t = 0;
    // SAFETY: a null buffer asks only for the size needed.
    let sized = unsafe {
        libc::sysctl(
            name.as_ptr(),
            name.len() as libc::c_uint,
            std::ptr::null_mut(),
            &raw mut size,
            std::ptr::null(),
            0,
        )
    };
    if sized != 0 {
        return None;
    }
    // Room for processes started meanwhile.
    let room = size / size_of::<libc::kinfo_proc>() + 64;
    let mut entries: Vec<libc::kinfo_proc> = Vec::with_capacity(room);
    let mut size = room * size_of::<libc::kinfo_proc>();
    // SAFETY: the buffer has room for `size` bytes; sysctl says in `size`
    // how many it wrote, whole entries only.
    let read = unsafe {
        libc::sysctl(
            name.as_ptr(),
            name.len() as libc::c_uint,
            entries.as_mut_ptr().cast(),
            &raw mut size,
            std::ptr::null(),
            0,
        )
    };
    if read != 0 {
        return None;
    }
    // SAFETY: `size` bytes of whole entries were written.
    unsafe { entries.set_len(size / size_of::<libc::kinfo_proc>()) };
    Some(entries)
}

#[cfg(target_os = "freebsd")]
fn from_kinfo(entry: &libc::kinfo_proc) -> ProcInfo {
    ProcInfo {
        pid: entry.ki_pid,
        parent: entry.ki_ppid,
        group: entry.ki_pgid,
        zombie: entry.ki_stat == libc::SZOMB,
        start: entry.ki_start.tv_sec as u64 * 1_000_000 + entry.ki_start.tv_usec as u64,
    }
}

#[cfg(target_os = "freebsd")]
pub(crate) fn process_info(pid: i32) -> Option<ProcInfo> {
    let name = [libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_PID, pid];
    kinfo(&name)?.first().map(from_kinfo)
}

#[cfg(target_os = "freebsd")]
pub(crate) fn process_table() -> Option<Vec<ProcInfo>> {
    let name = [libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_PROC, 0];
    Some(kinfo(&name)?.iter().map(from_kinfo).collect())
}

/// Send `signal` to `pid` only if it is still the process that started at
/// `start`.
pub(crate) fn signal_if_same(pid: i32, start: u64, signal: Signal) {
    let Some(raw) = Pid::from_raw(pid) else {
        return;
    };
    // Linux: the pidfd holds on to whichever process has the pid now; the
    // start time, read after, says whether that is still ours. No race.
    #[cfg(all(target_os = "linux", not(retry_posix)))]
    match rustix::process::pidfd_open(raw, rustix::process::PidfdFlags::empty()) {
        Ok(pidfd) => {
            if process_info(pid).is_some_and(|now| now.start == start) {
                let _ = rustix::process::pidfd_send_signal(&pidfd, signal);
            }
            return;
        }
        // Gone: nothing to signal.
        Err(rustix::io::Errno::SRCH) => return,
        // No pidfd (Linux before 5.3, a seccomp filter) or no descriptor
        // to spare: the way other systems take, below (the one the
        // portable build runs, so the tests exercise it).
        Err(_) => {}
    }
    signal_after_check(raw, start, signal);
}

/// Elsewhere, and without a pidfd: the check, then `kill`; a process that
/// ends and whose pid is taken between the two could be signalled (a
/// window of microseconds, on a pid the system hands out again only after
/// cycling through the others).
fn signal_after_check(pid: Pid, start: u64, signal: Signal) {
    if process_info(pid.as_raw_nonzero().get()).is_some_and(|now| now.start == start) {
        let _ = rustix::process::kill_process(pid, signal);
    }
}

/// Reap every child of ours that has ended, except `keep` (a running
/// attempt, whose pid must stay reserved for its group until retry is done
/// with it); whether `keep` has ended (it is left unreaped). The others are
/// the orphans retry adopted as a subreaper: reaped as they end, none
/// lingers as a zombie, holding a pid against the user's process limit.
/// Each is seen first without being reaped (`WNOWAIT`), so `keep` is never
/// reaped by accident.
pub(crate) fn reap_ended_except(keep: Pid) -> bool {
    loop {
        // SAFETY: a zeroed siginfo_t is a valid buffer for waitid, which
        // writes the child's status into it; si_pid is set for every
        // status waitid reports, and stays 0 when none is (WNOHANG).
        let (done, pid, code) = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let options = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
            let done = libc::waitid(libc::P_ALL, 0, &raw mut info, options);
            (done, info.si_pid(), info.si_code)
        };
        if done != 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return false;
        }
        // No child has ended; or one is reported stopped (macOS's waitid
        // does so even with WEXITED alone): look no further.
        let ended = [libc::CLD_EXITED, libc::CLD_KILLED, libc::CLD_DUMPED].contains(&code);
        if pid == 0 || !ended {
            return false;
        }
        if pid == keep.as_raw_nonzero().get() {
            return true;
        }
        let _ = rustix::process::waitpid(Pid::from_raw(pid), rustix::process::WaitOptions::NOHANG);
    }
}

/// Become the reaper of what our children orphan, where the system can
/// ([`ADOPTS_ORPHANS`]; elsewhere they go to init). A refusal (an old
/// kernel) leaves orphans to init too: nothing else changes.
pub(crate) fn adopt_orphans() {
    #[cfg(all(target_os = "linux", not(retry_posix)))]
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    #[cfg(all(target_os = "freebsd", not(retry_posix)))]
    let _ = rustix::process::set_reaper_status(true);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_pidfd_the_same_process_is_signalled_and_a_later_one_is_not() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
        let start = process_info(pid.as_raw_nonzero().get()).unwrap().start;
        // Another start time: another process, left alone.
        signal_after_check(pid, start + 1, Signal::KILL);
        assert!(child.try_wait().unwrap().is_none());
        signal_after_check(pid, start, Signal::KILL);
        let status = child.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGKILL)
        );
    }
}
