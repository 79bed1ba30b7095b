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

/// The machine's name (`uname`'s node name).
pub(crate) fn host_name() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

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

/// The inode naming the initial PID namespace (the kernel's
/// `PROC_PID_INIT_INO`): the one every process of the machine is seen in.
#[cfg(target_os = "linux")]
const INITIAL_PID_NAMESPACE: u64 = 0xEFFF_FFFC;

/// Look for process `pid` of another PID namespace, `namespace`: possible
/// only from the initial one, which sees every process of the machine (a
/// probe that was pid 1 of a container is then known to be gone once the
/// container is). `None` when it cannot be told: from any other
/// namespace, through a `/proc` that is not ours, or where some process's
/// namespace cannot be read (another user's, without root).
#[cfg(target_os = "linux")]
pub(crate) fn look_into(namespace: u64, pid: u32) -> Option<Seen> {
    use std::os::unix::fs::MetadataExt;
    if pid_namespace() != Some(INITIAL_PID_NAMESPACE) || !proc_is_ours() {
        return None;
    }
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(here) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        // Its pids, from the initial namespace in: one is a process of the
        // initial namespace (`namespace` is another: ours), and none a
        // process that ended meanwhile.
        let Some(pids) = namespace_pids(here).filter(|pids| pids.len() > 1) else {
            continue;
        };
        let in_namespace = match std::fs::metadata(format!("/proc/{here}/ns/pid")) {
            Ok(meta) => meta.ino() == namespace,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => false,
            // Not allowed to look (another user's, without root): a process
            // of some other namespace, maybe of this one.
            Err(_) => return None,
        };
        if !in_namespace || pids.last() != Some(&pid) {
            continue;
        }
        return match super::process::process_info(here) {
            Some(info) if info.zombie => Some(Seen::Gone),
            Some(info) => Some(Seen::Running {
                start: Some(info.start),
            }),
            None => Some(Seen::Gone),
        };
    }
    Some(Seen::Gone)
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn look_into(_namespace: u64, _pid: u32) -> Option<Seen> {
    None
}

/// The pids process `pid` (as `/proc` numbers it) has in each PID
/// namespace from `/proc`'s in to its own: `NSpid:` in its status, which
/// anyone may read.
#[cfg(target_os = "linux")]
fn namespace_pids(pid: i32) -> Option<Vec<u32>> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("NSpid:"))?;
    line.split_ascii_whitespace()
        .skip(1)
        .map(|n| n.parse().ok())
        .collect()
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
            let namespace = pid_namespace().unwrap();
            // From the initial namespace, no process is in a namespace
            // that does not exist.
            if look_into(namespace, us).is_some() {
                assert_eq!(look_into(namespace + 1, 1), Some(Seen::Gone));
            }
        }
    }
}
