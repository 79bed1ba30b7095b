//! What macOS's libproc answers about a process (`proc_pidinfo`,
//! `PROC_PIDTBSDINFO`), turned into a [`ProcInfo`]: a pure function of the
//! record, compiled on every system so that the unit tests run it here.
//! Only the call is macOS's own (`macos.rs`).
//!
//! The record is `struct proc_bsdinfo` (xnu `bsd/sys/proc_info.h`, the
//! libc crate's `proc_bsdinfo`), filled by `proc_pidbsdinfo` in xnu
//! `bsd/kern/proc_info.c`: `pbi_status` is `p_stat` (`SZOMB` = 5,
//! `bsd/sys/proc.h`), `pbi_flags` has `PROC_FLAG_INEXIT` (4) while the
//! process works its way through `exit()`, and `pbi_start_tvsec`/`usec` is
//! `p_start`, the wall clock read once at `fork` and stored (a later clock
//! step does not move it). The tests' records carry those constants; their
//! pids and times are example values, not read from a running system (none
//! runs here).

use super::ProcInfo;

/// macOS: `SZOMB`, a process that ended and was not reaped yet.
const APPLE_SZOMB: u32 = 5;
/// macOS: `PROC_FLAG_INEXIT`, a process on its way out.
const APPLE_INEXIT: u32 = 4;

/// What retry reads of macOS's `struct proc_bsdinfo`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct BsdInfo {
    pub(super) flags: u32,
    pub(super) status: u32,
    pub(super) pid: u32,
    pub(super) ppid: u32,
    pub(super) pgid: u32,
    pub(super) start_sec: u64,
    pub(super) start_usec: u64,
}

/// A process from macOS's answer. A zombie, or a process in `exit()`, has
/// ended (libproc shows zombies only when asked: see `macos.rs`).
pub(super) fn from_bsdinfo(info: &BsdInfo) -> Option<ProcInfo> {
    let id = |n: u32| i32::try_from(n).ok();
    Some(ProcInfo {
        pid: id(info.pid)?,
        parent: id(info.ppid)?,
        group: id(info.pgid)?,
        start: info
            .start_sec
            .checked_mul(1_000_000)?
            .checked_add(info.start_usec)?,
        zombie: info.status == APPLE_SZOMB || info.flags & APPLE_INEXIT != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A running process (`SRUN`, 2), as `proc_pidinfo` gives it: example
    /// numbers, the flags and states of xnu's headers.
    fn sleeping() -> BsdInfo {
        BsdInfo {
            flags: 0x4010, // PROC_FLAG_EXEC | PROC_FLAG_LP64
            status: 2,     // SRUN
            pid: 81_234,
            ppid: 81_200,
            pgid: 81_234,
            start_sec: 1_718_000_000,
            start_usec: 250_000,
        }
    }

    #[test]
    fn macos_records_name_the_process_and_its_end() {
        let info = from_bsdinfo(&sleeping()).unwrap();
        assert_eq!(
            info,
            ProcInfo {
                pid: 81_234,
                parent: 81_200,
                group: 81_234,
                start: 1_718_000_000_250_000,
                zombie: false,
            }
        );
        // A zombie (SZOMB), and a process still in exit(): both ended.
        let zombie = BsdInfo {
            status: 5,
            ..sleeping()
        };
        assert!(from_bsdinfo(&zombie).unwrap().zombie);
        let exiting = BsdInfo {
            flags: 0x4014,
            ..sleeping()
        };
        assert!(from_bsdinfo(&exiting).unwrap().zombie);
        // Stopped (SSTOP, 4) is not ended.
        let stopped = BsdInfo {
            status: 4,
            ..sleeping()
        };
        assert!(!from_bsdinfo(&stopped).unwrap().zombie);
        // A pid past i32 or a start past u64 is no record to trust.
        let odd = BsdInfo {
            pid: u32::MAX,
            ..sleeping()
        };
        assert_eq!(from_bsdinfo(&odd), None);
        let late = BsdInfo {
            start_sec: u64::MAX,
            ..sleeping()
        };
        assert_eq!(from_bsdinfo(&late), None);
    }
}
