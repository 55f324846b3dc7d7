"""A deadline on each statement of a web request (collab/db/querycost.py): past it the database
cancels the statement and the answer is a 503 in the envelope with Retry-After; nothing of
it outlives the request on a pooled connection."""

import pytest
from django.db import connection, transaction

import search.selectors
from tests.conftest import assert_error

SLOW = {
    "postgresql": "SELECT pg_sleep(3)",
    # Counts forever: only an interrupt ends it.
    "sqlite": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
    "SELECT count(*) FROM c",
}


def slow_total(*args, **kwargs) -> int:
    with connection.cursor() as cursor:
        cursor.execute(SLOW[connection.vendor])
        return cursor.fetchone()[0]


def slow_total_in_transaction(*args, **kwargs) -> int:
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")  # the transaction's first statement sets the deadline
        return slow_total()


@pytest.fixture
def short_deadline(settings):
    settings.DATABASE_STATEMENT_TIMEOUT_MS = 100
    settings.DATABASE_TIMEOUT_RETRY_AFTER = 7


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("slow", [slow_total, slow_total_in_transaction])
def test_a_statement_past_its_deadline_answers_503_with_retry_after(
    api, short_deadline, monkeypatch, caplog, slow
):
    monkeypatch.setattr(search.selectors, "hit_total", slow)
    response = api.owner.get("/v1/search", {"q": "checkout"})
    error = assert_error(response, 503, "QUERY_TIMEOUT")
    assert error["details"] == {"retry_after": 7}
    assert response["Retry-After"] == "7"
    assert "cancelled" in caplog.text
    # The deadline ended with the request: the same connection runs long statements again.
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SHOW statement_timeout")
            assert cursor.fetchone()[0] == "0"
        else:
            cursor.execute(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                "WHERE x < 300000) SELECT count(*) FROM c"
            )
            assert cursor.fetchone()[0] == 300000


@pytest.mark.django_db(transaction=True)
def test_requests_under_the_deadline_are_answered(api, short_deadline):
    response = api.owner.get("/v1/search", {"q": "checkout"})
    assert response.status_code == 200
    assert api.owner.get("/v1/projects").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_no_deadline_outside_requests(short_deadline):
    """Commands and tasks run no middleware: a long statement of theirs is not cut."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_sleep(0.3)")
        else:
            cursor.execute(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                "WHERE x < 2000000) SELECT count(*) FROM c"
            )
        cursor.fetchone()
