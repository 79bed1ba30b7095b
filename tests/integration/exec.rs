//! Starting the command: what cannot be executed, and what can only not
//! yet be (a binary still being written).

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use crate::util::*;

/// The 64-byte header of an ELF executable for another architecture than
/// this one (`AArch64` here on `x86_64`, `x86_64` elsewhere): the kernel refuses
/// it with ENOEXEC, as it would a real binary built for that machine.
fn foreign_elf() -> Vec<u8> {
    let machine: u16 = if cfg!(target_arch = "x86_64") {
        183
    } else {
        62
    };
    let mut elf = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0];
    elf.extend([0; 8]); // the rest of e_ident
    elf.extend(2u16.to_le_bytes()); // e_type: an executable
    elf.extend(machine.to_le_bytes());
    elf.extend(1u32.to_le_bytes()); // e_version
    elf.extend(0x40_0000u64.to_le_bytes()); // e_entry
    elf.extend(64u64.to_le_bytes()); // e_phoff
    elf.extend(0u64.to_le_bytes()); // e_shoff
    elf.extend(0u32.to_le_bytes()); // e_flags
    for half in [64u16, 56, 0, 64, 0, 0] {
        // e_ehsize, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx
        elf.extend(half.to_le_bytes());
    }
    elf
}

fn attempts(events: &[serde_json::Value]) -> usize {
    events.iter().filter(|e| e["event"] == "attempt").count()
}

#[test]
fn a_binary_for_another_architecture_is_126_and_not_retried_nor_run_by_sh() {
    let dir = scratch();
    let binary = dir.path().join("foreign");
    std::fs::write(&binary, foreign_elf()).unwrap();
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (out, events) = json_run(&["-n", "3", "-d", "10ms", "--", binary.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(126), "{stderr}");
    assert_eq!(attempts(&events), 1, "{stderr}");
    assert!(stderr.contains("exec format error"), "{stderr}");
    // /bin/sh would have complained about the bytes it read as a script.
    assert!(!stderr.contains("not found"), "{stderr}");
}

#[test]
fn a_script_without_a_shebang_still_runs_under_sh_with_a_nul_later_on() {
    let dir = scratch();
    // Text in its first line; binary bytes after it do not make it a binary.
    let path = dir.path().join("text");
    std::fs::write(&path, b"echo ran; exit 0\n# \0\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    retry()
        .args(["-n", "1", "--"])
        .arg(&path)
        .assert()
        .success()
        .stdout("ran\n");
}

#[test]
fn a_binary_still_being_written_is_retried_until_it_can_run() {
    let dir = scratch();
    let binary = dir.path().join("tool");
    std::fs::copy("/bin/true", &binary).unwrap();
    // Held open for writing, as by an installer or a linker: ETXTBSY.
    let writer = std::fs::OpenOptions::new()
        .write(true)
        .open(&binary)
        .unwrap();
    let closer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(600));
        drop(writer);
    });
    let (out, events) = json_run(&[
        "-n",
        "unlimited",
        "--max-time",
        "20s",
        "-d",
        "100ms",
        "-j",
        "none",
        "--",
        binary.to_str().unwrap(),
    ]);
    closer.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(attempts(&events) >= 2, "{stderr}");
    assert!(stderr.contains("text file busy"), "{stderr}");
}
