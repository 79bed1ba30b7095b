//! FreeBSD's process table: `sysctl kern.proc`. Only the calls are here;
//! what their answers mean, how a read that outgrew its room is made
//! again, and how a clock step is kept out of start times are
//! `freebsd_records.rs`'s, tested on every system.

use rustix::io::Errno;

use super::ProcInfo;
use super::freebsd_records::{Kinfo, Timeval, from_kinfo, read_growing, with_steady_boot};

/// `sysctl(name)` into `room` records of `T`; ENOMEM when they do not
/// hold the answer.
fn sysctl_into<T>(name: &[libc::c_int], room: usize) -> Result<Vec<T>, Errno> {
    let mut entries: Vec<T> = Vec::with_capacity(room);
    let mut size = room * size_of::<T>();
    // SAFETY: the buffer has room for `size` bytes; sysctl says in `size`
    // how many it wrote, whole records only.
    let read = unsafe {
        libc::sysctl(
            name.as_ptr(),
            name.len() as libc::c_uint,
            entries.as_mut_ptr().cast(),
            &raw mut size,
            std::ptr::null(),
            0,
        )
    };
    if read != 0 {
        return Err(last_errno());
    }
    // SAFETY: `size` bytes of whole records were written.
    unsafe { entries.set_len(size / size_of::<T>()) };
    Ok(entries)
}

/// The error of the call that just failed.
fn last_errno() -> Errno {
    Errno::from_raw_os_error(
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO),
    )
}

/// A `timeval` of the kernel's (`time_t` and `long` are 64 bits on amd64
/// and arm64, 32 on i386).
#[allow(clippy::useless_conversion)]
fn timeval(t: libc::timeval) -> Timeval {
    Timeval {
        sec: i64::from(t.tv_sec),
        usec: i64::from(t.tv_usec),
    }
}

/// How many records of `T` `sysctl(name)` holds now.
fn sysctl_needs<T>(name: &[libc::c_int]) -> Result<usize, Errno> {
    let mut size: libc::size_t = 0;
    // SAFETY: a null buffer asks only for the size needed.
    let sized = unsafe {
        libc::sysctl(
            name.as_ptr(),
            name.len() as libc::c_uint,
            std::ptr::null_mut(),
            &raw mut size,
            std::ptr::null(),
            0,
        )
    };
    if sized != 0 {
        return Err(last_errno());
    }
    Ok(size.div_ceil(size_of::<T>()))
}

/// `kern.boottime`: the wall-clock time of boot, as the kernel reckons it
/// now (a clock step moves it).
fn boot_time() -> Option<Timeval> {
    let name = [libc::CTL_KERN, libc::KERN_BOOTTIME];
    let boot = sysctl_into::<libc::timeval>(&name, 1).ok()?;
    boot.first().copied().map(timeval)
}

/// The processes `name` selects, with their start times from boot.
fn kinfo(name: &[libc::c_int]) -> Option<Vec<ProcInfo>> {
    let read = || {
        read_growing(
            || sysctl_needs::<libc::kinfo_proc>(name),
            |room| sysctl_into::<libc::kinfo_proc>(name, room),
        )
    };
    let (entries, boot) = with_steady_boot(boot_time, read)?;
    let ours = size_of::<libc::kinfo_proc>();
    entries
        .iter()
        .map(|entry| {
            let record = Kinfo {
                size: entry.ki_structsize,
                pid: entry.ki_pid,
                ppid: entry.ki_ppid,
                pgid: entry.ki_pgid,
                // `c_char`: signed on amd64, unsigned on arm64.
                #[allow(clippy::unnecessary_cast)]
                stat: entry.ki_stat as i8,
                start: timeval(entry.ki_start),
            };
            from_kinfo(&record, boot, ours)
        })
        .collect()
}

/// Process `pid`, if it exists and we may look at it (zombies included).
pub(crate) fn process_info(pid: i32) -> Option<ProcInfo> {
    let name = [libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_PID, pid];
    kinfo(&name)?.first().copied()
}

/// Every process we may look at.
pub(crate) fn process_table() -> Option<Vec<ProcInfo>> {
    let name = [libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_PROC, 0];
    kinfo(&name)
}

/// Why the table could not be read, for a warning.
pub(crate) const UNREADABLE: &str = "sysctl kern.proc refused to list the processes";
