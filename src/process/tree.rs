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
    pub(super) pid: i32,
    pub(super) start: u64,
}

/// The start time of `child`, to find its processes by later (also once it
/// has been reaped). `None` when `/proc` does not show it.
pub(super) fn start_of(child: Pid) -> Option<u64> {
    process::process_info(child.as_raw_nonzero().get()).map(|info| info.start)
}

/// What is there as an attempt is spawned, and so not its: retry's
/// children, and the other processes of `group` (retry's): the pipeline
/// retry runs in, a service an earlier attempt left running.
pub(super) fn present(group: i32) -> Vec<Member> {
    let us = rustix::process::getpid().as_raw_nonzero().get();
    all_processes()
        .into_iter()
        .filter(|p| p.parent == us || p.group == group)
        .map(|p| Member {
            pid: p.pid,
            start: p.start,
        })
        .collect()
}

/// An attempt in retry's process group, as [`members`] looks for its
/// processes.
#[derive(Clone, Debug)]
pub(super) struct SharedAttempt<'a> {
    /// The command, while it is unreaped (its pid may name another process
    /// after that; its children were reparented when it exited).
    pub(super) child: Option<i32>,
    /// The command's start time: what the attempt started came later.
    pub(super) start: u64,
    /// Retry's process group, which the attempt shares.
    pub(super) group: i32,
    /// Whose children are adopted orphans: retry (a subreaper), or `None`
    /// once retry is gone (the watchdog's look).
    pub(super) adopter: Option<i32>,
    /// What was there before the attempt ([`present`]).
    pub(super) before: &'a [Member],
}

/// The attempt's processes, other than the command itself while it is
/// `child`: below the command; retry's adopted children started no
/// earlier than the command and not there before it; and, where nothing
/// adopts orphans (macOS, the portable build, a retry that is gone), the
/// processes of retry's group started no earlier than the command whose
/// parent is outside the group (an orphan, reparented to init or a
/// subreaper further up) and that were not there before; with everything
/// below them. A process of the caller's pipeline is in the group too, but
/// its parent (the shell) is not and it started before the attempt; what
/// a pipeline member starts has its parent in the group. Zombies below
/// the command are included (a thread-group leader that ended with
/// `pthread_exit` shows as one while its threads run on); an orphan's is
/// not (init reaps it, nothing runs).
pub(super) fn members(processes: &[ProcInfo], attempt: &SharedAttempt<'_>) -> Vec<Member> {
    let before = |p: &ProcInfo| {
        attempt
            .before
            .iter()
            .any(|b| b.pid == p.pid && b.start == p.start)
    };
    let in_group = |pid: i32| {
        processes
            .iter()
            .any(|p| p.pid == pid && p.group == attempt.group)
    };
    let orphans_in_group = attempt.adopter.is_none() || !process::ADOPTS_ORPHANS;
    let top = |p: &ProcInfo| {
        if Some(p.pid) == attempt.child || Some(p.pid) == attempt.adopter || before(p) {
            return false;
        }
        let below_child = Some(p.parent) == attempt.child;
        let adopted = Some(p.parent) == attempt.adopter && p.start >= attempt.start;
        let orphan = orphans_in_group
            && p.group == attempt.group
            && p.start >= attempt.start
            && !p.zombie
            && !in_group(p.parent);
        below_child || adopted || orphan
    };
    let tops = processes.iter().filter(|p| top(p)).map(|p| p.pid).collect();
    with_descendants(processes, tops)
}

/// The attempt's processes now ([`members`]), and those of `remembered`
/// (found at an earlier look) that are still the processes they were,
/// though nothing links them to the attempt any more (orphaned to init).
pub(super) fn leftovers(attempt: &SharedAttempt<'_>, remembered: &[Member]) -> Vec<Member> {
    let processes = all_processes();
    let mut found = members(&processes, attempt);
    for member in remembered {
        let same = processes
            .iter()
            .any(|p| p.pid == member.pid && p.start == member.start && !p.zombie);
        if same && !found.contains(member) {
            found.push(*member);
        }
    }
    found
}

