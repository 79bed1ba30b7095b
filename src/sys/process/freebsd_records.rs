//! What FreeBSD answers about processes (`sysctl kern.proc`), turned into
//! [`ProcInfo`]s, and how such a read is made again when the table outgrew
//! its room or the clock was stepped: pure functions, compiled on every
//! system so that the unit tests run them here. Only the calls are
//! FreeBSD's own (`freebsd.rs`).
//!
//! The record is `struct kinfo_proc` (`sys/sys/user.h`, the libc crate's
//! `kinfo_proc`; `ki_structsize` is `KINFO_PROC_SIZE`, 1088 bytes on amd64
//! and arm64, `sys/*/include/proc.h`), filled by `fill_kinfo_proc_only` in
//! `sys/kern/kern_proc.c`: `ki_stat` is `SZOMB` (5, `sys/sys/proc.h`) for a
//! zombie, and `ki_start` is `p_start` (the uptime at `fork`) plus the boot
//! time *as of the read*: the boot time moves when the clock is stepped
//! (`settimeofday`, ntpd's step), and every `ki_start` with it. The tests'
//! records carry those constants; their pids and times are example values,
//! not read from a running system (none runs here).

use rustix::io::Errno;

use super::ProcInfo;

/// FreeBSD: `SZOMB` (the libc crate's `SZOMB`).
const FREEBSD_SZOMB: i8 = 5;

/// A `struct timeval`, as FreeBSD gives it (`ki_start`, `kern.boottime`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Timeval {
    pub(super) sec: i64,
    pub(super) usec: i64,
}

impl Timeval {
    fn micros(self) -> Option<i64> {
        self.sec.checked_mul(1_000_000)?.checked_add(self.usec)
    }
}

/// What retry reads of FreeBSD's `struct kinfo_proc`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Kinfo {
    /// `ki_structsize`: the kernel's size of the record.
    pub(super) size: i32,
    pub(super) pid: i32,
    pub(super) ppid: i32,
    pub(super) pgid: i32,
    pub(super) stat: i8,
    pub(super) start: Timeval,
}

/// A process from FreeBSD's answer, read while the boot time was `boot`
/// (`kern.boottime`, the same before and after the read: see
/// [`with_steady_boot`]). Its start is `ki_start - boot`, microseconds from
/// boot to its `fork`: what the kernel keeps, which no clock step moves.
/// `None` for a record of another size than ours (`ours`, the libc crate's
/// `kinfo_proc`): a kernel of another ABI, not to be misread.
pub(super) fn from_kinfo(entry: &Kinfo, boot: Timeval, ours: usize) -> Option<ProcInfo> {
    if usize::try_from(entry.size).ok()? != ours {
        return None;
    }
    let since_boot = entry.start.micros()?.checked_sub(boot.micros()?)?;
    Some(ProcInfo {
        pid: entry.pid,
        parent: entry.ppid,
        group: entry.pgid,
        start: u64::try_from(since_boot).unwrap_or(0),
        zombie: entry.stat == FREEBSD_SZOMB,
    })
}

/// How many times a table is read again before giving up: the boot time
/// changed under the read (a clock step), or the table outgrew its room.
pub(super) const TRIES: usize = 5;

/// `read()`, with `boot()` the same before and after it: then what the
/// read says holds with that boot time. A clock step in between (the boot
/// time moves) reads again, a few times.
pub(super) fn with_steady_boot<T>(
    mut boot: impl FnMut() -> Option<Timeval>,
    mut read: impl FnMut() -> Option<T>,
) -> Option<(T, Timeval)> {
    for _ in 0..TRIES {
        let before = boot()?;
        let value = read()?;
        if boot()? == before {
            return Some((value, before));
        }
    }
    None
}

