from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import validate_email

from accounts import services
from accounts.models import Membership, Role, User, Workspace
from collab.api.exceptions import ApiError

from ._common import command_error


class Command(BaseCommand):
    help = (
        "Create an active user. With --workspace, also put them in that workspace, creating "
        "it when missing (as its owner by default; an existing workspace adds a developer)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True)
        parser.add_argument("--password", required=True)
        parser.add_argument("--name", default="")
        parser.add_argument("--workspace", help="Workspace name; created when missing.")
        parser.add_argument(
            "--role",
            help=f"Role in the workspace: {', '.join(Role.values)}. Default: owner of a new "
            "workspace, developer of an existing one.",
        )
        parser.add_argument(
            "--superuser",
            action="store_true",
            help="Give access to the Django admin (staff and superuser).",
        )

    def handle(self, *args, email, password, name, workspace, role, superuser, **options):
        email = User.objects.normalize_email(email.strip()).lower()
        name = name.strip()
        workspace = (workspace or "").strip() or None
        self._validate(email=email, password=password, name=name, workspace=workspace, role=role)
        existed = workspace is not None and Workspace.objects.filter(name=workspace).exists()
        try:
            user, joined = services.user_create(
                email=email,
                password=password,
                name=name,
                workspace_name=workspace,
                role=role,
                is_staff=superuser,
            )
        except ApiError as exc:
            raise command_error(exc) from None

        self.stdout.write(f"Created user {user.email} (id {user.pk}).")
        if joined is not None:
            membership = Membership.objects.get(workspace=joined, user=user)
            state = "existing" if existed else "new"
            self.stdout.write(
                f"Member of the {state} workspace '{joined.name}' (id {joined.pk}) "
                f"as {membership.role}."
            )
        if superuser:
            self.stdout.write("They can sign in to the admin (/admin/).")

    def _validate(self, *, email, password, name, workspace, role) -> None:
        try:
            validate_email(email)
        except ValidationError:
            raise CommandError(f"'{email}' is not a valid email address.") from None
        if len(name) > (User._meta.get_field("name").max_length or 0):
            raise CommandError("--name is too long.")
        if workspace and len(workspace) > (Workspace._meta.get_field("name").max_length or 0):
            raise CommandError("--workspace is too long.")
        if role is not None:
            if role not in Role.values:
                raise CommandError(
                    f"Unknown role '{role}'; choose one of: {', '.join(Role.values)}."
                )
            if not workspace:
                raise CommandError("--role needs --workspace.")
        if User.objects.filter(email=email).exists():
            raise CommandError(f"A user with the email {email} already exists.")
        try:
            validate_password(password, user=User(email=email, name=name))
        except ValidationError as exc:
            raise CommandError("Password rejected: " + " ".join(exc.messages)) from None
