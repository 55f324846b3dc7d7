"""The stored daily rollups: by hand, idempotent, equal to live counting, kept up to date."""

from datetime import timedelta
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from analytics import tasks
from analytics.models import ProjectDay, ReopenRollup, RollupState
from analytics.periods import day_start
from analytics.services import rollup_project
from analytics.stats import STAT_FIELDS, stats_collect
from collab.celery import app as celery_app
from comments.models import Comment
from comments.services import comment_delete
from issues.services import issue_delete
from tests.analytics.conftest import NOW, at
from tests.factories import CommitFactory, make_issue


def stored(project) -> dict:
    return {
        row["day"].isoformat(): {field: row[field] for field in STAT_FIELDS if row[field]}
        for row in ProjectDay.objects.filter(project=project).order_by("day").values()
    }


def test_rows_by_hand(scenario, pinned):
    with pinned(NOW):
        assert rollup_project(project_id=scenario.project.pk) > 0
    assert stored(scenario.project) == {
        "2026-01-05": {"commits": 1},
        "2026-01-10": {"issues_opened": 1},
        "2026-02-10": {"issues_opened": 1},
        "2026-02-13": {"issues_opened": 1},
        "2026-02-14": {"issues_closed": 1, "resolution_seconds": 7200},
        "2026-02-20": {"issues_closed": 1, "resolution_seconds": 41 * 86400},
        "2026-03-01": {"issues_opened": 1, "commits": 2, "comments": 2},
        "2026-03-02": {"issues_closed": 1, "resolution_seconds": 86400},
        "2026-03-03": {"issues_opened": 1, "issues_closed": 1},
        "2026-03-05": {"issues_reopened": 1},
        "2026-03-10": {
            "issues_closed": 1,
            "resolution_seconds": 9 * 86400,
            "pull_requests_opened": 1,
        },
        "2026-03-11": {"pull_requests_opened": 1},
        "2026-03-12": {"pull_requests_merged": 1, "review_seconds": 54 * 3600, "comments": 1},
        "2026-03-13": {"pull_requests_opened": 1},
        "2026-03-14": {"issues_opened": 1},
        # Today up to 11:55 (the rollup ran at noon, less its margin): D opened at 09:00 and
        # closed at 11:00, the commit of 10:00 and the comment of 10:30. What comes after (the
        # comment of 11:58) is counted live.
        "2026-03-15": {
            "issues_opened": 1,
            "issues_closed": 1,
            "resolution_seconds": 7200,
            "commits": 1,
            "comments": 1,
        },
    }
    # The one reopening (03-05) undid C's closing of 03-02 08:00, resolved in a day.
    assert list(
        ReopenRollup.objects.filter(project=scenario.project).values_list(
            "day", "closed_hour", "count", "resolution_seconds"
        )
    ) == [(at(3, 5).date(), at(3, 2, 8), 1, 86400)]
    state = RollupState.objects.get(project=scenario.project)
    assert state.through == at(3, 14).date()


def test_running_twice_changes_nothing(scenario, pinned):
    with pinned(NOW):
        rollup_project(project_id=scenario.project.pk)
        first = list(ProjectDay.objects.order_by("pk").values())
        assert rollup_project(project_id=scenario.project.pk) == 0  # nothing new to do
        assert list(ProjectDay.objects.order_by("pk").values()) == first
        rollup_project(project_id=scenario.project.pk, full=True)
        call_command("analytics_backfill", "--project", str(scenario.project.pk), verbosity=0)
    assert list(ProjectDay.objects.order_by("pk").values()) == first


def test_backfill_equals_live_counting(scenario, pinned):
    with pinned(NOW):
        call_command("analytics_backfill", "--project", str(scenario.project.pk), verbosity=0)
    day = at(1, 1).date()
    while day < NOW.date():
        live = stats_collect(
            project_ids=[scenario.project.pk],
            start=day_start(day),
            end=day_start(day + timedelta(days=1)),
        ).days.get((scenario.project.pk, day))
        row = ProjectDay.objects.filter(project=scenario.project, day=day).values().first()
        if live is None or live.is_empty():
            assert row is None, day
        else:
            assert {field: row[field] for field in STAT_FIELDS} == live.as_dict(), day
        day += timedelta(days=1)


def test_catching_up_after_days_without_a_run(scenario, pinned):
    with pinned(at(3, 6, 1)):
        rollup_project(project_id=scenario.project.pk)
    assert RollupState.objects.get(project=scenario.project).through == at(3, 5).date()
    assert not ProjectDay.objects.filter(day__gt=at(3, 5).date()).exists()
    with pinned(NOW):
        rollup_project(project_id=scenario.project.pk)
    with pinned(NOW):
        fresh = stored(scenario.project)
        ProjectDay.objects.all().delete()
        rollup_project(project_id=scenario.project.pk, full=True)
    assert stored(scenario.project) == fresh


