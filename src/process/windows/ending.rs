//! The command could not be started on Windows: the status and message
//! the spawn's error gives (see the Unix room's `ending.rs` for the words).

use crate::outcome::ProcessEnd;

use super::launch::shown;

/// The command could not be started: 127 when it is nowhere (not on
/// `PATH` with any extension of `PATHEXT`, or no such file), 126 when it
/// is there but cannot run, 125 when the system had no room for a process.
pub(super) fn not_started(program: &std::ffi::OsStr, err: &std::io::Error) -> ProcessEnd {
    let name = shown(program);
    let has_dir = program
        .to_str()
        .is_none_or(|text| text.contains(['/', '\\', ':']));
    let (status, message, transient) = match err.kind() {
        std::io::ErrorKind::NotFound if has_dir => (127, format!("{name}: no such file"), false),
        std::io::ErrorKind::NotFound => (
            127,
            format!("{name}: command not found on PATH (with any extension of PATHEXT)"),
            false,
        ),
        std::io::ErrorKind::PermissionDenied => (
            126,
            format!("{name}: cannot execute: permission denied"),
            false,
        ),
        // std's Command refuses a batch file's arguments that cmd.exe would
        // read as commands (CVE-2024-24576).
        std::io::ErrorKind::InvalidInput => (
            126,
            format!(
                "{name}: cannot run a batch file with these arguments: cmd.exe would misread them ({err})"
            ),
            false,
        ),
        std::io::ErrorKind::OutOfMemory => (
            125,
            format!("{name}: cannot start a process: out of memory"),
            true,
        ),
        _ => (126, format!("{name}: cannot execute: {err}"), false),
    };
    ProcessEnd::NotStarted {
        status,
        message,
        transient,
    }
}
