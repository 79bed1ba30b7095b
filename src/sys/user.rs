//! The user's entry in the password database (`getpwuid_r`: the same call
//! everywhere, `unsafe` in Rust).

use std::path::PathBuf;

/// The home directory in the password database for our user id.
pub(crate) fn password_home() -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut entry = std::mem::MaybeUninit::<libc::passwd>::uninit();
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    let mut buffer = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: getpwuid_r writes the entry into `entry`, its strings into
    // `buffer` (whose length it is told), and sets `found` to `entry` on
    // success; nothing is read unless it succeeded.
    let status = unsafe {
        libc::getpwuid_r(
            libc::getuid(),
            entry.as_mut_ptr(),
            buffer.as_mut_ptr(),
            buffer.len(),
            &raw mut found,
        )
    };
    if status != 0 || found.is_null() {
        return None;
    }
    // SAFETY: the call succeeded, so the entry is initialised and `pw_dir`
    // points at a NUL-terminated string inside `buffer`, alive here.
    let dir = unsafe { std::ffi::CStr::from_ptr(entry.assume_init().pw_dir) };
    let dir = std::ffi::OsStr::from_bytes(dir.to_bytes());
    (!dir.is_empty() && dir.as_bytes().starts_with(b"/")).then(|| PathBuf::from(dir))
}

/// Where the state directory goes before the XDG places: nowhere on Unix
/// (Windows: `%LOCALAPPDATA%\retry\state`).
pub(crate) fn system_state_dir() -> Option<PathBuf> {
    None
}

/// The state directory of a user without a usable home.
pub(crate) fn fallback_state_dir() -> PathBuf {
    let uid = rustix::process::getuid().as_raw();
    PathBuf::from(format!("/tmp/retry-state-{uid}"))
}

/// Whether `path` is a directory of this user's (followed).
pub(crate) fn is_own_dir(path: &std::path::Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| {
        meta.is_dir()
            && std::os::unix::fs::MetadataExt::uid(&meta) == rustix::process::geteuid().as_raw()
    })
}

/// Whether this user may make entries in directory `path`.
pub(crate) fn may_write_in(path: &std::path::Path) -> bool {
    rustix::fs::access(
        path,
        rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
    )
    .is_ok()
}

/// Why a presets file is not ours alone to write, as OpenSSH's `StrictModes`
/// judges `~/.ssh/config`: it must belong to us or root, and no one else
/// may write it (a group that is our own may). `None`: it is ours alone.
pub(crate) fn others_may_write(meta: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let me = rustix::process::geteuid().as_raw();
    let mode = meta.mode() & 0o7777;
    if meta.uid() != me && meta.uid() != 0 {
        return Some(format!(
            "belongs to another user (uid {}), not to you or root",
            meta.uid()
        ));
    }
    let group_of_others = meta.gid() != rustix::process::getegid().as_raw();
    if mode & 0o002 != 0 || (mode & 0o020 != 0 && group_of_others) {
        return Some(format!(
            "is writable by others (mode {mode:04o}; chmod go-w)"
        ));
    }
    None
}
