"""Which ``Transfer-Encoding`` fields the web server accepts (collab/http_protocol.py): one
field, ``chunked`` alone; what the live server answers is in tests/test_serving.py."""

import pytest

from collab.http_protocol import transfer_coding_refusal


@pytest.mark.parametrize("value", [b"chunked", b"Chunked", b"CHUNKED", b" chunked ", b"chunked\t"])
def test_chunked_alone_is_accepted(value):
    assert transfer_coding_refusal([value], "1.1") is None


@pytest.mark.parametrize(
    ("values", "status", "code"),
    [
        # Framing a front end may read otherwise: 400, and the connection is closed.
        ([b"identity, chunked"], 400, "BAD_REQUEST"),
        ([b"chunked, identity"], 400, "BAD_REQUEST"),
        ([b"identity"], 400, "BAD_REQUEST"),
        ([b"chunked, chunked"], 400, "BAD_REQUEST"),
        ([b"chunked", b"chunked"], 400, "BAD_REQUEST"),
        ([b"gzip", b"chunked"], 400, "BAD_REQUEST"),
        ([b"chunked, gzip"], 400, "BAD_REQUEST"),
        ([b"gzip"], 400, "BAD_REQUEST"),
        ([b"chunked;ext=1"], 400, "BAD_REQUEST"),
        ([b", chunked"], 400, "BAD_REQUEST"),
        ([b"chunked,"], 400, "BAD_REQUEST"),
        ([b""], 400, "BAD_REQUEST"),
        ([b"g zip, chunked"], 400, "BAD_REQUEST"),
        ([b'"gzip", chunked'], 400, "BAD_REQUEST"),
        # A well-formed list ending in chunked, with a coding the service does not implement.
        ([b"gzip, chunked"], 501, "NOT_IMPLEMENTED"),
        ([b"x-gzip, chunked"], 501, "NOT_IMPLEMENTED"),
        ([b"deflate, gzip, chunked"], 501, "NOT_IMPLEMENTED"),
        ([b"foo, chunked"], 501, "NOT_IMPLEMENTED"),
        ([b"gzip;q=1, chunked"], 501, "NOT_IMPLEMENTED"),
    ],
)
def test_every_other_framing_is_refused(values, status, code):
    refusal = transfer_coding_refusal(values, "1.1")
    assert refusal is not None
    assert (refusal.status, refusal.code) == (status, code)
    assert refusal.message and refusal.details == {"header": "transfer-encoding"}


def test_transfer_encoding_on_http_1_0_is_refused():
    """RFC 9112 section 6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing."""
    refusal = transfer_coding_refusal([b"chunked"], "1.0")
    assert refusal is not None and (refusal.status, refusal.code) == (400, "BAD_REQUEST")
