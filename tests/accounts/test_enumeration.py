"""No answer tells a workspace's managers whether an id or an email belongs to someone in another
workspace: "nobody" and "someone elsewhere" get the same status and the same body."""

import pytest
from django.core import mail

from accounts.models import Invitation, Membership, User
from tests.conftest import assert_error, assert_ok
from tests.factories import MembershipFactory, UserFactory

# Accounts that are not members of Acme, each made on demand from the world.
STRANGERS = {
    "nobody": lambda world: None,
    "outsider": lambda world: world.outsider,
    "without-workspace": lambda world: UserFactory(email="loner@example.com"),
    "invited-elsewhere": lambda world: (
        MembershipFactory(
            workspace=world.globex,
            user=UserFactory(email="pending@globex.test", status=User.Status.INVITED),
        ).user
    ),
    "suspended-elsewhere": lambda world: (
        MembershipFactory(
            workspace=world.globex,
            user=UserFactory(email="gone@globex.test", status=User.Status.SUSPENDED),
        ).user
    ),
}


def stranger_id(world, who: str) -> int:
    user = STRANGERS[who](world)
    return 987654 if user is None else user.pk


# /v1/workspaces/:id/members/:user_id and /v1/users/:id ---------------------------------------


NOT_FOUND = {
    "success": False,
    "error": {"code": "NOT_FOUND", "message": "Not found.", "details": {}},
}


@pytest.mark.parametrize("who", list(STRANGERS))
@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("patch", "/v1/workspaces/{acme}/members/{user}", {"role": "viewer"}),
        ("delete", "/v1/workspaces/{acme}/members/{user}", None),
        ("get", "/v1/users/{user}?workspace_id={acme}", None),
    ],
    ids=["patch-member", "delete-member", "get-user"],
)
def test_a_non_member_id_answers_like_nobodys(api, world, who, method, path, body):
    user_id = stranger_id(world, who)
    memberships = set(Membership.objects.values_list("workspace_id", "user_id", "role"))

    response = getattr(api.owner, method)(
        path.format(acme=world.acme.pk, user=user_id), body, format="json"
    )

    assert_error(response, 404, "NOT_FOUND")
    assert response.json() == NOT_FOUND
    assert set(Membership.objects.values_list("workspace_id", "user_id", "role")) == memberships


# Invitations ---------------------------------------------------------------------------------


def invite(api, world, email: str):
    body = {"email": email, "role": "developer", "projects": []}
    return api.owner.post(f"/v1/workspaces/{world.acme.pk}/invitations", body, format="json")


def comparable(body: dict) -> dict:
    """An invitation's answer without what differs from one invitation to the next."""
    data = dict(body["data"])
    for varying in ("id", "email", "created_at", "expires_at"):
        assert data.pop(varying)
    return {**body, "data": data}


@pytest.mark.parametrize("who", [w for w in STRANGERS if w != "nobody"])
def test_inviting_someone_from_elsewhere_answers_like_inviting_a_new_email(
    api, world, who, django_capture_on_commit_callbacks
):
    """Inviting an email that has an account (in another workspace, or in none) answers what
    inviting an unknown email answers, and so does inviting it a second time."""
    email = STRANGERS[who](world).email
    with django_capture_on_commit_callbacks(execute=True):
        fresh = invite(api, world, "fresh@example.com")
        existing = invite(api, world, email)

    assert fresh.status_code == existing.status_code == 201
    assert comparable(assert_ok(existing, 201)) == comparable(assert_ok(fresh, 201))
    assert set(existing.headers) == set(fresh.headers)
    # The invitee learns of it by email either way; the inviter sees nothing more.
    assert sorted(message.to[0] for message in mail.outbox) == sorted(["fresh@example.com", email])

    again_fresh = invite(api, world, "fresh@example.com")
    again_existing = invite(api, world, email)

    assert_error(again_existing, 422, "VALIDATION_ERROR")
    assert again_existing.json() == again_fresh.json()
    assert Invitation.objects.filter(workspace=world.acme).count() == 2
