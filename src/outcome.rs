//! Words every layer shares about how things ended: how an attempt's
//! process ended and what retry had to do to it ([`Ending`]), the names of
//! signals, what an attempt said about itself (its hint) and what a
//! finished run reports. They live here, low in the house, so that no
//! layer reaches up for them: the policy judges an [`Ending`] without
//! knowing how processes are started.

use std::time::Duration;

use crate::exit::ExitStatus;

/// How a run ended: the `outcome` of the JSON `done` event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RunOutcome {
    Success,
    Permanent,
    Exhausted,
    Deadline,
    Interrupted,
    CircuitOpen,
    /// The retry budget had no token for the next retry.
    BudgetExhausted,
}

impl RunOutcome {
    pub(crate) const ALL: [RunOutcome; 7] = [
        RunOutcome::Success,
        RunOutcome::Permanent,
        RunOutcome::Exhausted,
        RunOutcome::Deadline,
        RunOutcome::Interrupted,
        RunOutcome::CircuitOpen,
        RunOutcome::BudgetExhausted,
    ];

    /// The run failed and gives up: what `--on-give-up` is for. Not a
    /// success, not retry itself interrupted by a signal, not a refusal
    /// before anything ran.
    pub(crate) fn gave_up(self) -> bool {
        !matches!(
            self,
            RunOutcome::Success | RunOutcome::Interrupted | RunOutcome::CircuitOpen
        )
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RunOutcome::Success => "success",
            RunOutcome::Permanent => "permanent",
            RunOutcome::Exhausted => "exhausted",
            RunOutcome::Deadline => "deadline",
            RunOutcome::Interrupted => "interrupted",
            RunOutcome::CircuitOpen => "circuit-open",
            RunOutcome::BudgetExhausted => "budget-exhausted",
        }
    }
}

/// Why a sleep is as long as it is: the `source` of the JSON `sleep` event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SleepSource {
    Backoff,
    /// A `Retry-After:` header in the output.
    RetryAfter,
    /// `retry-after=` in the hint file (`retry-after` in JSON too).
    Hint,
    Splay,
}

impl SleepSource {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SleepSource::Backoff => "backoff",
            SleepSource::RetryAfter | SleepSource::Hint => "retry-after",
            SleepSource::Splay => "splay",
        }
    }
}

/// The word an attempt wrote to `$RETRY_HINT_FILE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hint {
    Permanent,
    Transient,
    /// Transient, and known to be throttling (backs off from `--throttle-delay`).
    Throttled,
    RetryAfter(Duration),
}

/// What a finished run reports, beyond its exit status.
pub(crate) struct RunSummary {
    pub(crate) status: ExitStatus,
    pub(crate) outcome: RunOutcome,
    pub(crate) attempts: u64,
    pub(crate) elapsed: Duration,
    pub(crate) failures: Failures,
}

/// A run's failed attempts by their final verdict: the `retry_failures`
/// metric.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Failures {
    pub(crate) transient: u64,
    pub(crate) throttled: u64,
    pub(crate) permanent: u64,
    /// `--hedge-after`: copies started beyond the first, and copies ended
    /// because another decided their attempt.
    pub(crate) hedges: u64,
    pub(crate) superseded: u64,
    /// Copies that did not decide their attempt and got no answer from the
    /// backend: superseded, or failed transiently (for the adaptive
    /// throttle, which counts every copy as a request).
    pub(crate) side_copies_unanswered: u64,
}

/// How the child process itself ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ProcessEnd {
    /// Its exit code; on Windows the whole 32-bit code (an NTSTATUS such
    /// as 0xC0000005 reads as a negative number).
    Exited(i32),
    /// Windows has no signals: no process ends so there.
    #[cfg_attr(windows, allow(dead_code))]
    Signaled(i32),
    /// The command could not be started; `status` is 126 or 127 (125 when
    /// the cause is ours: no working directory, no process to be had).
    NotStarted {
        status: u8,
        message: String,
        /// Worth another try: the cause passes (a binary still being
        /// written, ETXTBSY; a process limit, EAGAIN; memory, ENOMEM).
        /// Else retrying cannot help.
        transient: bool,
    },
}

/// How an attempt ended: the process's end, and what we had to do to it.
/// The one place that turns an ending into numbers and words.
#[derive(Clone, Debug)]
pub(crate) struct Ending {
    pub(crate) process: ProcessEnd,
    /// The attempt's deadline passed and we terminated it.
    pub(crate) timed_out: bool,
    /// SIGKILL was needed after `--kill-after`.
    pub(crate) killed: bool,
    /// Retry received this terminating signal during the attempt.
    pub(crate) interrupted: Option<i32>,
}

