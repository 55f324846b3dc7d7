"""Invitations: /v1/workspaces/:id/invitations, their email, and /v1/invitations/accept."""

import logging
import re
import smtplib
import time
from datetime import datetime, timedelta

import pytest
from django.conf import settings as django_settings
from django.core import mail
from django.core.mail import send_mail as django_send_mail
from django.utils import timezone
from rest_framework.test import APIClient

from accounts import emails, invitation_tokens, keys, tasks
from accounts.models import Invitation, Membership, Role, User
from events.models import Event
from projects.models import ProjectMember
from tests.conftest import BLANK_PASSWORDS, assert_error, assert_ok, client_for
from tests.factories import (
    PASSWORD,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
    WorkspaceFactory,
)

INVITATION_FIELDS = {
    "id",
    "workspace_id",
    "email",
    "role",
    "projects",
    "status",
    "expires_at",
    "created_at",
    "invited_by",
    "email_status",
}
STRONG_PASSWORD = "violet-Trombone-sunrise-42"
ACCEPT = "/v1/invitations/accept"


def invitations_url(workspace) -> str:
    return f"/v1/workspaces/{workspace.pk}/invitations"


def parse_time(value: str) -> datetime:
    assert value.endswith("Z"), value
    return datetime.fromisoformat(value)


def token_from(message) -> str:
    match = re.search(r"token=([A-Za-z0-9_\-]+)", message.body)
    assert match, message.body
    return match.group(1)


@pytest.fixture
def invite(api, world, django_capture_on_commit_callbacks):
    """POST an invitation as ``client`` (the owner by default), running its on-commit email."""

    def invite(email="new@example.com", role="developer", projects=(), client=None, workspace=None):
        body = {"email": email, "role": role, "projects": list(projects)}
        with django_capture_on_commit_callbacks(execute=True):
            return (client or api.owner).post(
                invitations_url(workspace or world.acme), body, format="json"
            )

    return invite


@pytest.fixture
def invited(invite, world):
    """A pending invitation of new@example.com to Acme and its project: (data, token)."""
    data = assert_ok(invite(projects=[world.project.pk]), 201)["data"]
    return data, token_from(mail.outbox[-1])


def accept(token, name="Nina New", password=STRONG_PASSWORD):
    body = {"token": token, "name": name, "password": password}
    return APIClient().post(ACCEPT, body, format="json")


# Create -------------------------------------------------------------------------------------


def test_invite_answers_the_invitation_and_emails_a_token(invite, world):
    before = timezone.now()
    response = invite("New@Example.com", role="developer", projects=[world.project.pk])

    body = assert_ok(response, 201)
    data = body["data"]
    assert set(body) == {"success", "data"}
    assert set(data) == INVITATION_FIELDS
    assert response["Location"] == f"/v1/workspaces/{world.acme.pk}/invitations/{data['id']}"
    assert data["workspace_id"] == world.acme.pk
    assert data["email"] == "new@example.com"
    assert data["role"] == "developer"
    assert data["projects"] == [world.project.pk]
    assert data["status"] == "pending"
    assert data["invited_by"] == world.owner.pk
    assert parse_time(data["created_at"]) >= before - timedelta(seconds=1)
    expected_expiry = before + django_settings.INVITATION_LIFETIME
    assert abs(parse_time(data["expires_at"]) - expected_expiry) < timedelta(seconds=5)
    # One email, to the invitee, carrying the token whose hash is stored.
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["new@example.com"]
    assert "Acme" in message.subject
    token = token_from(message)
    assert token in message.body
    invitation = Invitation.objects.get(pk=data["id"])
    assert invitation.token_hash == keys.hash_key(token)
    assert token not in str(Invitation.objects.filter(pk=invitation.pk).values().first())
    assert list(invitation.projects.values_list("pk", flat=True)) == [world.project.pk]
    # The invitee exists as an invited user, who cannot log in yet.
    invitee = User.objects.get(email="new@example.com")
    assert invitee.status == User.Status.INVITED
    assert not invitee.has_usable_password()
    assert Event.objects.filter(type="invitation.created", workspace_id=world.acme.pk).count() == 1


