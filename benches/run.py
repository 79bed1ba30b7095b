#!/usr/bin/env python3
"""Whole-process benchmarks of retry, with baselines measured in the same run.

    python3 benches/run.py            # everything; rewrites BENCHMARKS.md
    python3 benches/run.py --quick    # smaller data and fewer runs, for a try-out
    python3 benches/run.py --only one,attempts,peers
                                      # the headline: rewrites its block
    python3 benches/run.py --only one,attempts   # some sections; prints only
    python3 benches/run.py --only peers          # retry against its peers
    python3 benches/run.py --only peers --compare before=/tmp/retry-old
                                                 # ... and another build, paired
    python3 benches/run.py --only scan,patterns --binary /tmp/old-retry
                                      # measure another build (no cargo build)

The build measured is the one users install: the static musl release build
(`cargo build --release --target x86_64-unknown-linux-musl`, the binary of
the release tarballs and the .deb). The sections one, attempts and peers
also measure the glibc release build (`cargo build --release`, the
development build) in the same interleaved rounds, and every --compare
build. --binary measures that binary alone instead (no build, no glibc
companion).
    python3 benches/run.py --only budget,fleet   # the retry budget's sections;
                                      # rewrites only their part of BENCHMARKS.md
    python3 benches/run.py --only fleet-cluster  # the fleet section again, in a
                                      # Redis Cluster beside one server
    python3 benches/run.py --only adaptive       # adaptive throttling's load on
                                      # a backend; docs/adaptive-throttling.png

Sections: one (a single successful attempt), attempts (per-attempt cost),
scan (scanning throughput and memory), patterns (scanning with 50 Unicode
class patterns), replay (stdin replay), sleep (sleep accuracy), occ (real
contention against a local optimistic-concurrency server), sim (Brooker's
simulation, `cargo bench --bench contention`), peers (retry side by side with
the other retry tools, which it first installs under target/peers without
touching the system: see install_peers), budget (issue 14's experiment: 50
concurrent runs against a local server that is down or fails 10% of
requests, with and without a retry budget), fleet (500 concurrent runs on
two "hosts" sharing one budget and one circuit in a real redis-server: the
counts must add up exactly; the store exchange's p50/p99), fleet-cluster (the
same in a 3-master Redis Cluster, beside one redis-server, in one session),
adaptive (issue 37: 20 runs a second on two "hosts" sharing one
redis-server against a backend that accepts only part of its load, with no
guard, the retry budget, adaptive throttling and both; the requests the
backend receives beside the SRE book's expectation, and a plot).

Every figure is a median over several runs; wall time comes from a monotonic
clock around posix_spawn/wait4, peak RSS from wait4's rusage (the largest
process of the measured tree). Ratios are against baselines measured in the
same run, interleaved with retry's own runs.
"""
import argparse
import fcntl
import glob
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What users install: the static musl release build (scripts/release,
# scripts/package, the action and cargo-binstall all ship it).
MUSL_TARGET = f"{platform.machine()}-unknown-linux-musl"
RETRY = os.path.join(ROOT, "target", MUSL_TARGET, "release", "retry")
# The development build: glibc, dynamically linked.
GLIBC = os.path.join(ROOT, "target", "release", "retry")
# The builds of retry that one, attempts and peers measure side by side, in
# the same rounds: (label, binary, what it is); the first is the headline.
BUILDS = [("retry", RETRY, "static musl release")]
PEERS = os.path.join(ROOT, "target", "peers")
DEVNULL = os.open(os.devnull, os.O_RDWR)
GIB = 1 << 30
ENV = {k: v for k, v in os.environ.items() if not k.startswith("RETRY_")}


def spawn(argv, stdin=None, stdout=None, stderr=None, env=None, cpu=False):
    """Run argv; return (seconds, peak RSS in KiB, exit status), and with
    `cpu` also the CPU seconds (user + system) of the whole tree. The RSS is
    wait4's, which on Linux also counts the spawning process's own memory
    (the child starts as a copy of it): see peak_rss for a clean figure."""
    actions = [
        (os.POSIX_SPAWN_DUP2, stdin if stdin is not None else DEVNULL, 0),
        (os.POSIX_SPAWN_DUP2, stdout if stdout is not None else DEVNULL, 1),
        (os.POSIX_SPAWN_DUP2, stderr if stderr is not None else DEVNULL, 2),
    ]
    path = shutil.which(argv[0]) or argv[0]
    start = time.monotonic()
    pid = os.posix_spawn(path, argv, env or ENV, file_actions=actions)
    _, status, usage = os.wait4(pid, 0)
    result = (time.monotonic() - start, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
    return (*result, usage.ru_utime + usage.ru_stime) if cpu else result


def sh(script):
    return ["/bin/sh", "-c", script]


def peak_rss(argv, env=None):
    """Peak RSS in KiB of the largest process of argv's tree, measured by GNU
    time (a small C program, so what the child inherits before exec is
    small too; a Python parent's 15 MiB would swamp the figure)."""
    with tempfile.NamedTemporaryFile(mode="r") as report:
        subprocess.run(["/usr/bin/time", "-o", report.name, "-f", "%M", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env or ENV)
        return int(report.read().strip().splitlines()[-1])


def measure(variants, runs):
    """Interleave the variants `runs` times: median wall time; then the
    largest peak RSS over three separate runs under GNU time."""
    walls = {name: [] for name in variants}
    for _ in range(runs):
        for name, argv in variants.items():
            wall, _, _ = spawn(argv)
            walls[name].append(wall)
    rss = {name: max(peak_rss(argv) for _ in range(3)) for name, argv in variants.items()}
    return {name: (statistics.median(walls[name]), rss[name]) for name in variants}


def ms(seconds):
    return f"{seconds * 1000:.2f} ms"


def mib(kib):
    return f"{kib / 1024:.1f} MiB"


def mib2(kib):
    return f"{kib / 1024:.2f} MiB"


def verdict(ok):
    return "yes" if ok else "**no**"


class Report:
    def __init__(self):
        self.sections = []

    def add(self, title, text):
        print(f"\n## {title}\n\n{text}", flush=True)
        self.sections.append((title, text))


# The Rust peers whose memory issue 35's yardstick is measured against: the
# two small ones (attempt-cli, also Rust, is measured in the peer table but
# is the heavy one: 3.5 MiB).
RUST_PEERS = ("retry-cli", "eb")
RSS_MARGIN = 1.20


def bench_one(report, runs):
    peers, _ = install_peers()
    variants = {"true": ["true"], "timeout 10 true": ["timeout", "10", "true"]}
    for label, binary, _ in BUILDS:
        variants[f"{label} -- true"] = [binary, "--", "true"]
    rust_peers = {name: peers[name][0] for name in RUST_PEERS if name in peers}
    for name, binary in rust_peers.items():
        variants[name] = PEER_SYNTAX[name](binary, 5, "true")
    results = measure(variants, runs)
    timeout = results["timeout 10 true"][0]
    described = {f"{label} -- true": what for label, _, what in BUILDS}
    rows = [
        "| command | build | median wall | / timeout | peak RSS |",
        "|---|---|---:|---:|---:|",
    ]
    for name, (wall, rss) in results.items():
        command = " ".join(os.path.basename(word) if word.startswith("/") else word for word in variants[name])
        bold = "**" if name == f"{BUILDS[0][0]} -- true" else ""
        rows.append(f"| {bold}`{command}`{bold} | {described.get(name, peers[name][1] if name in peers else '')} | {ms(wall)} | {wall / timeout:.2f}x | {mib(rss)} |")
    rows.append("")
    for label, _, what in BUILDS:
        wall, _ = results[f"{label} -- true"]
        bold = "**" if label == BUILDS[0][0] else ""
        rows.append(f"- {what} build / `timeout 10 true`: {bold}{wall / timeout:.2f}x{bold} (issue 35's target <= 1.20: {verdict(wall / timeout <= 1.2)})")
    ours = results[f"{BUILDS[0][0]} -- true"][1]
    if rust_peers:
        figure = statistics.mean(results[name][1] for name in rust_peers)
        each = ", ".join(f"{name} {mib2(results[name][1])}" for name in rust_peers)
        target = figure * RSS_MARGIN
        rows.append(
            f"- peak RSS of the {BUILDS[0][2]} build: **{mib2(ours)}**; issue 35's target: the Rust peers' {mib2(figure)} "
            f"(the mean of {each}, measured here) + {RSS_MARGIN * 100 - 100:.0f}% = {mib2(target)}: {verdict(ours <= target)}"
        )
    else:
        rows.append(f"- peak RSS of the {BUILDS[0][2]} build: **{mib(ours)}** (the Rust peers could not be installed, so issue 35's target is not judged)")
    base = results["true"][0]
    rows += [
        f"- {BUILDS[0][2]} build / `true`: {results[f'{BUILDS[0][0]} -- true'][0] / base:.2f}x",
        "",
        f"{runs} runs each, interleaved; peak RSS the largest of three runs under GNU time (`/usr/bin/time -f %M`); "
        f"the peers run `-- true` with their own flags for 5 attempts and no delay, as in the peer table.",
    ]
    report.add("One successful attempt", "\n".join(rows))


def bench_attempts(report, runs):
    loop = "i=0; while [ $i -lt 200 ]; do /bin/false; i=$((i+1)); done"
    variants = {"shell loop": sh(loop)}
    for label, binary, _ in BUILDS:
        variants[label] = [binary, "-q", "-n", "200", "-d", "0", "--", "/bin/false"]
    results = measure(variants, runs)
    shell = results["shell loop"][0]
    rows = [
        "| 200 attempts of `/bin/false`, no delay | build | median wall | per attempt | / shell loop | peak RSS |",
        "|---|---|---:|---:|---:|---:|",
        f"| `sh -c '{loop}'` | | {ms(shell)} | {shell / 200 * 1e6:.0f} us | 1.00x | {mib(results['shell loop'][1])} |",
    ]
    for label, _, what in BUILDS:
        wall, rss = results[label]
        bold = "**" if label == BUILDS[0][0] else ""
        rows.append(f"| {bold}`retry -q -n 200 -d 0 -- /bin/false`{bold} | {what} | {ms(wall)} | {wall / 200 * 1e6:.0f} us | {wall / shell:.2f}x | {mib(rss)} |")
    rows.append("")
    for label, _, what in BUILDS:
        ratio = results[label][0] / shell
        bold = "**" if label == BUILDS[0][0] else ""
        rows.append(f"- {what} build / shell loop: {bold}{ratio:.2f}x{bold} (target <= 1.10: {verdict(ratio <= 1.1)})")
    rows += ["", f"{runs} runs each, interleaved."]
    report.add("Per-attempt cost", "\n".join(rows))


def install_peers(directory=PEERS):
    """Install the peer tools under `directory`, touching nothing outside it:
    the Rust peers with `cargo install --locked --root DIR/cargo` (about two
    minutes of compiling, once), Debian's `retry` package with `apt-get
    download` and `dpkg-deb -x` into DIR/debian. A peer already there is
    kept. Returns ({peer: (binary, version)}, {peer: why it is missing})."""
    os.makedirs(directory, exist_ok=True)
    peers, skipped = {}, {}
    cargo_root = os.path.join(directory, "cargo")
    for crate in ("attempt-cli", "eb", "retry-cli"):
        installed = cargo_installed(cargo_root)
        if crate not in installed:
            print(f"installing {crate}: cargo install --locked --root {cargo_root} {crate}", flush=True)
            result = subprocess.run(["cargo", "install", "--locked", "--quiet", "--root", cargo_root, crate], capture_output=True, text=True)
            installed = cargo_installed(cargo_root)
            if crate not in installed:
                skipped[crate] = f"cargo install failed: {last_line(result.stderr)}"
                continue
        version, bins = installed[crate]
        peers[crate] = (os.path.join(cargo_root, "bin", bins[0]), version)
    debian = os.path.join(directory, "debian")
    binary = os.path.join(debian, "usr", "bin", "retry")
    if not os.access(binary, os.X_OK):
        print("fetching Debian's retry: apt-get download retry; dpkg-deb -x", flush=True)
        error = fetch_debian_retry(directory, debian)
        if error:
            skipped["retry (Debian)"] = error
    if os.access(binary, os.X_OK):
        debs = sorted(glob.glob(os.path.join(directory, "retry_*.deb")))
        peers["retry (Debian)"] = (binary, os.path.basename(debs[-1]).split("_")[1] if debs else "?")
    return peers, skipped


def cargo_installed(root):
    """{crate: (version, [binaries])}, from cargo install's own record."""
    try:
        with open(os.path.join(root, ".crates2.json")) as f:
            installs = json.load(f)["installs"]
    except (OSError, ValueError, KeyError):
        return {}
    found = {}
    for key, value in installs.items():
        name, version = key.split()[:2]
        if value.get("bins"):
            found[name] = (version, value["bins"])
    return found


def fetch_debian_retry(directory, debian):
    """Download Debian's retry package into `directory` and unpack it into
    `debian`; None, or why it failed."""
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb"):
        return "not a Debian system (no apt-get or dpkg-deb)"

    def download():
        return subprocess.run(["apt-get", "download", "retry"], cwd=directory, capture_output=True, text=True)

    result = download()
    if result.returncode != 0 and os.geteuid() == 0:
        # Empty package lists on a fresh machine; refreshing them installs nothing.
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True)
        result = download()
    debs = sorted(glob.glob(os.path.join(directory, "retry_*.deb")))
    if result.returncode != 0 or not debs:
        return f"apt-get download retry failed: {last_line(result.stderr)}"
    result = subprocess.run(["dpkg-deb", "-x", debs[-1], debian], capture_output=True, text=True)
    if result.returncode != 0:
        return f"dpkg-deb -x failed: {last_line(result.stderr)}"
    return None


def last_line(text):
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


# Each tool's own syntax for "at most N attempts of COMMAND, no delay between
# them", from its --help or man page; check_attempts verifies the count
# before anything is timed.
PEER_SYNTAX = {
    "retry": lambda binary, n, cmd: [binary, "-n", str(n), "-d", "0", "--", cmd],
    "retry (Debian)": lambda binary, n, cmd: [binary, "-t", str(n), "-d", "0", "--", cmd],
    "retry-cli": lambda binary, n, cmd: [binary, "--attempts", str(n), "--min-duration", "0s", "--", cmd],
    "attempt-cli": lambda binary, n, cmd: [binary, "fixed", "-a", str(n), "-w", "0", "--", cmd],
    "eb": lambda binary, n, cmd: [binary, "-x", str(n), "--", cmd],
}
# Peers that cannot run failing attempts without sleeping between them.
NO_ZERO_DELAY = {
    "eb": "it has only -x (most attempts); its backoff slot is the command's own measured run time, so failing attempts always sleep",
}


def check_attempts(argv_for, n):
    """How many attempts a tool makes of a command that always fails."""
    with tempfile.TemporaryDirectory(prefix="retry-bench-") as directory:
        count = os.path.join(directory, "count")
        failing = os.path.join(directory, "fail")
        with open(failing, "w") as f:
            f.write(f"#!/bin/sh\necho x >> {count}\nexit 1\n")
        os.chmod(failing, 0o755)
        spawn(argv_for(n, failing))
        with open(count) as f:
            return len(f.read().splitlines())


def rounds(variants, runs):
    """Each variant (argv, or (argv, env)) run `runs` times, in rounds: each
    round runs every variant once, starting one further along the list each
    time. Returns {name: [(wall seconds, CPU seconds of the tree)] by round},
    so that figures can be compared round by round (paired)."""
    names = list(variants)
    samples = {name: [] for name in names}
    for r in range(runs):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            argv, env = variants[name] if isinstance(variants[name], tuple) else (variants[name], None)
            wall, _, _, cpu = spawn(argv, env=env, cpu=True)
            samples[name].append((wall, cpu))
    return samples


class Paired:
    """Figures of `rounds`, against the baseline measured in the same rounds."""

    def __init__(self, samples, baseline):
        self.samples, self.baseline = samples, baseline

    def wall(self, name):
        return statistics.median(w for w, _ in self.samples[name])

    def cpu(self, name):
        return statistics.median(c for _, c in self.samples[name])

    def ratio(self, name):
        """Median and quartiles of the round-by-round wall ratio to the baseline."""
        ratios = sorted(w / b for (w, _), (b, _) in zip(self.samples[name], self.samples[self.baseline]))
        q1, _, q3 = statistics.quantiles(ratios, n=4)
        return statistics.median(ratios), q1, q3

    def ratio_text(self, name):
        median, q1, q3 = self.ratio(name)
        return f"{median:.2f}x ({q1:.2f}-{q3:.2f})"

    def cpu_ratio(self, name):
        return f"{self.cpu(name) / self.cpu(self.baseline):.2f}x"


def disk_tmp():
    """/tmp when it is not a tmpfs, for the variant that shows what the run's
    hint directory costs when TMPDIR puts it on a disk; None otherwise."""
    try:
        with open("/proc/mounts") as f:
            mounts = {fields[1]: fields[2] for fields in map(str.split, f)}
    except OSError:
        return None
    return "/tmp" if mounts.get("/tmp", mounts.get("/")) not in (None, "tmpfs") else None


def bench_peers(report, runs, attempts=50, compare=()):
    peers, skipped = install_peers()
    # Display name -> (syntax, binary, version, environment): the builds of
    # retry (the first is the headline), then the peers.
    tools = {label: ("retry", binary, what, None) for label, binary, what in BUILDS}
    for label, path in compare:
        tools[f"retry ({label})"] = ("retry", path, label, None)
    disk = disk_tmp()
    if disk:
        tools[f"{BUILDS[0][0]}, TMPDIR={disk}"] = ("retry", BUILDS[0][1], BUILDS[0][2], {**ENV, "TMPDIR": disk})
    tools.update((name, (name, binary, version, None)) for name, (binary, version) in sorted(peers.items()))
    notes = []
    for name, why in skipped.items():
        notes.append(f"- {name}: not measured ({why})")
    one, failing, versions = {}, {}, {}
    for name, (syntax, binary, version, env) in tools.items():
        argv_for = lambda n, cmd, syntax=syntax, binary=binary: PEER_SYNTAX[syntax](binary, n, cmd)
        versions[name] = version
        _, _, status = spawn(argv_for(5, "/bin/true"), env=env)
        if status != 0:
            notes.append(f"- {name}: not measured (`{' '.join(argv_for(5, '/bin/true'))}` exited {status})")
            continue
        one[name] = (argv_for(5, "/bin/true"), env)
        if syntax in NO_ZERO_DELAY:
            notes.append(f"- {name}: no row for failing attempts ({NO_ZERO_DELAY[syntax]})")
            continue
        made = check_attempts(argv_for, attempts)
        if made != attempts:
            notes.append(f"- {name}: no row for failing attempts (made {made} attempts, not {attempts})")
            continue
        failing[name] = (argv_for(attempts, "/bin/false"), env)

    def shown(variant):
        argv, env = variant
        words = [os.path.basename(argv[0]) if argv[0].startswith(ROOT) or argv[0].startswith("/") else argv[0], *argv[1:]]
        prefix = "".join(f"{k}={v} " for k, v in (env or {}).items() if ENV.get(k) != v)
        return "`" + prefix + " ".join(words) + "`"

    def tool(name):
        return f"**{name}**" if name == BUILDS[0][0] else name

    baseline = "timeout 10 /bin/true"
    # Each tool's start-up alone (`--version`: parse the command line, print,
    # exit) in the same rounds, to split one attempt into start-up and run.
    startup = {f"{name} --version": [binary, "--version"] for name, (_, binary, _, env) in tools.items() if name in one and env is None}
    samples = rounds({baseline: ["timeout", "10", "/bin/true"], **startup, **one}, runs)
    one_run = Paired(samples, baseline)
    rss = {name: max(peak_rss(*variant) for _ in range(3)) for name, variant in one.items()}
    rss[baseline] = max(peak_rss(["timeout", "10", "/bin/true"]) for _ in range(3))
    rows = [
        "| one successful attempt | version | command | median wall | / timeout (p25-p75) | CPU | / timeout | peak RSS |",
        "|---|---|---|---:|---:|---:|---:|---:|",
        f"| coreutils timeout | | `{baseline}` | {ms(one_run.wall(baseline))} | 1.00x | {ms(one_run.cpu(baseline))} | 1.00x | {mib(rss[baseline])} |",
    ]
    for name in sorted(one, key=lambda n: one_run.ratio(n)[0]):
        rows.append(
            f"| {tool(name)} | {versions[name]} | {shown(one[name])} | {ms(one_run.wall(name))} | {one_run.ratio_text(name)} "
            f"| {ms(one_run.cpu(name))} | {one_run.cpu_ratio(name)} | {mib(rss[name])} |"
        )

    rows += [
        "",
        "| start-up and run | start-up: `--version` | / timeout (p25-p75) | one attempt minus start-up |",
        "|---|---:|---:|---:|",
    ]
    for name in sorted((n for n in one if f"{n} --version" in startup), key=lambda n: one_run.wall(f"{n} --version")):
        version = f"{name} --version"
        rows.append(
            f"| {tool(name)} | {ms(one_run.wall(version))} | {one_run.ratio_text(version)} "
            f"| {ms(one_run.wall(name) - one_run.wall(version))} |"
        )

    loop = f"for i in $(seq {attempts}); do /bin/false && break; done"
    samples = rounds({"shell loop": sh(loop), **failing}, runs)
    loop_runs = Paired(samples, "shell loop")
    rows += [
        "",
        f"| {attempts} failing attempts, no delay | command | median wall | per attempt | / shell loop (p25-p75) | CPU | / shell loop |",
        "|---|---|---:|---:|---:|---:|---:|",
        f"| shell loop | `sh -c '{loop}'` | {ms(loop_runs.wall('shell loop'))} | {loop_runs.wall('shell loop') / attempts * 1e6:.0f} us | 1.00x "
        f"| {ms(loop_runs.cpu('shell loop'))} | 1.00x |",
    ]
    for name in sorted(failing, key=lambda n: loop_runs.ratio(n)[0]):
        rows.append(
            f"| {tool(name)} | {shown(failing[name])} | {ms(loop_runs.wall(name))} | {loop_runs.wall(name) / attempts * 1e6:.0f} us "
            f"| {loop_runs.ratio_text(name)} | {ms(loop_runs.cpu(name))} | {loop_runs.cpu_ratio(name)} |"
        )
    rows += [
        "",
        *notes,
        f"- {runs} rounds per table; each round runs every command once, in an order rotated by one each round; output to /dev/null, each tool at its default verbosity",
        "- wall: median over the rounds; ratio: the median of the round-by-round ratios to the baseline of the same round, with their quartiles (p25-p75) for the spread",
        "- CPU: user + system time of the whole process tree (wait4), median; it does not count waiting (for the disk, for a core another process holds), so it moves less on a busy machine",
        "- peak RSS: the largest of three runs under GNU time (`/usr/bin/time -f %M`)",
        "- start-up: each tool's `--version` (load, parse the command line, print, exit), in the same rounds as one attempt; the run is the difference of the two medians (spawning, waiting, ending)",
        "- peers installed by `benches/run.py` under target/peers (`cargo install --locked --root`; `apt-get download retry` and `dpkg-deb -x`), nothing on the system",
    ]
    if disk:
        rows.append(f"- `TMPDIR={disk}`: retry makes a private directory for the hint file at every run (a peer has no hint file), in `$TMPDIR` when it is set, else in memory (`$XDG_RUNTIME_DIR`, `/dev/shm`); this row shows the run with that directory on this machine's disk")
    report.add("Side by side with the peers", "\n".join(rows))


def make_data(directory, size):
    lines = os.path.join(directory, "lines")
    random = os.path.join(directory, "random")
    line = "x" * 99
    subprocess.run(sh(f"yes {line} | head -c {size} > {lines}"), check=True)
    subprocess.run(sh(f"head -c {size} /dev/urandom > {random}"), check=True)
    return {"100-byte lines": lines, "random bytes": random}


def bench_scan(report, runs, data, size):
    pattern = "NEVER_MATCHES_[0-9]{3}"
    rows = [
        f"| input ({size // (1 << 20)} MiB) | path | baseline `cat` | retry | throughput | retry / baseline | peak RSS |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    ok_speed, ok_memory = True, True
    for label, path in data.items():
        for stream, scan_flags, redirect in (
            ("stderr", ["--retry-on-output", pattern], ">&2"),
            ("stdout", ["--scan-stdout", "--retry-on-output", pattern], ""),
        ):
            results = measure(
                {
                    "cat": sh(f"cat {path} {redirect}"),
                    "retry": [RETRY, "-q", *scan_flags, "--", "sh", "-c", f"cat {path} {redirect}"],
                },
                runs,
            )
            (base, _), (ours, rss) = results["cat"], results["retry"]
            throughput = size / ours / GIB
            if label == "100-byte lines":
                ok_speed &= throughput >= 1.0
            ok_memory &= rss < 8 * 1024
            rows.append(
                f"| {label} | {stream} | {ms(base)} | {ms(ours)} | {throughput:.2f} GiB/s | {ours / base:.2f}x | {mib(rss)} |"
            )
    rows += [
        "",
        f"- scanning 100-byte lines at >= 1 GiB/s: {verdict(ok_speed)}; peak RSS < 8 MiB for every input: {verdict(ok_memory)}",
        f"- pattern `{pattern}` (never matches: every line is scanned), output to /dev/null; {runs} runs each, interleaved.",
    ]
    report.add("Scanning throughput and memory", "\n".join(rows))


def make_text(directory, size):
    """Lines of words, ASCII and not (Latin-1, Greek, CJK), a few of which
    end in digits, so that some of the 50 patterns below match; fixed seed."""
    import random

    rng = random.Random(14)
    words = ["alpha", "beta", "retry", "output", "scan", "error", "fatal", "x1", "y22", "v50",
             "Über", "naïve", "données", "λόγος", "日本語", "straße", "Größe7", "wort", "z", "ok"]
    path = os.path.join(directory, "words")
    with open(path, "w", encoding="utf-8") as f:
        written = 0
        while written < size:
            line = " ".join(rng.choice(words) for _ in range(rng.randint(2, 14))) + "\n"
            f.write(line)
            written += len(line.encode())
    base64 = os.path.join(directory, "base64")
    subprocess.run(sh(f"head -c {size * 3 // 4} /dev/urandom | base64 > {base64}"), check=True)
    return {"base64 text": base64, "words (some non-ASCII)": path}


def bench_patterns(report, runs, data, size):
    """Issue 14: 50 patterns with Unicode classes, `\\w+\\s+\\p{L}+N$`."""
    flags = []
    for i in range(1, 51):
        flags += ["--retry-on-output", rf"\w+\s+\p{{L}}+{i}$"]
    rows = [
        f"| input ({size // (1 << 20)} MiB) | baseline `cat` | retry | throughput | peak RSS |",
        "|---|---:|---:|---:|---:|",
    ]
    ok_speed, ok_memory = True, True
    for label, path in data.items():
        results = measure(
            {
                "cat": ["cat", path],
                "retry": [RETRY, "-q", "-n", "1", *flags, "--scan-stdout", "--", "cat", path],
            },
            runs,
        )
        (base, _), (ours, rss) = results["cat"], results["retry"]
        throughput = os.path.getsize(path) / ours / (1 << 20)
        ok_speed &= throughput >= 100
        ok_memory &= rss < 32 * 1024
        digits = 0 if throughput >= 10 else 2
        rows.append(f"| {label} | {ms(base)} | {ms(ours)} | {throughput:.{digits}f} MiB/s | {mib(rss)} |")
    rows += [
        "",
        f"- at >= 100 MiB/s: {verdict(ok_speed)}; peak RSS < 32 MiB: {verdict(ok_memory)}",
        f"- `retry -n 1 --retry-on-output '\\w+\\s+\\p{{L}}+N$'` for N = 1..50 `--scan-stdout -- cat FILE`, output to /dev/null; the wall time includes compiling the patterns; {runs} runs each, interleaved.",
    ]
    report.add("Scanning with 50 Unicode-class patterns", "\n".join(rows))


def bench_replay(report, runs, data, size):
    path = data["random bytes"]
    child = "cat >/dev/null; exit 1"
    results = measure(
        {
            "cat | cat (one reader)": sh(f"cat {path} | cat >/dev/null"),
            "retry --stdin replay, 3 attempts": sh(
                f"cat {path} | {RETRY} -q --stdin replay -n 3 -d 0 -- sh -c '{child}'"
            ),
        },
        runs,
    )
    (base, _), (ours, rss) = results["cat | cat (one reader)"], results["retry --stdin replay, 3 attempts"]
    delivered = 3 * size / ours / (1 << 20)
    rows = [
        f"| {size // (1 << 20)} MiB piped in | median wall | delivered to attempts | peak RSS |",
        "|---|---:|---:|---:|",
        f"| `cat file \\| cat` (baseline, one pass) | {ms(base)} | {size / base / (1 << 20):.0f} MiB/s | |",
        f"| `cat file \\| retry --stdin replay -n 3 -- sh -c '{child}'` | {ms(ours)} | {delivered:.0f} MiB/s | {mib(rss)} |",
        "",
        f"- replay at >= 500 MiB/s: {verdict(delivered >= 500)}; memory bounded (< 8 MiB): {verdict(rss < 8 * 1024)}",
        f"- three attempts each read the whole input (the first from the pipe, teed to the spool; the others from the spool); {runs} runs each.",
    ]
    report.add("Stdin replay", "\n".join(rows))


def bench_sleep(report, sleeps):
    """Oversleep of 10 ms backoff sleeps: gaps between attempt starts, minus
    10 ms, minus the gap of the same run without sleeps."""

    def gaps(delay):
        with tempfile.NamedTemporaryFile(delete=False) as stamps:
            name = stamps.name
        child = f"date +%s%N >> {name}; exit 1"
        cap = delay if delay != "0" else "1s"
        spawn([RETRY, "-q", "-n", str(sleeps + 1), "-d", delay, "-c", cap, "-j", "none", "--", "sh", "-c", child])
        with open(name) as f:
            times = [int(line) for line in f if line.strip()]
        os.unlink(name)
        return [(b - a) / 1e6 for a, b in zip(times, times[1:])]

    without = statistics.median(gaps("0"))
    over = sorted(g - 10.0 - without for g in gaps("10ms"))
    median = statistics.median(over)
    rows = [
        f"| {sleeps} sleeps of 10 ms | median oversleep | worst oversleep |",
        "|---|---:|---:|",
        f"| `retry -d 10ms -c 10ms -j none` | {median:.3f} ms | {max(over):.3f} ms |",
        "",
        f"- median under 1 ms: {verdict(median < 1.0)}",
        f"- method: the child stamps its start (`date +%s%N`); each gap between starts, minus 10 ms, minus the median gap of the same run with `-d 0` ({without:.2f} ms: spawning and `date`), is the oversleep.",
    ]
    report.add("Sleep accuracy", "\n".join(rows))


def bench_occ(report, counts, jitters):
    server = subprocess.Popen([sys.executable, os.path.join(ROOT, "benches", "occ_server.py")], stdout=subprocess.PIPE, text=True)
    port = int(server.stdout.readline())
    base = f"http://127.0.0.1:{port}"
    child = f"v=$(curl -sf {base}/version) && curl -sf -X POST '{base}/write?version='$v >/dev/null"
    rows = [
        "| clients | jitter | writes reaching the server | writes per client | time until all finish |",
        "|---:|---|---:|---:|---:|",
    ]
    try:
        for count in counts:
            for jitter in jitters:
                before = [int(x) for x in subprocess.run(["curl", "-sf", f"{base}/stats"], capture_output=True, text=True).stdout.split()]
                start = time.monotonic()
                procs = [
                    subprocess.Popen(
                        [RETRY, "-q", "-j", jitter, "-d", "10ms", "-c", "2s", "--max-time", "600s", "--", "sh", "-c", child],
                        env=ENV,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                    for _ in range(count)
                ]
                codes = [p.wait() for p in procs]
                elapsed = time.monotonic() - start
                after = [int(x) for x in subprocess.run(["curl", "-sf", f"{base}/stats"], capture_output=True, text=True).stdout.split()]
                writes, accepted = after[0] - before[0], after[1] - before[1]
                assert accepted == count and not any(codes), (codes, accepted)
                rows.append(f"| {count} | {jitter} | {writes} | {writes / count:.1f} | {elapsed:.2f} s |")
                print(rows[-1], flush=True)
    finally:
        server.terminate()
        server.wait()
    rows += [
        "",
        "Each of N `retry` processes (started at once) runs `sh -c` with two `curl` calls: read the version, then write it back; a 409 (the version moved) fails the attempt and retry backs off (`--delay 10ms --cap 2s`, the jitter shown). One run per row.",
    ]
    report.add("Real contention: N retry processes against one optimistic-concurrency server", "\n".join(rows))


def http_stats(port):
    """The flaky server's (requests, failed) so far; /stats itself is not counted."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=10) as reply:
        requests, failed = reply.read().split()
    return int(requests), int(failed)


def start_flaky_server(fail_rate, seed):
    server = subprocess.Popen([sys.executable, os.path.join(ROOT, "benches", "flaky_server.py"), str(fail_rate), str(seed)], stdout=subprocess.PIPE, text=True)
    return server, int(server.stdout.readline())


def json_events(path):
    """The JSON events of one retry process's stderr (other lines, such as
    curl's own messages, skipped)."""
    events = []
    with open(path) as f:
        for line in f:
            if line.startswith("{"):
                try:
                    events.append(json.loads(line))
                except ValueError:
                    pass
    return events


def budget_wave(port, count, state_dir):
    """`count` retry processes started at once against the flaky server,
    with budget `exp` in `state_dir` (None: no budget). Returns a dict:
    requests (that reached the server), ok (runs that succeeded), stopped
    (runs the budget stopped), open (runs whose budget store could not be
    used, which then retry as if it allowed), store_ms (each budget
    exchange's time), seconds (until all finished)."""
    argv = [RETRY, "-v", "--log-format", "json", "-n", "5", "-d", "10ms", "-c", "100ms"]
    if state_dir:
        argv += ["--budget", "exp", "--state-dir", state_dir]
    argv += ["--", "curl", "-fsS", "-o", "/dev/null", f"http://127.0.0.1:{port}/"]
    before, _ = http_stats(port)
    with tempfile.TemporaryDirectory(prefix="retry-bench-") as logs:
        paths = [os.path.join(logs, str(i)) for i in range(count)]
        start = time.monotonic()
        procs = []
        for path in paths:
            with open(path, "w") as log:
                procs.append(subprocess.Popen(argv, env=ENV, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log))
        codes = [p.wait() for p in procs]
        seconds = time.monotonic() - start
        runs = [json_events(path) for path in paths]
    after, _ = http_stats(port)
    outcomes = [next((e["outcome"] for e in events if e.get("event") == "done"), None) for events in runs]
    assert None not in outcomes, outcomes
    failed_open = sum(
        any(e.get("event") == "warning" and e.get("kind") == "budget" and "as if it allowed" in e.get("message", "") for e in events)
        for events in runs
    )
    store_ms = [e["store_ms"] for events in runs for e in events if e.get("event") == "budget"]
    return {
        "requests": after - before,
        "ok": codes.count(0),
        "stopped": outcomes.count("budget-exhausted"),
        "open": failed_open,
        "store_ms": store_ms,
        "seconds": seconds,
    }


def percentile(values, p):
    """The p-th percentile, nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, -(-len(ordered) * p // 100) - 1))]


def spread(values, digits):
    """`median (min-max)`."""
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def bench_budget(report, runs, count=50):
    """Issue 14's experiment: amplification and successes, with and without
    a retry budget (its defaults: ratio 0.2, burst 10, 1/min), against a
    server that is down and one that fails 10% of requests."""
    ratio, burst, per_minute = 0.2, 10, 1.0
    rows = [
        "| server | budget | requests / first attempt (amplification) | runs that succeed | runs the budget stopped | runs whose store failed open | budget exchange p50 / p99 | time until all finish |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    notes = []
    for label, fail_rate in (("(a) down: 503 to everything", 1.0), ("(b) 10% of requests fail (503)", 0.1)):
        server, port = start_flaky_server(fail_rate, 14)
        results = {False: [], True: []}
        try:
            for r in range(runs):
                for with_budget in ((False, True) if r % 2 == 0 else (True, False)):
                    with tempfile.TemporaryDirectory(prefix="retry-bench-") as state:
                        # A fresh state directory: a new bucket, full.
                        results[with_budget].append(budget_wave(port, count, state if with_budget else None))
                    w = results[with_budget][-1]
                    p99 = percentile(w["store_ms"], 99) if w["store_ms"] else 0
                    print(f"{label}, budget {with_budget}: {w['requests']} requests, {w['ok']}/{count} succeeded, {w['stopped']} stopped, {w['open']} failed open, store p99 {p99:.1f} ms, {w['seconds']:.2f} s", flush=True)
        finally:
            server.terminate()
            server.wait()
        for with_budget in (False, True):
            waves = results[with_budget]
            cells = [
                spread([w["requests"] / count for w in waves], 2),
                spread([w["ok"] / count * 100 for w in waves], 0) + " %",
            ]
            if with_budget:
                exchanges = [ms for w in waves for ms in w["store_ms"]]
                cells += [
                    spread([w["stopped"] for w in waves], 0),
                    spread([w["open"] for w in waves], 0),
                    f"{percentile(exchanges, 50):.1f} / {percentile(exchanges, 99):.1f} ms",
                ]
            else:
                cells += ["", "", ""]
            cells.append(spread([w["seconds"] for w in waves], 2) + " s")
            rows.append(f"| {label} | {'`--budget exp`' if with_budget else 'none'} | " + " | ".join(cells) + " |")
        if fail_rate == 1.0:
            longest = max(w["seconds"] for w in results[True])
            bound = 1 + ratio + burst / count + per_minute * longest / 60 / count
            worst = max(w["requests"] / count for w in results[True])
            without = statistics.median(w["requests"] / count for w in results[False])
            notes.append(
                f"- (a) with the budget, at most 1 + R + burst/N + (1/min x {longest:.1f} s)/N = 1 + {ratio} + {burst}/{count} + {per_minute * longest / 60 / count:.4f} = **{bound:.3f}**: "
                f"worst of {runs} runs {worst:.2f}: {verdict(worst <= bound + 1e-9)}; without it {without:.2f} (5 attempts each)"
            )
        else:
            with_ok = [w["ok"] for w in results[True]]
            without_ok = [w["ok"] for w in results[False]]
            notes.append(
                f"- (b) runs that succeed with the budget, at least as many as without it: "
                f"{verdict(statistics.median(with_ok) >= statistics.median(without_ok) and min(with_ok) >= min(without_ok))} "
                f"(successes without minus with, per pair of runs: {', '.join(str(a - b) for a, b in zip(without_ok, with_ok))})"
            )
    rows += [
        "",
        *notes,
        f"- each of N = {count} `retry -n 5 -d 10ms -c 100ms [--budget exp --state-dir DIR] -- curl -fsS -o /dev/null http://127.0.0.1:PORT/` started at once (curl's preset retries a 503); "
        f"a local threaded server (`benches/flaky_server.py`) counts the requests; the budget at its defaults (ratio {ratio}, burst {burst}, {per_minute:.0f}/min), "
        f"a fresh state directory (a new, full bucket) for every run; median (min-max) of {runs} runs of each, with and without interleaved.",
    ]
    report.add("Retry budget: amplification with N = 50 concurrent runs", "\n".join(rows))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def redis_call(port, *args):
    """One command to the redis-server on 127.0.0.1:port; its reply (a
    status or bulk string as str, an integer as int, an error raised)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"".join([f"*{len(args)}\r\n".encode()] + [f"${len(str(a).encode())}\r\n{a}\r\n".encode() for a in args]))
        reply = conn.makefile("rb")
        line = reply.readline().decode().rstrip("\r\n")
        kind, rest = line[0], line[1:]
        if kind == "-":
            raise RuntimeError(f"redis: {rest}")
        if kind == ":":
            return int(rest)
        if kind == "$":
            return None if int(rest) < 0 else reply.read(int(rest) + 2)[:-2].decode()
        return rest


def start_redis():
    """A private redis-server on a free port of 127.0.0.1, without
    persistence; (process, port)."""
    port = free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--maxclients", "10000"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    end = time.monotonic() + 10
    while True:
        try:
            if redis_call(port, "PING") == "PONG":
                return server, port
        except OSError:
            pass
        if time.monotonic() > end or server.poll() is not None:
            server.kill()
            raise RuntimeError(f"redis-server did not start on port {port}")
        time.sleep(0.05)


def command_stats(port):
    """{command: calls} from INFO commandstats."""
    calls = {}
    for line in redis_call(port, "INFO", "commandstats").splitlines():
        match = re.match(r"cmdstat_(\w+):calls=(\d+)", line)
        if match:
            calls[match.group(1)] = int(match.group(2))
    return calls


def waiting_on(path):
    """How many processes wait for a lock on `path` (/proc/locks' blocked
    requests on its inode)."""
    inode = f":{os.stat(path).st_ino}"
    with open("/proc/locks") as f:
        return sum(1 for line in f if "->" in line and any(field.endswith(inode) for field in line.split()))


def fleet_wave(urls, ports, count, hosts, budget_flags):
    """`count` retry processes, alternately on the two "hosts" (state
    directories; host i points at urls[i]), all on budget `fleet` and
    circuit `fleet` in the Redis deployment whose servers listen on
    `ports`; each runs a command that counts its attempts and fails, at most
    3 attempts, no delay. A barrier (a shared flock each waits for before it
    execs retry) makes them start together. Returns what was counted."""
    common = ["--state-url", urls[0], "--state-timeout", "5s"]
    budget = ["--budget", "fleet", *budget_flags]
    circuit = ["--circuit", "fleet", "--circuit-threshold", "1000"]
    for argv in ([RETRY, *budget, *common, "--budget-reset"], [RETRY, *circuit, *common, "--circuit-reset"]):
        subprocess.run(argv, env=ENV, check=True, stdout=subprocess.DEVNULL)
    for port in ports:
        redis_call(port, "CONFIG", "RESETSTAT")
    with tempfile.TemporaryDirectory(prefix="retry-bench-") as work:
        counter = os.path.join(work, "attempts")
        barrier = os.path.join(work, "barrier")
        open(barrier, "w").close()
        child = f"echo x >> {counter}; exit 1"
        gate = open(barrier)
        fcntl.flock(gate, fcntl.LOCK_EX)
        paths, procs = [], []
        for i in range(count):
            host = ["--state-url", urls[i % 2], "--state-timeout", "5s", "--state-dir", hosts[i % 2]]
            argv = [RETRY, "-v", "--log-format", "json", "-n", "3", "-d", "0", *budget, *circuit, *host, "--", "sh", "-c", child]
            paths.append(os.path.join(work, f"log{i}"))
            with open(paths[-1], "w") as log:
                procs.append(subprocess.Popen(["sh", "-c", 'exec 9<"$0" && flock -s 9 && exec "$@"', barrier, *argv], env=ENV, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log))
        end = time.monotonic() + 120
        while waiting_on(barrier) < count and time.monotonic() < end:
            time.sleep(0.05)
        waiting = waiting_on(barrier)
        start = time.monotonic()
        fcntl.flock(gate, fcntl.LOCK_UN)
        gate.close()
        codes = [p.wait() for p in procs]
        seconds = time.monotonic() - start
        runs = [json_events(path) for path in paths]
        with open(counter) as f:
            attempts = len(f.read().splitlines())
    stats = {}
    for port in ports:
        for command, calls in command_stats(port).items():
            stats[command] = stats.get(command, 0) + calls
    status = subprocess.run([RETRY, *budget, *common, "--budget-status"], env=ENV, capture_output=True, text=True, check=True).stdout
    deposits, withdrawals, refusals = map(int, re.search(r"since created: (\d+) first attempts, (\d+) retries allowed, (\d+) refused", status).groups())
    circuit_status = subprocess.run([RETRY, *circuit, *common, "--circuit-status"], env=ENV, capture_output=True, text=True, check=True).stdout
    failures = int(re.search(r"failed runs in a row: (\d+)", circuit_status).group(1))
    warnings = [e["message"] for events in runs for e in events if e.get("event") == "warning"]
    outcomes = [next((e["outcome"] for e in events if e.get("event") == "done"), None) for events in runs]
    return {
        "waiting": waiting,
        "codes": codes,
        "outcomes": outcomes,
        "attempts": attempts,
        "deposits": deposits,
        "withdrawals": withdrawals,
        "refusals": refusals,
        "failures": failures,
        "circuit": circuit_status.splitlines()[0],
        "warnings": warnings,
        "store_ms": {op: [e["store_ms"] for events in runs for e in events if e.get("event") == "budget" and e.get("op") == op] for op in ("deposit", "withdraw")},
        # Tries to store: EXECs (WATCH/MULTI/EXEC, before issue 36) or
        # the compare-and-set script's GETs (after); SETs are those that
        # landed.
        "tries": stats.get("exec", 0) or stats.get("get", 0),
        "set": stats.get("set", 0),
        "seconds": seconds,
    }


FLEET_CONFIGURATIONS = (
    ("room for every retry (`--budget-burst 1000`)", ["--budget-burst", "1000"]),
    ("defaults (0.2, 1/min, burst 10)", []),
)


def p50_99(values):
    return f"{percentile(values, 50):.0f} / {percentile(values, 99):.0f} ms" if values else "-"


def fleet_row(label, flags, w, count):
    """One wave's table cells (from the budget on), and whether every count
    was exact: no deposit, retry or refusal lost or doubled, no warning."""
    retries = w["attempts"] - count
    stopped = w["outcomes"].count("budget-exhausted")
    expected_retries = 2 * count if flags else retries
    ok = (
        w["waiting"] == count
        and w["deposits"] == count
        and w["withdrawals"] == retries == expected_retries
        and w["refusals"] == stopped
        and w["failures"] == count
        and w["codes"] == [1] * count
        and not w["warnings"]
    )
    if not flags:
        # Never more than the bucket held, the deposits and time brought.
        ok &= retries <= 10 + 0.2 * count + w["seconds"] / 60
    deposits, withdrawals = w["store_ms"]["deposit"], w["store_ms"]["withdraw"]
    updates = max(w["set"], 1)
    row = (
        f"| {label} | {w['deposits']} | {w['withdrawals']} = {retries}: {verdict(w['withdrawals'] == retries == expected_retries)} "
        f"| {w['refusals']} = {stopped}: {verdict(w['refusals'] == stopped)} | {w['failures']} | {len(w['warnings'])} "
        f"| {(w['tries'] - w['set']) / updates:.1f} | {p50_99(deposits)} | {p50_99(withdrawals)} | {p50_99(deposits + withdrawals)} | {w['seconds']:.2f} s |"
    )
    print(row, flush=True)
    if w["warnings"]:
        print("warnings, for example: " + "; ".join(sorted(set(m.split(" (gave up")[0] for m in w["warnings"])))[:3], flush=True)
    return row, ok, deposits + withdrawals


FLEET_HEADER = "| D first attempts (500?) | W retries allowed = retries run? | R refused = runs stopped? | circuit failures (500?) | warnings | aborted tries per update | deposit p50 / p99 | withdrawal p50 / p99 | all budget exchanges p50 / p99 | time until all finish |"


def bench_fleet(report, runs, count=500):
    """Issue 14's fleet scale: `count` runs at once over two "hosts" (state
    directories) sharing one budget and one circuit in one redis-server,
    `--state-timeout 5s`: do the counts add up exactly, and how long does an
    exchange with the store take?"""
    server, port = start_redis()
    url = f"redis://127.0.0.1:{port}/0"
    rows = ["| budget " + FLEET_HEADER, "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    exact = True
    pooled = []
    try:
        with tempfile.TemporaryDirectory(prefix="retry-bench-") as a, tempfile.TemporaryDirectory(prefix="retry-bench-") as b:
            for r in range(runs):
                for label, flags in FLEET_CONFIGURATIONS:
                    row, ok, every = fleet_row(label, flags, fleet_wave([url, url], [port], count, [a, b], flags), count)
                    rows.append(row)
                    exact &= ok
                    pooled += every
    finally:
        server.terminate()
        server.wait()
    rows += [
        "",
        f"- every count exact in every run (D = {count}; W = the retries the counter file saw, {2 * count} with room for all; R = the runs that ended `budget-exhausted`; "
        f"the circuit closed with {count} failed runs in a row; every run exit 1; no warning): {verdict(exact)}",
        f"- all budget exchanges of all runs pooled ({len(pooled)}): p50 {percentile(pooled, 50):.0f} ms, p99 {percentile(pooled, 99):.0f} ms, max {max(pooled):.0f} ms (limit 5 s)",
        f"- {count} `retry -v --log-format json -n 3 -d 0 --budget fleet [flags] --circuit fleet --circuit-threshold 1000 --state-url redis://127.0.0.1:PORT/0 --state-dir HOST --state-timeout 5s -- sh -c 'echo x >> COUNTER; exit 1'`, "
        f"HOST alternating between two directories; one redis-server (`--save '' --appendonly no`) started by the bench on a free port; budget and circuit reset before each run. "
        f"All {count} wait at a barrier (a shared `flock` on a file the bench holds exclusively, taken before `exec retry`) and are released together. "
        f"W and R from `--budget-status` (since created: D first attempts, W retries allowed, R refused), failures from `--circuit-status`; "
        f"aborted tries from the server's INFO commandstats (the compare-and-set script's GET calls, EXEC calls before issue 36, minus SETs run); exchange times from the `store_ms` of the JSON `budget` events "
        f"(deposits and retries allowed; a refused withdrawal has no event, so it is not timed). One row per run, {runs} runs of each, alternating.",
    ]
    report.add(f"Retry budget at fleet scale: {count} concurrent runs, two hosts, one redis-server", "\n".join(rows))


def start_cluster():
    """A 3-master Redis Cluster on 127.0.0.1 (tests/redis_fleet.py, which
    holds it until its stdin closes); (helper process, node ports)."""
    helper = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "tests", "redis_fleet.py"), "up", "cluster"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    line = helper.stdout.readline()
    if not line:
        helper.wait()
        raise RuntimeError("tests/redis_fleet.py up cluster failed (see above)")
    return helper, json.loads(line)["nodes"]


def bench_fleet_cluster(report, runs, count=500):
    """Issue 36: the fleet-scale experiment again with the budget and the
    circuit in a 3-master Redis Cluster (a seed list, in another order for
    each of the two hosts), beside the same experiment on one redis-server,
    interleaved: every count exact, and the exchange times."""
    server, port = start_redis()
    helper, nodes = start_cluster()
    seeds = [f"127.0.0.1:{p}" for p in nodes]
    stores = (
        ("one redis-server", [f"redis://127.0.0.1:{port}/0"] * 2, [port]),
        ("3-master cluster", [f"redis://{','.join(seeds)}/0", f"redis://{','.join(reversed(seeds))}/0"], nodes),
    )
    rows = ["| store | budget " + FLEET_HEADER, "|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    exact = {name: True for name, _, _ in stores}
    pooled = {name: [] for name, _, _ in stores}
    try:
        with tempfile.TemporaryDirectory(prefix="retry-bench-") as a, tempfile.TemporaryDirectory(prefix="retry-bench-") as b:
            for r in range(runs):
                for label, flags in FLEET_CONFIGURATIONS:
                    for name, urls, ports in stores if r % 2 == 0 else reversed(stores):
                        row, ok, every = fleet_row(label, flags, fleet_wave(urls, ports, count, [a, b], flags), count)
                        rows.append(f"| {name} {row}")
                        exact[name] &= ok
                        pooled[name] += every
    finally:
        server.terminate()
        server.wait()
        helper.stdin.close()
        helper.wait()
    rows.append("")
    for name, _, _ in stores:
        values = pooled[name]
        rows.append(
            f"- {name}: every count exact in every run (D = {count}; W = the retries the counter file saw, {2 * count} with room for all; "
            f"R = the runs that ended `budget-exhausted`; {count} failures on the circuit; every run exit 1; no warning): {verdict(exact[name])}; "
            f"all budget exchanges pooled ({len(values)}): p50 {percentile(values, 50):.0f} ms, **p99 {percentile(values, 99):.0f} ms**, max {max(values):.0f} ms (limit 5 s)"
        )
    rows.append(
        f"- as the single-server section above, but the two stores side by side in the same session, alternating: one redis-server, and a 3-master Redis Cluster "
        f"(`tests/redis_fleet.py up cluster`: the slots split in three; `retry:budget:fleet` and `retry:circuit:fleet` hash to slots 9484 and 7053, both on the second master, which so takes the whole load) reached through "
        f"`--state-url redis://127.0.0.1:A,127.0.0.1:B,127.0.0.1:C/0` (the other host lists the seeds the other way round); {runs} runs of each. "
        f"Reproduce with `python3 benches/run.py --only fleet-cluster`."
    )
    report.add(f"Retry budget at fleet scale in a Redis Cluster: {count} concurrent runs, two hosts", "\n".join(rows))


# Issue 37's experiment: adaptive client-side throttling against a backend
# that accepts only part of its load. K and the window of every adaptive
# run; the window is short so that the experiment sees several of them.
ADAPTIVE_K = 2.0
ADAPTIVE_WINDOW_S = 10
ADAPTIVE_SCENARIOS = (
    ("capacity", 5, "an overloaded backend: accepts at most 5 requests a second, 503 to the rest"),
    ("fraction", 0.3, "a backend that accepts 30% of requests at random, whatever the load (503 to the rest)"),
    ("fraction", 0.1, "a backend that accepts 10% of requests at random"),
)
ADAPTIVE_GUARDS = {
    "budget": ["--budget", "{name}"],
    "adaptive": ["--circuit", "{name}", "--circuit-mode", "adaptive", "--circuit-window", f"{ADAPTIVE_WINDOW_S}s"],
}
# (label, attempts a run, guards)
ADAPTIVE_VARIANTS = (
    ("no guard", 3, ()),
    ("retry budget", 3, ("budget",)),
    ("adaptive", 3, ("adaptive",)),
    ("retry budget + adaptive", 3, ("budget", "adaptive")),
    ("adaptive, -n 1", 1, ("adaptive",)),
)

def start_overload_server(mode, value):
    """The flaky server as a backend that accepts at most `value` requests
    a second (`capacity`), or a share `value` of them (`fraction`)."""
    load = ["0", "37", "--capacity", str(value)] if mode == "capacity" else [str(1 - value), "37"]
    server = subprocess.Popen([sys.executable, os.path.join(ROOT, "benches", "flaky_server.py"), *load], stdout=subprocess.PIPE, text=True)
    return server, int(server.stdout.readline())


def http_get(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as reply:
        return reply.read().decode()


def fixed_point(mode, value):
    """Where the SRE book's rule settles when each run is one request (-n
    1): the backend receives about K x accepts (+1 a window). Against a
    capacity C, that is K x C; against a backend that accepts a fixed share
    a < 1/K of what it receives, accepts fall with the requests, and the
    only fixed point is about 1 / (1 - K a) requests a window: all but a
    trickle of the runs are rejected locally (a >= 1/K: none are)."""
    if mode == "capacity":
        return f"K x {value:g}/s = {ADAPTIVE_K * value:g}/s"
    if ADAPTIVE_K * value >= 1:
        return "no throttling (a >= 1/K)"
    per_window = 1 / (1 - ADAPTIVE_K * value)
    return f"1 / (1 - K a) = {per_window:.2f} a {ADAPTIVE_WINDOW_S} s window, {per_window / ADAPTIVE_WINDOW_S:.2f}/s"


def simulate_rule(mode, value, rate, seconds, steady, runs=200):
    """The SRE book's rule alone, simulated: `rate` runs a second of one
    request each for `seconds`, an exact sliding window, the backend of
    `mode`; the backend requests a second over the `steady` seconds of
    each of `runs` runs: (median, 5th, 95th percentile). With a few
    requests a window the rule is noisy; this says how noisy."""
    import random
    from collections import deque

    rng = random.Random(37)
    results = []
    for _ in range(runs):
        events, requests, accepts, sent = deque(), 0, 0, 0
        second, accepted_in_second = -1, 0
        for n in range(rate * seconds):
            now = n / rate
            while events and events[0][0] + ADAPTIVE_WINDOW_S <= now:
                _, accepted = events.popleft()
                requests -= 1
                accepts -= accepted
            rejected = rng.random() < max(0.0, (requests - ADAPTIVE_K * accepts) / (requests + 1))
            accepted = 0
            if not rejected:
                if int(now) != second:
                    second, accepted_in_second = int(now), 0
                accepted = accepted_in_second < value if mode == "capacity" else rng.random() < value
                accepted_in_second += accepted
                sent += steady[0] <= now < steady[1]
            events.append((now, int(accepted)))
            requests += 1
            accepts += accepted
        results.append(sent / (steady[1] - steady[0]))
    return percentile(results, 50), percentile(results, 5), percentile(results, 95)


def adaptive_phase(port, url, hosts, attempts, flags, rate, seconds, log):
    """An open loop: `rate` retry runs a second for `seconds`, alternately on
    the two "hosts" (state directories, the same redis-server), each one
    `curl` against the overload server with at most 3 attempts. Returns the
    exit statuses, the backend's (requests, accepts) per second, and the
    launch rate achieved. (The state flags only with a guard: alone they
    are a usage error.)"""
    http_get(port, "/reset")
    start = time.monotonic()
    running, codes = [], []
    for i in range(rate * seconds):
        delay = start + i / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        state = ["--state-url", url, "--state-timeout", "5s", "--state-dir", hosts[i % 2]] if flags else []
        argv = [
            RETRY, "-q", "--log-format", "json", "--log-file", log, "-n", str(attempts), "-d", "100ms", "-c", "1s", "--max-time", "10s",
            *flags, *state, "--", "curl", "-fsS", "-o", "/dev/null", f"http://127.0.0.1:{port}/",
        ]
        running.append(subprocess.Popen(argv, env=ENV, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        still = []
        for proc in running:
            if proc.poll() is None:
                still.append(proc)
            else:
                codes.append(proc.returncode)
        running = still
    launched = time.monotonic() - start
    codes += [proc.wait() for proc in running]
    series = json.loads(http_get(port, "/series"))["seconds"]
    # Seconds after the last request that reached the backend: none.
    series += [[0, 0]] * (seconds - len(series))
    return codes, series, rate * seconds / launched


def ensure_matplotlib():
    """A Python with matplotlib: a virtual environment under target/ (made
    once, from PyPI), so nothing is installed on the system."""
    venv = os.path.join(ROOT, "target", "bench-venv")
    python = os.path.join(venv, "bin", "python")
    ready = os.path.exists(python) and subprocess.run([python, "-c", "import matplotlib"], capture_output=True).returncode == 0
    if not ready:
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([python, "-m", "pip", "install", "--quiet", "matplotlib>=3.8"], check=True)
    return python


def bench_adaptive(report, quick, plot_path):
    """Issue 37: the load on a backend that accepts only part of it, with
    the retry budget alone and with adaptive throttling, beside the SRE
    book's expectation; and a plot of it."""
    rate, seconds = (20, 20) if quick else (20, 40)
    steady = (ADAPTIVE_WINDOW_S + 5, seconds)
    scenarios = ADAPTIVE_SCENARIOS[:2] if quick else ADAPTIVE_SCENARIOS
    redis, redis_port = start_redis()
    url = f"redis://127.0.0.1:{redis_port}/0"
    rows = [
        f"| backend | guard | backend requests/s (s {steady[0]}-{steady[1]}) | accepted/s | requests / accepts | K x accepted/s | runs rejected locally | runs that succeeded | requests in all | runs started/s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    results = {"rate": rate, "k": ADAPTIVE_K, "window_s": ADAPTIVE_WINDOW_S, "scenarios": []}
    warnings, points = 0, []
    try:
        with tempfile.TemporaryDirectory(prefix="retry-bench-") as a, tempfile.TemporaryDirectory(prefix="retry-bench-") as b, tempfile.TemporaryDirectory(prefix="retry-bench-") as logs:
            for number, (mode, value, title) in enumerate(scenarios):
                server, port = start_overload_server(mode, value)
                backend = "capacity 5/s" if mode == "capacity" else f"accepts {value:.0%}"
                median, low, high = simulate_rule(mode, value, rate, seconds, steady)
                points.append(
                    f"{backend}: in the long run {fixed_point(mode, value)}; the rule simulated for these {seconds} s (seconds {steady[0]}-{steady[1]}, 200 times) "
                    f"{median:.2f}/s, 5-95 % {low:.2f}-{high:.2f}/s"
                )
                scenario = {"title": title, "variants": {}}
                try:
                    for label, attempts, guards in ADAPTIVE_VARIANTS:
                        name = f"adaptive-{number}-{len(scenario['variants'])}"
                        log = os.path.join(logs, name)
                        flags = [part.format(name=name) for guard in guards for part in ADAPTIVE_GUARDS[guard]]
                        codes, series, launch_rate = adaptive_phase(port, url, [a, b], attempts, flags, rate, seconds, log)
                        scenario["variants"][label] = {"seconds": series}
                        events = json_events(log) if os.path.exists(log) else []
                        warned = sum(1 for e in events if e.get("event") == "warning")
                        warnings += warned
                        window = series[steady[0]:steady[1]]
                        span = max(len(window), 1)
                        requests = sum(s[0] for s in window) / span
                        accepts = sum(s[1] for s in window) / span
                        ratio = f"{requests / accepts:.2f}" if accepts else "-"
                        row = (
                            f"| {backend} | {label} | **{requests:.2f}** | {accepts:.2f} | {ratio} | {ADAPTIVE_K * accepts:.2f} "
                            f"| {codes.count(75)} of {len(codes)} | {codes.count(0)} | {sum(s[0] for s in series)} | {launch_rate:.1f} |"
                        )
                        rows.append(row)
                        print(row + (f" ({warned} warnings)" if warned else ""), flush=True)
                finally:
                    server.terminate()
                    server.wait()
                results["scenarios"].append(scenario)
    finally:
        redis.terminate()
        redis.wait()
    # The figures, kept for plotting again: plot_adaptive.py DATA PNG.
    data = os.path.join(ROOT, "target", "bench-adaptive.json")
    with open(data, "w") as f:
        json.dump(results, f)
    subprocess.run([ensure_matplotlib(), os.path.join(ROOT, "benches", "plot_adaptive.py"), data, plot_path], check=True)
    print(f"plot: {plot_path} (from {data})", flush=True)
    rows += [
        "",
        f"- each second for {seconds} s, {rate} `retry -q -n 3 -d 100ms -c 1s --max-time 10s [guard] --state-url redis://127.0.0.1:PORT/0 --state-dir HOST -- curl -fsS -o /dev/null http://127.0.0.1:PORT/` "
        f"are started (an open loop: a run does not wait for another; `-n 1` in the last row of each backend), HOST alternating between two directories, one redis-server; "
        f"curl's preset makes a 503 transient. Guards: the retry budget at its defaults (`--budget NAME`: ratio 0.2, burst 10, 1/min); "
        f"adaptive throttling `--circuit NAME --circuit-mode adaptive --circuit-window {ADAPTIVE_WINDOW_S}s` (K {ADAPTIVE_K:g}); "
        f"fresh names for every row. The backend (`benches/flaky_server.py`, `--capacity 5` or a fail rate) counts what it receives and accepts each second; "
        f"the rates are means over seconds {steady[0]}-{steady[1]}, after the first window; `requests in all` counts until the last run ended. Store warnings in all runs: {warnings}.",
        f"- the SRE book's expectation: the backend receives about K x what it accepts (the `K x accepted/s` column beside `backend requests/s`), "
        f"as the rule has it when every run is one request (`-n 1`); for the `-n 1` rows: " + "; ".join(points) + ". "
        f"Retries inside a run are requests the rule does not see coming (it decides once a run), so without a budget they push the load above K x accepts.",
        f"- the plot: `{os.path.relpath(plot_path, ROOT)}`, per second (a 5-second moving average; logarithmic above 1 request a second, linear below). Reproduce with `python3 benches/run.py --only adaptive`.",
    ]
    report.add(f"Adaptive throttling: {rate} runs a second against a backend that accepts only part of them", "\n".join(rows))


def bench_sim(report):
    out = subprocess.run(["cargo", "bench", "--quiet", "--bench", "contention"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    report.add("Contention simulation (Brooker's model, retry's own backoff code)", out.strip())


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    timeout_version = subprocess.run(["timeout", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return f"{os.cpu_count()} cores, {cpu}, Linux {platform.release()}; {timeout_version}; {time.strftime('%Y-%m-%d')}"


def builds(group):
    """The builds measured, the compiler and the commit, and the command
    that reproduces the block."""
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    # Changes to the sources measured (not to BENCHMARKS.md, which this run rewrites).
    changed = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)BENCHMARKS.md"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    commit += " with uncommitted changes" if changed else ""
    made = {label: f"`{os.path.relpath(binary, ROOT) if binary.startswith(ROOT + os.sep) else binary}`" for label, binary, _ in BUILDS}
    return (
        f"Builds: {', '.join(f'{label} = {made[label]} ({what})' for label, _, what in BUILDS)}; {rustc}; commit {commit}.\n"
        f"Reproduce: `python3 benches/run.py --only {group}`.\n"
    )


# The sections, and the generated block of BENCHMARKS.md each group fills:
# a group's block is rewritten when all its sections ran (and neither
# --quick nor --binary was given); the rest of the file is kept as it is.
GROUPS = {
    "one,attempts,peers": ("<!-- generated by benches/run.py --only one,attempts,peers -->", "<!-- end generated headline -->"),
    "scan,patterns,replay,sleep,occ,sim": ("<!-- generated by benches/run.py -->", "<!-- end generated -->"),
    "budget,fleet": ("<!-- generated by benches/run.py --only budget,fleet -->", "<!-- end generated budget -->"),
    "fleet-cluster": ("<!-- generated by benches/run.py --only fleet-cluster -->", "<!-- end generated fleet-cluster -->"),
    "adaptive": ("<!-- generated by benches/run.py --only adaptive -->", "<!-- end generated adaptive -->"),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default=",".join(GROUPS))
    parser.add_argument("--binary", help=f"measure this retry binary alone instead of building target/{MUSL_TARGET}/release/retry and target/release/retry; prints only")
    parser.add_argument("--runs", type=int, help="rounds of the peer tables (default 60, 15 with --quick)")
    parser.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="LABEL=PATH",
        help="also measure another build of retry in one, attempts and the peer tables, in the same rounds (say, the one before a change)",
    )
    args = parser.parse_args()
    only = set(args.only.split(","))
    compare = [tuple(spec.split("=", 1)) for spec in args.compare]
    global RETRY, BUILDS
    if args.binary:
        RETRY = os.path.abspath(args.binary)
        BUILDS = [("retry", RETRY, "given")]
    else:
        build = ["cargo", "build", "--release", "--locked", "--quiet"]
        if subprocess.run([*build, "--target", MUSL_TARGET], cwd=ROOT).returncode != 0:
            sys.exit(
                f"benches/run.py: the static musl release build failed; it needs the Rust target "
                f"(`rustup target add {MUSL_TARGET}`) and musl-gcc (Debian's musl-tools) for ring's C; "
                f"`--binary target/release/retry` measures the glibc build alone"
            )
        subprocess.run(build, cwd=ROOT, check=True)
        BUILDS = [("retry", RETRY, "static musl release"), ("retry (glibc)", GLIBC, "glibc release")]
    BUILDS += [(f"retry ({label})", os.path.abspath(path), label) for label, path in compare]
    reports = {group: Report() for group in GROUPS}
    headline, report, budget_report, cluster_report, adaptive_report = reports.values()
    size = (256 << 20) if args.quick else GIB
    runs = 5 if args.quick else 15
    if "one" in only:
        bench_one(headline, 50 if args.quick else 300)
    if "attempts" in only:
        # Runs of 200 attempts vary by a few percent (15 runs gave 1.07x
        # to 1.12x the shell loop within an hour): more runs than the
        # other sections.
        bench_attempts(headline, 5 if args.quick else 40)
    if "peers" in only:
        bench_peers(headline, args.runs or (15 if args.quick else 60))
    if only & {"scan", "replay"}:
        with tempfile.TemporaryDirectory(prefix="retry-bench-") as directory:
            data = make_data(directory, size)
            if "scan" in only:
                bench_scan(report, 3 if args.quick else 5, data, size)
            if "replay" in only:
                bench_replay(report, 3 if args.quick else 5, data, size)
    if "patterns" in only:
        with tempfile.TemporaryDirectory(prefix="retry-bench-") as directory:
            text_size = (16 << 20) if args.quick else (64 << 20)
            bench_patterns(report, 3 if args.quick else 5, make_text(directory, text_size), text_size)
    if "sleep" in only:
        bench_sleep(report, 100)
    if "occ" in only:
        bench_occ(report, [20] if args.quick else [20, 50], ["none", "full", "equal", "decorrelated"])
    if "sim" in only:
        bench_sim(report)
    if "budget" in only:
        bench_budget(budget_report, 3 if args.quick else 5)
    if "fleet" in only:
        bench_fleet(budget_report, 1 if args.quick else 3)
    if "fleet-cluster" in only:
        bench_fleet_cluster(cluster_report, 1 if args.quick else 3)
    if "adaptive" in only:
        plot = os.path.join(ROOT, "docs", "adaptive-throttling.png")
        if args.quick or args.binary:
            plot = os.path.join(tempfile.gettempdir(), "retry-adaptive-throttling.png")
        bench_adaptive(adaptive_report, args.quick, plot)
    if args.quick or args.binary or compare or args.runs:
        return
    path = os.path.join(ROOT, "BENCHMARKS.md")
    with open(path) as f:
        text = f.read()
    for group, (start, end) in GROUPS.items():
        if not set(group.split(",")) <= only:
            continue
        generated = "\n\n".join(f"### {title}\n\n{body}" for title, body in reports[group].sections)
        block = f"{start}\nMachine: {machine()}.\n{builds(group)}\n{generated}\n{end}"
        text, found = re.subn(re.escape(start) + ".*?" + re.escape(end), lambda _: block, text, flags=re.S)
        if not found:
            text = text.rstrip("\n") + "\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(text)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
