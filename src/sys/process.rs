//! Processes named by pid and start time: reading one, listing all of them,
//! signalling one only while it is still the process it was, looking at how
//! a child ended without reaping it, and adopting orphans.
//!
//! | | Linux | FreeBSD | macOS |
//! |---|---|---|---|
//! | one process, the table | `/proc/PID/stat` (`linux.rs`) | `sysctl` `KERN_PROC` (`freebsd.rs`) | `proc_pidinfo`, `proc_listallpids` (`macos.rs`) |
//! | start time | clock ticks from boot | microseconds from boot (`ki_start` less `kern.boottime`) | the wall clock at `fork`, as stored |
//! | signal by pid + start | pidfd, then the check | the check, then `kill` | the check, then `kill` |
//! | adopt orphans | `PR_SET_CHILD_SUBREAPER` | `PROC_REAP_ACQUIRE` | none (launchd adopts them) |
//!
//! What FreeBSD's and macOS's answers mean is read by pure functions
//! (`apple_records.rs`, `freebsd_records.rs`), compiled and tested on
//! every system. The portable build
//! (`--cfg retry_posix`) keeps `/proc` on Linux for the table (POSIX has no
//! process listing) and takes the portable path for the rest.

#[cfg_attr(
    not(target_os = "macos"),
    allow(dead_code, reason = "macOS's parser; run here by the unit tests")
)]
mod apple_records;
#[cfg_attr(
    not(target_os = "freebsd"),
    allow(dead_code, reason = "FreeBSD's parsers; run here by the unit tests")
)]
mod freebsd_records;
#[cfg(target_os = "freebsd")]
#[path = "process/freebsd.rs"]
mod imp;
#[cfg(target_os = "linux")]
#[path = "process/linux.rs"]
mod imp;
#[cfg(target_os = "macos")]
#[path = "process/macos.rs"]
mod imp;

pub(crate) use imp::{process_info, process_table};
use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, WaitIdStatus};

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

/// Why `--foreground` cannot be had here: `None`, it can.
pub(crate) const NO_FOREGROUND: Option<&str> = None;

/// Whether `fd` is a terminal whose foreground process group is retry's.
pub(crate) fn in_terminals_foreground(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    rustix::termios::isatty(fd)
        && rustix::termios::tcgetpgrp(fd)
            .is_ok_and(|group| group.as_raw_nonzero().get() == own_group())
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

/// Why the process table could not be read, in words for a warning.
pub(crate) const UNREADABLE_TABLE: &str = imp::UNREADABLE;

/// Whether the process table can be read, cheaply (our own entry, and on
/// Linux a `/proc` of our PID namespace).
pub(crate) fn table_readable() -> bool {
    let us = rustix::process::getpid().as_raw_nonzero().get();
    #[cfg(target_os = "linux")]
    if !imp::proc_is_ours() {
        return false;
    }
    process_info(us).is_some()
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
        Err(Errno::SRCH) => return,
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

/// Reap every child of ours that has ended, except those in `keep` (running
/// attempts, or the copies of a hedged one, whose pids must stay reserved
/// for their groups until retry is done with them); whether one of `keep`
/// has ended (it is left unreaped, and the look stops there). The others are
/// the orphans retry adopted as a subreaper: reaped as they end, none
/// lingers as a zombie, holding a pid against the user's process limit.
/// Each is seen first without being reaped (`WNOWAIT`), so `keep` is never
/// reaped by accident.
pub(crate) fn reap_ended_except(keep: &[Pid]) -> bool {
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
        if keep.iter().any(|kept| kept.as_raw_nonzero().get() == pid) {
            return true;
        }
        let _ = rustix::process::waitpid(Pid::from_raw(pid), rustix::process::WaitOptions::NOHANG);
    }
}

/// How a child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal killed it (with or without a core dump).
    Signal(i32),
}

/// How our child `pid` ended, if it has; looked at without reaping it, so
/// that its pid (and its group's id) stay ours to signal. `Ok(None)` while
/// it runs, and also while it is stopped or after it was continued: macOS's
/// `waitid` reports those even when asked for exits alone (Go's
/// `os/wait_waitid.go`, issue 19314), which read as an end without a status
/// (exit 255). An error (ECHILD: not our child, or reaped already) is the
/// caller's to judge.
pub(crate) fn peek_exit(pid: Pid) -> rustix::io::Result<Option<Exit>> {
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    Ok(rustix::process::waitid(WaitId::Pid(pid), options)?
        .as_ref()
        .and_then(exit_of))
}

/// The end a `waitid` status reports; `None` for a stop, a continue or a
/// trap (by its `si_code`), which are no end.
fn exit_of(status: &WaitIdStatus) -> Option<Exit> {
    if status.exited() {
        status.exit_status().map(Exit::Code)
    } else if status.killed() || status.dumped() {
        status.terminating_signal().map(Exit::Signal)
    } else {
        None
    }
}

