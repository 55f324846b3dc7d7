"""``workspace_import`` and ``manage.py import_workspace``: the round trip, what people see
afterwards, and nothing left behind by an archive that cannot be read."""

import io
import tarfile

import orjson
import pytest
from django.core import mail
from django.core.management import CommandError, call_command

from accounts.models import Invitation, Membership, User, Workspace
from comments.models import Comment, Mention
from events.models import Event
from gitintegration import git
from gitintegration.models import PullRequest, PullRequestSequence, Repository
from integrations.models import ServiceAccount
from issues.models import Issue, IssueFacetCount, IssueHistory, IssueSequence, IssueStatusCount
from issues.services import issue_create
from notifications.crypto import secret_decrypt
from notifications.models import Webhook
from projects.models import Project
from tests.transfer.archives import bundle_state, manifest, members, normalized
from transfer.archive import FORMAT_VERSION, MANIFEST, ArchiveError
from transfer.exporting import workspace_export
from transfer.importing import workspace_import


@pytest.fixture
def archive(full, tmp_path):
    path = tmp_path / "acme.tar.gz"
    workspace_export(
        workspace_id=full.workspace.pk, path=path, include_credentials=True, include_events=True
    )
    return path


def test_round_trip_the_same_records_and_the_same_git(
    full, archive, tmp_path, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as queued:
        copy = workspace_import(path=archive, name=None)
    assert copy.pk != full.workspace.pk and copy.name == "Acme" and copy.slug == "acme-2"
    assert queued  # the repository's sync and the invitation's email, after commit
    again = tmp_path / "again.tar.gz"
    workspace_export(
        workspace_id=copy.pk, path=again, include_credentials=True, include_events=True
    )
    first, second = normalized(archive), normalized(again)
    for kind in first:
        assert second[kind] == first[kind], kind
    assert manifest(archive)["counts"] == manifest(again)["counts"]
    # The git bundles: the same refs, the same objects.
    old_repo = full.repository.pk
    new_repo = Repository.objects.get(project__workspace=copy).pk
    before, after = members(archive), members(again)
    (tmp_path / "1.bundle").write_bytes(before[f"repositories/{old_repo}.bundle"])
    (tmp_path / "2.bundle").write_bytes(after[f"repositories/{new_repo}.bundle"])
    one = bundle_state(tmp_path / "1.bundle", tmp_path / "one.git")
    two = bundle_state(tmp_path / "2.bundle", tmp_path / "two.git")
    assert one == two and full.merged.merge_commit_sha in one[0]


def test_what_people_see_is_preserved(full, world, archive):
    copy = workspace_import(path=archive, name="Acme again")
    assert copy.name == "Acme again"
    project = Project.objects.get(workspace=copy)
    # Numbers, and the number a deleted issue held stays taken.
    assert sorted(Issue.objects.filter(project=project).values_list("number", flat=True)) == [1, 2]
    assert IssueSequence.objects.get(project=project).last_number == 3
    pull_numbers = PullRequest.objects.filter(repository__project=project).values_list(
        "number", "state"
    )
    assert sorted(pull_numbers) == [(1, "merged"), (2, "open")]
    repository = Repository.objects.get(project=project)
    assert PullRequestSequence.objects.get(repository=repository).last_number == 2
    # Times, counts, actors, references.
    for old, new in zip(
        Issue.objects.filter(project=full.project).order_by("number"),
        Issue.objects.filter(project=project).order_by("number"),
        strict=True,
    ):
        assert (new.title, new.description, new.status, new.comment_count) == (
            old.title,
            old.description,
            old.status,
            old.comment_count,
        )
        assert (new.created_at, new.updated_at, new.closed_at) == (
            old.created_at,
            old.updated_at,
            old.closed_at,
        )
        assert new.assignee_id == old.assignee_id and new.reporter_id == old.reporter_id
        assert sorted(new.labels.values_list("name", flat=True)) == sorted(
            old.labels.values_list("name", flat=True)
        )
        old_history = list(
            IssueHistory.objects.filter(issue=old).values_list("field", "actor_id", "created_at")
        )
        new_history = list(
            IssueHistory.objects.filter(issue=new).values_list("field", "actor_id", "created_at")
        )
        assert new_history == old_history
    closed = Issue.objects.get(project=project, number=1)
    assert closed.status == "closed"  # by the merged pull request's "Fixes #1"
    created = IssueHistory.objects.get(issue=closed, field="created").new_value
    assert created["id"] == closed.pk and created["project_id"] == project.pk
    comment = Comment.objects.get(issue=closed)
    assert "only" in comment.body_html and comment.revisions.count() == 1
    assert set(
        Mention.objects.filter(comment__project=project).values_list("user__email", flat=True)
    ) == {
        "owner@acme.test",
        "dev@acme.test",
    }
    # Rebuilt counters.
    assert dict(
        IssueStatusCount.objects.filter(project=project).values_list("status", "count")
    ) == {"open": 1, "in_progress": 0, "closed": 1}
    facets = IssueFacetCount.objects.filter(project=project, facet="label", status="open")
    assert sum(facets.values_list("count", flat=True)) == 2  # issue 2's two labels
    assert not IssueFacetCount.objects.filter(project=project, folded=False).exists()
    assert IssueFacetCount.objects.filter(project=project, facet="type").exists()
    # The repository's mirror, restored from its bundle.
    assert git.branches(git.mirror_path(repository.pk)) == git.branches(
        git.mirror_path(full.repository.pk)
    )
    assert repository.sync_status == "pending"
    # The webhook's secret came with the credentials, encrypted here.
    hook = Webhook.objects.get(project=project)
    assert secret_decrypt(hook.secret_encrypted) == "factory-secret"
    # The event log came too, already sent: never fanned out again.
    events = Event.objects.filter(workspace_id=copy.pk)
    assert events.count() == manifest(archive)["counts"]["events"]
    assert not events.filter(dispatched_at__isnull=True).exists()
    # The next issue takes the number after the deleted one's.
    assert issue_create(project=project, actor=world.owner, title="Next").number == 4


def test_people_matched_by_email_and_the_others_invited(
    full, world, tmp_path, django_capture_on_commit_callbacks
):
    path = tmp_path / "plain.tar.gz"
    workspace_export(workspace_id=full.workspace.pk, path=path)
    contents = members(path)
    # As if on another instance: only the owner has an account there.
    everyone = [orjson.loads(line) for line in contents["users.jsonl"].splitlines()]
    users = [user for user in everyone if user["kind"] == "person"]
    [robot] = [user for user in everyone if user["kind"] == "service"]
    User.objects.filter(
        email__in=[u["email"] for u in users if u["email"] != "owner@acme.test"]
    ).update(email=models_renamed())
    accounts_before = User.objects.count()
    sent_before = len(mail.outbox)
    with django_capture_on_commit_callbacks(execute=True):
        copy = workspace_import(path=path, name="Elsewhere")
    # Each person but the owner is new here, and so is the service account: a copy of its own.
    assert User.objects.count() == accounts_before + len(users) - 1 + 1
    copied = ServiceAccount.objects.get(workspace=copy).user
    assert (copied.kind, copied.name, copied.status) == ("service", robot["name"], "active")
    assert copied.email != robot["email"] and not copied.has_usable_password()
    owner = Membership.objects.get(workspace=copy, user__email="owner@acme.test")
    assert owner.user_id == world.owner.pk and owner.role == "owner"
    created = User.objects.filter(email__in=[u["email"] for u in users], pk__gt=world.outsider.pk)
    assert created.count() == len(users) - 1
    assert all(user.status == "invited" and not user.has_usable_password() for user in created)
    pending = Invitation.objects.filter(workspace=copy, status="pending")
    # The admin, developer and viewer (members) are invited; the newcomer's pending
    # invitation came with the archive, under a new token.
    assert set(pending.values_list("email", flat=True)) == {
        "admin@acme.test",
        "dev@acme.test",
        "viewer@acme.test",
        "newcomer@example.test",
    }
    old_hashes = set(
        Invitation.objects.filter(workspace=full.workspace).values_list("token_hash", flat=True)
    )
    assert not old_hashes & set(pending.values_list("token_hash", flat=True))
    # A new webhook secret: none came without credentials.
    assert secret_decrypt(Webhook.objects.get(project__workspace=copy).secret_encrypted) != (
        "factory-secret"
    )
    # Each invitation's email went out after commit, with its new token's link.
    sent = {message.to[0] for message in mail.outbox[sent_before:]}
    assert sent == set(pending.values_list("email", flat=True))


def models_renamed():
    from django.db.models import Value
    from django.db.models.functions import Concat

    return Concat(Value("renamed-"), "email")


# All or nothing -------------------------------------------------------------------------


def rewrite(source, target, *, member, change=None, manifest_change=None, keep_checksum=False):
    """A copy of the archive with one member's bytes changed (and the manifest's checksum
    changed to match, unless ``keep_checksum``)."""
    import hashlib

    contents = members(source)
    if change is not None:
        contents[member] = change(contents[member])
    meta = orjson.loads(contents[MANIFEST])
    if change is not None and not keep_checksum:
        meta["members"][member]["sha256"] = hashlib.sha256(contents[member]).hexdigest()
    if manifest_change is not None:
        manifest_change(meta)
    contents[MANIFEST] = orjson.dumps(meta)
    with tarfile.open(target, "w:gz") as tar:
        for name in [MANIFEST, *sorted(set(contents) - {MANIFEST})]:
            info = tarfile.TarInfo(name)
            info.size = len(contents[name])
            tar.addfile(info, io.BytesIO(contents[name]))
    return target


def nothing_left(before, full):
    assert Workspace.objects.count() == before["workspaces"]
    assert User.objects.count() == before["users"]
    assert Issue.objects.count() == before["issues"]
    assert Event.objects.count() == before["events"]
    mirrors = sorted(p.name for p in git.storage_dir().iterdir() if p.suffix == ".git")
    assert mirrors == before["mirrors"]


def counts():
    return {
        "workspaces": Workspace.objects.count(),
        "users": User.objects.count(),
        "issues": Issue.objects.count(),
        "events": Event.objects.count(),
        "mirrors": sorted(p.name for p in git.storage_dir().iterdir() if p.suffix == ".git"),
    }


def second_line_broken(data: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    lines[1] = b'{"id": 7, "title": \n'
    return b"".join(lines)


@pytest.mark.parametrize(
    ("member", "change", "keep_checksum", "message", "line"),
    [
        ("comments.jsonl", second_line_broken, False, "not JSON", 2),
        ("issues.jsonl", lambda data: data.replace(b"Crash", b"Crush", 1), True, "SHA-256", None),
        (
            "issue_history.jsonl",
            lambda data: data.replace(b'"actor_id":', b'"actor_id":99999,"x":', 1),
            False,
            "actor_id 99999 names no record of users.jsonl",
            1,
        ),
        (
            "pull_requests.jsonl",
            lambda data: data.replace(b'"title":', b'"nope":', 1),
            False,
            "lacks 'title'",
            1,
        ),
        (
            "issues.jsonl",
            lambda data: data.replace(b'"created_at":"', b'"created_at":"yesterday', 1),
            False,
            "refused by the database",
            1,
        ),
    ],
)
def test_a_bad_member_names_member_and_line_and_leaves_nothing(
    full, archive, tmp_path, member, change, keep_checksum, message, line
):
    bad = rewrite(
        archive, tmp_path / "bad.tar.gz", member=member, change=change, keep_checksum=keep_checksum
    )
    before = counts()
    with pytest.raises(ArchiveError, match=message) as caught:
        workspace_import(path=bad)
    assert caught.value.member == member and caught.value.line == line
    nothing_left(before, full)


def test_a_broken_bundle_is_refused_after_the_rows_and_leaves_no_mirror(full, archive, tmp_path):
    name = f"repositories/{full.repository.pk}.bundle"
    bad = rewrite(archive, tmp_path / "bad.tar.gz", member=name, change=lambda data: data[:200])
    before = counts()
    with pytest.raises(ArchiveError, match="not a git bundle") as caught:
        workspace_import(path=bad)
    assert caught.value.member == name
    nothing_left(before, full)


def test_a_newer_format_is_refused_clearly(full, archive, tmp_path):
    def newer(meta):
        meta["format_version"] = FORMAT_VERSION + 1

    bad = rewrite(archive, tmp_path / "new.tar.gz", member=MANIFEST, manifest_change=newer)
    before = counts()
    with pytest.raises(ArchiveError, match=f"format version {FORMAT_VERSION + 1}, newer") as caught:
        workspace_import(path=bad)
    assert caught.value.member == MANIFEST
    nothing_left(before, full)


def test_not_an_archive_and_a_truncated_one(full, archive, tmp_path):
    before = counts()
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(ArchiveError, match="damaged"):
        workspace_import(path=text)
    truncated = tmp_path / "cut.tar.gz"
    truncated.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    with pytest.raises(ArchiveError, match="damaged"):
        workspace_import(path=truncated)
    unlisted = tmp_path / "extra.tar.gz"
    rewrite(archive, unlisted, member="extra.jsonl", change=None)
    nothing_left(before, full)


def test_the_command(full, archive, tmp_path):
    out, err = io.StringIO(), io.StringIO()
    call_command("import_workspace", str(archive), name="Copied", stdout=out, stderr=err)
    assert "Imported acme.tar.gz as workspace" in out.getvalue() and "'Copied'" in out.getvalue()
    assert "record" in err.getvalue()
    with pytest.raises(CommandError, match="No archive at"):
        call_command("import_workspace", str(tmp_path / "none.tar.gz"), stdout=io.StringIO())
    with pytest.raises(CommandError, match="--name must not be empty"):
        call_command("import_workspace", str(archive), name=" ", stdout=io.StringIO())
    bad = rewrite(
        archive, tmp_path / "bad.tar.gz", member="comments.jsonl", change=second_line_broken
    )
    with pytest.raises(
        CommandError, match=r"nothing was imported\. comments\.jsonl, line 2: not JSON"
    ):
        call_command("import_workspace", str(bad), stdout=io.StringIO(), stderr=io.StringIO())
