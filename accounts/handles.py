"""Handles: the unique, changeable name a user is mentioned by (``@dana``).

Lowercase letters, digits, ``-`` and ``_``, starting and ending with a letter or digit, at
most 39 characters (GitHub's limit). A new user's handle is derived from the local part of
their email; a taken one gets a number (``dana``, ``dana-2``, ...).
"""

import re
import secrets
from collections.abc import Iterator

HANDLE_MAX_LENGTH = 39
HANDLE_PATTERN = r"^[a-z0-9](?:[a-z0-9_-]{0,37}[a-z0-9])?$"
HANDLE_RE = re.compile(HANDLE_PATTERN)
HANDLE_RULE = (
    "A handle is 1 to 39 lowercase letters, digits, '-' or '_', "
    "starting and ending with a letter or digit."
)

# What an ``@`` starts in running text: the longest run of handle characters, not preceded by
# a word character (``dana@example.com`` is an address, not a mention). Trailing ``-`` and
# ``_`` are punctuation (``@dana_, look``), so they are trimmed before the lookup.
MENTION_RE = re.compile(r"(?<![\w@])@([A-Za-z0-9][A-Za-z0-9_-]*)")


def handle_base(email: str) -> str:
    """The handle an email suggests: its local part (before any ``+tag``), lowercased, each
    run of other characters turned into one ``-``."""
    local = email.split("@", 1)[0].split("+", 1)[0].lower()
    base = re.sub(r"[^a-z0-9_-]+", "-", local).strip("-_")
    # Room left for a "-<number>" suffix.
    return base[: HANDLE_MAX_LENGTH - 8].strip("-_") or "user"


def handle_candidates(email: str) -> Iterator[str]:
    """Handles to try for a new user, best first: the base, numbered ones, then random."""
    base = handle_base(email)
    yield base
    for number in range(2, 10):
        yield f"{base}-{number}"
    while True:
        yield f"{base}-{secrets.token_hex(3)}"


def mentioned_handles(text: str) -> list[str]:
    """The handles ``@mentioned`` in plain text, lowercased, in order, each once."""
    found = (match.group(1).rstrip("-_").lower() for match in MENTION_RE.finditer(text))
    return list(dict.fromkeys(handle for handle in found if HANDLE_RE.match(handle)))