def test_commits_synced_late_roll_their_days_up_again(scenario, pinned):
    with pinned(NOW):
        rollup_project(project_id=scenario.project.pk)
    repo = scenario.project.repositories.get(name="app")
    CommitFactory(repository=repo, authored_at=at(2, 1, 12))
    CommitFactory(repository=repo, authored_at=at(3, 1, 18))
    with pinned(NOW):
        rollup_project(project_id=scenario.project.pk)
    assert stored(scenario.project)["2026-02-01"] == {"commits": 1}
    assert stored(scenario.project)["2026-03-01"]["commits"] == 3


def test_a_full_rollup_forgets_deleted_issues(scenario, pinned, world):
    with pinned(NOW):
        rollup_project(project_id=scenario.project.pk)
    issue_delete(issue=scenario.issues["F"], actor=world.owner)
    with pinned(NOW):
        rollup_project(project_id=scenario.project.pk, full=True)
    days = stored(scenario.project)
    assert "2026-02-13" not in days and "2026-02-14" not in days


def test_a_deleted_comment_leaves_the_stored_days_at_the_full_rollup(scenario, pinned, world):
    with pinned(NOW):
        rollup_project(project_id=scenario.project.pk)
    comment = Comment.objects.get(project=scenario.project, created_at=at(3, 12, 17))
    comment_delete(comment=comment, actor=world.owner)
    with pinned(NOW):
        rollup_project(project_id=scenario.project.pk)
    # A past day is not counted again by the frequent run; the nightly full one forgets it.
    assert stored(scenario.project)["2026-03-12"]["comments"] == 1
    with pinned(NOW):
        rollup_project(project_id=scenario.project.pk, full=True)
    assert "comments" not in stored(scenario.project)["2026-03-12"]


def test_the_beat_task_rolls_up_every_project(scenario, pinned, world):
    with pinned(NOW):
        assert tasks.analytics_rollup_all.delay().get() == 2
    states = dict(RollupState.objects.values_list("project_id", "through"))
    assert states == {world.project.pk: at(3, 14).date(), world.other_project.pk: at(3, 14).date()}
    other = ProjectDay.objects.get(project=world.other_project)
    assert (other.day, other.issues_opened, other.commits, other.comments) == (
        at(3, 14).date(),
        1,
        1,
        1,
    )


def test_beat_schedules_registered_tasks():
    celery_app.loader.import_default_modules()
    entries = {
        name: entry
        for name, entry in settings.CELERY_BEAT_SCHEDULE.items()
        if name.startswith("analytics")
    }
    assert {entry["task"] for entry in entries.values()} == {"analytics.tasks.analytics_rollup_all"}
    assert entries["analytics-rollup-full"]["kwargs"] == {"full": True}
    assert "analytics.tasks.analytics_rollup_all" in celery_app.tasks
    assert "analytics.tasks.analytics_rollup_project" in celery_app.tasks


def test_rolling_up_a_deleted_project_does_nothing(db):
    assert rollup_project(project_id=987654321) == 0
    assert not RollupState.objects.exists()


def test_backfill_command_shows_progress_and_refuses_bad_input(scenario, pinned):
    out, err = StringIO(), StringIO()
    with pinned(NOW):
        call_command("analytics_backfill", stdout=out, stderr=err)
    assert "Rolled up" in out.getvalue()
    assert "day" in err.getvalue()  # the tqdm bar
    with pytest.raises(CommandError, match="No project with id 987654321"):
        call_command("analytics_backfill", "--project", "987654321")
    with pytest.raises(CommandError, match="project ids"):
        call_command("analytics_backfill", "--project", "abc")
    with pytest.raises(CommandError, match="No project in workspace"):
        call_command("analytics_backfill", "--workspace", "987654321")


def test_issue_created_today_and_rolled_tomorrow(world, pinned):
    """The rollup that runs after midnight stores yesterday exactly as it was counted live."""
    with pinned(at(3, 15, 9)):
        issue = make_issue(world.project, world.owner)
    with pinned(at(3, 15, 10)):
        from issues.services import issue_update

        issue_update(issue=issue, actor=world.owner, status="closed")
    with pinned(at(3, 15, 23, 59)):
        live = stats_collect(
            project_ids=[world.project.pk], start=day_start(at(3, 15).date()), end=None
        )
    with pinned(at(3, 16, 0, 5)):
        rollup_project(project_id=world.project.pk)
    row = ProjectDay.objects.get(project=world.project, day=at(3, 15).date())
    assert {f: getattr(row, f) for f in STAT_FIELDS} == live.days[
        world.project.pk, at(3, 15).date()
    ].as_dict()
    assert row.issues_opened == 1 and row.issues_closed == 1 and row.resolution_seconds == 3600
