//! A write to a reader that stopped reading (a stalled pipe, a socket
//! nobody reads, a stopped terminal): how long it waits between two looks
//! at whether to give up, and the error it fails with when it does. Shared
//! by the outlets (`fd`) and the thread they hand a blocking write to
//! (`handoff`), which import it from here and not from each other.

/// How long a write to a stalled reader waits between two looks at whether
/// to give up.
pub(crate) const STALL_SLICE: std::time::Duration = std::time::Duration::from_millis(50);

/// Output given up on: its reader took nothing while retry was ending.
#[derive(Debug)]
pub(crate) struct Abandoned;

impl std::fmt::Display for Abandoned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("its reader took nothing while retry was ending (a signal, or a time limit)")
    }
}

impl std::error::Error for Abandoned {}

impl Abandoned {
    /// Was `err` a write given up on?
    pub(crate) fn is(err: &std::io::Error) -> bool {
        err.get_ref()
            .is_some_and(<dyn std::error::Error + Send + Sync>::is::<Abandoned>)
    }
}
