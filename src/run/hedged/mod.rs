//! A hedged attempt (`--hedge-after`, `--hedges`): when the attempt has run
//! that long without ending, one more copy of it starts; the first success
//! wins and the others are ended as a time limit ends an attempt (SIGTERM
//! to their groups, SIGKILL after `--kill-after`), reported as
//! `superseded`. What to do at each step is `policy::hedging`'s; this
//! carries it out, with the copies' processes, pipes and reports.
//!
//! Copies must not trample on each other: each holds its stdout in a spool
//! of its own and only the chosen copy's reaches retry's stdout (or the
//! file of `-o`, `--buffer-stdout`); copy 0's stderr passes through as it
//! comes, a hedge's is held and said afterwards, each line marked
//! `[hedge N]` (two writers on one pipe tear long lines); each has its own
//! hint file and `RETRY_HEDGE`; stdin is the whole input for each
//! (`--stdin replay`) or none. Copies always lead process groups of their
//! own (`--foreground` and a terminal are refused before anything runs).
//! To the schedule, the group is one attempt: the winner's, else the copy
//! that decided the group's end.

mod copy;
mod group;
mod plan;

pub(super) use plan::HedgePlan;
