import secrets
import sys

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from accounts import services
from accounts.models import Membership, Role, User, Workspace
from projects.models import Project
from projects.services import project_create, project_member_add

DOMAIN = "demo.collab.localhost"
VISIBILITIES = [
    Project.Visibility.INTERNAL,
    Project.Visibility.PRIVATE,
    Project.Visibility.PUBLIC,
]
PROJECT_TOPICS = [
    ("Website", "The public marketing site."),
    ("Mobile app", "iOS and Android clients."),
    ("Billing", "Invoices, plans and payment providers."),
    ("Data platform", "Pipelines and the warehouse."),
    ("Design system", "Shared UI components."),
    ("Infrastructure", "Clusters, CI runners and monitoring."),
]


class Command(BaseCommand):
    help = (
        "Fill the database with a demo workspace: an owner, developers, a viewer and projects "
        "with their teams. Running it again adds only what is missing."
    )

    def add_arguments(self, parser):
        parser.add_argument("--workspace", default="Demo", help="Workspace name (default Demo).")
        parser.add_argument("--projects", type=int, default=5, help="Projects (default 5).")
        parser.add_argument(
            "--developers", type=int, default=3, help="Developers besides the owner (default 3)."
        )
        parser.add_argument(
            "--password",
            help="Password of the demo users created by this run (default: a random one, "
            "printed at the end). Existing users keep theirs.",
        )

    def handle(self, *args, workspace, projects, developers, password, **options):
        if not 0 <= projects <= 1000:
            raise CommandError("--projects must be between 0 and 1000.")
        if not 0 <= developers <= 100:
            raise CommandError("--developers must be between 0 and 100.")
        workspace_name = workspace.strip()
        if not workspace_name:
            raise CommandError("--workspace must not be empty.")
        password = password or secrets.token_urlsafe(12)

        people = [("owner", "Olivia Owner", Role.OWNER)]
        people += [(f"dev{n}", f"Developer {n}", Role.DEVELOPER) for n in range(1, developers + 1)]
        people.append(("viewer", "Victor Viewer", Role.VIEWER))

        created_users: list[str] = []
        new_projects = 0
        # tqdm redraws its line with "\r"; it needs the raw stream, not Django's wrapper,
        # which would add a newline to every write.
        stream = getattr(self.stderr, "_out", sys.stderr)
        with tqdm(
            total=len(people) + projects,
            desc="Seeding demo",
            unit="step",
            file=stream,
            disable=options["verbosity"] == 0,
        ) as progress:
            owner = None
            demo = Workspace.objects.filter(name=workspace_name).order_by("id").first()
            members = []
            for local, name, role in people:
                user, created = self._user(f"{local}@{DOMAIN}", name, password)
                if created:
                    created_users.append(user.email)
                if demo is None:
                    demo = services.workspace_create(name=workspace_name, owner=user)
                elif not Membership.objects.filter(workspace=demo, user=user).exists():
                    services.membership_add(workspace=demo, user=user, role=role, actor=owner)
                if role == Role.OWNER:
                    owner = user
                elif role == Role.DEVELOPER:
                    members.append(user)
                progress.update()

            existing = set(demo.projects.values_list("name", flat=True))
            for index in range(projects):
                topic, description = PROJECT_TOPICS[index % len(PROJECT_TOPICS)]
                round_ = index // len(PROJECT_TOPICS)
                name = topic if round_ == 0 else f"{topic} {round_ + 1}"
                if name not in existing:
                    project = project_create(
                        workspace=demo,
                        actor=owner,
                        name=name,
                        description=description,
                        visibility=VISIBILITIES[index % len(VISIBILITIES)],
                    )
                    # Each project gets a different pair of developers on its team.
                    for offset in range(min(2, len(members))):
                        member = members[(index + offset) % len(members)]
                        project_member_add(
                            project=project, user=member, actor=owner, skip_existing=True
                        )
                    new_projects += 1
                progress.update()

        self.stdout.write(
            self.style.SUCCESS(
                f"Demo workspace '{demo.name}' (id {demo.pk}): {len(people)} people, "
                f"{demo.projects.count()} projects ({new_projects} new)."
            )
        )
        if created_users:
            self.stdout.write(f"New users (password: {password}):")
            for email in created_users:
                self.stdout.write(f"  {email}")
        else:
            self.stdout.write("Every demo user existed already; their passwords are unchanged.")

    def _user(self, email: str, name: str, password: str) -> tuple[User, bool]:
        user = User.objects.filter(email=email).first()
        if user is not None:
            return user, False
        user, _ = services.user_create(email=email, password=password, name=name)
        return user, True
