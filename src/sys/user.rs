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
