"""Writes for projects and their teams. Each records its event in its own transaction."""

from django.db import IntegrityError, transaction

from accounts.models import Invitation, Membership, User, Workspace
from collab.api.exceptions import Conflict, ValidationFailed, foreign_key_violation
from collab.unset import UNSET, Maybe, given
from events.services import event_record, model_update

from .models import Project, ProjectMember
from .records import member_event_data, project_record


def project_create(
    *, workspace: Workspace, actor: User, name: str, description: str = "", visibility: str
) -> Project:
    with transaction.atomic():
        project = Project.objects.create(
            workspace=workspace,
            name=name,
            description=description,
            visibility=visibility,
            created_by=actor,
        )
        ProjectMember.objects.create(project=project, user=actor)
        project.team_count = 1
        event_record(
            type="project.created",
            workspace_id=workspace.pk,
            project_id=project.pk,
            actor=actor,
            data={"project": project_record(project)},
        )
    return project


WRITABLE_FIELDS = ("name", "description", "visibility", "status")


def project_update(
    *,
    project: Project,
    actor: User,
    name: Maybe[str] = UNSET,
    description: Maybe[str] = UNSET,
    visibility: Maybe[str] = UNSET,
    status: Maybe[str] = UNSET,
) -> Project:
    """Apply the fields given. An archived project only accepts being made active again."""
    data = given(name=name, description=description, visibility=visibility, status=status)
    with transaction.atomic():
        project = Project.objects.select_for_update().get(pk=project.pk)
        if project.is_archived and data.get("status") != Project.Status.ACTIVE:
            raise Conflict(
                "This project is archived and read-only; set its status to active first.",
                details={"project_status": project.status},
            )
        project.team_count = project.members.count()
        with model_update(
            project,
            snapshot=lambda project: {name: getattr(project, name) for name in WRITABLE_FIELDS},
            event_type="project.updated",
            payload=lambda project: {"project": project_record(project)},
            workspace_id=project.workspace_id,
            project_id=project.pk,
            actor=actor,
        ):
            for field, value in data.items():
                setattr(project, field, value)
    return project


def project_delete(*, project: Project, actor: User) -> None:
    with transaction.atomic():
        event_record(
            type="project.deleted",
            workspace_id=project.workspace_id,
            project_id=project.pk,
            actor=actor,
            data={"project": project_record(project)},
        )
        project.delete()


def not_a_workspace_member() -> ValidationFailed:
    """The one answer for a ``user_id`` that no member of the workspace has, whether the id
    is nobody's or belongs to someone elsewhere: two answers would tell callers which ids
    exist in other workspaces."""
    return ValidationFailed.field("user_id", "No member of this workspace has this id.")


def project_member_add(
    *, project: Project, user: User, actor: User, skip_existing: bool = False
) -> ProjectMember | None:
    if not Membership.objects.filter(workspace_id=project.workspace_id, user=user).exists():
        raise not_a_workspace_member()
    try:
        with transaction.atomic():
            member = ProjectMember.objects.create(project=project, user=user)
            event_record(
                type="member.added",
                workspace_id=project.workspace_id,
                project_id=project.pk,
                actor=actor,
                data=member_event_data(project, user),
            )
    except IntegrityError as exc:
        if foreign_key_violation(exc):
            raise  # what it belongs to was deleted meanwhile: a 404
        if skip_existing:
            return None
        raise ValidationFailed.field("user_id", "This user is already on the team.") from None
    return member


def project_member_remove(*, member: ProjectMember, actor: User) -> None:
    with transaction.atomic():
        event_record(
            type="member.removed",
            workspace_id=member.project.workspace_id,
            project_id=member.project_id,
            actor=actor,
            data=member_event_data(member.project, member.user),
        )
        member.delete()


def workspace_member_leave_teams(*, membership: Membership, **kwargs: object) -> None:
    """``accounts.signals.membership_removing``: the person leaves the workspace's teams."""
    ProjectMember.objects.filter(
        user_id=membership.user_id, project__workspace_id=membership.workspace_id
    ).delete()


def invitation_teams_join(*, invitation: Invitation, user: User, **kwargs: object) -> None:
    """``accounts.signals.invitation_accepting``: the person joins the invitation's projects."""
    for project in invitation.projects.all():
        project_member_add(project=project, user=user, actor=user, skip_existing=True)
