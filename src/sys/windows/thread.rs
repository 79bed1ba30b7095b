//! Windows' `sys::thread`: no signal masks; a thread is a thread.

use std::io;
use std::thread::{Builder, JoinHandle};

/// Start `work` on a thread named `name` with a stack of `stack_size`
/// bytes (Unix blocks every signal in it; Windows has none to block).
pub(crate) fn spawn_with_signals_blocked<F, T>(
    name: &str,
    stack_size: usize,
    work: F,
) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    Builder::new()
        .name(name.into())
        .stack_size(stack_size)
        .spawn(work)
}