impl Ending {
    /// The command could not be started at all.
    pub(crate) fn not_started(process: ProcessEnd) -> Ending {
        Ending {
            process,
            timed_out: false,
            killed: false,
            interrupted: None,
        }
    }

    /// Exit 0 within its time.
    pub(crate) fn succeeded(&self) -> bool {
        self.process == ProcessEnd::Exited(0) && !self.timed_out
    }

    /// The status retry ends with if this is the last attempt.
    pub(crate) fn exit_status(&self) -> ExitStatus {
        if self.timed_out {
            return if self.killed {
                ExitStatus::KILLED
            } else {
                ExitStatus::TIMED_OUT
            };
        }
        match &self.process {
            ProcessEnd::Exited(code) => ExitStatus::from_code(*code),
            ProcessEnd::Signaled(signal) => ExitStatus::Signal(*signal),
            ProcessEnd::NotStarted { status, .. } => ExitStatus::Code(*status),
        }
    }

    /// The exit code, when the process exited (or could not start).
    pub(crate) fn exit_code(&self) -> Option<i32> {
        match &self.process {
            ProcessEnd::Exited(code) => Some(*code),
            ProcessEnd::NotStarted { status, .. } => Some(i32::from(*status)),
            ProcessEnd::Signaled(_) => None,
        }
    }

    /// The signal the process died of.
    pub(crate) fn signal(&self) -> Option<i32> {
        match self.process {
            ProcessEnd::Signaled(signal) => Some(signal),
            _ => None,
        }
    }

    /// For messages: `exit 7`, `killed by SIGKILL`, `timed out (exit 124)`,
    /// `cmd: command not found (exit 127)`.
    pub(crate) fn describe(&self) -> String {
        let status = self.exit_status().as_number();
        match &self.process {
            _ if self.timed_out => format!("timed out (exit {status})"),
            ProcessEnd::NotStarted { message, .. } => format!("{message} (exit {status})"),
            ProcessEnd::Signaled(signal) => format!("killed by {}", signal_name(*signal)),
            // Windows' exit codes are 32-bit: the whole code, and what the
            // shell is given (an NTSTATUS such as 0xC000013A in hex).
            ProcessEnd::Exited(code) if !(0..=255).contains(code) => {
                let whole = if *code < 0 {
                    format!("0x{:08X}", *code as u32)
                } else {
                    code.to_string()
                };
                format!("exit {whole} ({status} for the shell)")
            }
            ProcessEnd::Exited(_) => format!("exit {status}"),
        }
    }
}

/// Signal numbers by name, for the words every level shares: the system's
/// own on Unix. Windows has no signals: there the names keep Linux's numbers,
/// and only stand for what retry itself met (a Ctrl-C is SIGINT, and a run
/// it ended says 130, as elsewhere); no command's ending is a signal there.
pub(crate) mod signo {
    #[cfg(unix)]
    pub(crate) use libc::{
        SIGABRT, SIGALRM, SIGBUS, SIGCHLD, SIGCONT, SIGFPE, SIGHUP, SIGILL, SIGINT, SIGIO, SIGKILL,
        SIGPIPE, SIGPROF, SIGQUIT, SIGSEGV, SIGSTOP, SIGSYS, SIGTERM, SIGTRAP, SIGTSTP, SIGTTIN,
        SIGTTOU, SIGURG, SIGUSR1, SIGUSR2, SIGVTALRM, SIGWINCH, SIGXCPU, SIGXFSZ,
    };
    #[cfg(windows)]
    mod linux_numbers {
        pub(crate) const SIGHUP: i32 = 1;
        pub(crate) const SIGINT: i32 = 2;
        pub(crate) const SIGQUIT: i32 = 3;
        pub(crate) const SIGILL: i32 = 4;
        pub(crate) const SIGTRAP: i32 = 5;
        pub(crate) const SIGABRT: i32 = 6;
        pub(crate) const SIGBUS: i32 = 7;
        pub(crate) const SIGFPE: i32 = 8;
        pub(crate) const SIGKILL: i32 = 9;
        pub(crate) const SIGUSR1: i32 = 10;
        pub(crate) const SIGSEGV: i32 = 11;
        pub(crate) const SIGUSR2: i32 = 12;
        pub(crate) const SIGPIPE: i32 = 13;
        pub(crate) const SIGALRM: i32 = 14;
        pub(crate) const SIGTERM: i32 = 15;
        pub(crate) const SIGCHLD: i32 = 17;
        pub(crate) const SIGCONT: i32 = 18;
        pub(crate) const SIGSTOP: i32 = 19;
        pub(crate) const SIGTSTP: i32 = 20;
        pub(crate) const SIGTTIN: i32 = 21;
        pub(crate) const SIGTTOU: i32 = 22;
        pub(crate) const SIGURG: i32 = 23;
        pub(crate) const SIGXCPU: i32 = 24;
        pub(crate) const SIGXFSZ: i32 = 25;
        pub(crate) const SIGVTALRM: i32 = 26;
        pub(crate) const SIGPROF: i32 = 27;
        pub(crate) const SIGWINCH: i32 = 28;
        pub(crate) const SIGIO: i32 = 29;
        pub(crate) const SIGSYS: i32 = 31;
    }
    #[cfg(windows)]
    pub(crate) use linux_numbers::*;
}