def test_the_email_leaves_only_after_commit(api, world, django_capture_on_commit_callbacks):
    body = {"email": "later@example.com", "role": "viewer"}
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert_ok(api.owner.post(invitations_url(world.acme), body, format="json"), 201)

    # Nothing has left yet; the email goes when the commit's callbacks run (beside the
    # event's dispatch to webhooks and streams).
    assert mail.outbox == []
    for callback in callbacks:
        callback()
    assert [message.to for message in mail.outbox] == [["later@example.com"]]


def test_the_invitee_is_listed_as_an_invited_user(api, invite, world):
    assert_ok(invite("new@example.com", role="viewer"), 201)

    body = assert_ok(api.developer.get("/v1/users", {"status": "invited"}))

    assert [(u["email"], u["role"], u["status"]) for u in body["data"]] == [
        ("new@example.com", "viewer", "invited")
    ]
    assert len(assert_ok(api.developer.get("/v1/users"))["data"]) == 5


def test_admin_can_invite(api, invite, world):
    data = assert_ok(invite(client=api.admin), 201)["data"]

    assert data["invited_by"] == world.admin.pk


def test_role_defaults_to_developer(api, world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = api.owner.post(
            invitations_url(world.acme), {"email": "d@example.com"}, format="json"
        )

    data = assert_ok(response, 201)["data"]
    assert data["role"] == "developer"
    assert data["projects"] == []


def test_admin_can_invite_into_a_private_project_they_are_not_on(api, world, invite):
    """Admins see every project of their workspace, private ones included."""
    secret = ProjectFactory(workspace=world.acme, name="Hidden")

    data = assert_ok(invite(projects=[secret.pk], client=api.admin), 201)["data"]

    assert data["projects"] == [secret.pk]


def test_duplicate_pending_invitation_is_422(invite, world):
    assert_ok(invite("new@example.com"), 201)

    error = assert_error(invite("NEW@example.com", role="admin"), 422, "VALIDATION_ERROR")

    assert list(error["details"]) == ["email"]
    assert Invitation.objects.filter(email="new@example.com").count() == 1
    assert len(mail.outbox) == 1


def test_inviting_an_active_member_is_422(invite, world):
    error = assert_error(invite("dev@acme.test"), 422, "VALIDATION_ERROR")

    assert list(error["details"]) == ["email"]
    assert not Invitation.objects.exists()
    assert mail.outbox == []
    assert Membership.objects.get(workspace=world.acme, user=world.developer).role == "developer"


@pytest.mark.parametrize("which", ["other-workspace", "unknown"])
def test_project_outside_the_workspace_is_422(invite, world, which):
    project_id = world.other_project.pk if which == "other-workspace" else 987654

    error = assert_error(invite(projects=[project_id]), 422, "VALIDATION_ERROR")

    assert list(error["details"]) == ["projects"]
    assert not Invitation.objects.exists()
    assert not User.objects.filter(email="new@example.com").exists()
    assert mail.outbox == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"role": "developer"}, "email"),
        ({"email": "not-an-email"}, "email"),
        ({"email": "x@example.com", "role": "wizard"}, "role"),
        ({"email": "x@example.com", "projects": "all"}, "projects"),
        # Past the identifiers' range: once a 500, the database refusing to compare with it.
        ({"email": "x@example.com", "projects": [1, 2**63]}, "projects.1"),
    ],
)
def test_invalid_invitation_is_422(api, world, body, field):
    response = api.owner.post(invitations_url(world.acme), body, format="json")

    error = assert_error(response, 422, "VALIDATION_ERROR")
    assert field in error["details"]
    assert not Invitation.objects.exists()


@pytest.mark.parametrize("persona", ["developer", "viewer"])
def test_developer_or_viewer_cannot_invite(api, world, invite, persona):
    response = invite(client=getattr(api, persona))

    assert_error(response, 403, "FORBIDDEN")
    assert not Invitation.objects.exists()
    assert not User.objects.filter(email="new@example.com").exists()
    assert_error(getattr(api, persona).get(invitations_url(world.acme)), 403, "FORBIDDEN")


