"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``):
no WebDriver, no WebSocket client, only the browser Debian packages."""

import fcntl
import json
import os
import select
import shutil
import subprocess
import time

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--no-first-run",
    "--remote-debugging-pipe",
]


def executable() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Chromium:
    """One browser with one page; ``visit`` answers the page's console errors, uncaught
    exceptions and Content-Security-Policy violations."""

    def __init__(self, profile_dir: str, timeout: float = 30.0):
        self.timeout = timeout
        to_browser_read, self.to_browser = os.pipe()
        self.from_browser, from_browser_write = os.pipe()

        def pipes_as_3_and_4():
            # Chromium reads commands from fd 3 and writes to fd 4; by way of fds out of
            # their way, lest one pipe's end already be 3 or 4.
            reading = fcntl.fcntl(to_browser_read, fcntl.F_DUPFD, 10)
            writing = fcntl.fcntl(from_browser_write, fcntl.F_DUPFD, 10)
            os.dup2(reading, 3)
            os.dup2(writing, 4)

        self.process = subprocess.Popen(  # noqa: S603 - our own browser, our own flags
            [executable(), *FLAGS, f"--user-data-dir={profile_dir}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=pipes_as_3_and_4,  # noqa: PLW1509 - dup2 only
            pass_fds=(3, 4),  # kept open after the hook
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)

    def close(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)
        os.close(self.to_browser)
        os.close(self.from_browser)

    def _read(self, deadline: float) -> dict | None:
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.from_browser], [], [], left)
            if ready:
                chunk = os.read(self.from_browser, 1 << 16)
                if not chunk:
                    raise RuntimeError("Chromium closed its pipe")
                self.buffer += chunk
        message, _, self.buffer = self.buffer.partition(b"\0")
        return json.loads(message)

    def call(self, method: str, session: bool = False, **params) -> dict:
        self.next_id += 1
        message: dict = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read(deadline)
            if reply is None:
                raise TimeoutError(method)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def _wait_for(self, method: str, deadline: float) -> None:
        while True:
            if any(event.get("method") == method for event in self.events):
                return
            event = self._read(deadline)
            if event is None:
                raise TimeoutError(method)
            self.events.append(event)

    def _drain(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (event := self._read(deadline)) is not None:
            self.events.append(event)

    def set_cookie(self, name: str, value: str, url: str) -> None:
        self.call("Network.setCookie", session=True, name=name, value=value, url=url)

    def visit(self, url: str, settle: float = 1.0) -> tuple[str, list[str]]:
        """Open ``url``, wait for its load and ``settle`` seconds more; its final URL and the
        problems reported meanwhile."""
        self.events.clear()
        self.call("Page.navigate", session=True, url=url)
        self._wait_for("Page.loadEventFired", time.monotonic() + self.timeout)
        self._drain(settle)
        location = self.call(
            "Runtime.evaluate", session=True, expression="location.href", returnByValue=True
        )["result"]["value"]
        return location, [problem for event in self.events if (problem := _problem(event))]

    def wait_until(self, expression: str, timeout: float = 30.0):
        """Evaluate ``expression`` until it is truthy (a page's scripts still drawing on a busy
        machine), reading events meanwhile; its last value."""
        deadline = time.monotonic() + timeout
        while not (value := self.evaluate(expression)) and time.monotonic() < deadline:
            self._drain(0.25)
        return value

    def problems(self) -> list[str]:
        """What the page reported since it was opened."""
        return [problem for event in self.events if (problem := _problem(event))]

    def evaluate(self, expression: str):
        return self.call(
            "Runtime.evaluate", session=True, expression=expression, returnByValue=True
        )["result"].get("value")


def _problem(event: dict) -> str | None:
    method, params = event.get("method"), event.get("params", {})
    if method == "Runtime.exceptionThrown":
        details = params["exceptionDetails"]
        return f"exception: {details.get('exception', {}).get('description') or details['text']}"
    if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
        return "console: " + " ".join(
            str(arg.get("value", arg.get("description"))) for arg in params["args"]
        )
    if method == "Log.entryAdded" and params["entry"]["level"] == "error":
        entry = params["entry"]
        if entry.get("url", "").endswith("/favicon.ico"):
            return None  # the browser's own guess, asked of every site, not the page's
        return f"{entry['source']}: {entry['text']} ({entry.get('url', '')})"
    return None
