//! Signal dispositions and masks of retry's own process, and dying of a
//! signal. The same POSIX calls on every system; they are `unsafe` in Rust,
//! so they live here.

/// Signals that end the run: forwarded to the attempt, whose group is then
/// terminated, and re-raised. USR1, USR2 and ALRM kill a process by default:
/// left unhandled, they would kill retry and orphan the attempt's group.
/// (SIGPIPE stays ignored: a closed reader is no reason to end the run.)
pub(crate) const TERMINATING: [i32; 7] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
];

/// Whether `signal`'s disposition is "ignore" (as the caller handed it to us).
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
