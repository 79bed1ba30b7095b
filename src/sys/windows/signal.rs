//! Windows' `sys::signal`: there are no signals to re-raise. A run that a
//! console event ended exits with 128+N, the number a shell would show for
//! the signal it stands for (`sys::signal_pipe`).

/// End the process of `signal`: impossible on Windows; the caller exits
/// with 128+N instead.
pub(crate) fn reraise(_signal: i32) {}
