//! What an attempt started, when it shares retry's process group (a
//! terminal's foreground, `--foreground`): no group id names its processes
//! apart from retry and the caller's pipeline, so termination goes to each,
//! found through `/proc`.
//!
//! An attempt's processes are the child, what descends from it, and the
//! orphans it left: retry is a child subreaper, so a process whose parent
//! died is reparented to retry. Retry's own children that were there when
//! the child was spawned are not the attempt's (a service an earlier,
//! successful attempt left running, what a hook left, a process the shell
//! had before it `exec`ed retry), nor are those started before the child.
//!
//! Processes are named by pid and start time, and signalled only while
//! they are still the process they were (`sys::process`: through a pidfd on
//! Linux). The process table comes from `sys::process` too: `/proc` on
//! Linux, `sysctl` on FreeBSD, libproc on macOS.

use rustix::process::{Pid, Signal};

use crate::sys::process::{self, ProcInfo};

fn all_processes() -> Vec<ProcInfo> {
    process::process_table().unwrap_or_default()
}

/// A process of the attempt: its pid, and its start time (clock ticks after
/// boot), which tell it from a later process given the same pid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Member {
    pid: i32,
    start: u64,
}

/// The start time of `child`, to find its processes by later (also once it
/// has been reaped). `None` when `/proc` does not show it.
pub(super) fn start_of(child: Pid) -> Option<u64> {
    process::process_info(child.as_raw_nonzero().get()).map(|info| info.start)
}

/// Retry's children now: taken as an attempt is spawned, they are not its.
pub(super) fn our_children() -> Vec<Member> {
    let us = rustix::process::getpid().as_raw_nonzero().get();
    all_processes()
        .into_iter()
        .filter(|p| p.parent == us)
        .map(|p| Member {
            pid: p.pid,
            start: p.start,
        })
        .collect()
}

/// The attempt's processes, other than the child itself: its descendants,
/// and retry's adopted children started no earlier than the child
/// (`child_start`) and not among those there before it (`before`), with
/// their descendants. `child` is `None` once it has been reaped (its pid
/// may name another process by then; its children were reparented to
/// retry when it exited). Zombies are included: a thread-group leader that
/// ended with `pthread_exit` shows as one while its threads run on.
pub(super) fn leftovers(child: Option<Pid>, child_start: u64, before: &[Member]) -> Vec<Member> {
    let us = rustix::process::getpid().as_raw_nonzero().get();
    let child = child.map(|pid| pid.as_raw_nonzero().get());
    let processes = all_processes();
    // Without a subreaper (macOS, the portable build) an orphan goes to
    // init and is not found: our group is shared with the caller's other
    // processes, so no other mark tells it apart (README, Platforms).
    let adopted = |p: &ProcInfo| {
        p.parent == us
            && Some(p.pid) != child
            && p.start >= child_start
            && !before.iter().any(|b| b.pid == p.pid && b.start == p.start)
    };
    let tops: Vec<i32> = processes
        .iter()
        .filter(|p| Some(p.parent) == child || adopted(p))
        .map(|p| p.pid)
        .collect();
    with_descendants(&processes, tops)
}

/// Every process below `root` (a keeper, our unreaped child), not `root`.
pub(super) fn descendants(root: Pid) -> Vec<Member> {
    let root = root.as_raw_nonzero().get();
    let processes = all_processes();
    let children = processes
        .iter()
        .filter(|p| p.parent == root)
        .map(|p| p.pid)
        .collect();
    with_descendants(&processes, children)
}

/// The processes named in `found` and everything below them, from one table.
fn with_descendants(processes: &[ProcInfo], mut found: Vec<i32>) -> Vec<Member> {
    let mut next = 0;
    while next < found.len() {
        let parent = found[next];
        found.extend(
            processes
                .iter()
                .filter(|p| p.parent == parent)
                .map(|p| p.pid),
        );
        next += 1;
    }
    processes
        .iter()
        .filter(|p| found.contains(&p.pid))
        .map(|p| Member {
            pid: p.pid,
            start: p.start,
        })
        .collect()
}

/// Send `signal` to `member` if it is still the process it was.
pub(super) fn signal(member: Member, signal: Signal) {
    process::signal_if_same(member.pid, member.start, signal);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_and_what_it_started_are_found_and_ended() {
        // sh starts a sleep in the foreground, and one in the background.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30; wait"])
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(child.id() as i32).unwrap();
        let start = start_of(pid).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut found = leftovers(Some(pid), start, &[]);
        while found.len() < 2 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
            found = leftovers(Some(pid), start, &[]);
        }
        assert_eq!(found.len(), 2, "{found:?}");
        for member in &found {
            signal(*member, Signal::KILL);
        }
        let _ = child.kill();
        let _ = child.wait();
        // Killed: gone, or a zombie until whoever adopted it reaps it. A
        // SIGKILL lands asynchronously: on a loaded machine a member may
        // still be running just after it was sent, so each is waited for.
        let ended = |m: &Member| {
            process::process_info(m.pid).is_none_or(|s| s.start != m.start || s.zombie)
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !found.iter().all(ended) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(found.iter().all(ended), "{found:?}");
    }

    #[test]
    fn a_reused_pid_is_not_signalled() {
        // A member whose start time no longer matches: the signal goes nowhere.
        let us = rustix::process::getpid().as_raw_nonzero().get();
        let ours = process::process_info(us).unwrap();
        signal(
            Member {
                pid: us,
                start: ours.start + 1,
            },
            Signal::TERM,
        );
        // Still alive to assert it.
        assert!(process::process_info(us).is_some());
    }
}
