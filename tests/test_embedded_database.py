"""The embedded default's database (SQLite, ``./run``): a thread that serves one request after
another keeps its connection, as the web pool's threads do (collab/asgi.py), instead of opening
and closing the file around each. ``CONN_MAX_AGE=0`` still opens one per request."""

import json

import pytest

from tests.liveserver import embedded_env, python_run

pytestmark = [pytest.mark.slow]

REQUESTS = 5
# Django's WSGI handler, the one each thread of the pool runs, answering the readiness probe
# (a query) several times on one thread; the connections opened are counted.
SCRIPT = f"""
import io, json, django
django.setup()
from django.core.wsgi import get_wsgi_application
from django.db.backends.signals import connection_created
from wsgiref.util import setup_testing_defaults

opened = []
connection_created.connect(lambda sender, connection, **kw: opened.append(1), weak=False)
application = get_wsgi_application()
statuses = []
for _ in range({REQUESTS}):
    environ = {{"PATH_INFO": "/readyz", "wsgi.input": io.BytesIO()}}
    setup_testing_defaults(environ)
    body = application(environ, lambda status, headers: statuses.append(status))
    b"".join(body)
    body.close()
print(json.dumps({{"opened": len(opened), "statuses": statuses}}))
"""


@pytest.mark.parametrize(("max_age", "opened"), [(None, 1), ("0", REQUESTS)])
def test_a_thread_keeps_its_connection_from_one_request_to_the_next(
    tmp_path, embedded_database, max_age, opened
):
    data = tmp_path / "data"
    embedded_database(data)
    environment = {} if max_age is None else {"CONN_MAX_AGE": max_age}
    done = python_run(embedded_env(data, **environment), SCRIPT)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.splitlines()[-1])
    assert answer["statuses"] == ["200 OK"] * REQUESTS
    assert answer["opened"] == opened