/// `SIGTERM`, `SIGRTMIN+3`, or `signal 32` for one without a common name.
pub(crate) fn signal_name(signal: i32) -> String {
    let name = match signal {
        signo::SIGHUP => "SIGHUP",
        signo::SIGINT => "SIGINT",
        signo::SIGQUIT => "SIGQUIT",
        signo::SIGILL => "SIGILL",
        signo::SIGTRAP => "SIGTRAP",
        signo::SIGABRT => "SIGABRT",
        signo::SIGBUS => "SIGBUS",
        signo::SIGFPE => "SIGFPE",
        signo::SIGKILL => "SIGKILL",
        signo::SIGUSR1 => "SIGUSR1",
        signo::SIGSEGV => "SIGSEGV",
        signo::SIGUSR2 => "SIGUSR2",
        signo::SIGPIPE => "SIGPIPE",
        signo::SIGALRM => "SIGALRM",
        signo::SIGTERM => "SIGTERM",
        signo::SIGCHLD => "SIGCHLD",
        signo::SIGCONT => "SIGCONT",
        signo::SIGSTOP => "SIGSTOP",
        signo::SIGTSTP => "SIGTSTP",
        signo::SIGTTIN => "SIGTTIN",
        signo::SIGTTOU => "SIGTTOU",
        signo::SIGURG => "SIGURG",
        signo::SIGXCPU => "SIGXCPU",
        signo::SIGXFSZ => "SIGXFSZ",
        signo::SIGVTALRM => "SIGVTALRM",
        signo::SIGPROF => "SIGPROF",
        signo::SIGWINCH => "SIGWINCH",
        signo::SIGIO => "SIGIO",
        signo::SIGSYS => "SIGSYS",
        #[cfg(any(target_os = "linux", target_os = "android"))]
        libc::SIGPWR => "SIGPWR",
        #[cfg(any(target_os = "linux", target_os = "android"))]
        libc::SIGSTKFLT => "SIGSTKFLT",
        #[cfg(any(target_os = "freebsd", target_vendor = "apple"))]
        libc::SIGEMT => "SIGEMT",
        #[cfg(any(target_os = "freebsd", target_vendor = "apple"))]
        libc::SIGINFO => "SIGINFO",
        _ => return realtime_name(signal).unwrap_or_else(|| format!("signal {signal}")),
    };
    name.to_string()
}

/// A Linux real-time signal as glibc, bash's `kill -l` and procps name
/// them (SIGRTMIN is 34 there), whatever C library retry was built with,
/// so that the musl and glibc builds say the same: `SIGRTMIN`,
/// `SIGRTMIN+1` up to `SIGRTMIN+15`, `SIGRTMAX-14` up to `SIGRTMAX`. 32
/// and 33, kept by glibc, have no common name.
fn realtime_name(signal: i32) -> Option<String> {
    if !cfg!(any(target_os = "linux", target_os = "android")) {
        return None;
    }
    Some(match signal {
        34 => "SIGRTMIN".to_string(),
        35..=49 => format!("SIGRTMIN+{}", signal - 34),
        50..=63 => format!("SIGRTMAX-{}", 64 - signal),
        64 => "SIGRTMAX".to_string(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_signal_has_its_name() {
        assert_eq!(signal_name(signo::SIGSYS), "SIGSYS");
        assert_eq!(signal_name(signo::SIGIO), "SIGIO");
        assert_eq!(signal_name(signo::SIGWINCH), "SIGWINCH");
        #[cfg(target_os = "linux")]
        {
            assert_eq!(signal_name(29), "SIGIO");
            assert_eq!(signal_name(31), "SIGSYS");
            assert_eq!(signal_name(32), "signal 32");
            assert_eq!(signal_name(34), "SIGRTMIN");
            assert_eq!(signal_name(37), "SIGRTMIN+3");
            assert_eq!(signal_name(60), "SIGRTMAX-4");
            assert_eq!(signal_name(64), "SIGRTMAX");
        }
    }
}
