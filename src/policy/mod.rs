//! The policy, pure: how long to wait (`backoff`), which rules apply to an
//! attempt (`rules`), what an attempt's ending means (`classify`) and what
//! the run does next (`decision`). Nothing here starts a process, reads a
//! file or looks at a clock: each takes what it needs, so each is tested in
//! microseconds (table and property tests).

pub mod backoff;
pub(crate) mod classify;
pub(crate) mod decision;
pub(crate) mod hedging;
pub(crate) mod next_sleep;
pub(crate) mod rules;
pub(crate) mod server_wait;
