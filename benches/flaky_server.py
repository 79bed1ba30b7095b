#!/usr/bin/env python3
"""A local HTTP server that fails, for the retry budget and adaptive
throttling experiments.

    flaky_server.py FAIL_RATE [SEED]
    flaky_server.py FAIL_RATE [SEED] --capacity N

Answers every GET with 503 at random with probability FAIL_RATE (1 = down:
503 to everything), else 200, and counts the requests that reach it. With
`--capacity N` it is an overloaded server instead: it accepts (200) at most N
requests a second and answers 503 to the rest (FAIL_RATE is then ignored).
No 503 carries a Retry-After. Not counted: GET /stats, which returns
"requests failed" so far; GET /series, which returns as JSON
{"seconds": [[requests, accepts], ...]}, per second since the server started
or since the last GET /reset, which starts the series afresh. Threaded;
listens on 127.0.0.1 only; prints its port on the first line of stdout;
stops on SIGTERM.
"""
import http.server
import json
import random
import signal
import sys
import threading
import time

args = sys.argv[1:]
capacity = None
if "--capacity" in args:
    at = args.index("--capacity")
    capacity = float(args[at + 1])
    del args[at:at + 2]
fail_rate = float(args[0])
rng = random.Random(int(args[1]) if len(args) > 1 else 14)
lock = threading.Lock()
requests = 0
failed = 0
start = time.monotonic()
seconds = []  # [requests, accepts] per second since start
this_second = [start, 0]  # --capacity: when the current second began, accepted in it


def fails(now):
    """Whether to answer 503 (under the lock)."""
    if capacity is None:
        return rng.random() < fail_rate
    if now - this_second[0] >= 1.0:
        this_second[0], this_second[1] = now, 0
    if this_second[1] < capacity:
        this_second[1] += 1
        return False
    return True


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def reply(self, status, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        global requests, failed, start, seconds
        if self.path == "/stats":
            with lock:
                body = f"{requests} {failed}\n"
            return self.reply(200, body)
        if self.path == "/series":
            with lock:
                body = json.dumps({"seconds": seconds})
            return self.reply(200, body)
        if self.path == "/reset":
            with lock:
                start, seconds = time.monotonic(), []
                this_second[0], this_second[1] = start, 0
            return self.reply(200, "ok\n")
        now = time.monotonic()
        with lock:
            requests += 1
            fail = fails(now)
            failed += fail
            second = int(now - start)
            while len(seconds) <= second:
                seconds.append([0, 0])
            seconds[second][0] += 1
            seconds[second][1] += not fail
        if fail:
            self.reply(503, "unavailable\n")
        else:
            self.reply(200, "ok\n")

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512


server = Server(("127.0.0.1", 0), Handler)
signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
print(server.server_address[1], flush=True)
server.serve_forever()
