//! The command could not be started: the status and message a spawn's
//! errno gives (what an attempt's end is, in numbers and words, is
//! `outcome`'s).

use std::path::Path;

use crate::outcome::ProcessEnd;

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
}