def test_outsider_gets_404(api, world, invite, invited):
    data, _token = invited

    assert_error(invite("x@example.com", client=api.outsider), 404, "NOT_FOUND")
    assert_error(api.outsider.get(invitations_url(world.acme)), 404, "NOT_FOUND")
    response = api.outsider.delete(f"{invitations_url(world.acme)}/{data['id']}")
    assert_error(response, 404, "NOT_FOUND")
    assert Invitation.objects.filter(email="x@example.com").count() == 0
    assert Invitation.objects.get(pk=data["id"]).status == "pending"


def test_inviting_needs_users_write(world):
    client = client_for(world.owner, ["users:read", "projects:admin"])

    response = client.post(invitations_url(world.acme), {"email": "x@example.com"}, format="json")

    error = assert_error(response, 403, "FORBIDDEN")
    assert error["details"]["required_scope"] == "users:write"


# List ---------------------------------------------------------------------------------------


def test_list_with_status_filter(api, world, invite):
    pending = assert_ok(invite("p@example.com"), 201)["data"]
    revoked = assert_ok(invite("r@example.com"), 201)["data"]
    expired = assert_ok(invite("e@example.com"), 201)["data"]
    assert_ok(api.owner.delete(f"{invitations_url(world.acme)}/{revoked['id']}"))
    Invitation.objects.filter(pk=expired["id"]).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    assert_ok(invite("globex@example.com", client=api.outsider, workspace=world.globex), 201)

    everything = assert_ok(api.admin.get(invitations_url(world.acme)))
    assert [i["id"] for i in everything["data"]] == [expired["id"], revoked["id"], pending["id"]]
    assert [i["status"] for i in everything["data"]] == ["expired", "revoked", "pending"]
    assert everything["meta"]["total"] == 3
    for item in everything["data"]:
        assert set(item) == INVITATION_FIELDS
    for status, expected in [("pending", pending), ("revoked", revoked), ("expired", expired)]:
        body = assert_ok(api.owner.get(invitations_url(world.acme), {"status": status}))
        assert [i["id"] for i in body["data"]] == [expected["id"]], status
    accepted = assert_ok(api.owner.get(invitations_url(world.acme), {"status": "accepted"}))
    assert accepted["data"] == []


def test_list_with_an_invalid_status_is_400(api, world):
    error = assert_error(
        api.owner.get(invitations_url(world.acme), {"status": "lost"}), 400, "BAD_REQUEST"
    )

    assert list(error["details"]) == ["status"]


# Revoke -------------------------------------------------------------------------------------


def test_revoke(api, world, invited):
    data, token = invited

    response = api.owner.delete(f"{invitations_url(world.acme)}/{data['id']}")

    assert response.status_code == 200
    assert response.json() == {"success": True, "data": None}
    assert Invitation.objects.get(pk=data["id"]).status == Invitation.Status.REVOKED
    # The invitee no longer shows in the workspace, and the token no longer works.
    assert not Membership.objects.filter(
        workspace=world.acme, user__email="new@example.com"
    ).exists()
    assert "new@example.com" not in [
        u["email"] for u in assert_ok(api.owner.get("/v1/users"))["data"]
    ]
    error = assert_error(accept(token), 409, "CONFLICT")
    assert error["details"] == {"status": "revoked"}
    assert User.objects.get(email="new@example.com").status == User.Status.INVITED
    assert Event.objects.filter(type="invitation.revoked").count() == 1


def test_revoking_twice_is_409(api, world, invited):
    data, _token = invited
    url = f"{invitations_url(world.acme)}/{data['id']}"
    assert_ok(api.owner.delete(url))

    assert_error(api.owner.delete(url), 409, "CONFLICT")