/// Read a table that the system sizes first and fills after, as `sysctl`
/// does: `needed()` says how many records it holds now; `fill(room)` reads
/// it into room for `room` records, and fails with ENOMEM when it outgrew
/// that meanwhile (processes started in between). Then again, with more
/// room each time, a few times.
pub(super) fn read_growing<T>(
    mut needed: impl FnMut() -> Result<usize, Errno>,
    mut fill: impl FnMut(usize) -> Result<Vec<T>, Errno>,
) -> Option<Vec<T>> {
    for attempt in 0..TRIES {
        let now = needed().ok()?;
        // A quarter more and 64 records, doubled at each try.
        let room = (now + now / 4 + 64).checked_mul(1 << attempt)?;
        match fill(room) {
            Ok(table) => return Some(table),
            Err(Errno::NOMEM) => {}
            Err(_) => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sleeping process (`SSLEEP`, 3) as FreeBSD on amd64 gives it:
    /// 1088-byte records; example numbers.
    fn kinfo(start: Timeval) -> Kinfo {
        Kinfo {
            size: 1088,
            pid: 4_321,
            ppid: 4_000,
            pgid: 4_321,
            stat: 3, // SSLEEP
            start,
        }
    }

    #[test]
    fn freebsd_start_times_count_from_boot_and_survive_a_clock_step() {
        let boot = Timeval {
            sec: 1_718_000_000,
            usec: 900_000,
        };
        // Started 125.2 s after boot.
        let start = Timeval {
            sec: 1_718_000_126,
            usec: 100_000,
        };
        let info = from_kinfo(&kinfo(start), boot, 1088).unwrap();
        assert_eq!(
            (info.pid, info.parent, info.group, info.zombie),
            (4_321, 4_000, 4_321, false)
        );
        assert_eq!(info.start, 125_200_000);
        // The clock stepped back an hour: the kernel moves the boot time,
        // and with it every ki_start; the start from boot stays.
        let hour = 3_600;
        let stepped = |t: Timeval| Timeval {
            sec: t.sec - hour,
            ..t
        };
        let again = from_kinfo(&kinfo(stepped(start)), stepped(boot), 1088).unwrap();
        assert_eq!(again.start, info.start);
        // A zombie.
        let zombie = Kinfo {
            stat: 5,
            ..kinfo(start)
        };
        assert!(from_kinfo(&zombie, boot, 1088).unwrap().zombie);
        // A record of another size (another ABI) is refused, not misread.
        assert_eq!(from_kinfo(&kinfo(start), boot, 1096), None);
    }

    #[test]
    fn a_read_across_a_clock_step_is_made_again() {
        // The boot time moves once, between the first read's two looks.
        let boots = [100, 40, 40, 40];
        let mut at = 0;
        let mut reads = 0;
        let (value, boot) = with_steady_boot(
            || {
                at += 1;
                Some(Timeval {
                    sec: boots[at - 1],
                    usec: 0,
                })
            },
            || {
                reads += 1;
                Some(reads)
            },
        )
        .unwrap();
        assert_eq!((value, boot.sec), (2, 40));
        // A clock that keeps moving: given up on.
        let mut tick = 0;
        let moving = with_steady_boot(
            || {
                tick += 1;
                Some(Timeval { sec: tick, usec: 0 })
            },
            || Some(()),
        );
        assert_eq!(moving, None);
    }

    #[test]
    fn a_table_that_outgrows_its_room_is_read_again_with_more() {
        // 100 processes, then 300 (a burst of starts): the first room is
        // too small, the second not.
        let mut sizes = [100, 300].into_iter();
        let mut rooms = Vec::new();
        let table = read_growing(
            || Ok(sizes.next().unwrap_or(300)),
            |room| {
                rooms.push(room);
                if room < 300 {
                    Err(Errno::NOMEM)
                } else {
                    Ok(vec![0u8; 300])
                }
            },
        );
        assert_eq!(table.map(|t| t.len()), Some(300));
        assert_eq!(rooms, [189, 2 * (300 + 75 + 64)]);
        // Any other error, or ENOMEM every time: no table.
        assert!(read_growing(|| Ok(1), |_| Err::<Vec<u8>, _>(Errno::PERM)).is_none());
        assert!(read_growing(|| Ok(1), |_| Err::<Vec<u8>, _>(Errno::NOMEM)).is_none());
        assert!(read_growing(|| Err(Errno::PERM), |_| Ok(vec![0u8])).is_none());
    }
}
