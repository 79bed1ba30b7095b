//! How an attempt ended, in numbers and words: the one place that turns a
//! process's end (and what retry had to do to it) into an exit status, a
//! signal's name and a phrase for messages.

use std::path::Path;

use crate::exit::ExitStatus;

/// How the child process itself ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ProcessEnd {
    Exited(i32),
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
            ProcessEnd::Exited(_) => format!("exit {status}"),
        }
    }
}

/// The command could not be started: its status and message, from the
/// errno the spawn gave.
pub(super) fn not_started(program: &std::ffi::OsStr, err: &std::io::Error) -> ProcessEnd {
    // The name as a message can show it: one line, control characters
    // escaped, and an empty one visible.
    let name = if program.is_empty() {
        "'' (an empty command name)".to_string()
    } else {
        crate::text::sanitize_line(&program.to_string_lossy(), 200)
    };
    let (status, message) = match err.raw_os_error() {
        Some(libc::ENOENT) => {
            let has_slash = name.contains('/');
            if has_slash && !name.starts_with('/') && std::env::current_dir().is_err() {
                (
                    125,
                    format!("{name}: the working directory no longer exists"),
                )
            } else if has_slash && Path::new(program).exists() {
                (
                    127,
                    format!("{name}: bad interpreter (the #! line names a missing program)"),
                )
            } else {
                (127, format!("{name}: command not found"))
            }
        }
        Some(libc::EACCES) => (126, format!("{name}: permission denied")),
        Some(libc::E2BIG) => (126, format!("{name}: argument list too long")),
        Some(libc::ENOEXEC) => (
            126,
            format!("{name}: cannot execute (exec format error: a binary for another system?)"),
        ),
        // The binary is still open for writing (being installed or built):
        // that passes, so this one is retried.
        Some(libc::ETXTBSY) => (
            126,
            format!("{name}: cannot execute (text file busy: still being written)"),
        ),
        // A process limit (`ulimit -u`, a cgroup's pids.max) or memory
        // pressure: that passes as other processes end, so it is retried.
        Some(libc::EAGAIN) => (
            125,
            format!("{name}: cannot start a process: the limit on processes is reached (EAGAIN)"),
        ),
        Some(libc::ENOMEM) => (
            125,
            format!("{name}: cannot start a process: out of memory (ENOMEM)"),
        ),
        _ => (126, format!("{name}: cannot execute: {err}")),
    };
    let transient = matches!(
        err.raw_os_error(),
        Some(libc::ETXTBSY | libc::EAGAIN | libc::ENOMEM)
    );
    ProcessEnd::NotStarted {
        status,
        message,
        transient,
    }
}

/// `SIGTERM`, `SIGRTMIN+3`, or `signal 32` for one without a common name.
pub(crate) fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGSYS => "SIGSYS",
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

    fn transient(errno: i32) -> (u8, bool) {
        match not_started("cmd".as_ref(), &std::io::Error::from_raw_os_error(errno)) {
            ProcessEnd::NotStarted {
                status, transient, ..
            } => (status, transient),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_start_refused_for_a_cause_that_passes_is_transient() {
        assert_eq!(transient(libc::EAGAIN), (125, true));
        assert_eq!(transient(libc::ENOMEM), (125, true));
        assert_eq!(transient(libc::ETXTBSY), (126, true));
        assert_eq!(transient(libc::ENOENT), (127, false));
        assert_eq!(transient(libc::EACCES), (126, false));
    }

    #[test]
    fn every_signal_has_its_name() {
        assert_eq!(signal_name(libc::SIGSYS), "SIGSYS");
        assert_eq!(signal_name(libc::SIGIO), "SIGIO");
        assert_eq!(signal_name(libc::SIGWINCH), "SIGWINCH");
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
