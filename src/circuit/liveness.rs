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

/// Whether `probe` may still be running, as seen by the run `me`; `look`
/// asks this machine about a pid of this run's PID namespace.
pub(crate) fn probe_alive(probe: &Probe, me: &Probe, look: impl Fn(u32) -> Seen) -> bool {
    if probe.host != me.host {
        return true;
    }
    // Both named, and the same; or neither could (a system with no such
    // name: the host name is all there is).
    let same_boot = probe.boot_id == me.boot_id;
    let same_namespace = probe.pid_ns == me.pid_ns;
    if !(same_boot && same_namespace) {
        return true;
    }
    match look(probe.pid) {
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

    fn running(start: u64) -> impl Fn(u32) -> Seen {
        move |_| Seen::Running { start: Some(start) }
    }

    #[test]
    fn another_host_boot_or_namespace_leaves_it_to_the_lease() {
        let me = run(7, Some("b1"), Some(10), Some(5));
        let gone = |_| Seen::Gone;
        let elsewhere = Probe {
            host: "other".into(),
            ..run(3, Some("b1"), Some(10), Some(1))
        };
        assert!(probe_alive(&elsewhere, &me, gone));
        // Another PID namespace on this boot: its pid 3 is not ours.
        assert!(probe_alive(
            &run(3, Some("b1"), Some(11), Some(1)),
            &me,
            gone
        ));
        // Pid 1 of another namespace is not our init, alive or not: the
        // lease decides, not what our pid 1 is.
        assert!(probe_alive(
            &run(1, Some("b1"), Some(11), Some(1)),
            &me,
            gone
        ));
        // Before a reboot, or on a machine sharing the host name.
        assert!(probe_alive(
            &run(3, Some("b0"), Some(10), Some(1)),
            &me,
            gone
        ));
        // Written by a retry that named neither: nothing to go by.
        assert!(probe_alive(&run(3, None, None, None), &me, gone));
    }

    #[test]
    fn where_the_pid_means_the_same_it_decides_with_the_start_time() {
        let me = run(7, Some("b1"), Some(10), Some(5));
        let probe = run(3, Some("b1"), Some(10), Some(100));
        assert!(!probe_alive(&probe, &me, |_| Seen::Gone));
        assert!(probe_alive(&probe, &me, running(100)));
        // The pid was given to a later process.
        assert!(!probe_alive(&probe, &me, running(900)));
        // No start time on either side: the pid alone.
        assert!(probe_alive(&probe, &me, |_| Seen::Running { start: None }));
        let unnamed = run(3, Some("b1"), Some(10), None);
        assert!(probe_alive(&unnamed, &me, running(900)));
        // A system without boot ids or namespaces: the host name and the pid.
        let plain = run(7, None, None, Some(5));
        assert!(!probe_alive(
            &run(3, None, None, Some(100)),
            &plain,
            running(900)
        ));
        assert!(!probe_alive(&run(3, None, None, None), &plain, |_| {
            Seen::Gone
        }));
    }
}
