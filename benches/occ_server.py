#!/usr/bin/env python3
"""A local optimistic-concurrency HTTP server for the contention experiment.

One row with a version. GET /version returns it; POST /write?version=V
succeeds (200) and bumps the version only if V is still current, else 409.
Counts every write that reaches it. Listens on 127.0.0.1 only; prints its
port on the first line of stdout; GET /stats returns "writes accepted".
Stops on SIGTERM.
"""
import http.server
import signal
import sys
import threading
from urllib.parse import urlparse, parse_qs

lock = threading.Lock()
version = 0
writes = 0
accepted = 0


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def reply(self, status, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = urlparse(self.path).path
        with lock:
            if path == "/version":
                body = str(version)
            elif path == "/stats":
                body = f"{writes} {accepted}"
            else:
                return self.reply(404, "no\n")
        self.reply(200, body)

    def do_POST(self):
        global version, writes, accepted
        query = parse_qs(urlparse(self.path).query)
        seen = int(query.get("version", ["-1"])[0])
        with lock:
            writes += 1
            ok = seen == version
            if ok:
                version += 1
                accepted += 1
        self.reply(200 if ok else 409, "ok\n" if ok else "conflict\n")

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512


server = Server(("127.0.0.1", 0), Handler)
signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
print(server.server_address[1], flush=True)
server.serve_forever()
