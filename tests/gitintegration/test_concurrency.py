"""Pull requests under concurrency, with real threads on real connections: numbers 1..N with
no duplicate and no gap, one open pull request per pair however many ask at once, and one
merge of a pull request however many are sent.

PostgreSQL only: SQLite serialises every writer on one file lock, so there is nothing to race.
"""

import pytest
from django.conf import settings

from events.models import Event
from gitintegration.models import Commit, PullRequest
from tests.conftest import client_for
from tests.gitorigin import git
from tests.issues.test_concurrency import require_connections, run_threads

pytestmark = [
    pytest.mark.skipif(
        "postgresql" not in settings.DATABASES["default"]["ENGINE"],
        reason="needs PostgreSQL: SQLite serialises writers on one file lock, nothing races",
    ),
    pytest.mark.django_db(transaction=True),
]

THREADS = 20


def test_numbers_are_consecutive(world, synced, origin):
    require_connections(THREADS)
    for n in range(THREADS):
        git("branch", f"topic-{n}", "feature", cwd=origin.path)
    from gitintegration.services import repository_sync

    repository_sync(repository_id=synced.pk)
    clients = [client_for(world.developer) for _ in range(THREADS)]

    def opener(n):
        body = {"title": f"Topic {n}", "head": f"topic-{n}", "base": "main"}
        return lambda: clients[n].post(f"/v1/repositories/{synced.pk}/pulls", body, format="json")

    responses = run_threads([opener(n) for n in range(THREADS)])
    assert [r.status_code for r in responses] == [201] * THREADS
    numbers = sorted(PullRequest.objects.filter(repository=synced).values_list("number", flat=True))
    assert numbers == list(range(1, THREADS + 1))


def test_one_open_pull_request_per_pair_under_a_race(world, synced):
    require_connections(THREADS)
    clients = [client_for(world.developer) for _ in range(THREADS)]
    body = {"title": "Same", "head": "feature", "base": "main"}
    path = f"/v1/repositories/{synced.pk}/pulls"
    responses = run_threads([lambda c=c: c.post(path, body, format="json") for c in clients])
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [201] + [422] * (THREADS - 1)
    assert all("head" in r.json()["error"]["details"] for r in responses if r.status_code == 422)
    assert PullRequest.objects.filter(repository=synced).count() == 1


def test_one_merge_however_many_are_sent(world, synced, origin):
    threads = 6
    require_connections(threads)
    client = client_for(world.developer)
    body = {"title": "F", "head": "feature", "base": "main"}
    pull = client.post(f"/v1/repositories/{synced.pk}/pulls", body, format="json").json()["data"]
    base = origin.sha("main")
    clients = [client_for(world.developer) for _ in range(threads)]
    path = f"/v1/pulls/{pull['id']}/merge"
    responses = run_threads(
        [lambda c=c: c.post(path, {"method": "merge"}, format="json") for c in clients]
    )
    assert sorted(r.status_code for r in responses) == [200] + [409] * (threads - 1)
    tip = origin.sha("main")
    assert origin.parents(tip) == [base, origin.sha("feature")]
    assert Event.objects.filter(type="pull_request.merged").count() == 1
    assert PullRequest.objects.get(pk=pull["id"]).merge_commit_sha == tip
    # The sync queued at the merge's commit ran in-process (eager) under the same mirror lock.
    assert Commit.objects.filter(repository=synced, sha=tip).exists()
