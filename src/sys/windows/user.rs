//! Windows' `sys::user`: the user's profile and local application data.

use std::path::PathBuf;

/// The user's home: `%USERPROFILE%`, where Unix reads the password
/// database.
pub(crate) fn password_home() -> Option<PathBuf> {
    std::env::var_os("USERPROFILE")
        .map(PathBuf::from)
        .filter(|home| home.is_absolute())
}

/// `%LOCALAPPDATA%\retry\state`, where Windows keeps a user's
/// application state on this machine (not roamed).
pub(crate) fn system_state_dir() -> Option<PathBuf> {
    std::env::var_os("LOCALAPPDATA")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join("retry").join("state"))
}

/// The state directory of a user without `%LOCALAPPDATA%`: in the user's
/// temporary directory.
pub(crate) fn fallback_state_dir() -> PathBuf {
    std::env::temp_dir().join("retry-state")
}

/// Whether `path` is a directory (its ACL, not an owner id, says whose).
pub(crate) fn is_own_dir(path: &std::path::Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| meta.is_dir())
}

/// Whether entries may be made in `path`: the attempt to make one says.
pub(crate) fn may_write_in(_path: &std::path::Path) -> bool {
    true
}

/// Why a file is not the user's alone to write: its ACL says, which retry
/// does not read on Windows (`None`). A presets file in the user's profile
/// inherits the profile's ACL: the user's, SYSTEM's and the
/// administrators'.
pub(crate) fn others_may_write(_meta: &std::fs::Metadata) -> Option<String> {
    None
}
