"""A Server-Sent Events client on its own thread, for the stream's end-to-end tests."""

import queue
import threading
import time

import httpx
from httpx_sse import connect_sse

STREAM = "/v1/events/stream"


class Reader:
    """An SSE client on its own thread, collecting events into a queue."""

    def __init__(self, port: int, key: str, query: str = "", last_event_id: int | None = None):
        self.events: queue.Queue = queue.Queue()
        self.stop = threading.Event()
        self.connected = threading.Event()
        headers = {"Authorization": f"Bearer {key}"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        self.url = f"http://127.0.0.1:{port}{STREAM}{'?' + query if query else ''}"
        self.headers = headers
        self.status: int | None = None
        self.content_type = ""
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.connected.wait(15), "the stream did not open"

    def _run(self):
        with (
            httpx.Client(timeout=httpx.Timeout(30, read=60)) as client,
            connect_sse(client, "GET", self.url, headers=self.headers) as source,
        ):
            self.status = source.response.status_code
            self.content_type = source.response.headers["content-type"]
            self.connected.set()
            try:
                for event in source.iter_sse():
                    # The SSE rule: no data, nothing to dispatch (httpx-sse hands comment
                    # blocks, our heartbeats, over as empty events once an id was seen).
                    if event.data:
                        self.events.put(event)
                    if self.stop.is_set():
                        return
            except httpx.HTTPError:
                if not self.stop.is_set():  # the server went away before the test ended
                    raise

    def take(self, count: int, timeout: float = 15) -> list:
        got = []
        deadline = time.monotonic() + timeout
        while len(got) < count:
            try:
                got.append(self.events.get(timeout=max(0.01, deadline - time.monotonic())))
            except queue.Empty:
                break
        return got

    def close(self):
        self.stop.set()
