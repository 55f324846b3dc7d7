"""Issues under concurrency, with real threads on real connections: numbers are allocated
1..N with no duplicate and no gap, the per-status counters stay equal to a real COUNT, and
changes of one issue are applied one after the other.

PostgreSQL only: SQLite serialises every writer on one file lock, so there is nothing to race.
"""

import random
import threading
from collections import Counter
from collections.abc import Callable

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count

from collab.api.exceptions import NotFound
from events.models import Event
from issues import services
from issues.models import Issue, IssueHistory, IssueSequence, IssueStatusCount
from projects.models import Project
from tests.conftest import client_for
from tests.factories import ProjectFactory, make_issue

pytestmark = [
    pytest.mark.skipif(
        "postgresql" not in settings.DATABASES["default"]["ENGINE"],
        reason="needs PostgreSQL: SQLite serialises writers on one file lock, nothing races",
    ),
    pytest.mark.django_db(transaction=True),
]

THREADS = 50


def require_connections(threads: int) -> None:
    """Each thread holds its own connection: skip, saying why, rather than fail half-way when
    the server has too few left (other processes share it)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('max_connections')::int - count(*) FROM pg_stat_activity"
            " WHERE backend_type = 'client backend'"
        )
        free = cursor.fetchone()[0]
    if free < threads + 1:
        pytest.skip(f"PostgreSQL has {free} free connections; this test needs {threads + 1}")


def run_threads(work: list[Callable[[], object]]) -> list[object]:
    """Run each callable in its own thread, all released at once; their results, in order.

    Every thread closes its database connection at the end, whatever happened.
    """
    barrier = threading.Barrier(len(work))
    results: list[object] = [None] * len(work)
    errors: list[BaseException] = []

    def run(index: int, job: Callable[[], object]) -> None:
        try:
            barrier.wait(timeout=60)
            results[index] = job()
        except BaseException as exc:  # reported to the test below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, job)) for i, job in enumerate(work)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a thread is stuck"
    assert not errors, errors
    return results


def real_counts(project) -> dict[str, int]:
    return dict(
        Issue.objects.filter(project=project)
        .values_list("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
    )


def kept_counts(project) -> dict[str, int]:
    return dict(
        IssueStatusCount.objects.filter(project=project)
        .exclude(count=0)
        .values_list("status", "count")
    )


def test_fifty_concurrent_creates_get_numbers_one_to_fifty(world):
    require_connections(THREADS)
    clients = [client_for(world.developer) for _ in range(THREADS)]

    def create(client, n: int) -> tuple[int, dict]:
        response = client.post(
            f"/v1/projects/{world.project.pk}/issues",
            {"title": f"Concurrent {n}", "labels": ["race", f"own-{n % 5}"]},
            format="json",
        )
        return response.status_code, response.json()

    results = run_threads([lambda c=client, n=n: create(c, n) for n, client in enumerate(clients)])

    assert [status for status, _body in results] == [201] * THREADS, results
    numbers = sorted(body["data"]["number"] for _status, body in results)
    assert numbers == list(range(1, THREADS + 1))
    stored = sorted(Issue.objects.filter(project=world.project).values_list("number", flat=True))
    assert stored == list(range(1, THREADS + 1))
    assert IssueSequence.objects.get(project=world.project).last_number == THREADS
    assert kept_counts(world.project) == real_counts(world.project) == {"open": THREADS}
    assert IssueStatusCount.objects.get(project=world.project, status="open").count == THREADS
    # Each create kept its own history row and event, and the labels were made once each.
    assert IssueHistory.objects.filter(field="created").count() == THREADS
    assert Event.objects.filter(type="issue.created").count() == THREADS
    assert sorted(world.project.labels.values_list("name", flat=True)) == [
        "own-0",
        "own-1",
        "own-2",
        "own-3",
        "own-4",
        "race",
    ]
    assert Issue.labels.through.objects.count() == 2 * THREADS


def test_concurrent_creates_in_two_projects_count_separately(world):
    require_connections(THREADS)
    other = ProjectFactory(workspace=world.acme, visibility=Project.Visibility.INTERNAL)
    projects = [world.project, other]

    def create(n: int) -> tuple[int, int]:
        issue = services.issue_create(project=projects[n % 2], actor=world.owner, title=f"n{n}")
        return issue.project_id, issue.number

    results = run_threads([lambda n=n: create(n) for n in range(THREADS)])

    for project in projects:
        numbers = sorted(number for pk, number in results if pk == project.pk)
        assert numbers == list(range(1, THREADS // 2 + 1))
        assert kept_counts(project) == real_counts(project) == {"open": THREADS // 2}


def test_concurrent_status_changes_keep_the_counters_exact(world):
    require_connections(THREADS)
    issues = [make_issue(world.project, world.owner, title=f"i{n}") for n in range(20)]
    rng = random.Random(7)
    plans = [
        [(rng.choice(issues).pk, rng.choice(["open", "in_progress", "closed"])) for _ in range(4)]
        for _ in range(THREADS)
    ]
    clients = [client_for(world.developer) for _ in range(THREADS)]

    def apply(client, plan) -> list[int]:
        return [
            client.patch(f"/v1/issues/{pk}", {"status": status}, format="json").status_code
            for pk, status in plan
        ]

    results = run_threads(
        [lambda c=client, p=plan: apply(c, p) for client, plan in zip(clients, plans, strict=True)]
    )

    assert all(code == 200 for codes in results for code in codes), results
    assert kept_counts(world.project) == real_counts(world.project)
    assert sum(kept_counts(world.project).values()) == 20
    # Changes of one issue were applied one after the other: each status row starts where the
    # one before it ended, and the last one ends on the issue's status.
    for issue in Issue.objects.filter(project=world.project):
        status = "open"
        rows = IssueHistory.objects.filter(issue=issue, field="status").order_by("id")
        for row in rows:
            assert row.old_value == status
            assert row.new_value != row.old_value
            status = row.new_value
        assert issue.status == status
        assert (issue.closed_at is not None) == (status == "closed")
    closed = Event.objects.filter(type="issue.closed").count()
    reopened = Event.objects.filter(type="issue.reopened").count()
    assert closed - reopened == real_counts(world.project).get("closed", 0)


def test_creates_changes_and_deletes_at_once(world):
    creates, deletes, changes = 16, 8, 12
    require_connections(creates + deletes + changes)
    existing = [make_issue(world.project, world.owner, title=f"e{n}") for n in range(12)]
    rng = random.Random(11)
    doomed = rng.sample(existing, deletes)
    work: list[Callable[[], object]] = [
        lambda n=n: (
            services.issue_create(
                project=world.project,
                actor=world.developer,
                title=f"c{n}",
                status=["open", "closed"][n % 2],
            ).number
        )
        for n in range(creates)
    ]
    work += [
        lambda issue=issue: services.issue_delete(issue=issue, actor=world.owner)
        for issue in doomed
    ]
    for _ in range(changes):
        # Perhaps one being deleted at the same time: see _update_unless_deleted.
        issue = rng.choice(existing[:4])
        status = rng.choice(["open", "in_progress", "closed"])
        work.append(lambda issue=issue, status=status: _update_unless_deleted(issue, status, world))

    results = run_threads(work)

    assert sorted(results[:creates]) == list(range(13, 13 + creates))
    assert kept_counts(world.project) == real_counts(world.project)
    assert Issue.objects.filter(project=world.project).count() == 12 - deletes + creates
    numbers = list(Issue.objects.filter(project=world.project).values_list("number", flat=True))
    assert len(numbers) == len(set(numbers))
    assert IssueSequence.objects.get(project=world.project).last_number == 12 + creates
    assert Counter(Event.objects.values_list("type", flat=True))["issue.deleted"] == deletes


def _update_unless_deleted(issue, status, world):
    try:
        return services.issue_update(issue=issue, actor=world.developer, status=status)
    except NotFound:
        # Deleted by another thread first: nothing to change, and nothing to count.
        return None


def test_an_update_in_flight_does_not_hold_up_creates_in_its_project(world, monkeypatch):
    """The row lock of an issue update is the issue's own: it must not lock the project row,
    on which every new issue of the project takes a share lock (its foreign key check).

    A change of title touches no counter, so nothing else stands between the two."""
    issue = make_issue(world.project, world.owner)
    inside, release = threading.Event(), threading.Event()
    record = services.event_record

    def held_open(**kwargs):
        if threading.current_thread().name == "updater":
            inside.set()
            release.wait(timeout=30)
        return record(**kwargs)

    monkeypatch.setattr(services, "event_record", held_open)
    errors: list[BaseException] = []

    def update() -> None:
        try:
            services.issue_update(issue=issue, actor=world.owner, title="Renamed")
        except BaseException as exc:  # reported to the test below
            errors.append(exc)
        finally:
            connection.close()

    updater = threading.Thread(target=update, name="updater")
    updater.start()
    try:
        assert inside.wait(timeout=30), "the update never reached its event"
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '3s'")
            created = services.issue_create(
                project=world.project, actor=world.owner, title="Meanwhile"
            )
    finally:
        release.set()
        updater.join(timeout=30)
    assert not errors, errors
    assert created.number == 2
    assert Issue.objects.get(pk=issue.pk).title == "Renamed"
    assert kept_counts(world.project) == real_counts(world.project) == {"open": 2}
