//! Whether another run's half-open probe may still be running, judged
//! only where its pid means the process it meant to the probe: the same
//! host name, the same boot, the same PID namespace. Elsewhere (another
//! host, a container or sandbox sharing the host name, a probe written
//! before a reboot or by a retry that named neither) nothing can be seen,
//! and the probe's lease decides. Where the pid can be looked at, a
//! process that started at another time is not the probe (its pid was
//! given again); without a start time, the pid alone decides.

use super::breaker::Probe;
use crate::sys::machine::Seen;

/// How a run looks at processes: `here` asks this machine about a pid of
/// the run's own PID namespace; `into` about a pid of another namespace,
/// where that can be seen (`None` where it cannot).
pub(crate) struct Eyes<H, I> {
    pub(crate) here: H,
    pub(crate) into: I,
}

/// Whether `probe` may still be running, as seen by the run `me`.
pub(crate) fn probe_alive<H, I>(probe: &Probe, me: &Probe, eyes: &Eyes<H, I>) -> bool
where
    H: Fn(u32) -> Seen,
    I: Fn(u64, u32) -> Option<Seen>,
{
    // Both named, and the same; or neither could (a system with no such
    // name: the host name is all there is).
    if probe.host != me.host || probe.boot_id != me.boot_id {
        return true;
    }
    let seen = match (probe.pid_ns, me.pid_ns) {
        (theirs, ours) if theirs == ours => (eyes.here)(probe.pid),
        // Another namespace of this boot: seen only from one that sees it.
        (Some(theirs), Some(_)) if probe.boot_id.is_some() => {
            match (eyes.into)(theirs, probe.pid) {
                Some(seen) => seen,
                None => return true,
            }
        }
        _ => return true,
    };
    match seen {
        Seen::Gone => false,
        Seen::Running { start } => match (probe.start, start) {
            (Some(claimed), Some(now)) => claimed == now,
            _ => true,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pid: u32, boot: Option<&str>, ns: Option<u64>, start: Option<u64>) -> Probe {
        Probe {
            host: "h".into(),
            pid,
            started_ms: 0,
            lease_until_ms: 0,
            boot_id: boot.map(str::to_string),
            pid_ns: ns,
            start,
        }
    }

    /// Eyes that see `here` in the run's own namespace, and nothing else.
    fn near(here: Seen) -> Eyes<impl Fn(u32) -> Seen, impl Fn(u64, u32) -> Option<Seen>> {
        Eyes {
            here: move |_| here,
            into: |_, _| None,
        }
    }

    fn running(start: u64) -> Seen {
        Seen::Running { start: Some(start) }
    }

    #[test]
    fn another_host_boot_or_namespace_leaves_it_to_the_lease() {
        let me = run(7, Some("b1"), Some(10), Some(5));
        let gone = near(Seen::Gone);
        let elsewhere = Probe {
            host: "other".into(),
            ..run(3, Some("b1"), Some(10), Some(1))
        };
        assert!(probe_alive(&elsewhere, &me, &gone));
        // Another PID namespace on this boot: its pid 3 is not ours.
        assert!(probe_alive(
            &run(3, Some("b1"), Some(11), Some(1)),
            &me,
            &gone
        ));
        // Pid 1 of another namespace is not our init, alive or not: the
        // lease decides, not what our pid 1 is.
        assert!(probe_alive(
            &run(1, Some("b1"), Some(11), Some(1)),
            &me,
            &gone
        ));
        // Before a reboot, or on a machine sharing the host name.
        assert!(probe_alive(
            &run(3, Some("b0"), Some(10), Some(1)),
            &me,
            &gone
        ));
        // Written by a retry that named neither: nothing to go by.
        assert!(probe_alive(&run(3, None, None, None), &me, &gone));
    }

    #[test]
    fn where_the_pid_means_the_same_it_decides_with_the_start_time() {
        let me = run(7, Some("b1"), Some(10), Some(5));
        let probe = run(3, Some("b1"), Some(10), Some(100));
        assert!(!probe_alive(&probe, &me, &near(Seen::Gone)));
        assert!(probe_alive(&probe, &me, &near(running(100))));
        // The pid was given to a later process.
        assert!(!probe_alive(&probe, &me, &near(running(900))));
        // No start time on either side: the pid alone.
        let unknown = near(Seen::Running { start: None });
        assert!(probe_alive(&probe, &me, &unknown));
        let unnamed = run(3, Some("b1"), Some(10), None);
        assert!(probe_alive(&unnamed, &me, &near(running(900))));
        // A system without boot ids or namespaces: the host name and the pid.
        let plain = run(7, None, None, Some(5));
        let other = run(3, None, None, Some(100));
        assert!(!probe_alive(&other, &plain, &near(running(900))));
        assert!(!probe_alive(
            &run(3, None, None, None),
            &plain,
            &near(Seen::Gone)
        ));
    }

    #[test]
    fn a_namespace_that_can_be_seen_into_is_judged_there() {
        // From the initial namespace, a container's processes are seen.
        let me = run(7, Some("b1"), Some(10), Some(5));
        let pid_one = run(1, Some("b1"), Some(11), Some(100));
        let into = |seen: Option<Seen>| Eyes {
            here: |_| running(1),
            into: move |ns: u64, pid: u32| {
                assert_eq!((ns, pid), (11, 1));
                seen
            },
        };
        // Its container ended: gone, though our own pid 1 runs.
        assert!(!probe_alive(&pid_one, &me, &into(Some(Seen::Gone))));
        assert!(probe_alive(&pid_one, &me, &into(Some(running(100)))));
        // A later container given the same namespace number.
        assert!(!probe_alive(&pid_one, &me, &into(Some(running(400)))));
        // Not seen from here: the lease.
        assert!(probe_alive(&pid_one, &me, &into(None)));
        // Without boot ids, a namespace number says nothing for sure.
        let unbooted = run(1, None, Some(11), Some(100));
        let plain = run(7, None, Some(10), Some(5));
        assert!(probe_alive(&unbooted, &plain, &into(Some(Seen::Gone))));
    }
}
