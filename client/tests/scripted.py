"""A real HTTP server on 127.0.0.1 that answers from a script, and records what it got."""

import http.server
import json
import threading
from dataclasses import dataclass, field


@dataclass
class Answer:
    status: int = 200
    body: dict | None = None
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False  # close the connection without answering
    # A body sent as it is (a file's bytes) instead of the JSON of ``body``; ``cut`` of them
    # withheld: the connection closes short of the Content-Length announced.
    raw: bytes | None = None
    content_type: str = "application/octet-stream"
    cut: int = 0


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class ScriptedServer:
    def __init__(self, answers: list[Answer]):
        self.answers = list(answers)
        self.seen: list[Seen] = []
        script = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                script.seen.append(
                    Seen(
                        self.command,
                        self.path,
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                    )
                )
                answer = script.answers.pop(0) if script.answers else Answer()
                if answer.drop:
                    self.close_connection = True
                    self.connection.close()
                    return
                if answer.raw is not None:
                    payload, content_type = answer.raw, answer.content_type
                else:
                    payload = json.dumps(
                        answer.body if answer.body is not None else {"success": True, "data": None}
                    ).encode()
                    content_type = "application/json"
                self.send_response(answer.status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                if answer.cut:
                    self.wfile.write(payload[: -answer.cut])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.close()
                    return
                self.wfile.write(payload)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer  # noqa: N815

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        # Polls for shutdown every 50 ms, not the standard half second each test waited at its end.
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> "ScriptedServer":
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def error(status: int, code: str, message: str = "no", **headers: str) -> Answer:
    body = {"success": False, "error": {"code": code, "message": message, "details": {}}}
    return Answer(status=status, body=body, headers=headers)


def ok(data, status: int = 200, **headers: str) -> Answer:
    return Answer(status=status, body={"success": True, "data": data}, headers=headers)
