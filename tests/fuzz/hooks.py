"""Schemathesis hooks for the run against a live server (tests/fuzz/test_live_schema.py).

``Idempotency-Key`` is unique per request: the schema says so in words, which no generator
reads, so a valid key drawn for one request could be drawn again for another (the server then
rightly answers 422). Each valid key is replaced by a new UUID at the call; an invalid one is
left alone.
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
    key = (case.headers or {}).get(HEADER)
    if isinstance(key, str) and VALID.fullmatch(key):
        case.headers[HEADER] = str(uuid.uuid4())
