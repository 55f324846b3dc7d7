"""Schemathesis hooks for the run against a live server (tests/fuzz/test_live_schema.py).

``Idempotency-Key`` is unique per request: the schema says so in words, which no generator
reads, so a valid key drawn for one request could be drawn again for another (the server then
rightly answers 422). Each valid key is replaced by a new UUID at the call; an invalid one is
left alone.

A list's ``cursor`` is a token the server signed: one a generator draws in the schema's alphabet
is a forgery, which the server rightly refuses (400), and beside ``page`` it is refused too
(OpenAPI 3.0 cannot say that two parameters exclude each other). A valid-looking cursor is left
out of positive cases; negative ones (an empty cursor, a character outside the alphabet) go as
drawn, and must be refused.
"""

import re
import uuid

import schemathesis

HEADER = "Idempotency-Key"
VALID = re.compile(r"[!-~]{1,255}")


@schemathesis.hook
def before_call(context, case, kwargs):
    # Only positive cases: an edit makes schemathesis validate the case again, and a negative
    # one (a request sent without its Authorization, say) would come out positive.
    if case.meta is not None and case.meta.generation.mode.is_negative:
        return
    if isinstance(case.query, dict) and isinstance(case.query.get("cursor"), str):
        del case.query["cursor"]
    key = (case.headers or {}).get(HEADER)
    if isinstance(key, str) and VALID.fullmatch(key):
        case.headers[HEADER] = str(uuid.uuid4())
