"""A Server-Sent Events client on its own thread, for the stream's end-to-end tests."""

import queue
import threading
import time

import httpx
from httpx_sse import ServerSentEvent

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
            client.stream("GET", self.url, headers=self.headers) as response,
        ):
            self.status = response.status_code
            self.content_type = response.headers.get("content-type", "")
            if response.status_code != 200:
                self.connected.set()
                return
            try:
                self._read(response)
            except httpx.HTTPError:
                if not self.stop.is_set():  # the server went away before the test ended
                    raise

    def _read(self, response: httpx.Response) -> None:
        """The SSE format by hand: its ``: connected`` comment, which says the stream is live
        (the headers come before it), is a comment that SSE libraries drop."""
        fields: dict[str, str] = {}
        data: list[str] = []
        for line in response.iter_lines():
            if line.startswith(":"):
                if line == ": connected":
                    self.connected.set()
            elif line:
                name, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if name == "data":
                    data.append(value)
                else:
                    fields[name] = value
            elif data:  # a blank line ends an event; one without data is not dispatched
                self.events.put(
                    ServerSentEvent(
                        event=fields.get("event", "message"),
                        data="\n".join(data),
                        id=fields.get("id", ""),
                    )
                )
                fields, data = {}, []
            else:
                fields = {}
            if self.stop.is_set():
                return

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
