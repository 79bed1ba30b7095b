#!/usr/bin/env python3
"""Hedged attempts against a heavy tail, measured with retry's own code.

    python3 benches/hedging.py                 # 2000 runs per variant; prints
                                               # the table, writes the plot
    python3 benches/hedging.py --runs 300      # a try-out
    python3 benches/hedging.py --binary PATH   # another build (no cargo build;
                                               # by default the static musl
                                               # release build users install)

The command stands for a request with a heavy tail: it takes 50 ms, except
13 times in 256 (5.1 %) when it takes 1 s (20 times slower), each copy
drawing on its own (/dev/urandom), and it appends a line to a counter file
when it starts, so the load it puts on "the backend" is counted where it
lands. Variants, each run one after another within a variant, the variants
side by side: the command alone; `retry --` with no hedging; `--hedge-after
100ms` (one hedge); `--hedge-after 100ms --hedges 2`; and `--hedge-after
p95` learning under a circuit in a scratch state directory (its first 5 runs
are not hedged). For each: p50, p99 and p99.9 of the whole run's wall time,
and the copies started per run (the extra load). The plot
(docs/hedging-tail.png, needs matplotlib: a virtual environment under
target/bench-venv is made once, from PyPI) shows, for each variant, the
share of runs slower than each time: the tail itself.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLOT = os.path.join(ROOT, "docs", "hedging-tail.png")
ENV = {k: v for k, v in os.environ.items() if not k.startswith("RETRY_")}

# One byte of /dev/urandom below 13: 13 in 256, 5.1 %.
COMMAND = (
    'echo x >> "$COUNTER"; '
    "n=$(od -An -N1 -tu1 /dev/urandom); "
    'if [ "$n" -lt 13 ]; then sleep 1; else sleep 0.05; fi'
)


def variants(retry, state_dir):
    shell = ["sh", "-c", COMMAND]
    base = [retry, "--stdin", "null", "-q"]
    return [
        ("command alone", shell),
        ("retry, no hedging", base + ["--"] + shell),
        ("--hedge-after 100ms", base + ["--hedge-after", "100ms", "--"] + shell),
        (
            "--hedge-after 100ms --hedges 2",
            base + ["--hedge-after", "100ms", "--hedges", "2", "--"] + shell,
        ),
        (
            "--hedge-after p95 (learned)",
            base
            + ["--hedge-after", "p95", "--circuit", "bench", "--state-dir", state_dir, "--"]
            + shell,
        ),
    ]


def percentile(values, p):
    """The nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


def run_variant(argv, runs, counter, out):
    env = dict(ENV, COUNTER=counter)
    times = []
    for _ in range(runs):
        start = time.monotonic()
        done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL)
        times.append((time.monotonic() - start) * 1000)
        if done.returncode != 0:
            sys.exit(f"{argv}: exit {done.returncode}")
    out.extend(times)


def ensure_matplotlib():
    """A Python with matplotlib: a virtual environment under target/ (made
    once, from PyPI), so nothing is installed on the system."""
    venv = os.path.join(ROOT, "target", "bench-venv")
    python = os.path.join(venv, "bin", "python")
    check = [python, "-c", "import matplotlib"]
    if not (os.path.exists(python) and subprocess.run(check, capture_output=True).returncode == 0):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([python, "-m", "pip", "install", "--quiet", "matplotlib>=3.8"], check=True)
    return python


PLOTTER = r"""
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
data = json.load(open(sys.argv[1]))
fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
for label, times in data["times"].items():
    times = sorted(times)
    n = len(times)
    ax.step(times, [(n - i) / n for i in range(n)], where="post", label=label)
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_ylim(0.5 / data["runs"], 1.05)
ax.set_xlabel("run time (ms)")
ax.set_ylabel("share of runs that took longer")
ax.set_title("A command 20x slower 5% of the time: the tail with and without hedging")
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(sys.argv[2])
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--binary")
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args()
    retry = args.binary
    if retry is None:
        # The build users install, as benches/run.py measures it.
        target = "x86_64-unknown-linux-musl"
        build = ["cargo", "build", "--release", "--locked", "--quiet", "--target", target]
        subprocess.run(build, cwd=ROOT, check=True)
        retry = os.path.join(ROOT, "target", target, "release", "retry")
    with tempfile.TemporaryDirectory() as scratch:
        state_dir = os.path.join(scratch, "state")
        os.mkdir(state_dir)
        chosen = variants(retry, state_dir)
        results = {label: [] for label, _ in chosen}
        threads = []
        for index, (label, argv) in enumerate(chosen):
            counter = os.path.join(scratch, f"counter{index}")
            thread = threading.Thread(
                target=run_variant, args=(argv, args.runs, counter, results[label])
            )
            threads.append(thread)
            thread.start()
        for thread in threads:
            thread.join()
        copies = {}
        for index, (label, _) in enumerate(chosen):
            with open(os.path.join(scratch, f"counter{index}")) as counter:
                copies[label] = sum(1 for _ in counter)
    print(f"{args.runs} runs per variant; the command: 50 ms, or 1 s 13 times in 256.\n")
    print("| variant | p50 | p99 | p99.9 | copies per run |")
    print("|---|---:|---:|---:|---:|")
    for label, times in results.items():
        print(
            f"| {label} | {percentile(times, 50):.0f} ms | {percentile(times, 99):.0f} ms "
            f"| {percentile(times, 99.9):.0f} ms | {copies[label] / args.runs:.3f} |"
        )
    if args.no_plot:
        return
    python = ensure_matplotlib()
    with tempfile.NamedTemporaryFile("w", suffix=".json") as data:
        json.dump({"runs": args.runs, "times": results}, data)
        data.flush()
        subprocess.run([python, "-c", PLOTTER, data.name, PLOT], check=True)
    print(f"\nplot: {os.path.relpath(PLOT, ROOT)}")


if __name__ == "__main__":
    main()
