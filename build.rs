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
//!
//! Two more link settings make a short run start faster (BENCHMARKS.md):
//!
//! - The executable is not position-independent (`-no-pie`), so nothing
//!   relocates its 10 000 pointers at every start (a PIE dirties 190 KiB of
//!   them, page by page). It gives up address randomization of retry's own
//!   code and data, as a Go binary does; `RETRY_BUILD_PIE=1` builds a PIE.
//!   A `+crt-static` build stays the static PIE rustc makes of it.
//! - Release builds group the functions a run executes at the start of the
//!   code, by the linker script `link/startup.ld` (`scripts/startup-order`
//!   writes it), so they fill a few 64 KiB fault-around windows rather than
//!   touching one wherever they happen to lie.

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
    if target("CARGO_CFG_TARGET_OS") == "linux" && target("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rerun-if-env-changed=RETRY_BUILD_PIE");
        // Not with +crt-static: rustc links that as a static PIE, which
        // relocates itself, and -no-pie on top of -static-pie gives a
        // binary that dies of SIGSEGV as it starts.
        if !static_crt && std::env::var_os("RETRY_BUILD_PIE").is_none_or(|value| value.is_empty()) {
            println!("cargo:rustc-link-arg-bins=-no-pie");
        }
        if target("PROFILE") == "release" {
            let script = format!("{}/link/startup.ld", target("CARGO_MANIFEST_DIR"));
            println!("cargo:rerun-if-changed={script}");
            println!("cargo:rustc-link-arg-bins=-Wl,-T,{script}");
        }
    }
}
