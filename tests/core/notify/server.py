"""A real HTTP server on 127.0.0.1 (the stdlib's ThreadingHTTPServer, in a thread) that records
each request and answers as told: 200, an error status N times, 429 with Retry-After, or no
answer at all (it holds the connection until the server stops)."""

from __future__ import annotations

import http.server
import socket
import threading
import time
from dataclasses import dataclass


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float  # time.perf_counter() when it arrived


class Hook:
    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.script: list[tuple] = []  # ("status", 500) / ("retry_after", "1") / ("hang",)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        hook = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with hook.lock:
                    hook.requests.append(
                        Request(
                            "POST", self.path, dict(self.headers.items()), body, time.perf_counter()
                        )
                    )
                    step = hook.script.pop(0) if hook.script else ("status", 200)
                if step[0] == "hang":
                    hook.stop.wait(60)
                    return
                code = 429 if step[0] == "retry_after" else step[1]
                self.send_response(code)
                if step[0] == "retry_after":
                    self.send_header("Retry-After", step[1])
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def fail(self, code: int, times: int) -> None:
        self.script += [("status", code)] * times

    def wait_for(self, n: int, timeout: float = 10.0) -> list[Request]:
        deadline = time.monotonic() + timeout
        while len(self.requests) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        return list(self.requests)

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


def dead_port() -> int:
    """A port on 127.0.0.1 that nobody listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Silent:
    """A socket that listens and never accepts: the connection opens, no answer comes."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(512)
        self.port = self.sock.getsockname()[1]

    def close(self) -> None:
        self.sock.close()
