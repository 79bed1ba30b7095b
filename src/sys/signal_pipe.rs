//! The handler of every signal retry catches, and the self-pipe through
//! which it wakes the main loop.
//!
//! The handler does only what is safe in a signal handler: it marks the
//! signal pending in a table of atomics (with whether the kernel sent it),
//! sets a flag when the signal ends the run, and writes one byte to a
//! non-blocking socket. The main loop `poll`s the other end and then takes
//! the pending signals from the table; several arrivals of one signal
//! before it looks count as one, as the kernel counts them.
//!
//! Why not signal-hook (which did this until the third round): its registry,
//! made for handlers added and removed at any time, copies its whole table
//! at each registration; for retry's ~50 signals (every real-time one
//! included) that was 2.3 M instructions, 60% of a run of `true`. retry
//! installs one handler per signal, once, before any thread exists: a plain
//! `sigaction` loop, as coreutils `timeout` does.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, IntoRawFd};
use std::os::unix::net::UnixStream;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};

/// The slots, one per signal number (numbers stay under 128 on every system
/// retry builds for).
const SIGNALS: usize = 128;
/// A slot's bits: the signal arrived and is not taken yet; the kernel sent
/// it (a terminal's key, a resource limit) rather than a process; the
/// signal ends the run (set at installation).
const PENDING: u8 = 1;
const FROM_KERNEL: u8 = 2;
const ENDS_RUN: u8 = 4;

static SLOTS: [AtomicU8; SIGNALS] = [const { AtomicU8::new(0) }; SIGNALS];
/// The write end of the self-pipe, for the handler (-1: none yet).
static WAKE: AtomicI32 = AtomicI32::new(-1);
/// Set by the handler of a signal that ends the run.
static ENDING_ARRIVED: AtomicBool = AtomicBool::new(false);
/// Retry's pid, set at installation. The handler can run in another
/// process: a child between its clone and its `execve` shares retry's
/// memory and handlers (`sys::spawn`), a fork has copies of them.
static RETRY: AtomicI32 = AtomicI32::new(0);

/// `si_code` of a signal the kernel sent. macOS leaves `si_code` at 0 for
/// every signal, so there a terminal's key cannot be told from `kill`.
#[cfg(any(target_os = "linux", target_os = "android"))]
const SI_KERNEL: i32 = libc::SI_KERNEL;
#[cfg(target_os = "freebsd")]
const SI_KERNEL: i32 = 0x10006; // <sys/signal.h>; not in the `libc` crate
#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
const SI_KERNEL: i32 = i32::MIN; // never matches

/// Whether [`Arrival::from_kernel`] can be told: Linux and FreeBSD mark a
/// signal the kernel sent (a terminal's key); macOS leaves `si_code` at 0
/// for every signal. The portable build takes macOS's way, so that the
/// tests run it.
pub(crate) const SENDER_KNOWN: bool = cfg!(all(
    any(
        target_os = "linux",
        target_os = "android",
        target_os = "freebsd"
    ),
    not(retry_posix)
));

/// A signal taken from the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Arrival {
    pub(crate) signal: i32,
    /// The kernel sent it: for SIGINT, SIGQUIT, SIGHUP and SIGTSTP, a
    /// terminal, which sent it to the whole foreground group as well.
    pub(crate) from_kernel: bool,
}

/// The installed handlers' self-pipe: the end to watch and to drain. The
/// write end stays open for the life of the process: a handler that read
/// its number just before this is dropped must not write into whatever file
/// reuses the number.
pub(crate) struct SignalPipe {
    read: UnixStream,
}

impl SignalPipe {
    /// Catch `caught` (the first `ending` of them end the run) with the
    /// handler. Call once, before any other thread exists.
    pub(crate) fn install(caught: &[i32], ending: usize) -> io::Result<SignalPipe> {
        let (read, write) = UnixStream::pair()?;
        read.set_nonblocking(true)?;
        write.set_nonblocking(true)?;
        WAKE.store(write.into_raw_fd(), Ordering::SeqCst);
        RETRY.store(this_process(), Ordering::SeqCst);
        // A signal the C library installed: the model for those it refuses.
        let mut installed = None;
        for (index, &signal) in caught.iter().enumerate() {
            let slot = usize::try_from(signal)
                .ok()
                .and_then(|number| SLOTS.get(number))
                .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
            if index < ending {
                slot.fetch_or(ENDS_RUN, Ordering::SeqCst);
            }
            match (catch(signal), installed) {
                (Ok(()), _) => installed = installed.or(Some(signal)),
                // One the C library keeps for itself (Linux 32 to 34).
                (Err(error), Some(model)) if error.raw_os_error() == Some(libc::EINVAL) => {
                    crate::sys::signal::catch_like(signal, model, on_signal as *const () as usize)?;
                }
                (Err(error), _) => return Err(error),
            }
        }
        crate::sys::signal::changed();
        Ok(SignalPipe { read })
    }