def test_revoke_by_developer_is_403(api, world, invited):
    data, _token = invited

    assert_error(
        api.developer.delete(f"{invitations_url(world.acme)}/{data['id']}"), 403, "FORBIDDEN"
    )
    assert Invitation.objects.get(pk=data["id"]).status == "pending"


def test_revoke_unknown_invitation_is_404(api, world):
    assert_error(api.owner.delete(f"{invitations_url(world.acme)}/987654"), 404, "NOT_FOUND")


def test_reinviting_after_revocation_works(api, world, invite, invited):
    data, old_token = invited
    assert_ok(api.owner.delete(f"{invitations_url(world.acme)}/{data['id']}"))

    again = assert_ok(invite("new@example.com", role="viewer"), 201)["data"]
    new_token = token_from(mail.outbox[-1])

    assert again["id"] != data["id"]
    assert new_token != old_token
    assert_ok(accept(new_token))
    assert (
        Membership.objects.get(workspace=world.acme, user__email="new@example.com").role == "viewer"
    )


# Accept -------------------------------------------------------------------------------------


def test_accept_activates_the_user(api, world, invited):
    data, token = invited

    response = accept(token, name="Nina New")

    body = assert_ok(response)
    assert set(body) == {"success", "data"}
    me = body["data"]
    assert me["email"] == "new@example.com"
    assert me["name"] == "Nina New"
    assert me["status"] == "active"
    user = User.objects.get(email="new@example.com")
    assert me["id"] == user.pk
    assert user.status == User.Status.ACTIVE
    assert user.check_password(STRONG_PASSWORD)
    invitation = Invitation.objects.get(pk=data["id"])
    assert invitation.status == Invitation.Status.ACCEPTED
    assert invitation.accepted_at is not None
    assert Membership.objects.get(workspace=world.acme, user=user).role == Role.DEVELOPER
    # The invitee joined the invited project's team.
    assert ProjectMember.objects.filter(project=world.project, user=user).exists()
    assert Event.objects.filter(type="invitation.accepted").count() == 1
    # And can now sign in, see the project and show as active.
    login = APIClient().post(
        "/v1/auth/login", {"email": "new@example.com", "password": STRONG_PASSWORD}, format="json"
    )
    access = assert_ok(login)["data"]["access_token"]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
    assert [p["id"] for p in assert_ok(client.get("/v1/projects"))["data"]] == [world.project.pk]
    users = assert_ok(api.owner.get("/v1/users", {"status": "active"}))["data"]
    assert "new@example.com" in [u["email"] for u in users]
    listed = assert_ok(api.owner.get(invitations_url(world.acme)))["data"][0]
    assert listed["status"] == "accepted"


def test_accept_needs_no_credentials_and_ignores_bad_ones(world, invited):
    _data, token = invited
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Bearer garbage")

    response = client.post(ACCEPT, {"token": token, "password": STRONG_PASSWORD}, format="json")

    assert_ok(response)


def test_reused_token_is_409(world, invited):
    _data, token = invited
    assert_ok(accept(token))

    error = assert_error(accept(token, password="another-Strong-pass-99"), 409, "CONFLICT")

    assert error["details"] == {"status": "accepted"}
    assert User.objects.get(email="new@example.com").check_password(STRONG_PASSWORD)


def test_unknown_token_is_404(world, invited):
    assert_error(accept("not-a-real-token"), 404, "NOT_FOUND")
    assert User.objects.get(email="new@example.com").status == User.Status.INVITED


def test_expired_invitation_is_409(api, world, invited):
    data, token = invited
    Invitation.objects.filter(pk=data["id"]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )

    error = assert_error(accept(token), 409, "CONFLICT")

    assert error["details"] == {"status": "expired"}
    assert User.objects.get(email="new@example.com").status == User.Status.INVITED
    listed = assert_ok(api.owner.get(invitations_url(world.acme)))["data"][0]
    assert listed["status"] == "expired"


