#!/usr/bin/env python3
"""A local HTTP server that fails, for the retry budget experiment.

    flaky_server.py FAIL_RATE [SEED]

Answers every GET with 503 at random with probability FAIL_RATE (1 = down:
503 to everything), else 200, and counts the requests that reach it.
GET /stats is not counted: it returns "requests failed" so far. Threaded;
listens on 127.0.0.1 only; prints its port on the first line of stdout;
stops on SIGTERM.
"""
import http.server
import random
import signal
import sys
import threading

fail_rate = float(sys.argv[1])
rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 14)
lock = threading.Lock()
requests = 0
failed = 0


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def reply(self, status, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        global requests, failed
        if self.path == "/stats":
            with lock:
                body = f"{requests} {failed}\n"
            return self.reply(200, body)
        with lock:
            requests += 1
            fail = rng.random() < fail_rate
            failed += fail
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
