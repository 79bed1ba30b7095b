//! What an attempt (or a hook) is started with, the same on every system:
//! its argv, the variables it gets, its process model and its standard
//! streams; and how its name is shown in a message.

use std::ffi::OsString;

use crate::sys::fd::OwnedFd;

/// A standard descriptor for the child. Kept as data: `spawn` is lent the
/// descriptors (it hands the child duplicates), and `Null` opens the null
/// device (`/dev/null`, `NUL`) only for a spawn that needs it.
pub(crate) enum ChildIo {
    Inherit,
    Null,
    Fd(OwnedFd),
}

pub(crate) struct Launch<'a> {
    pub(crate) argv: &'a [OsString],
    pub(crate) env: Vec<(&'static str, OsString)>,
    pub(crate) own_group: bool,
    pub(crate) stdin: ChildIo,
    pub(crate) stdout: ChildIo,
    pub(crate) stderr: ChildIo,
}

/// The argv that runs `line` in the system's shell: `/bin/sh -c LINE`;
/// on Windows `cmd.exe /d /c LINE`, the line handed to cmd as it is.
pub(crate) fn shell(line: &std::ffi::OsStr) -> Vec<OsString> {
    crate::sys::spawn::shell(line)
}

/// The command's name as a message shows it: quoted as a shell would take
/// it back (`'curlx'`), on one line, control characters escaped, and an
/// empty one visible.
pub(super) fn shown(program: &std::ffi::OsStr) -> String {
    if program.is_empty() {
        return "'' (an empty command name)".to_string();
    }
    let word = crate::text::shell_word(program);
    let word = if word.starts_with('\'') || word.starts_with("$'") {
        word
    } else {
        format!("'{word}'")
    };
    crate::text::sanitize_line(&word, 200)
}