@pytest.mark.parametrize("password", ["123", "password", "new@example.com", "12345678901"])
def test_weak_password_is_422(world, invited, password):
    data, token = invited

    error = assert_error(accept(token, password=password), 422, "VALIDATION_ERROR")

    assert list(error["details"]) == ["password"]
    assert all(isinstance(message, str) for message in error["details"]["password"])
    assert User.objects.get(email="new@example.com").status == User.Status.INVITED
    assert Invitation.objects.get(pk=data["id"]).status == "pending"
    # The invitation is still usable with a good password.
    assert_ok(accept(token))


@pytest.mark.parametrize("password", BLANK_PASSWORDS)
def test_a_password_of_whitespace_is_422(world, invited, password):
    data, token = invited

    error = assert_error(accept(token, password=password), 422, "VALIDATION_ERROR")

    assert list(error["details"]) == ["password"]
    assert any("blank" in message for message in error["details"]["password"])
    invitee = User.objects.get(email="new@example.com")
    assert invitee.status == User.Status.INVITED and not invitee.has_usable_password()
    assert Invitation.objects.get(pk=data["id"]).status == "pending"


@pytest.mark.parametrize(
    ("body", "field"), [({"password": STRONG_PASSWORD}, "token"), ({"token": "x"}, "password")]
)
def test_accept_with_missing_fields_is_422(db, body, field):
    error = assert_error(APIClient().post(ACCEPT, body, format="json"), 422, "VALIDATION_ERROR")

    assert field in error["details"]


def test_an_existing_account_joins_only_on_accepting(api, world, invite):
    """Inviting someone who already has an account grants nothing until they accept, and
    accepting never resets that account's password."""
    data = assert_ok(invite("outsider@globex.test", role="viewer"), 201)["data"]
    token = token_from(mail.outbox[-1])

    assert "outsider@globex.test" not in [
        u["email"] for u in assert_ok(api.owner.get("/v1/users"))["data"]
    ]
    assert_error(api.outsider.get(f"/v1/workspaces/{world.acme.pk}"), 404, "NOT_FOUND")

    assert_ok(accept(token, name="Someone Else", password="hijack-Attempt-2024"))

    world.outsider.refresh_from_db()
    assert world.outsider.check_password(PASSWORD)
    assert world.outsider.name == "Otto Outsider"
    assert Membership.objects.get(workspace=world.acme, user=world.outsider).role == "viewer"
    assert Invitation.objects.get(pk=data["id"]).status == "accepted"
    workspaces = assert_ok(api.outsider.get("/v1/workspaces"))["data"]
    assert [w["name"] for w in workspaces] == ["Acme", "Globex"]


def test_accepting_one_invitation_grants_nothing_in_another_workspace(api, world, invite):
    """Invited to two workspaces, the invitee accepts one: the other still waits for its own
    acceptance, and revoking it there leaves them out."""
    acme_invitation = assert_ok(invite("new@example.com"), 201)["data"]
    acme_token = token_from(mail.outbox[-1])
    globex_invitation = assert_ok(
        invite("new@example.com", role="admin", client=api.outsider, workspace=world.globex), 201
    )["data"]
    globex_token = token_from(mail.outbox[-1])

    assert_ok(accept(acme_token))
    user = User.objects.get(email="new@example.com")
    assert Invitation.objects.get(pk=acme_invitation["id"]).status == "accepted"

    # Not yet a member of Globex: its invitation is still pending.
    assert not Membership.objects.filter(workspace=world.globex, user=user).exists()
    key_client = client_for(user)
    assert [w["name"] for w in assert_ok(key_client.get("/v1/workspaces"))["data"]] == ["Acme"]

    # Revoked there, it stays out; the revoked token cannot bring it in.
    url = f"{invitations_url(world.globex)}/{globex_invitation['id']}"
    assert_ok(api.outsider.delete(url))
    assert not Membership.objects.filter(workspace=world.globex, user=user).exists()
    assert_error(accept(globex_token), 409, "CONFLICT")


