//! Where circuits live: a small load-modify-store interface, so a shared
//! store for fleets can sit beside the local one without touching the
//! breaker's logic.

use anyhow::Result;

use super::breaker::CircuitState;

/// The state after an update, and anything worth a warning on the way (a
/// corrupt state that was read as closed).
pub(crate) struct Updated {
    pub(crate) state: CircuitState,
    pub(crate) warning: Option<String>,
}

pub(crate) trait Store {
    /// Load circuit `name`, let `change` modify it, and store the result if
    /// it changed: atomically with respect to every other process (and
    /// host) using the same store. A missing or unreadable state is closed.
    fn update(&self, name: &str, change: &mut dyn FnMut(&mut CircuitState)) -> Result<Updated>;

    /// For messages: where circuit `name` is kept.
    fn describe(&self, name: &str) -> String;

    /// Whether a probe held by `pid` on `host` may still be running. Stores
    /// on one machine can look; shared ones trust the lease.
    fn probe_alive(&self, host: &str, pid: u32, my_host: &str) -> bool {
        host != my_host
            || rustix::process::Pid::from_raw(pid as i32)
                .is_some_and(|pid| rustix::process::test_kill_process(pid).is_ok())
    }
}
