//! Signal dispositions and masks of retry's own process, and dying of a
//! signal or stopping as a job does. The same POSIX calls on every system;
//! they are `unsafe` in Rust, so they live here.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

mod kept;
pub(crate) use kept::catch_like;

/// Signals that end the run: forwarded to the attempt, whose group is then
/// terminated, and re-raised. Every signal whose default action ends a
/// process, as coreutils `timeout` handles them (left at their default,
/// they would kill retry and orphan the attempt's group), except:
/// - SIGPIPE, which retry ignores: a closed reader is no reason to end the
///   run; SIGXFSZ, ignored as well, so that a write past `ulimit -f` fails
///   with EFBIG and takes its kind's error path;
/// - the faults of retry's own code (SIGILL, SIGFPE, SIGTRAP, SIGSYS): a
///   handler that returns would fault again; retry dies of them, and the
///   attempt with it (its keeper, its parent-death signal).
///
/// SIGSEGV and SIGBUS are caught: one sent by a process (`kill -SEGV`) ends
/// the run as the others do (Rust's stack-overflow handler would swallow
/// the first one); a real fault is told apart by its `si_code` and goes on
/// to the handler that was there before (Rust's), which dies of it.
const NAMED_TERMINATING: &[i32] = &[
    libc::SIGSEGV,
    libc::SIGBUS,
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

/// The real-time signals (their default action ends a process). On Linux
/// the kernel's 32 to 64, the first of which the C library keeps for its
/// threads (glibc 32 and 33, musl 32 to 34: its `sigaction` refuses them,
/// so they are installed with the system call itself, below); FreeBSD's
/// are fixed, 65 to 126 (`<sys/signal.h>`; the `libc` crate does not name
/// them); macOS has none.
fn realtime() -> std::ops::RangeInclusive<i32> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    return KERNEL_SIGRTMIN..=libc::SIGRTMAX();
    #[cfg(target_os = "freebsd")]
    return 65..=126;
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    #[allow(clippy::reversed_empty_ranges)]
    return 1..=0;
}

/// The kernel's first real-time signal on Linux.
#[cfg(any(target_os = "linux", target_os = "android"))]
const KERNEL_SIGRTMIN: i32 = 32;

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
            && !kept_by_the_c_library(signal)
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

/// The real-time signals the C library keeps for itself (Linux: 32 up to
/// its `SIGRTMIN`). An ignore of these is never the caller's: glibc's
/// `posix_spawn` sets them to "ignore" in every program it starts (Rust's
/// `Command`, so many test harnesses and supervisors), and a shell's
/// `trap '' 32` cannot set them (the C library refuses). So retry catches
/// them whatever it inherited, and the command gets their default.
fn kept_by_the_c_library(signal: i32) -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    return (KERNEL_SIGRTMIN..libc::SIGRTMIN()).contains(&signal);
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = signal;
        false
    }
}

/// Whether the caller handed retry `signal` ignored. Before the record
/// exists (a system without constructors) the present disposition answers,
/// except for SIGPIPE, which Rust's runtime changed: taken as not ignored.
pub(crate) fn caller_ignored(signal: i32) -> bool {
    if kept_by_the_c_library(signal) {
        return false;
    }
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
    handler_of(signal) == Some(libc::SIG_IGN)
}

/// Give `signal` its default action.
pub(crate) fn set_default(signal: i32) {
    set_handler(signal, libc::SIG_DFL);
}

/// Ignore `signal`.
pub(crate) fn ignore(signal: i32) {
    set_handler(signal, libc::SIG_IGN);
}

/// Counts the changes retry makes to its dispositions, so that what is
/// worked out from them (`sys::spawn::child_resets`) is worked out again
/// after one.
static CHANGES: AtomicU64 = AtomicU64::new(0);

/// How many times retry has changed its dispositions.
pub(crate) fn generation() -> u64 {
    CHANGES.load(Ordering::Acquire)
}

/// Say that a disposition changed (async-signal-safe).
pub(crate) fn changed() {
    CHANGES.fetch_add(1, Ordering::AcqRel);
}

/// `signal`'s handler now (`SIG_DFL`, `SIG_IGN` or a function), or `None`
/// if it cannot be asked.
pub(crate) fn handler_of(signal: i32) -> Option<libc::sighandler_t> {
    // SAFETY: querying a disposition (null new action) changes nothing.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signal, std::ptr::null(), &raw mut old) == 0 {
            return Some(old.sa_sigaction);
        }
    }
    kept::handler(signal)
}

/// `SIG_DFL` or `SIG_IGN` for `signal`, through the system call where the
/// C library refuses the number.
fn set_handler(signal: i32, handler: libc::sighandler_t) {
    // SAFETY: a disposition of our own process; no handler function is
    // involved.
    let refused = unsafe { libc::signal(signal, handler) } == libc::SIG_ERR;
    if refused {
        kept::set_handler(signal, handler);
    }
    // After the change: what is worked out from the old one is stale.
    changed();
}

/// Unblock `signals` for the calling thread (and the threads it starts).
/// On Linux through the system call: the C libraries' `sigaddset` refuses
/// the signals they keep (32 to 34), which a parent may hand us blocked.
pub(crate) fn unblock(signals: impl IntoIterator<Item = i32>) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let mask = signals
            .into_iter()
            .filter(|signal| (1..=64).contains(signal))
            .fold(0u64, |mask, signal| mask | 1 << (signal - 1));
        // SAFETY: rt_sigprocmask with a kernel sigset (64 bits, its size
        // passed) changes the calling thread's mask only.
        unsafe {
            libc::syscall(
                libc::SYS_rt_sigprocmask,
                libc::SIG_UNBLOCK,
                &raw const mask,
                std::ptr::null_mut::<u64>(),
                size_of::<u64>(),
            );
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
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
    // SAFETY: as above. `raise` refuses the signals the C library keeps
    // (32 to 34 on Linux); `kill` of our own process does not.
    unsafe {
        if libc::raise(signal) != 0 {
            libc::kill(libc::getpid(), signal);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminating_signals_include_the_realtime_ones_on_linux_and_no_fault() {
        let all: Vec<i32> = terminating().collect();
        for fault in [libc::SIGILL, libc::SIGFPE, libc::SIGTRAP, libc::SIGSYS] {
            assert!(!all.contains(&fault), "{fault}");
        }
        // Sent ones end the run; real ones go back to Rust's handler.
        assert!(all.contains(&libc::SIGSEGV) && all.contains(&libc::SIGBUS));
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
            // Those the C library keeps, which its sigaction refuses.
            for kept in 32..libc::SIGRTMIN() {
                assert!(all.contains(&kept), "{kept}");
            }
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
