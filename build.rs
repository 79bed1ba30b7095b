//! Link GCC's unwinder statically on Linux with glibc, so that retry does not
//! load `libgcc_s.so.1` at every start.
//!
//! The standard library links `-lgcc_s` for `_Unwind_*` (backtraces, and
//! unwinding in test builds). Loading it costs a process that lives a few
//! milliseconds about 0.1 ms: one more library to map and relocate, and its
//! constructor probes the CPU with `cpuid`, which traps to the hypervisor
//! on a virtual machine (BENCHMARKS.md). The same unwinder as a static
//! archive (`libgcc_eh.a`, part of every GCC installation) is what
//! `gcc -static-libgcc` and Rust's own `+crt-static` targets use; retry
//! never unwinds across shared libraries (panic = "abort" in release). The
//! archive comes whole (it would otherwise be searched before the standard
//! library asks for its symbols); `-lgcc_s` is then left unused, and the
//! linker's `--as-needed` drops it.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = |name: &str| std::env::var(name).unwrap_or_default();
    let static_crt = target("CARGO_CFG_TARGET_FEATURE")
        .split(',')
        .any(|feature| feature == "crt-static");
    if target("CARGO_CFG_TARGET_OS") == "linux"
        && target("CARGO_CFG_TARGET_ENV") == "gnu"
        && !static_crt
    {
        println!("cargo:rustc-link-lib=static:-bundle,+whole-archive=gcc_eh");
    }
}
