"""A project whose history is written at pinned times, with the figures worked out by hand.

"Now" is 2026-03-15 12:00 UTC. The issues (through the issue services, so history and
counters are what the API would leave):

  A  created 01-10 10:00, closed 02-20 10:00                      (41 days)
  B  created 02-10 09:00, still open
  C  created 03-01 08:00, closed 03-02 08:00 (1 day), reopened 03-05 08:00,
     closed 03-10 08:00 (9 days)
  D  created 03-15 09:00 (today), closed 03-15 11:00              (2 hours)
  E  created 03-14 10:00 in progress
  F  created 02-13 23:00, closed 02-14 01:00                      (2 hours)
  G  created closed on 03-03 12:00                                (no time)

Repository "app" of the project: commits on 01-05, two on 03-01 (one sha pushed to a second
repository too, counted once), one today at 10:00. Pull requests: #1 opened 03-10 10:00 and
merged 03-12 16:00 (54 hours), #2 opened 03-11 and closed unmerged, #3 opened 03-13, open.

Comments (through the comment services): two on C on 03-01, one on pull request #1 on 03-12,
one on D today at 10:30 and one on B today at 11:58 (after the rollup's margin: counted live);
one on B on 03-13 deleted on 03-14 (counted nowhere).
"""

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
import time_machine

from comments.models import Comment
from comments.services import comment_create, comment_delete
from issues.services import issue_update
from tests.factories import (
    CommitFactory,
    PullRequestFactory,
    RepositoryFactory,
    ReviewFactory,
    make_issue,
)

NOW = datetime(2026, 3, 15, 12, 0, tzinfo=UTC)


def at(month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(2026, month, day, hour, minute, tzinfo=UTC)


@pytest.fixture
def pinned():
    """Moves the clock to ``when`` (frozen) for the block: ``with pinned(at(3, 1, 8)): ...``."""

    def travel(when: datetime):
        return time_machine.travel(when, tick=False)

    return travel


def close(issue, actor):
    return issue_update(issue=issue, actor=actor, status="closed")[0]


def reopen(issue, actor):
    return issue_update(issue=issue, actor=actor, status="open")[0]


@dataclass
class Scenario:
    project: object
    issues: dict


@pytest.fixture
def scenario(world, pinned) -> Scenario:
    project, actor = world.project, world.owner
    issues = {}

    def make(name, when, **data):
        with pinned(when):
            issues[name] = make_issue(project, actor, title=f"Issue {name}", **data)

    def then(when, change, name):
        with pinned(when):
            issues[name] = change(issues[name], actor)

    make("A", at(1, 10, 10), type="bug", priority="high", labels=["backend"])
    make("B", at(2, 10, 9), type="bug", assignee_id=world.developer.pk, labels=["backend", "ui"])
    make("F", at(2, 13, 23), type="feature")
    then(at(2, 14, 1), close, "F")
    then(at(2, 20, 10), close, "A")
    make("C", at(3, 1, 8), priority="critical", assignee_id=world.developer.pk)
    then(at(3, 2, 8), close, "C")
    make("G", at(3, 3, 12), status="closed", labels=["ui"])
    then(at(3, 5, 8), reopen, "C")
    then(at(3, 10, 8), close, "C")
    make("E", at(3, 14, 10), status="in_progress", assignee_id=world.owner.pk)
    make("D", at(3, 15, 9))
    then(at(3, 15, 11), close, "D")

    repo = RepositoryFactory(project=project, name="app")
    mirror = RepositoryFactory(project=project, name="app-mirror")
    CommitFactory(repository=repo, authored_at=at(1, 5, 12))
    shared = CommitFactory(repository=repo, authored_at=at(3, 1, 9))
    CommitFactory(repository=mirror, sha=shared.sha, authored_at=at(3, 1, 9))
    CommitFactory(repository=repo, authored_at=at(3, 1, 15))
    CommitFactory(repository=repo, authored_at=at(3, 15, 10))
    merged = PullRequestFactory(
        repository=repo,
        number=1,
        created_at=at(3, 10, 10),
        state="merged",
        merged_at=at(3, 12, 16),
        closed_at=at(3, 12, 16),
    )
    ReviewFactory(pull_request=merged, created_at=at(3, 11, 9))
    PullRequestFactory(
        repository=repo, number=2, created_at=at(3, 11), state="closed", closed_at=at(3, 11, 5)
    )
    PullRequestFactory(repository=repo, number=3, created_at=at(3, 13))

    def comment(when, parent, body, author=world.developer):
        with pinned(when):
            return comment_create(parent=parent, actor=author, body=body)

    comment(at(3, 1, 9, 30), issues["C"], "Reproduced.")
    comment(at(3, 1, 10), issues["C"], "Fix on the way.", world.owner)
    comment(at(3, 12, 17), merged, "Merged, thanks.", world.owner)
    gone = comment(at(3, 13, 8), issues["B"], "Wrong issue.")
    with pinned(at(3, 14, 9)):
        comment_delete(comment=Comment.objects.get(pk=gone["id"]), actor=world.developer)
    comment(at(3, 15, 10, 30), issues["D"], "Closing after the deploy.", world.owner)
    comment(at(3, 15, 11, 58), issues["B"], "Still seen on Safari.")
    # Another workspace's project with activity of its own: never counted here.
    with pinned(at(3, 14)):
        elsewhere = make_issue(world.other_project, world.outsider, title="elsewhere")
        comment_create(parent=elsewhere, actor=world.outsider, body="Not counted here.")
    CommitFactory(repository=RepositoryFactory(project=world.other_project), authored_at=at(3, 14))
    return Scenario(project=project, issues=issues)