def test_a_second_pending_invitation_can_still_be_accepted(api, world, invite):
    assert_ok(invite("new@example.com"), 201)
    acme_token = token_from(mail.outbox[-1])
    assert_ok(
        invite("new@example.com", role="admin", client=api.outsider, workspace=world.globex), 201
    )
    globex_token = token_from(mail.outbox[-1])
    assert_ok(accept(acme_token))

    assert_ok(accept(globex_token, password="ignored-For-active-99"))

    user = User.objects.get(email="new@example.com")
    assert user.check_password(STRONG_PASSWORD)
    roles = dict(Membership.objects.filter(user=user).values_list("workspace__name", "role"))
    assert roles == {"Acme": "developer", "Globex": "admin"}


# A real worker ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_invitation_email_is_sent_by_a_real_worker(settings):
    """The request only queues the email; a Celery worker sends it."""
    if not django_settings.REDIS_URL:
        pytest.skip("needs REDIS_URL for the Celery broker")
    from celery.contrib.testing.worker import start_worker

    from collab.celery import app

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    workspace = WorkspaceFactory(name="Initech")
    owner = UserFactory(email="boss@initech.test")
    MembershipFactory(workspace=workspace, user=owner, role=Role.OWNER)
    client = client_for(owner)

    # Only this test's task in the queue: an earlier test's leftovers would go first.
    app.control.purge()
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    try:
        with start_worker(app, perform_ping_check=False, pool="solo", shutdown_timeout=10):
            response = client.post(
                invitations_url(workspace), {"email": "milton@initech.test"}, format="json"
            )
            data = assert_ok(response, 201)["data"]
            invitation = Invitation.objects.get(pk=data["id"])
            deadline = time.monotonic() + 10
            while not _mail_to("milton@initech.test") and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        app.conf.task_always_eager = eager

    messages = _mail_to("milton@initech.test")
    assert len(messages) == 1
    assert "Initech" in messages[0].subject
    assert invitation.token_hash == keys.hash_key(token_from(messages[0]))


def _mail_to(address: str) -> list:
    return [message for message in mail.outbox if message.to == [address]]


# The email's delivery -----------------------------------------------------------------------


class FlakyMail:
    """``send_mail`` failing with each of ``errors`` in turn, then sending."""

    def __init__(self, *errors):
        self.errors = list(errors)
        self.calls = 0

    def __call__(self, **kwargs):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return django_send_mail(**kwargs)


@pytest.fixture
def eager_retries():
    """Tasks run in-process re-run at once when they ask for a retry (Celery's eager mode does
    that only when it does not propagate the task's exceptions)."""
    from collab.celery import app

    propagates = app.conf.task_eager_propagates
    app.conf.task_eager_propagates = False
    yield
    app.conf.task_eager_propagates = propagates


def invitation_listed(api, world, invitation_id) -> dict:
    listed = assert_ok(api.owner.get(invitations_url(world.acme)))["data"]
    return next(item for item in listed if item["id"] == invitation_id)


def test_a_sent_email_is_marked_sent(api, world, invite):
    data = assert_ok(invite(), 201)["data"]

    assert data["email_status"] == "queued"  # answered before the email leaves
    assert invitation_listed(api, world, data["id"])["email_status"] == "sent"
    invitation = Invitation.objects.get(pk=data["id"])
    assert (invitation.email_attempts, invitation.email_error) == (1, "")


def test_an_email_that_cannot_be_sent_is_marked_failed_not_retried(api, world, invite, caplog):
    """A line break in the inviter's name (stored before names were checked) makes a header
    Django refuses: the invitation says so, once, instead of losing the email silently."""
    User.objects.filter(pk=world.owner.pk).update(name="Olive\r\nBcc: victim@example.com")

    with caplog.at_level(logging.ERROR, logger="collab.auth"):
        data = assert_ok(invite(), 201)["data"]

    assert mail.outbox == []
    assert invitation_listed(api, world, data["id"])["email_status"] == "failed"
    invitation = Invitation.objects.get(pk=data["id"])
    assert invitation.email_attempts == 1
    assert invitation.email_error.startswith("BadHeaderError")
    assert "marked failed" in caplog.text


