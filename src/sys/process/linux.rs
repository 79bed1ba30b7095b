//! Linux's process table: `/proc`, also in the portable build (POSIX lists
//! no processes). The one place, with `sys::machine`, where retry reads
//! `/proc` for processes.

use super::ProcInfo;

/// Process `pid`, if it exists and can be read.
pub(crate) fn process_info(pid: i32) -> Option<ProcInfo> {
    // Bytes: COMM, the program's name, need not be UTF-8.
    let bytes = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    from_stat(pid, &bytes)
}

/// `/proc/PID/stat`: `PID (COMM) STATE PPID PGRP ...`. COMM may hold spaces
/// and parentheses, so the fields are counted from the last `)`. The start
/// time (clock ticks from boot) is field 22.
fn from_stat(pid: i32, bytes: &[u8]) -> Option<ProcInfo> {
    let rest = &bytes[bytes.iter().rposition(|&b| b == b')')? + 1..];
    let rest = std::str::from_utf8(rest).ok()?;
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    Some(ProcInfo {
        pid,
        parent: fields.get(1)?.parse().ok()?,
        group: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
        zombie: fields.first() == Some(&"Z"),
    })
}

/// Every process that can be read; `None` when the system will not list
/// them (no `/proc` mounted, or one of another PID namespace).
pub(crate) fn process_table() -> Option<Vec<ProcInfo>> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let table: Vec<ProcInfo> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .filter_map(process_info)
        .collect();
    // Our own process is always there, under our own pid: a table without
    // it is another PID namespace's `/proc` (where `/proc/self` names us by
    // another pid), or no `/proc` at all (a tmpfs over it).
    let us = rustix::process::getpid().as_raw_nonzero().get();
    (proc_is_ours() && table.iter().any(|p| p.pid == us)).then_some(table)
}

/// Whether `/proc` is the one of our PID namespace: `/proc/self` names us
/// by our own pid.
pub(crate) fn proc_is_ours() -> bool {
    let us = rustix::process::getpid().as_raw_nonzero().get();
    std::fs::read_link("/proc/self")
        .is_ok_and(|link| link.to_str() == Some(us.to_string().as_str()))
}

/// Why the table could not be read, for a warning.
pub(crate) const UNREADABLE: &str = "/proc is missing or another PID namespace's";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_name_with_spaces_and_parentheses_is_skipped_whole() {
        let line = b"42 (a) b (c)) Z 7 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0";
        assert_eq!(
            from_stat(42, line),
            Some(ProcInfo {
                pid: 42,
                parent: 7,
                group: 42,
                start: 12_345,
                zombie: true,
            })
        );
        assert_eq!(from_stat(42, b"42 (cut short) S 7"), None);
    }
}
