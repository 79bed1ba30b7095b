//! Threads of retry's own that must not take its signals: they are started
//! with every signal blocked, so that signals keep reaching the main thread.
//! Changing a thread's signal mask is `unsafe` in Rust, so it lives here.

use std::io;
use std::thread::{Builder, JoinHandle};

/// Start `work` on a thread named `name` with a stack of `stack_size`
/// bytes and every signal blocked (a thread inherits the mask it is made
/// under); the calling thread's mask is as before when this returns.
pub(crate) fn spawn_with_signals_blocked<F, T>(
    name: &str,
    stack_size: usize,
    work: F,
) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    // SAFETY: only this thread's signal mask changes: every signal is
    // blocked while the thread is made (which inherits the mask), and the
    // old mask is put back right after.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&raw mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const all, &raw mut old);
        let spawned = Builder::new()
            .name(name.into())
            .stack_size(stack_size)
            .spawn(work);
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const old, std::ptr::null_mut());
        spawned
    }
}
