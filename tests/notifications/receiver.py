"""A real HTTP receiver on 127.0.0.1 for webhook tests: it records every request and answers
with the statuses it is told to, in order (then 200). It speaks HTTP/1.1 and keeps
connections open, as most receivers do; each request records the client's port, so a test
can tell a kept connection from a new one."""

import http.server
import threading
import time
from dataclasses import dataclass, field

from tests.liveserver import serve_in_thread


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    peer_port: int = 0
    at: float = 0.0  # when it arrived (time.monotonic)


@dataclass
class Receiver:
    statuses: list[int] = field(default_factory=list)
    requests: list[Received] = field(default_factory=list)
    port: int = 0
    arrived: threading.Condition = field(default_factory=threading.Condition)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def wait_for(self, count: int, timeout: float = 15.0) -> list[Received]:
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.requests) >= count, timeout=timeout)
            return list(self.requests)


def start_receiver(statuses: list[int] | None = None) -> tuple[Receiver, http.server.HTTPServer]:
    receiver = Receiver(statuses=list(statuses or []))

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):  # noqa: N802 - the http.server interface
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            with receiver.arrived:
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                receiver.requests.append(
                    Received(
                        self.path,
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                        peer_port=self.client_address[1],
                        at=time.monotonic(),
                    )
                )
                receiver.arrived.notify_all()
            payload = b'{"ok": true}' if status < 300 else b'{"error": "try later"}'
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.port = server.server_address[1]
    serve_in_thread(server)
    return receiver, server
