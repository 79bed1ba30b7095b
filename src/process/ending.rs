//! The command could not be started: the status and message a spawn's
//! errno gives (what an attempt's end is, in numbers and words, is
//! `outcome`'s).

use std::path::Path;

use super::launch::shown;
use crate::outcome::ProcessEnd;

/// The command could not be started: its status and message, from the
/// errno the spawn gave. The message says what a person can do about it:
/// a name not found on PATH from a path that does not exist, a directory
/// from a file without its execute bit (`chmod +x`), and a `#!` line that
/// ends in a carriage return (a script saved with CRLF line ends).
pub(super) fn not_started(program: &std::ffi::OsStr, err: &std::io::Error) -> ProcessEnd {
    let name = shown(program);
    let path = Path::new(program);
    let has_slash = program.as_encoded_bytes().contains(&b'/');
    let (status, message) = match err.raw_os_error() {
        Some(libc::ENOENT) => {
            if has_slash && !path.is_absolute() && std::env::current_dir().is_err() {
                (
                    125,
                    format!("{name}: the working directory no longer exists"),
                )
            } else if has_slash && path.exists() {
                (127, format!("{name}: {}", bad_interpreter(path)))
            } else if has_slash {
                (127, format!("{name}: no such file"))
            } else {
                (127, format!("{name}: command not found on PATH"))
            }
        }
        Some(libc::EACCES) => (126, format!("{name}: {}", why_not_executable(path))),
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

/// A file that exists but could not be found to run: its `#!` line names
/// a program that is not there; a carriage return at the end of it (CRLF
/// line ends) is the usual cause, and named.
fn bad_interpreter(path: &Path) -> String {
    let mut first = [0u8; 256];
    let read = std::fs::File::open(path)
        .and_then(|mut file| std::io::Read::read(&mut file, &mut first))
        .unwrap_or(0);
    let line = first[..read].split(|&b| b == b'\n').next().unwrap_or(&[]);
    if line.starts_with(b"#!") && line.ends_with(b"\r") {
        return "bad interpreter: the #! line ends in a carriage return (the script has CRLF line ends: dos2unix, or sed -i 's/\\r$//')".to_string();
    }
    "bad interpreter (the #! line names a missing program)".to_string()
}

/// Why a file the kernel would not execute (EACCES) is not executable: a
/// directory, a file without its execute bit, or a permission further up.
fn why_not_executable(path: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => "is a directory, not a program".to_string(),
        Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o111 == 0 => format!(
            "permission denied: the file is not executable (chmod +x {})",
            crate::text::shell_word(path.as_os_str())
        ),
        _ => "permission denied".to_string(),
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
