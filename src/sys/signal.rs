//! Signal dispositions and masks of retry's own process, and dying of a
//! signal or stopping as a job does. The same POSIX calls on every system;
//! they are `unsafe` in Rust, so they live here.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Signals that end the run: forwarded to the attempt, whose group is then
/// terminated, and re-raised. Every signal whose default action ends a
/// process, as coreutils `timeout` handles them (left at their default,
/// they would kill retry and orphan the attempt's group), except:
/// - SIGPIPE, which retry ignores: a closed reader is no reason to end the
///   run; SIGXFSZ, ignored as well, so that a write past `ulimit -f` fails
///   with EFBIG and takes its kind's error path;
/// - the faults of retry's own code (SIGSEGV, SIGBUS, SIGILL, SIGFPE,
///   SIGTRAP, SIGSYS): a handler that returns would fault again; retry dies
///   of them, and the attempt's direct child of its parent-death signal.
const NAMED_TERMINATING: &[i32] = &[
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    // systemd's watchdog sends it (WatchdogSignal=).
    libc::SIGABRT,
    libc::SIGXCPU,
    libc::SIGVTALRM,
    libc::SIGPROF,
    #[cfg(any(target_os = "linux", target_os = "android"))]
    libc::SIGPWR,
    #[cfg(any(target_os = "linux", target_os = "android"))]
    libc::SIGSTKFLT,
    // SIGPOLL: its default ends a process on Linux only (elsewhere SIGIO is
    // ignored by default).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    libc::SIGIO,
    #[cfg(any(target_os = "freebsd", target_vendor = "apple"))]
    libc::SIGEMT,
];

/// The real-time signals (their default action ends a process). Linux's
/// C library says which (it keeps the first few for its threads); FreeBSD's
/// are fixed, 65 to 126 (`<sys/signal.h>`; the `libc` crate does not name
/// them); macOS has none.
fn realtime() -> std::ops::RangeInclusive<i32> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    return libc::SIGRTMIN()..=libc::SIGRTMAX();
    #[cfg(target_os = "freebsd")]
    return 65..=126;
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    #[allow(clippy::reversed_empty_ranges)]
    return 1..=0;
}

/// Every signal that ends the run (see [`NAMED_TERMINATING`]).
pub(crate) fn terminating() -> impl Iterator<Item = i32> + Clone {
    NAMED_TERMINATING.iter().copied().chain(realtime())
}

/// Signals retry gives a disposition of its own besides the terminating
/// ones: handled (CHLD, TSTP, CONT) or ignored (PIPE, XFSZ, TTIN, TTOU).
const OWN_DISPOSITIONS: [i32; 7] = [
    libc::SIGCHLD,
    libc::SIGTSTP,
    libc::SIGCONT,
    libc::SIGPIPE,
    libc::SIGXFSZ,
    libc::SIGTTIN,
    libc::SIGTTOU,
];

/// Every signal whose disposition retry changes for itself: the child gets
/// each back as the caller left it (`caller_ignored`, else the default).
pub(crate) fn changed_by_retry() -> impl Iterator<Item = i32> {
    terminating().chain(OWN_DISPOSITIONS)
}

/// The signals the caller left ignored, as bits (1 << signal); signal
/// numbers stay under 128 on every system retry builds for.
static CALLER_IGNORED: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];
static RECORDED: AtomicBool = AtomicBool::new(false);

/// Record which signals the caller left ignored. Rust's runtime sets
/// SIGPIPE to "ignore" before `main` (whatever the caller had), so this
/// runs earlier, as a constructor of the executable (below): under
/// `trap '' PIPE` (and systemd services, which ignore SIGPIPE) the command
/// must keep SIGPIPE ignored, as under coreutils `timeout`.
extern "C" fn record_caller_ignores() {
    for signal in changed_by_retry() {
        if let Ok(bit) = u32::try_from(signal)
            && is_ignored(signal)
            && let Some(word) = CALLER_IGNORED.get((bit / 64) as usize)
        {
            word.fetch_or(1 << (bit % 64), Ordering::Relaxed);
        }
    }
    RECORDED.store(true, Ordering::Release);
}

// The constructor: one function pointer in the section the C runtime runs
// before `main` (ELF `.init_array`; Mach-O's `__mod_init_func`). One entry
// does not need the `ctor` crate's macros.
#[used]
#[cfg_attr(
    any(target_os = "linux", target_os = "android", target_os = "freebsd"),
    unsafe(link_section = ".init_array")
)]
#[cfg_attr(
    target_vendor = "apple",
    unsafe(link_section = "__DATA,__mod_init_func")
)]
static RECORD_CALLER_IGNORES: extern "C" fn() = record_caller_ignores;