/// Become the reaper of what our children orphan, where the system can
/// ([`ADOPTS_ORPHANS`]; elsewhere they go to init, and this does nothing).
/// The system's refusal, if it refused (an old kernel, a seccomp filter, a
/// jail's policy): orphans then go to init too and nothing else changes,
/// so the caller warns once and goes on.
pub(crate) fn adopt_orphans() -> Option<Errno> {
    #[cfg(all(target_os = "linux", not(retry_posix)))]
    return refusal(
        rustix::process::set_child_subreaper(Some(rustix::process::getpid())),
        None,
    );
    #[cfg(all(target_os = "freebsd", not(retry_posix)))]
    return refusal(rustix::process::set_reaper_status(true), Some(Errno::BUSY));
    #[cfg(not(all(any(target_os = "linux", target_os = "freebsd"), not(retry_posix))))]
    None
}

/// The refusal in `result`, unless it is `already`: the system's word for
/// "you are the reaper already" (FreeBSD's `PROC_REAP_ACQUIRE` answers
/// EBUSY to a process that is one, procctl(2)), which is no refusal.
#[cfg_attr(
    not(all(any(target_os = "linux", target_os = "freebsd"), not(retry_posix))),
    allow(dead_code)
)]
fn refusal(result: rustix::io::Result<()>, already: Option<Errno>) -> Option<Errno> {
    result.err().filter(|&err| Some(err) != already)
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

    /// Wait (a few seconds at most) for `pid` to report `options` (a stop
    /// or a continue), without taking the report away.
    fn reported(pid: Pid, options: WaitIdOptions) -> WaitIdStatus {
        let started = std::time::Instant::now();
        loop {
            let look = options | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
            if let Some(status) = rustix::process::waitid(WaitId::Pid(pid), look).unwrap() {
                return status;
            }
            assert!(started.elapsed() < std::time::Duration::from_secs(10));
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    #[test]
    fn a_stopped_or_continued_child_has_not_ended_and_a_killed_one_has() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
        assert_eq!(peek_exit(pid), Ok(None));
        rustix::process::kill_process(pid, Signal::STOP).unwrap();
        // What macOS's waitid hands back for it, asked for exits: a status
        // whose si_code says stopped. No end.
        let stopped = reported(pid, WaitIdOptions::STOPPED);
        assert!(stopped.stopped());
        assert_eq!(exit_of(&stopped), None);
        assert_eq!(peek_exit(pid), Ok(None));
        rustix::process::kill_process(pid, Signal::CONT).unwrap();
        let continued = reported(pid, WaitIdOptions::CONTINUED);
        assert!(continued.continued());
        assert_eq!(exit_of(&continued), None);
        assert_eq!(peek_exit(pid), Ok(None));
        rustix::process::kill_process(pid, Signal::KILL).unwrap();
        let ended = reported(pid, WaitIdOptions::EXITED);
        assert_eq!(exit_of(&ended), Some(Exit::Signal(libc::SIGKILL)));
        // Looked at, not reaped: still there to be reaped.
        assert_eq!(peek_exit(pid), Ok(Some(Exit::Signal(libc::SIGKILL))));
        assert!(child.wait().is_ok());
        assert!(peek_exit(pid).is_err());
        // An exit code.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "exit 3"])
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
        assert_eq!(
            exit_of(&reported(pid, WaitIdOptions::EXITED)),
            Some(Exit::Code(3))
        );
        assert_eq!(peek_exit(pid), Ok(Some(Exit::Code(3))));
        assert!(child.wait().is_ok());
    }

    #[test]
    fn a_refusal_to_adopt_is_reported_but_already_being_the_reaper_is_not() {
        assert_eq!(refusal(Ok(()), None), None);
        // Linux before 3.4, a seccomp filter.
        assert_eq!(refusal(Err(Errno::INVAL), None), Some(Errno::INVAL));
        assert_eq!(refusal(Err(Errno::PERM), None), Some(Errno::PERM));
        // FreeBSD: EBUSY from PROC_REAP_ACQUIRE is "a reaper already".
        assert_eq!(refusal(Err(Errno::BUSY), Some(Errno::BUSY)), None);
        assert_eq!(
            refusal(Err(Errno::PERM), Some(Errno::BUSY)),
            Some(Errno::PERM)
        );
    }

    #[test]
    fn our_own_entry_is_in_the_table_and_says_we_are_alive() {
        let us = rustix::process::getpid().as_raw_nonzero().get();
        let ours = process_info(us).unwrap();
        assert_eq!((ours.pid, ours.zombie), (us, false));
        assert!(table_readable());
        let table = process_table().unwrap();
        assert!(table.contains(&ours));
        assert!(!UNREADABLE_TABLE.is_empty());
    }

    #[test]
    fn a_zombie_is_seen_and_marked_ended() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
        reported(pid, WaitIdOptions::EXITED);
        // Ended, not reaped: a zombie, in the table and by itself.
        let zombie = process_info(pid.as_raw_nonzero().get()).unwrap();
        assert!(zombie.zombie);
        assert!(process_table().unwrap().contains(&zombie));
        child.wait().unwrap();
    }
}