    /// The end that becomes readable when a signal arrives.
    pub(crate) fn readable(&self) -> BorrowedFd<'_> {
        self.read.as_fd()
    }

    /// The signals that arrived since the last call, by number; the pipe is
    /// emptied first, so that a signal arriving meanwhile leaves it readable.
    pub(crate) fn take(&self) -> Vec<Arrival> {
        let mut buffer = [0u8; 64];
        while matches!(io::Read::read(&mut &self.read, &mut buffer), Ok(n) if n > 0) {}
        SLOTS
            .iter()
            .enumerate()
            .filter_map(|(signal, slot)| {
                let bits = slot.fetch_and(!(PENDING | FROM_KERNEL), Ordering::SeqCst);
                (bits & PENDING != 0).then_some(Arrival {
                    signal: signal as i32,
                    from_kernel: bits & FROM_KERNEL != 0,
                })
            })
            .collect()
    }
}

impl Drop for SignalPipe {
    fn drop(&mut self) {
        // The handlers stay; they no longer wake anyone.
        WAKE.store(-1, Ordering::SeqCst);
    }
}

/// The handler every caught signal has, as `sigaction` reports it.
pub(crate) fn handler() -> libc::sighandler_t {
    on_signal as *const () as libc::sighandler_t
}

/// The pid of the process the handler runs in: the system call itself,
/// which a child that shares retry's memory answers with its own pid (a C
/// library that kept the pid in memory would answer with retry's).
fn this_process() -> i32 {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    // SAFETY: getpid takes no argument and cannot fail.
    return unsafe { libc::syscall(libc::SYS_getpid) } as i32;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    // SAFETY: as above (no child shares memory there: `fork` only).
    return unsafe { libc::getpid() };
}

/// In a process of retry's making that has not executed its program yet
/// (above): take the signal's default action, as that program would. Put
/// the default back and send the signal again; blocked while this handler
/// runs, it arrives as soon as the handler returns. Nothing of retry's is
/// touched. (The child sets back what `execve` would not itself; for every
/// signal with this handler that is the default: `sys::spawn`.)
fn act_as_the_default(signal: i32) {
    crate::sys::signal::set_default(signal);
    // SAFETY: kill(2) to our own pid, async-signal-safe.
    unsafe {
        libc::kill(this_process(), signal);
    }
}

/// Whether a signal that ends the run has arrived since installation.
pub(crate) fn ending_arrived() -> bool {
    ENDING_ARRIVED.load(Ordering::SeqCst)
}

/// SIGSEGV and SIGBUS: their actions before retry's (Rust's stack-overflow
/// handler), which a real fault goes back to.
const FAULTS: [i32; 2] = [libc::SIGSEGV, libc::SIGBUS];
static BEFORE_FAULT: [OnceLock<libc::sigaction>; 2] = [OnceLock::new(), OnceLock::new()];

fn catch(signal: i32) -> io::Result<()> {
    let fault = FAULTS.iter().position(|&f| f == signal);
    // SAFETY: a zeroed sigaction is a valid argument once its handler, flags
    // and (empty) mask are set; `on_signal` has the SA_SIGINFO signature and
    // does only async-signal-safe work. The previous action is written
    // whole into `before`.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        if fault.is_some() {
            // A stack overflow leaves no room on the thread's own stack.
            action.sa_flags |= libc::SA_ONSTACK;
        }
        libc::sigemptyset(&raw mut action.sa_mask);
        let mut before: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signal, &raw const action, &raw mut before) != 0 {
            return Err(io::Error::last_os_error());
        }
        if let Some(index) = fault {
            let _ = BEFORE_FAULT[index].set(before);
        }
    }
    Ok(())
}

/// The `si_code` of a signal a process sent (`kill`, `sigqueue`,
/// `tgkill`), not of a fault of the receiving thread's own.
fn sent_by_a_process(code: i32) -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    return code <= 0;
    // SI_USER, SI_QUEUE and FreeBSD's SI_LWP; macOS leaves 0.
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    return code <= 0 || matches!(code, 0x10001 | 0x10002 | 0x10007);
}

