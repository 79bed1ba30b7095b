//! Windows' console control events, in the place of Unix's signal pipe: a
//! Ctrl-C, a Ctrl-Break, or the console closing (and logoff, shutdown)
//! reach retry through a handler (`SetConsoleCtrlHandler`), which notes
//! the event and sets an event object the run waits on.
//!
//! Why not the `ctrlc` crate: it calls one closure for every kind of
//! event, and retry tells them apart: a Ctrl-C ends the run as SIGINT does
//! elsewhere (130), a Ctrl-Break as SIGTERM (143), the console closing as
//! SIGHUP (129) (`process::signals` names them). The handler runs on a thread of the system's and only
//! stores atomics and sets the event.
//!
//! A Ctrl-C typed in a console reaches every process attached to it except
//! those started with `CREATE_NEW_PROCESS_GROUP` (the attempts), so retry
//! hears it, stops scheduling, and gives the attempt a Ctrl-Break of its
//! own before `--kill-after` ends its job.

use std::io;
use std::os::windows::io::{AsRawHandle, OwnedHandle};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use windows_sys::Win32::System::Console::{
    CTRL_BREAK_EVENT, CTRL_C_EVENT, CTRL_CLOSE_EVENT, CTRL_LOGOFF_EVENT, CTRL_SHUTDOWN_EVENT,
    SetConsoleCtrlHandler,
};

use super::fd::{AsFd, BorrowedFd};

/// The events that arrived and were not taken yet: bit 0 Ctrl-C, bit 1
/// Ctrl-Break, bit 2 the console closing.
static PENDING: AtomicU32 = AtomicU32::new(0);
static ENDING_ARRIVED: AtomicBool = AtomicBool::new(false);
/// Set by the handler; what the run waits on.
static WAKE: OnceLock<OwnedHandle> = OnceLock::new();

unsafe extern "system" fn on_event(kind: u32) -> windows_sys::core::BOOL {
    let bit = match kind {
        CTRL_C_EVENT => 1,
        CTRL_BREAK_EVENT => 2,
        CTRL_CLOSE_EVENT | CTRL_LOGOFF_EVENT | CTRL_SHUTDOWN_EVENT => 4,
        _ => return 0,
    };
    PENDING.fetch_or(bit, Ordering::SeqCst);
    ENDING_ARRIVED.store(true, Ordering::SeqCst);
    if let Some(wake) = WAKE.get() {
        super::windows::set_event(wake.as_raw_handle());
    }
    1
}

/// A console control event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arrival {
    CtrlC,
    CtrlBreak,
    /// The console closing, the user logging off, the system shutting down.
    Close,
}

/// The installed handler: what the run waits on, and what arrived.
pub(crate) struct SignalPipe;

#[allow(
    clippy::unused_self,
    reason = "the handler is the process's: a value stands for its installation"
)]
impl SignalPipe {
    /// Install the handler (once per process; a second call shares it).
    pub(crate) fn install() -> io::Result<SignalPipe> {
        if WAKE.get().is_none() {
            let event = super::windows::new_event()?;
            let _ = WAKE.set(event);
        }
        // SAFETY: `on_event` has the handler routine's signature and only
        // touches atomics and an event handle that lives as long as the
        // process (a static).
        if unsafe { SetConsoleCtrlHandler(Some(on_event), 1) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(SignalPipe)
    }

    /// The event set when something arrives.
    pub(crate) fn readable(&self) -> BorrowedFd<'static> {
        WAKE.get().expect("made by install").as_fd()
    }

    /// What arrived since the last look, in the order of their numbers.
    pub(crate) fn take(&self) -> Vec<Arrival> {
        if let Some(wake) = WAKE.get() {
            super::windows::reset_event(wake.as_raw_handle());
        }
        let bits = PENDING.swap(0, Ordering::SeqCst);
        [
            (1, Arrival::CtrlC),
            (2, Arrival::CtrlBreak),
            (4, Arrival::Close),
        ]
        .into_iter()
        .filter(|(bit, _)| bits & bit != 0)
        .map(|(_, arrival)| arrival)
        .collect()
    }
}

/// Whether an event that ends the run has arrived since installation.
pub(crate) fn ending_arrived() -> bool {
    ENDING_ARRIVED.load(Ordering::SeqCst)
}