def test_a_transient_failure_is_retried_until_the_email_leaves(
    api, world, invite, monkeypatch, caplog, eager_retries
):
    flaky = FlakyMail(ConnectionRefusedError("no SMTP server"), smtplib.SMTPServerDisconnected())
    monkeypatch.setattr(emails, "send_mail", flaky)

    with caplog.at_level(logging.WARNING, logger="collab.auth"):
        data = assert_ok(invite(), 201)["data"]

    assert flaky.calls == 3
    assert [message.to for message in mail.outbox] == [["new@example.com"]]
    assert invitation_listed(api, world, data["id"])["email_status"] == "sent"
    invitation = Invitation.objects.get(pk=data["id"])
    assert (invitation.email_attempts, invitation.email_error) == (3, "")
    assert caplog.text.count("tried again") == 2


def test_an_email_failing_on_every_try_ends_failed(api, world, invite, monkeypatch, eager_retries):
    tries = tasks.INVITATION_EMAIL_RETRIES + 1
    flaky = FlakyMail(*[TimeoutError("timed out") for _ in range(tries + 5)])
    monkeypatch.setattr(emails, "send_mail", flaky)

    data = assert_ok(invite(), 201)["data"]

    assert flaky.calls == tries
    assert mail.outbox == []
    assert invitation_listed(api, world, data["id"])["email_status"] == "failed"
    invitation = Invitation.objects.get(pk=data["id"])
    assert invitation.email_attempts == tries
    assert invitation.email_error.startswith("TimeoutError")


@pytest.mark.parametrize(
    "error",
    [
        smtplib.SMTPDataError(554, b"Message rejected"),
        smtplib.SMTPRecipientsRefused({"new@example.com": (550, b"No such user")}),
    ],
)
def test_a_permanent_smtp_refusal_is_not_retried(api, world, invite, monkeypatch, error):
    flaky = FlakyMail(error)
    monkeypatch.setattr(emails, "send_mail", flaky)

    data = assert_ok(invite(), 201)["data"]

    assert flaky.calls == 1
    assert invitation_listed(api, world, data["id"])["email_status"] == "failed"


def test_an_email_a_killed_worker_lost_is_sent_again_with_a_new_token(
    api, world, monkeypatch, django_capture_on_commit_callbacks
):
    """The task is gone with its worker: the sweep issues a new token, sends it once, the lost
    token no longer opens the invitation, and the lost task, if it ever turns up, sends
    nothing."""
    lost: list[dict] = []
    monkeypatch.setattr(tasks.invitation_send_email, "delay", lambda **kw: lost.append(kw))
    with django_capture_on_commit_callbacks(execute=True):
        data = assert_ok(
            api.owner.post(
                invitations_url(world.acme), {"email": "new@example.com"}, format="json"
            ),
            201,
        )["data"]
    [lost_task] = lost
    monkeypatch.undo()
    invitation = Invitation.objects.get(pk=data["id"])
    lost_token = invitation_tokens.token_recover(
        nonce=invitation.token_nonce, token_hash=invitation.token_hash
    )
    assert lost_token is not None

    assert emails.invitations_email_sweep() == 0, "still within its grace"
    Invitation.objects.filter(pk=data["id"]).update(
        email_queued_at=timezone.now() - timedelta(hours=2)
    )
    assert emails.invitations_email_sweep() == 1
    assert emails.invitations_email_sweep() == 0, "taken once"

    [message] = mail.outbox
    token = token_from(message)
    assert token != lost_token
    assert invitation_listed(api, world, data["id"])["email_status"] == "sent"
    tasks.invitation_send_email.delay(**lost_task)  # the lost task, late
    assert len(mail.outbox) == 1
    assert accept(lost_token).status_code == 404
    assert_ok(accept(token))


# The token and the task's message -----------------------------------------------------------


@pytest.fixture
def held_tasks(monkeypatch) -> list[dict]:
    """The email tasks queued, held as the broker holds them (not run)."""
    held: list[dict] = []
    monkeypatch.setattr(tasks.invitation_send_email, "delay", lambda **kw: held.append(kw))
    return held