/// Whether the caller handed retry `signal` ignored. Before the record
/// exists (a system without constructors) the present disposition answers,
/// except for SIGPIPE, which Rust's runtime changed: taken as not ignored.
pub(crate) fn caller_ignored(signal: i32) -> bool {
    if !RECORDED.load(Ordering::Acquire) {
        return signal != libc::SIGPIPE && is_ignored(signal);
    }
    let Ok(bit) = u32::try_from(signal) else {
        return false;
    };
    CALLER_IGNORED
        .get((bit / 64) as usize)
        .is_some_and(|word| word.load(Ordering::Relaxed) & (1 << (bit % 64)) != 0)
}

/// `signal` as rustix sends it: a named signal or a real-time one (which
/// rustix names only through an unchecked constructor); `None` for a
/// number that is neither.
pub(crate) fn to_send(signal: i32) -> Option<rustix::process::Signal> {
    if let Some(named) = rustix::process::Signal::from_named_raw(signal) {
        return Some(named);
    }
    if !realtime().contains(&signal) {
        return None;
    }
    // SAFETY: a real-time signal of the C library's range, not one it
    // reserves for itself (below SIGRTMIN): what `from_raw_unchecked` asks.
    Some(unsafe { rustix::process::Signal::from_raw_unchecked(signal) })
}

/// Whether `signal`'s disposition is "ignore" now.
pub(crate) fn is_ignored(signal: i32) -> bool {
    // SAFETY: querying a disposition (null new action) changes nothing.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &raw mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}

/// Give `signal` its default action.
pub(crate) fn set_default(signal: i32) {
    // SAFETY: a disposition of our own process; no handler is involved.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
    }
}

/// Ignore `signal`.
pub(crate) fn ignore(signal: i32) {
    // SAFETY: a disposition of our own process; no handler is involved.
    unsafe {
        libc::signal(signal, libc::SIG_IGN);
    }
}

/// Unblock `signals` for the calling thread (and the threads it starts).
pub(crate) fn unblock(signals: impl IntoIterator<Item = i32>) {
    // SAFETY: the set is initialised by sigemptyset before use; changing the
    // calling thread's mask shares no memory.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        for signal in signals {
            libc::sigaddset(&raw mut set, signal);
        }
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &raw const set, std::ptr::null_mut());
    }
}

/// Stop retry as `signal` (SIGTSTP, SIGTTIN, SIGTTOU) stops a job, and
/// return once it is continued (SIGCONT: `fg`, `bg`). Its handler (or
/// ignore) is put aside meanwhile and back afterwards. In an orphaned
/// process group the kernel discards these signals: this returns at once.
pub(crate) fn stop_as(signal: i32) {
    // SAFETY: the dispositions of our own process: the previous action is
    // saved whole into `old` and restored as it was; a zeroed sigaction
    // holding SIG_DFL is a valid argument.
    unsafe {
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signal, &raw const default, &raw mut old) != 0 {
            return;
        }
        unblock([signal]);
        libc::raise(signal);
        libc::sigaction(signal, &raw const old, std::ptr::null_mut());
    }
}

/// Die of `signal`, without a core file (the crash was the child's, not
/// ours). Returns only if the signal was not fatal.
pub(crate) fn reraise(signal: i32) {
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain system calls on our own process; no memory is shared.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &raw const no_core);
    }
    // Linux also asks for the process not to be dumpable (a core pattern
    // that pipes to a program ignores RLIMIT_CORE).
    #[cfg(target_os = "linux")]
    // SAFETY: as above.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    set_default(signal);
    unblock([signal]);
    // SAFETY: as above.
    unsafe {
        libc::raise(signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminating_signals_include_the_realtime_ones_on_linux_and_no_fault() {
        let all: Vec<i32> = terminating().collect();
        for fault in [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE] {
            assert!(!all.contains(&fault), "{fault}");
        }
        for kept in [libc::SIGPIPE, libc::SIGXFSZ, libc::SIGKILL, libc::SIGSTOP] {
            assert!(!all.contains(&kept), "{kept}");
        }
        assert!(all.contains(&libc::SIGXCPU));
        for signal in all.iter().copied() {
            assert!(to_send(signal).is_some(), "{signal}");
        }
        #[cfg(target_os = "linux")]
        {
            assert!(all.contains(&libc::SIGPWR));
            assert!(all.contains(&(libc::SIGRTMIN() + 3)));
            assert!(all.contains(&libc::SIGRTMAX()));
        }
        let mut unique = all.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), all.len(), "no signal twice");
    }

    #[test]
    fn the_callers_ignores_were_recorded_before_main() {
        // The test harness is started like retry: the constructor ran, and
        // SIGPIPE (which the runtime ignores now) reads as the caller left it.
        assert!(RECORDED.load(Ordering::Acquire));
        assert!(is_ignored(libc::SIGPIPE));
    }
}
