//! Names for where a process runs, so that a pid another run wrote down is
//! judged only where it names the same process: the boot of the machine
//! (a pid means nothing after a reboot, or on another machine that
//! happens to share the host name), and the PID namespace (a container or
//! sandbox numbers its processes on its own: pid 1 there is not pid 1
//! here). With the process's start time, which tells it from a later one
//! given the same pid ([`super::process::process_info`]).
//!
//! | | Linux | FreeBSD, macOS |
//! |---|---|---|
//! | boot | `/proc/sys/kernel/random/boot_id` | none (runs on one host name are judged by pid and start time, as before) |
//! | PID namespace | the inode of `/proc/self/ns/pid` | none (no PID namespaces; a jail sharing a host name is not told apart) |
//!
//! Linux reads `/proc` in the portable build too, as for the process table.

use rustix::io::Errno;
use rustix::process::Pid;

/// This boot of this machine: a random UUID the kernel makes at boot.
/// `None` where it cannot be read.
#[cfg(target_os = "linux")]
pub(crate) fn boot_id() -> Option<String> {
    let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = text.trim();
    let plain =
        !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    plain.then(|| id.to_string())
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn boot_id() -> Option<String> {
    None
}

/// The PID namespace this process is in, by the inode that names it
/// (`pid:[4026531836]`). `None` where it cannot be read.
#[cfg(target_os = "linux")]
pub(crate) fn pid_namespace() -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid")
        .ok()
        .map(|meta| meta.ino())
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn pid_namespace() -> Option<u64> {
    None
}

/// Whether `/proc` shows this process's own PID namespace, so that
/// `/proc/PID` is the process this process calls PID. A container given
/// the host's `/proc`, or a sandbox that never mounted its own, shows
/// other numbers: start times read there would be another process's.
#[cfg(target_os = "linux")]
fn proc_is_ours() -> bool {
    let us = rustix::process::getpid().as_raw_nonzero().get();
    std::fs::read_link("/proc/self")
        .ok()
        .and_then(|link| link.to_str()?.parse::<i32>().ok())
        == Some(us)
}

#[cfg(not(target_os = "linux"))]
fn proc_is_ours() -> bool {
    true
}

/// This process's start time, as [`super::process::ProcInfo::start`]
/// counts it, where it can be read reliably.
pub(crate) fn own_start() -> Option<u64> {
    let us = rustix::process::getpid().as_raw_nonzero().get();
    proc_is_ours()
        .then(|| super::process::process_info(us))
        .flatten()
        .map(|info| info.start)
}

/// What this process can see of process `pid` of its own PID namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Seen {
    /// No such process (or only its zombie: it has ended).
    Gone,
    /// A process by that number; its start time where it can be read.
    Running { start: Option<u64> },
}

/// Look for process `pid` (a number that is no process id, 0 or past
/// `i32::MAX`, is gone). A process of another user's (`EPERM`) is there.
pub(crate) fn look_for(pid: u32) -> Seen {
    let Some(raw) = i32::try_from(pid).ok().filter(|&pid| pid > 0) else {
        return Seen::Gone;
    };
    let Some(found) = Pid::from_raw(raw) else {
        return Seen::Gone;
    };
    // Any other answer (EPERM: another user's process) means it is there.
    if let Err(Errno::SRCH) = rustix::process::test_kill_process(found) {
        return Seen::Gone;
    }
    if !proc_is_ours() {
        return Seen::Running { start: None };
    }
    match super::process::process_info(raw) {
        Some(info) if info.zombie => Seen::Gone,
        Some(info) => Seen::Running {
            start: Some(info.start),
        },
        None => Seen::Running { start: None },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_named_and_seen() {
        let us = std::process::id();
        let seen = look_for(us);
        assert!(matches!(seen, Seen::Running { .. }), "{seen:?}");
        if let Seen::Running { start: Some(start) } = seen {
            assert_eq!(own_start(), Some(start));
        }
        assert_eq!(look_for(0), Seen::Gone);
        assert_eq!(look_for(u32::MAX), Seen::Gone);
        #[cfg(target_os = "linux")]
        {
            assert!(boot_id().is_some_and(|id| id.len() == 36));
            assert!(pid_namespace().is_some());
        }
    }
}
