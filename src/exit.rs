//! Retry's own exit status, mapped to a number in one place. Which status
//! a run ends with is chosen in one place too: `policy::decision::End`.
//!
//! A status is either a code (0-255, clamped: `exit(256)` would read as 0) or
//! a signal that retry re-raises on itself so its parent sees a real signal
//! death (bash's wait-and-cooperative-exit rule needs `WIFSIGNALED`, not 130).

use std::io::Write;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    Code(u8),
    Signal(i32),
}

impl ExitStatus {
    pub const SUCCESS: ExitStatus = ExitStatus::Code(0);
    /// `EX_TEMPFAIL`: a circuit is open, nothing ran; try again later.
    pub const CIRCUIT_OPEN: ExitStatus = ExitStatus::Code(75);
    /// The attempt was terminated by `--timeout` or `--max-time`.
    pub const TIMED_OUT: ExitStatus = ExitStatus::Code(124);
    /// A usage error: a bad flag, value or combination; nothing ran.
    pub const USAGE: ExitStatus = ExitStatus::Code(125);
    /// Retry itself could not carry on: setting up the run, reading or
    /// writing its own files, delivering output (same number as a usage
    /// error: both are retry's own failures, by the contract).
    pub const RETRY_FAILED: ExitStatus = ExitStatus::Code(125);
    /// `--circuit-status` or `--circuit-reset` could not use the state store.
    pub const STATE_FAILED: ExitStatus = ExitStatus::Code(125);
    /// Timed out and SIGKILL was needed (as coreutils `timeout`).
    pub const KILLED: ExitStatus = ExitStatus::Code(137);

    /// From a child's exit code. Anything outside 0-255 becomes 255: a
    /// failure must never wrap around to 0.
    pub fn from_code(code: i32) -> ExitStatus {
        u8::try_from(code).map_or(ExitStatus::Code(255), ExitStatus::Code)
    }

    /// The number a shell shows: the code, or 128+N for signal N.
    pub fn as_number(self) -> i32 {
        match self {
            ExitStatus::Code(code) => i32::from(code),
            ExitStatus::Signal(signal) => 128 + signal,
        }
    }

    /// End the process with this status. Signals are re-raised with core
    /// dumps off; where that cannot kill us (PID 1, a signal whose default
    /// is to be ignored) we exit 128+N instead.
    pub fn terminate(self) -> ! {
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        if let ExitStatus::Signal(signal) = self {
            crate::sys::signal::reraise(signal);
        }
        std::process::exit(self.as_number().min(255))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_shell_numbers() {
        assert_eq!(ExitStatus::SUCCESS.as_number(), 0);
        assert_eq!(ExitStatus::TIMED_OUT.as_number(), 124);
        assert_eq!(ExitStatus::USAGE.as_number(), 125);
        assert_eq!(ExitStatus::KILLED.as_number(), 137);
        assert_eq!(ExitStatus::Signal(2).as_number(), 130);
        assert_eq!(ExitStatus::Signal(13).as_number(), 141);
    }

    #[test]
    fn out_of_range_codes_clamp_instead_of_wrapping() {
        assert_eq!(ExitStatus::from_code(256), ExitStatus::Code(255));
        assert_eq!(ExitStatus::from_code(-1), ExitStatus::Code(255));
        assert_eq!(ExitStatus::from_code(7), ExitStatus::Code(7));
    }
}