/// What the watchdog ends of an attempt in retry's group once retry is
/// gone: the command, if it is still the process it was, and everything
/// [`members`] finds of the attempt.
pub(super) fn abandoned(attempt: &SharedAttempt<'_>) -> Vec<Member> {
    let processes = all_processes();
    let mut found = members(&processes, attempt);
    if let Some(child) = processes
        .iter()
        .find(|p| Some(p.pid) == attempt.child && p.start == attempt.start)
    {
        found.push(Member {
            pid: child.pid,
            start: child.start,
        });
    }
    found
}

/// What the watchdog ends of an attempt in retry's group when it does not
/// know everything that was there before the attempt (records lost to a
/// full page): the command, if it is still the process it was, and what
/// is below it. Not what it orphaned into retry's group: only what was
/// there before tells that from a process that must be spared.
pub(super) fn command_and_below(attempt: &SharedAttempt<'_>) -> Vec<Member> {
    below_command(&all_processes(), attempt)
}

fn below_command(processes: &[ProcInfo], attempt: &SharedAttempt<'_>) -> Vec<Member> {
    let same = |pid: i32| {
        processes
            .iter()
            .any(|p| p.pid == pid && p.start == attempt.start)
    };
    match attempt.child {
        Some(child) if same(child) => with_descendants(processes, vec![child]),
        _ => Vec::new(),
    }
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
        let us = rustix::process::getpid().as_raw_nonzero().get();
        let attempt = SharedAttempt {
            child: Some(pid.as_raw_nonzero().get()),
            start,
            group: process::own_group(),
            adopter: Some(us),
            before: &[],
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        // The shell's own children (other tests of this binary start
        // children of the test process too: only these two are counted).
        let below_sh = |found: &[Member]| {
            found
                .iter()
                .filter(|m| {
                    process::process_info(m.pid).is_some_and(|p| p.parent == attempt.child.unwrap())
                })
                .copied()
                .collect::<Vec<Member>>()
        };
        let mut found = below_sh(&leftovers(&attempt, &[]));
        while found.len() < 2 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
            found = below_sh(&leftovers(&attempt, &[]));
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

    fn proc(pid: i32, parent: i32, group: i32, start: u64) -> ProcInfo {
        ProcInfo {
            pid,
            parent,
            group,
            start,
            zombie: false,
        }
    }

    fn pids(found: &[Member]) -> Vec<i32> {
        let mut pids: Vec<i32> = found.iter().map(|m| m.pid).collect();
        pids.sort_unstable();
        pids
    }

    #[test]
    fn in_retrys_group_orphans_are_the_attempts_and_the_pipelines_processes_are_not() {
        // The shell (its own group 50) runs `producer | retry | tee`, all
        // in group 100; retry (101) started the command (200) at time 10.
        // The command started 201 and 202; 202 ended, its child 203 went
        // to init (1). The producer (102) starts 300 now, and the service
        // 150 (an earlier attempt's) was there before.
        let table = [
            proc(1, 0, 1, 0),
            proc(50, 1, 50, 1),
            proc(102, 50, 100, 2),
            proc(101, 50, 100, 2),
            proc(103, 50, 100, 2),
            proc(150, 1, 100, 5),
            proc(200, 101, 100, 10),
            proc(201, 200, 100, 11),
            proc(203, 1, 100, 12),
            proc(204, 203, 100, 13),
            proc(300, 102, 100, 14),
            ProcInfo {
                zombie: true,
                ..proc(205, 1, 100, 12)
            },
        ];
        let before = [Member { pid: 150, start: 5 }];
        let mut attempt = SharedAttempt {
            child: Some(200),
            start: 10,
            group: 100,
            adopter: None,
            before: &before,
        };
        assert_eq!(pids(&members(&table, &attempt)), [201, 203, 204]);
        // Not knowing what was there before: the command and below it only.
        assert_eq!(pids(&below_command(&table, &attempt)), [200, 201]);
        let reused = SharedAttempt {
            start: 9,
            ..attempt.clone()
        };
        assert_eq!(pids(&below_command(&table, &reused)), [] as [i32; 0]);
        // Once the command is reaped, its child is an orphan like the others.
        attempt.child = None;
        let reaped = [proc(201, 1, 100, 11), proc(203, 1, 100, 12)];
        assert_eq!(pids(&members(&reaped, &attempt)), [201, 203]);
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
