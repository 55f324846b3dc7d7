"""What the live schemathesis run is given that no generator can draw (tests/fuzz/hooks.py
applies it; tests/fuzz/test_live_schema.py makes it and proves it): a git remote this server
can fetch, with branches to open pull requests between; a webhook receiver whose host
resolves; another user of the workspace. The test names them in ``COLLAB_FUZZ_*`` variables.

No schemathesis hook is registered here, so the test's own process may import it.
"""

import hashlib
import hmac
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from requests.models import complexjson

REPOSITORIES = "POST /v1/projects/{project_id}/repositories"
PULLS = "POST /v1/repositories/{repository_id}/pulls"
PUSH = "POST /v1/repositories/{repository_id}/push"
WEBHOOKS = "POST /v1/projects/{project_id}/webhooks"
MEMBERS = "POST /v1/projects/{id}/members"


@dataclass
class Steering:
    origin: str | None = None  # a git remote with the branches of ``pulls``
    pulls: list[tuple[str, str]] = field(default_factory=list)  # (head, base) pairs
    receiver: str | None = None  # a webhook receiver's URL
    member: int | None = None  # the id of a workspace member not the run's
    _pairs: Iterator[tuple[str, str]] | None = field(default=None, repr=False)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> "Steering":
        member = environ.get("COLLAB_FUZZ_MEMBER")
        return cls(
            origin=environ.get("COLLAB_FUZZ_ORIGIN"),
            pulls=[_pair(text) for text in environ.get("COLLAB_FUZZ_PULLS", "").split()],
            receiver=environ.get("COLLAB_FUZZ_RECEIVER"),
            member=int(member) if member else None,
        )

    def body(self, label: str, body: dict) -> None:
        """Give a create's body (``label``: "METHOD /path") what no generator draws."""
        if label == REPOSITORIES and self.origin:
            body["clone_url"] = self.origin
        elif label == PULLS and self.pulls:
            body["head"], body["base"] = self._next_pair()
        elif label == WEBHOOKS and self.receiver:
            body["url"], body["events"] = self.receiver, ["*"]
        elif label == MEMBERS and self.member is not None:
            body["user_id"] = self.member

    def _next_pair(self) -> tuple[str, str]:
        # Head and base pairs in turn: a pair with a pull request open is refused (422) until
        # it closes, so each create tries the next one.
        if self._pairs is None:
            self._pairs = itertools.cycle(self.pulls)
        return next(self._pairs)


def _pair(text: str) -> tuple[str, str]:
    head, _, base = text.partition(":")  # "head:base"
    return head, base


def push_signature(secret: str, body: dict) -> str:
    """``X-Hub-Signature-256`` of the bytes requests sends for ``json=body`` (schemathesis's
    transport, and the test's), signed as GitHub signs a webhook."""
    sent = complexjson.dumps(body, allow_nan=False).encode()
    return "sha256=" + hmac.new(secret.encode(), sent, hashlib.sha256).hexdigest()