def test_the_task_carries_the_invitations_id_and_no_secret(invite, world, held_tasks):
    data = assert_ok(invite(), 201)["data"]

    assert held_tasks == [{"invitation_id": data["id"]}]
    invitation = Invitation.objects.get(pk=data["id"])
    row = str(Invitation.objects.filter(pk=invitation.pk).values().first())
    # The worker makes the token again from the invitation, and it opens the invitation.
    tasks.invitation_send_email.apply(kwargs=held_tasks[0])
    token = token_from(mail.outbox[-1])
    assert token not in row and token not in str(held_tasks)
    assert invitation.token_hash == keys.hash_key(token)
    assert invitation.token_nonce, "what the worker makes it from"
    assert_ok(accept(token))


def test_a_task_run_twice_sends_one_email(invite, world, held_tasks):
    data = assert_ok(invite(), 201)["data"]
    for _ in range(2):
        tasks.invitation_send_email.apply(kwargs={"invitation_id": data["id"]})
    assert len(mail.outbox) == 1


def test_the_token_survives_a_key_rotation_that_keeps_the_old_key(
    invite, world, held_tasks, settings
):
    data = assert_ok(invite(), 201)["data"]
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "another-secret-key-for-the-rotation-0123456789-abcdefghij"
    before = Invitation.objects.get(pk=data["id"]).token_hash

    tasks.invitation_send_email.apply(kwargs=held_tasks[0])

    token = token_from(mail.outbox[-1])
    assert keys.hash_key(token) == before, "the token issued, made again with the old key"
    assert_ok(accept(token))


def test_a_token_no_key_can_make_again_is_replaced(invite, world, held_tasks, settings, caplog):
    data = assert_ok(invite(), 201)["data"]
    invitation = Invitation.objects.get(pk=data["id"])
    issued = invitation_tokens.token_recover(
        nonce=invitation.token_nonce, token_hash=invitation.token_hash
    )
    settings.SECRET_KEY = "another-secret-key-for-the-rotation-0123456789-abcdefghij"
    settings.SECRET_KEY_FALLBACKS = []

    with caplog.at_level(logging.WARNING, logger="collab.auth"):
        tasks.invitation_send_email.apply(kwargs=held_tasks[0])

    token = token_from(mail.outbox[-1])
    assert token != issued
    assert "a new one is sent" in caplog.text
    assert accept(issued).status_code == 404
    assert_ok(accept(token))


def test_a_message_queued_with_its_token_before_the_change_still_sends_it(
    invite, world, held_tasks
):
    """Messages in the broker at the upgrade carry the token, for invitations without a nonce."""
    data = assert_ok(invite(), 201)["data"]
    old_token = "an-old-random-token-0123456789-abcdefghijklm"
    Invitation.objects.filter(pk=data["id"]).update(
        token_nonce="", token_hash=keys.hash_key(old_token)
    )

    tasks.invitation_send_email.apply(kwargs={"invitation_id": data["id"], "token": "replaced"})
    assert mail.outbox == [], "a token that no longer opens it is not sent"
    tasks.invitation_send_email.apply(kwargs={"invitation_id": data["id"], "token": old_token})

    [message] = mail.outbox
    assert token_from(message) == old_token
    assert_ok(accept(old_token))


def test_the_sweep_leaves_sent_failed_and_expired_invitations(api, world, invite):
    for email in ("a@example.com", "b@example.com"):
        assert_ok(invite(email=email), 201)
    Invitation.objects.filter(email="b@example.com").update(
        email_status=Invitation.EmailStatus.FAILED
    )
    Invitation.objects.update(email_queued_at=timezone.now() - timedelta(hours=2))
    sent = len(mail.outbox)
    assert emails.invitations_email_sweep() == 0
    Invitation.objects.update(
        email_status=Invitation.EmailStatus.QUEUED, expires_at=timezone.now() - timedelta(1)
    )
    assert emails.invitations_email_sweep() == 0
    assert len(mail.outbox) == sent