/// A real fault of retry's own (not a `kill -SEGV`): put back the action
/// that was there before ours. The faulting instruction runs again on
/// return, and faults into that action (Rust's, which reports a stack
/// overflow and dies; or the default, which dies).
fn hand_fault_back(index: usize, signal: i32) {
    // SAFETY: sigaction is async-signal-safe; the saved action is a whole
    // sigaction the system gave us, or a zeroed one holding SIG_DFL.
    unsafe {
        let default: libc::sigaction = std::mem::zeroed();
        let before = BEFORE_FAULT[index].get().unwrap_or(&default);
        libc::sigaction(signal, before, std::ptr::null_mut());
    }
    crate::sys::signal::changed();
}

extern "C" fn on_signal(signal: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // The interrupted code may be between a call and its look at errno.
    let errno = errno::errno();
    if this_process() != RETRY.load(Ordering::SeqCst) {
        act_as_the_default(signal);
        errno::set_errno(errno);
        return;
    }
    let code = if info.is_null() {
        1
    } else {
        // SAFETY: the kernel passes a valid siginfo_t with SA_SIGINFO.
        unsafe { (*info).si_code }
    };
    if let Some(index) = FAULTS.iter().position(|&f| f == signal)
        && !sent_by_a_process(code)
    {
        hand_fault_back(index, signal);
        errno::set_errno(errno);
        return;
    }
    let from_kernel = code == SI_KERNEL;
    if let Some(slot) = usize::try_from(signal).ok().and_then(|n| SLOTS.get(n)) {
        let bits = slot.fetch_or(
            PENDING | if from_kernel { FROM_KERNEL } else { 0 },
            Ordering::SeqCst,
        );
        if bits & ENDS_RUN != 0 {
            ENDING_ARRIVED.store(true, Ordering::SeqCst);
        }
    }
    let wake = WAKE.load(Ordering::SeqCst);
    if wake >= 0 {
        // SAFETY: write(2) is async-signal-safe; the descriptor is the
        // non-blocking write end, never closed. A full pipe
        // already wakes the reader: the byte is not needed then.
        unsafe {
            libc::write(wake, b"s".as_ptr().cast(), 1);
        }
    }
    errno::set_errno(errno);
}

#[cfg(test)]
mod tests {
    use super::*;

    // The handler's table is the process's: one test owns it, with signals
    // nothing else in the test binary uses.
    #[test]
    fn arrivals_are_taken_once_with_their_origin_and_ending_ones_raise_the_flag() {
        let pipe = SignalPipe::install(&[libc::SIGUSR2, libc::SIGWINCH], 1).unwrap();
        assert!(pipe.take().is_empty());
        assert!(!ending_arrived());
        // SAFETY: test code raising signals it handles.
        unsafe {
            libc::raise(libc::SIGWINCH);
        }
        let taken = pipe.take();
        assert_eq!(
            taken,
            [Arrival {
                signal: libc::SIGWINCH,
                from_kernel: false
            }]
        );
        assert!(!ending_arrived(), "SIGWINCH does not end the run");
        // SAFETY: as above; twice before a look counts once.
        unsafe {
            libc::raise(libc::SIGUSR2);
            libc::raise(libc::SIGUSR2);
        }
        let taken: Vec<i32> = pipe.take().iter().map(|a| a.signal).collect();
        assert_eq!(taken, [libc::SIGUSR2]);
        assert!(ending_arrived());
        assert!(pipe.take().is_empty());
    }

