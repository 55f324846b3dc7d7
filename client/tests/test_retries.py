"""Retries against a real (scripted) HTTP server: what is retried, how long it waits, and
that a POST is repeated only under the same Idempotency-Key."""

import socket
import time

import collab_client
import pytest
from collab_client import Collab, RetryPolicy
from scripted import Answer, ScriptedServer, error, ok

ISSUE = {"id": 7, "title": "Retried", "number": 1}
LIMITS = {
    "X-RateLimit-Limit": "1000",
    "X-RateLimit-Remaining": "990",
    "X-RateLimit-Used": "10",
    "X-RateLimit-Reset": "1900000000",
}
QUICK = RetryPolicy(max_retries=3, base=0.01, cap=0.02)


def client(server, **options) -> Collab:
    return Collab(server.url, api_key="clb_test", retry=options.pop("retry", QUICK), **options)


def test_a_429_waits_as_retry_after_says_then_succeeds():
    answers = [error(429, "RATE_LIMITED", **{"Retry-After": "1"}), ok(ISSUE, **LIMITS)]
    with ScriptedServer(answers) as server:
        started = time.monotonic()
        issue = client(server).issues.get(7)
        waited = time.monotonic() - started
    assert issue.title == "Retried" and len(server.seen) == 2
    assert 1.0 <= waited < 3.0
    assert server.seen[0].headers["authorization"] == "Bearer clb_test"


def test_a_429_too_far_away_is_raised_with_retry_after():
    answers = [error(429, "RATE_LIMITED", **{"Retry-After": "3600"})]
    with ScriptedServer(answers) as server, pytest.raises(collab_client.RateLimited) as limited:
        client(server).issues.get(7)
    assert limited.value.retry_after == 3600 and len(server.seen) == 1


def test_x_ratelimit_reset_stands_in_for_a_missing_retry_after():
    reset = str(int(time.time()) + 1)
    answers = [error(429, "RATE_LIMITED", **{"X-RateLimit-Reset": reset}), ok(ISSUE)]
    with ScriptedServer(answers) as server:
        client(server).issues.get(7)
    assert len(server.seen) == 2


def test_5xx_and_dropped_connections_back_off_then_give_up():
    answers = [error(503, "SERVICE_UNAVAILABLE"), Answer(drop=True), error(500, "INTERNAL_ERROR")]
    answers += [error(502, "INTERNAL_ERROR")]
    with ScriptedServer(answers) as server, pytest.raises(collab_client.ServerError) as failed:
        client(server).issues.get(7)
    assert failed.value.status == 502 and len(server.seen) == 4  # 1 try + 3 retries


def test_a_post_is_retried_under_one_idempotency_key():
    answers = [error(503, "SERVICE_UNAVAILABLE"), Answer(drop=True), ok(ISSUE, status=201)]
    with ScriptedServer(answers) as server:
        client(server).issues.create(1, title="Once")
    keys = {seen.headers["idempotency-key"] for seen in server.seen}
    assert len(server.seen) == 3 and len(keys) == 1
    with ScriptedServer([ok(ISSUE, status=201), ok(ISSUE, status=201)]) as server:
        made = client(server)
        made.issues.create(1, title="One")
        made.issues.create(1, title="Two")
    assert len({seen.headers["idempotency-key"] for seen in server.seen}) == 2, "one per call"


def test_a_patch_is_not_repeated_after_a_server_error():
    failing = ScriptedServer([error(500, "INTERNAL_ERROR")])
    with failing as server, pytest.raises(collab_client.ServerError):
        client(server).issues.update(7, title="Maybe applied")
    assert len(server.seen) == 1
    with ScriptedServer([error(429, "RATE_LIMITED", **{"Retry-After": "0"}), ok(ISSUE)]) as server:
        client(server).issues.update(7, title="Refused, so safe to repeat")
    assert len(server.seen) == 2


def test_the_retry_budget_is_the_callers():
    with ScriptedServer([error(503, "SERVICE_UNAVAILABLE")] * 3) as server:
        with pytest.raises(collab_client.ServiceUnavailable):
            client(server).with_options(max_retries=0).issues.get(7)
        assert len(server.seen) == 1
    with ScriptedServer([error(503, "SERVICE_UNAVAILABLE")] * 2 + [ok(ISSUE)]) as server:
        patient = Collab(server.url, api_key="k", max_retries=2, retry=None)
        patient.retry.base = patient.retry.cap = 0.01
        assert patient.issues.get(7).id == 7


def test_the_last_rate_limit_headers_are_kept():
    with ScriptedServer([ok(ISSUE, **LIMITS)]) as server:
        made = client(server)
        made.issues.get(7)
    assert made.last_rate_limit == collab_client.RateLimit(1000, 990, 10, 1900000000)


def test_an_unreachable_server_is_a_connection_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    made = Collab(f"http://127.0.0.1:{port}", api_key="k", retry=QUICK)
    with pytest.raises(collab_client.APIConnectionError):
        made.projects.get(1)


def test_errors_carry_the_envelope_and_the_request_id():
    answer = error(422, "VALIDATION_ERROR", "The request has invalid fields.")
    answer.body["error"]["details"] = {"title": ["This field is required."]}
    answer.headers["X-Request-Id"] = "abc123"
    with ScriptedServer([answer]) as server, pytest.raises(collab_client.ValidationError) as bad:
        client(server).issues.create(1, title="")
    assert bad.value.details == {"title": ["This field is required."]}
    assert (bad.value.status, bad.value.code, bad.value.request_id) == (
        422,
        "VALIDATION_ERROR",
        "abc123",
    )
    assert bad.value.message == "The request has invalid fields."
    assert "abc123" in str(bad.value)


def test_an_unknown_code_maps_by_status():
    conflicting = ScriptedServer([error(409, "SOMETHING_NEW")])
    with conflicting as server, pytest.raises(collab_client.Conflict) as conflict:
        client(server).issues.delete(1)
    assert conflict.value.code == "SOMETHING_NEW"
