#!/usr/bin/env python3
"""Where retry's resident memory comes from, per mapping and per ELF section.

    python3 benches/pages.py [--runs N] [BINARY]
        mean Rss of every mapping of `BINARY -- sleep 0.5`, read from
        /proc/PID/smaps, and the binary's resident pages split by ELF section
        (the present bits of /proc/PID/pagemap);
    python3 benches/pages.py --touched [BINARY]
        the pages of the binary that `BINARY -- true` really reads or
        executes, one instruction at a time under `valgrind --tool=lackey`.

The difference between the two is the kernel's fault-around: a fault on a
file page maps the (up to) 16 pages of the 64 KiB window around it that are
in the page cache, so a run that touches a few pages here and there is
charged whole windows. The windows move with the load address (address
randomization), so the resident figure varies from run to run by a few
windows: hence the mean. BINARY defaults to target/release/retry.
"""
import argparse
import collections
import os
import re
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = 4096
# Where valgrind loads a position-independent executable.
VALGRIND_BASE = 0x108000


def sections(binary):
    """(name, address, size) of the binary's allocated sections."""
    out = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if m and int(m.group(2), 16):
            found.append((m.group(1), int(m.group(2), 16), int(m.group(3), 16)))
    return found


def section_of(offset, table):
    """The section a page at `offset` (from the load address) starts in or overlaps first."""
    for name, start, size in table:
        if start <= offset < start + max(size, 1) or offset <= start < offset + PAGE:
            return name
    return "(between sections)"


def kind_of(path, binary):
    if path == binary:
        return "retry"
    if not path:
        return "anonymous"
    if path.startswith("/"):
        return os.path.basename(path).split(".so")[0]
    return path


def resident(binary, runs):
    table = sections(binary)
    by_mapping = collections.Counter()
    by_section = collections.Counter()
    for _ in range(runs):
        child = subprocess.Popen([binary, "--", "sleep", "0.5"])
        time.sleep(0.25)
        base = None
        with open(f"/proc/{child.pid}/smaps") as smaps, open(f"/proc/{child.pid}/pagemap", "rb") as pagemap:
            kind = None
            for line in smaps:
                head = re.match(r"([0-9a-f]+)-([0-9a-f]+) \S+ ([0-9a-f]+) \S+ \d+\s*(.*)", line)
                if head:
                    low, high, offset = (int(head.group(i), 16) for i in (1, 2, 3))
                    path = head.group(4).strip()
                    kind = kind_of(os.path.realpath(path) if path.startswith("/") else path, binary)
                    if kind != "retry":
                        continue
                    base = low - offset if base is None else base
                    for page in range(low, high, PAGE):
                        pagemap.seek(page // PAGE * 8)
                        if struct.unpack("Q", pagemap.read(8))[0] >> 63:
                            by_section[section_of(page - base, table)] += 4
                elif line.startswith("Rss:"):
                    by_mapping[kind] += int(line.split()[1])
        child.wait()
    print(f"`{binary} -- sleep 0.5`, mean of {runs} runs (KiB):\n")
    print("| mapping | resident |\n|---|---:|")
    for kind, kib in by_mapping.most_common():
        if kib:
            print(f"| {kind} | {kib / runs:.0f} |")
    print(f"| **all** | **{sum(by_mapping.values()) / runs:.0f}** |")
    print("\n| section of retry | resident | size |\n|---|---:|---:|")
    sizes = {name: size for name, _, size in table}
    for name, kib in by_section.most_common():
        print(f"| {name} | {kib / runs:.0f} | {sizes.get(name, 0) // 1024} |")


def touched(binary):
    table = sections(binary)
    with tempfile.NamedTemporaryFile(mode="r") as log:
        subprocess.run(
            ["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-file={log.name}", binary, "--", "true"],
            check=True,
        )
        end = max(start + size for _, start, size in table)
        code, data = set(), set()
        for line in log:
            fields = line.split()
            if len(fields) < 2 or line.startswith("="):
                continue
            offset = int(fields[1].split(",")[0], 16) - VALGRIND_BASE
            if 0 <= offset < end:
                (code if fields[0] == "I" else data).add(offset // PAGE)
    by_section = collections.Counter()
    for page in code | data:
        by_section[section_of(page * PAGE, table)] += 4
    windows = len({page * PAGE // 65536 for page in code})
    print(f"`{binary} -- true`: pages really used (KiB), under valgrind's lackey:\n")
    print("| section | used |\n|---|---:|")
    for name, kib in by_section.most_common():
        print(f"| {name} | {kib} |")
    print(f"| **all** | **{sum(by_section.values())}** |")
    print(f"\nexecuted code: {len(code)} pages in {windows} windows of 64 KiB (at valgrind's load address)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary", nargs="?", default=os.path.join(ROOT, "target", "release", "retry"))
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--touched", action="store_true", help="pages really used, under valgrind")
    args = parser.parse_args()
    binary = os.path.realpath(args.binary)
    if args.touched:
        touched(binary)
    else:
        resident(binary, args.runs)


if __name__ == "__main__":
    sys.exit(main())
