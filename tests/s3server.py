"""A real S3 API server on loopback for tests and benches: moto's S3 backend (`moto[server]`)
served over HTTP by werkzeug in its own process, behind a middleware that counts requests.

`python tests/s3server.py PORT [--no-conditional-writes]` serves until killed (the flag drops
`If-None-Match` from requests: a store without conditional writes); `S3Server` starts and stops it from Python.
`GET /_tablespec/requests` returns the request counts ({"total": n, "GET": n, ..., "bytes_received":
request bodies, "bytes_sent": response bodies}) and
`POST /_tablespec/requests` resets them: counted at the server, whatever the client.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter

COUNTS_PATH = "/_tablespec/requests"


def _app(conditional_writes: bool = True):
    from moto.server import DomainDispatcherApplication, create_backend_app
    inner = DomainDispatcherApplication(create_backend_app)
    counts: Counter = Counter()
    lock = threading.Lock()

    def app(environ, start_response):
        if environ.get("PATH_INFO") == COUNTS_PATH:
            with lock:
                if environ["REQUEST_METHOD"] == "POST":
                    counts.clear()
                body = json.dumps({"total": sum(v for k, v in counts.items() if not k.startswith("bytes")),
                                   "bytes_received": 0, "bytes_sent": 0, **counts}).encode()
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        if not conditional_writes:   # a store that ignores If-None-Match (as some S3-compatible ones do)
            environ.pop("HTTP_IF_NONE_MATCH", None)
        with lock:
            counts[environ["REQUEST_METHOD"]] += 1
            counts["bytes_received"] += int(environ.get("CONTENT_LENGTH") or 0)
        return _counted(inner(environ, start_response))

    def _counted(body):
        try:
            for chunk in body:
                with lock:
                    counts["bytes_sent"] += len(chunk)
                yield chunk
        finally:
            if hasattr(body, "close"):
                body.close()
    return app


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    """The server in a child process on 127.0.0.1 and a free port; `stop()` ends that process."""

    def __init__(self, conditional_writes: bool = True):
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "MOTO_ALLOW_NONEXISTENT_REGION": "true"}
        self.log = tempfile.TemporaryFile()   # werkzeug logs every request: never a pipe nobody drains
        argv = [sys.executable, os.path.abspath(__file__), str(self.port)] + ([] if conditional_writes else ["--no-conditional-writes"])
        self.proc = subprocess.Popen(argv, env=env,
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + 30
        while True:
            try:
                self.requests()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.log.seek(0)
                    err = self.log.read().decode(errors="replace")
                    self.stop()
                    raise RuntimeError(f"the S3 test server did not start: {err[-2000:]}") from None
                time.sleep(0.1)

    def requests(self, reset: bool = False) -> dict:
        req = urllib.request.Request(self.endpoint + COUNTS_PATH, method="POST" if reset else "GET")
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


if __name__ == "__main__":
    from werkzeug.serving import run_simple
    run_simple("127.0.0.1", int(sys.argv[1]), _app("--no-conditional-writes" not in sys.argv), threaded=True,
               use_reloader=False)