    /// Run this test binary's `test` alone, in a process of its own, with
    /// `RETRY_TEST_FAULT` set: its status and stderr (killed after 30 s: a
    /// fault that loops in a handler never ends by itself).
    fn alone(test: &str) -> (std::process::ExitStatus, String) {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", test, "--nocapture", "--test-threads", "1"])
            .env("RETRY_TEST_FAULT", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > std::time::Duration::from_secs(30) {
                child.kill().unwrap();
                panic!("the faulting process did not end");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        (
            out.status,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    #[test]
    fn a_real_fault_still_dies_through_the_handler_that_was_there_before() {
        use std::os::unix::process::ExitStatusExt;
        #[allow(unconditional_recursion)]
        fn deep(n: u64) -> u64 {
            let mut frame = [n; 512];
            std::hint::black_box(&mut frame);
            deep(n + 1) + frame[7]
        }
        if std::env::var_os("RETRY_TEST_FAULT").is_some() {
            // In the process of its own: retry's handlers, then a stack
            // overflow, which must reach Rust's handler (it says so and
            // aborts) rather than loop in retry's.
            let _pipe = SignalPipe::install(&[libc::SIGSEGV, libc::SIGBUS], 2).unwrap();
            std::hint::black_box(deep(0));
            return;
        }
        let (status, stderr) = alone(
            "sys::signal_pipe::tests::a_real_fault_still_dies_through_the_handler_that_was_there_before",
        );
        assert_eq!(status.signal(), Some(libc::SIGABRT), "{stderr}");
        assert!(stderr.contains("has overflowed its stack"), "{stderr}");
    }
}

#[cfg(test)]
mod in_a_child {
    use super::*;

    /// Start `child` in a process that shares this one's memory
    /// (`CLONE_VM`, as `sys::spawn`'s child does until its `execve`) on a
    /// stack of its own; the wait status it ends with.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn sharing_memory(child: extern "C" fn(*mut libc::c_void) -> libc::c_int) -> i32 {
        let mut stack = vec![0u8; 256 * 1024];
        // SAFETY: the stack is ours and outlives the child (waited for
        // below); the child makes only system calls and handler work.
        let pid = unsafe {
            let top = stack.as_mut_ptr().add(stack.len()).cast::<libc::c_void>();
            libc::clone(
                child,
                top,
                libc::CLONE_VM | libc::SIGCHLD,
                std::ptr::null_mut(),
            )
        };
        assert!(pid > 0, "clone: {}", io::Error::last_os_error());
        let mut status = 0;
        // SAFETY: waits for our own child.
        while unsafe { libc::waitpid(pid, &raw mut status, 0) } < 0 {}
        drop(stack);
        status
    }

    /// Sends itself SIGUSR1, then exits 0 if it is still alive.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    extern "C" fn signals_itself(_: *mut libc::c_void) -> libc::c_int {
        // SAFETY: system calls on our own process.
        unsafe {
            let me = libc::syscall(libc::SYS_getpid) as libc::pid_t;
            libc::kill(me, libc::SIGUSR1);
            libc::syscall(libc::SYS_exit, 0);
        }
        0
    }

    /// Run this test alone, in a process of its own (it installs a
    /// handler for SIGUSR1, which ends the run).
    fn alone(test: &str) {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", test, "--nocapture", "--test-threads", "1"])
            .env("RETRY_TEST_IN_A_CHILD", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn a_signal_in_a_child_sharing_retrys_memory_takes_its_default_and_leaves_retry_alone() {
        if std::env::var_os("RETRY_TEST_IN_A_CHILD").is_none() {
            return alone(
                "sys::signal_pipe::in_a_child::a_signal_in_a_child_sharing_retrys_memory_takes_its_default_and_leaves_retry_alone",
            );
        }
        let pipe = SignalPipe::install(&[libc::SIGUSR1], 1).unwrap();
        let status = sharing_memory(signals_itself);
        assert!(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGUSR1,
            "the child ended with status {status:#x}, not killed by SIGUSR1"
        );
        assert!(pipe.take().is_empty(), "retry saw the child's signal");
        assert!(!ending_arrived());
        // Retry itself still catches it.
        // SAFETY: raising a signal this process handles.
        unsafe {
            libc::raise(libc::SIGUSR1);
        }
        assert_eq!(pipe.take().len(), 1);
    }

    #[test]
    fn a_signal_in_a_fork_takes_its_default_and_does_not_wake_retry() {
        if std::env::var_os("RETRY_TEST_IN_A_CHILD").is_none() {
            return alone(
                "sys::signal_pipe::in_a_child::a_signal_in_a_fork_takes_its_default_and_does_not_wake_retry",
            );
        }
        let pipe = SignalPipe::install(&[libc::SIGUSR1], 1).unwrap();
        // SAFETY: the child makes only system calls, then `_exit`s.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // SAFETY: as above.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGUSR1);
                libc::_exit(0);
            }
        }
        let mut status = 0;
        // SAFETY: waits for our own child.
        while unsafe { libc::waitpid(pid, &raw mut status, 0) } < 0 {}
        assert!(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGUSR1,
            "the child ended with status {status:#x}, not killed by SIGUSR1"
        );
        // The self-pipe is shared with the fork: its byte would be here.
        let mut byte = [0u8; 1];
        assert!(
            io::Read::read(&mut &pipe.read, &mut byte).is_err(),
            "the fork's handler woke retry"
        );
    }
}
