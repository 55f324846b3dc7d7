"""``seed_demo``'s issues (issues/seeding.py): numbers 1..N, exact counters and sequence,
labels and history, a list total over the API that agrees, and re-runs that only top up."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db.models import Count
from django.utils import timezone

from accounts.models import User
from demo.management.commands.seed_demo import issue_shares
from events.models import Event
from issues.models import (
    Issue,
    IssueHistory,
    IssueSequence,
    IssueStatusCount,
    Label,
    Status,
)
from issues.seeding import LABELS
from projects.models import Project, ProjectMember
from tests.conftest import assert_ok, client_for

PASSWORD = "plum-orbit-lantern-42"


def seed(*args: str) -> tuple[str, str]:
    stdout, stderr = StringIO(), StringIO()
    call_command("seed_demo", "--password", PASSWORD, *args, stdout=stdout, stderr=stderr)
    return stdout.getvalue(), stderr.getvalue()


def assert_exact_numbers_and_counters(project: Project, total: int) -> None:
    numbers = list(
        Issue.objects.filter(project=project).order_by("number").values_list("number", flat=True)
    )
    assert numbers == list(range(1, total + 1))
    real = dict(
        Issue.objects.filter(project=project)
        .order_by()
        .values_list("status")
        .annotate(count=Count("id"))
    )
    kept = dict(IssueStatusCount.objects.filter(project=project).values_list("status", "count"))
    assert kept == {status: real.get(status, 0) for status in Status.values}
    assert IssueSequence.objects.get(project=project).last_number == total


@pytest.fixture
def loaded(db):
    """300 issues in one project, in several batches."""
    events = Event.objects.count()
    out, err = seed("--project-name", "Load", "--issues", "300", "--batch-size", "64")
    project = Project.objects.get(name="Load")
    assert "Project 'Load'" in out and "300 new" in out
    assert "Seeding issues" in err and "100%" in err
    # Seeded issues record no events: only the setup (workspace, people, project) did.
    assert not Event.objects.filter(type__startswith="issue.").exists()
    assert Event.objects.count() > events
    return project


def test_issues_are_numbered_and_counted_exactly(loaded):
    assert_exact_numbers_and_counters(loaded, 300)
    statuses = set(Issue.objects.filter(project=loaded).values_list("status", flat=True))
    assert statuses == set(Status.values)
    # Only the named project gets issues; no demo projects are made beside it.
    assert Project.objects.filter(workspace=loaded.workspace).count() == 1


def test_issues_look_like_a_year_of_work(loaded):
    now = timezone.now()
    issues = list(Issue.objects.filter(project=loaded).order_by("number"))
    team = set(ProjectMember.objects.filter(project=loaded).values_list("user_id", flat=True))
    assert len(team) == 4  # the owner and the three developers
    created = [issue.created_at for issue in issues]
    assert created == sorted(created)
    assert now - timedelta(days=366) < created[0] < created[-1] <= now
    for issue in issues:
        assert issue.reporter_id in team
        assert issue.assignee_id is None or issue.assignee_id in team
        assert issue.created_at <= issue.updated_at <= now
        if issue.status == Status.CLOSED:
            assert issue.created_at <= issue.closed_at == issue.updated_at
        else:
            assert issue.closed_at is None
    assert len({issue.type for issue in issues}) == 4
    assert len({issue.priority for issue in issues}) == 4
    assert sum(issue.assignee_id is None for issue in issues) < 150


def test_labels_and_history_exist(loaded):
    names = set(Label.objects.filter(project=loaded).values_list("name", flat=True))
    assert names == {name for name, _color, _description in LABELS}
    through = Issue.labels.through.objects.filter(issue__project=loaded)
    assert through.count() > 200
    assert not through.exclude(label__project=loaded).exists()

    created = IssueHistory.objects.filter(issue__project=loaded, field="created")
    assert created.count() == 300
    closed = Issue.objects.filter(project=loaded, status=Status.CLOSED)
    for issue in closed[:20]:
        last = IssueHistory.objects.filter(issue=issue, field="status").order_by("id").last()
        assert last.new_value == "closed"
        assert last.created_at == issue.closed_at
    issue = Issue.objects.filter(project=loaded).order_by("number").last()
    record = created.get(issue=issue).new_value
    assert record["id"] == issue.pk and record["number"] == issue.number
    assert record["title"] == issue.title and record["reporter_id"] == issue.reporter_id
    assert record["status"] == "open" and record["closed_at"] is None
    assert record["labels"] == sorted(issue.labels.values_list("name", flat=True))


def test_the_api_list_total_matches(loaded):
    owner = User.objects.get(email="owner@demo.collab.localhost")
    api = client_for(owner)
    url = f"/v1/projects/{loaded.pk}/issues"
    open_issues = Issue.objects.filter(project=loaded, status=Status.OPEN).count()
    body = assert_ok(api.get(url, {"status": "open", "per_page": 50}))
    assert body["meta"]["total"] == open_issues
    assert len(body["data"]) == min(50, open_issues)
    # The same total when the rows are counted rather than read from the counters.
    counted = assert_ok(
        api.get(url, {"status": "open", "type": "bug,feature,task,improvement", "per_page": 50})
    )
    assert counted["meta"]["total"] == open_issues
    assert assert_ok(api.get(url))["meta"]["total"] == 300
    first = body["data"][0]
    assert first["labels"] == sorted(
        Issue.objects.get(pk=first["id"]).labels.values_list("name", flat=True)
    )


def test_running_again_tops_up_and_never_trims(db):
    seed("--project-name", "Load", "--issues", "100", "--batch-size", "30")
    project = Project.objects.get(name="Load")
    history = IssueHistory.objects.count()

    out, _ = seed("--project-name", "Load", "--issues", "100")
    assert "(0 new)" in out and "passwords are unchanged" in out
    assert IssueHistory.objects.count() == history

    out, _ = seed("--project-name", "Load", "--issues", "160", "--batch-size", "50")
    assert "160 issues in the seeded projects (60 new)" in out
    assert_exact_numbers_and_counters(project, 160)
    created = list(
        Issue.objects.filter(project=project)
        .order_by("number")
        .values_list("created_at", flat=True)
    )
    assert created == sorted(created)
    assert Label.objects.filter(project=project).count() == len(LABELS)

    seed("--project-name", "Load", "--issues", "120")
    assert_exact_numbers_and_counters(project, 160)


def test_issue_numbers_continue_after_issues_made_over_the_api(db):
    seed("--project-name", "Load", "--issues", "20")
    project = Project.objects.get(name="Load")
    owner = User.objects.get(email="owner@demo.collab.localhost")
    created = assert_ok(
        client_for(owner).post(
            f"/v1/projects/{project.pk}/issues", {"title": "By hand"}, format="json"
        ),
        201,
    )
    assert created["data"]["number"] == 21
    seed("--project-name", "Load", "--issues", "30")
    assert_exact_numbers_and_counters(project, 30)


def test_demo_projects_share_the_issues_largest_first(db):
    seed("--projects", "3", "--issues", "90")
    projects = list(Project.objects.order_by("id"))
    shares = issue_shares(90, 3)
    assert shares == [49, 25, 16] and sum(shares) == 90
    for project, share in zip(projects, shares, strict=True):
        assert_exact_numbers_and_counters(project, share)


def test_seed_demo_rejects_bad_issue_options(db):
    from django.core.management.base import CommandError

    for arguments, message in (
        (["--issues", "-1"], "--issues"),
        (["--batch-size", "0"], "--batch-size"),
        (["--project-name", " "], "--project-name"),
    ):
        with pytest.raises(CommandError, match=message):
            seed(*arguments)
    assert not User.objects.exists()
