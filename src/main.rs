//! `retry`: run a command until it succeeds. Parse, run, exit.
//!
//! The entry point is the C `main`, not Rust's: the Rust runtime's start-up
//! also sets up a stack-overflow handler, which reads `/proc/self/maps` to
//! find the main thread's stack and maps an alternate signal stack; about
//! twenty system calls that a process living a few milliseconds pays on
//! every run (BENCHMARKS.md). The two things of that start-up retry relies
//! on are done here. (The program's arguments still come from
//! `std::env::args_os`: the standard library records them before `main`.)

// Under `cargo test` the test harness brings its own `main`.
#![cfg_attr(not(test), no_main)]

#[cfg(not(test))]
#[unsafe(no_mangle)]
extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    standard_descriptors_open();
    // SAFETY: one disposition of our own process, set before anything else
    // runs. A closed reader must be a write error (EPIPE) for retry, never
    // its death: the Rust runtime ignores SIGPIPE for the same reason, and
    // the child gets the default back (`child::spawn`).
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    retry::app::run().terminate()
}

/// As the Rust runtime does: a closed descriptor 0, 1 or 2 becomes
/// `/dev/null`, or the first file retry opens would take its place (and
/// retry's messages would go into it).
#[cfg(not(test))]
fn standard_descriptors_open() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: `poll` reads and writes only the array it is given; `open`
    // gets a NUL-terminated path. Descriptors opened here are the lowest
    // free ones: exactly the closed standard ones, in order.
    unsafe {
        if libc::poll(fds.as_mut_ptr(), 3, 0) < 0 {
            return;
        }
        for pollfd in fds {
            if pollfd.revents & libc::POLLNVAL != 0
                && libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) < 0
            {
                libc::abort();
            }
        }
    }
}
