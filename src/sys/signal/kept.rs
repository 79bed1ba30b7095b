//! The signals the C library keeps for itself on Linux: glibc 32 and 33,
//! musl 32 to 34 (which is what bash's `kill -s RTMIN` sends on a musl
//! system). Both libraries' `sigaction` refuse them, so a process that
//! wants to catch them (or to ask how they are set) must use the system
//! call. Left alone, their default action ends retry at once, leaving the
//! attempt and the run's private directory behind.
//!
//! The kernel's action holds, besides the handler and its flags, the C
//! library's return trampoline (`sa_restorer`, which `x86_64` requires):
//! it is copied from a signal the C library itself installed for retry.
//! Other architectures (the layout differs) refuse, and docs/platforms.md says so.

use std::io;

/// The kernel's `struct sigaction` for `rt_sigaction` with a 64-bit set,
/// on `x86_64` and `aarch64`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct KernelAction {
    handler: usize,
    flags: u64,
    restorer: usize,
    mask: u64,
}

/// The trampoline is given (`x86_64` needs one; `aarch64`'s C libraries do not
/// set it and the kernel uses its own).
const SA_RESTORER: u64 = 0x0400_0000;

#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn rt_sigaction(
    signal: i32,
    new: Option<&KernelAction>,
    old: Option<&mut KernelAction>,
) -> io::Result<()> {
    let new = new.map_or(std::ptr::null(), std::ptr::from_ref);
    let old = old.map_or(std::ptr::null_mut(), std::ptr::from_mut);
    // SAFETY: both pointers are null or point at a KernelAction, the
    // layout this architecture's kernel reads and writes, with the set's
    // size passed; a new action is a handler constant or retry's own
    // handler with the C library's trampoline.
    let result =
        unsafe { libc::syscall(libc::SYS_rt_sigaction, signal, new, old, size_of::<u64>()) };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(all(
    any(target_os = "linux", target_os = "android"),
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
fn rt_sigaction(_: i32, _: Option<&KernelAction>, _: Option<&mut KernelAction>) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// `signal`'s handler as the kernel has it (`SIG_DFL`, `SIG_IGN` or a
/// function), or `None` if it cannot be asked.
pub(super) fn handler(signal: i32) -> Option<libc::sighandler_t> {
    let mut old = KernelAction::default();
    rt_sigaction(signal, None, Some(&mut old)).ok()?;
    Some(old.handler)
}

/// Give `signal` a handler constant (`SIG_DFL`, `SIG_IGN`).
pub(super) fn set_handler(signal: i32, handler: libc::sighandler_t) {
    let action = KernelAction {
        handler,
        ..KernelAction::default()
    };
    let _ = rt_sigaction(signal, Some(&action), None);
}

/// Catch `signal` with `handler` (an `SA_SIGINFO` function, restarting
/// interrupted calls), using the return trampoline the C library gave
/// `installed`, a signal it set up for retry just before.
pub(crate) fn catch_like(signal: i32, installed: i32, handler: usize) -> io::Result<()> {
    let mut template = KernelAction::default();
    rt_sigaction(installed, None, Some(&mut template))?;
    let action = KernelAction {
        handler,
        flags: (libc::SA_SIGINFO | libc::SA_RESTART) as u64 | (template.flags & SA_RESTORER),
        restorer: template.restorer,
        mask: 0,
    };
    rt_sigaction(signal, Some(&action), None)
}
