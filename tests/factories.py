import hashlib
import io
import tarfile
from datetime import timedelta

import factory
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.utils import timezone

from accounts import keys
from accounts.models import ApiKey, Membership, Role, User, Workspace
from issues.services import issue_create
from notifications import crypto
from notifications.models import Webhook
from projects.models import Project, ProjectMember
from transfer.models import Export

PASSWORD = "correct-horse-battery-staple"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        skip_postgeneration_save = True

    email = factory.Sequence(lambda n: f"user{n}@example.com")
    name = factory.Faker("name")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def saved(obj, create, extracted, **kwargs):
        if create:
            obj.save()


class WorkspaceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Workspace

    name = factory.Sequence(lambda n: f"Workspace {n}")
    slug = factory.Sequence(lambda n: f"workspace-{n}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    workspace = factory.SubFactory(WorkspaceFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.DEVELOPER


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    workspace = factory.SubFactory(WorkspaceFactory)
    name = factory.Sequence(lambda n: f"Project {n}")
    description = "A project"
    visibility = Project.Visibility.PRIVATE


class ProjectMemberFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ProjectMember

    project = factory.SubFactory(ProjectFactory)
    user = factory.SubFactory(UserFactory)


def make_api_key(
    user, scopes, *, expires_at=None, revoked=False, name="test key", projects=None
) -> str:
    """Create a key row directly and return its plaintext (limited to ``projects``, ids)."""
    plaintext = keys.generate_key()
    ApiKey.objects.create(
        user=user,
        name=name,
        prefix=keys.display_prefix(plaintext),
        key_hash=keys.hash_key(plaintext),
        scopes=list(scopes),
        projects=None if projects is None else sorted(projects),
        expires_at=expires_at,
        revoked_at=timezone.now() if revoked else None,
    )
    return plaintext


def make_issue(project, actor=None, **data):
    """An issue made as the API makes it (issues.services.issue_create), so that numbers,
    counters, history and events stay right; ``data`` as the API's body."""
    data.setdefault("title", "An issue")
    return issue_create(project=project, actor=actor, **data)


class WebhookFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Webhook

    project = factory.SubFactory(ProjectFactory)
    workspace = factory.LazyAttribute(lambda hook: hook.project.workspace)
    url = "http://127.0.0.1:9/hooks"
    events = factory.LazyFunction(lambda: ["*"])
    secret_encrypted = factory.LazyFunction(lambda: crypto.secret_encrypt("factory-secret"))


# Git integration rows, made directly: analytics only reads them. ------------------------------


class RepositoryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "gitintegration.Repository"

    project = factory.SubFactory(ProjectFactory)
    name = factory.Sequence(lambda n: f"repo-{n}")
    clone_url = factory.LazyAttribute(lambda repo: f"https://git.example.test/{repo.name}.git")
    default_branch = "main"


class CommitFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "gitintegration.Commit"

    repository = factory.SubFactory(RepositoryFactory)
    sha = factory.Sequence(lambda n: f"{n:040x}")
    author_name = "Ada"
    author_email = "ada@example.test"
    message = "A change"
    authored_at = factory.LazyFunction(timezone.now)
    committed_at = factory.LazyAttribute(lambda commit: commit.authored_at)


class PullRequestFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "gitintegration.PullRequest"

    repository = factory.SubFactory(RepositoryFactory)
    number = factory.Sequence(lambda n: n + 1)
    title = "A pull request"
    head = factory.Sequence(lambda n: f"feature-{n}")
    base = "main"
    state = "open"
    created_at = factory.LazyFunction(timezone.now)
    updated_at = factory.LazyAttribute(lambda pull: pull.created_at)


class ReviewFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "gitintegration.Review"

    pull_request = factory.SubFactory(PullRequestFactory)
    state = "approved"
    created_at = factory.LazyFunction(timezone.now)


class ExportFactory(factory.django.DjangoModelFactory):
    """A pending export; ``completed_export`` below gives one with its archive stored."""

    class Meta:
        model = Export

    workspace = factory.SubFactory(WorkspaceFactory)


def completed_export(workspace, user, *, members: dict[str, bytes] | None = None, **fields):
    """An export completed with a real gzip tar of ``members`` in the exports storage (for
    the routes that read exports; the worker's own archive is tested in tests/transfer)."""
    buffer = io.BytesIO()
    members = members or {"manifest.json": b'{"format_version": 1}'}
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    content = buffer.getvalue()
    export = ExportFactory(
        workspace=workspace, created_by=user, status=Export.Status.COMPLETED, **fields
    )
    name = storages["exports"].save(
        f"workspace-{workspace.pk}/export-{export.pk}.tar.gz", ContentFile(content)
    )
    now = timezone.now()
    export.file_name = name
    export.content_type = "application/gzip"
    export.size = len(content)
    export.sha256 = hashlib.sha256(content).hexdigest()
    export.completed_at = fields.get("completed_at", now)
    export.expires_at = fields.get("expires_at", now + timedelta(days=7))
    export.save()
    return export
