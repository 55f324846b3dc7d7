import secrets

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from accounts import services
from accounts.models import Membership, Role, User, Workspace
from collab.progress import progress_stream
from comments.models import Comment
from comments.seeding import threads_seed
from issues.models import Issue
from issues.seeding import DEFAULT_BATCH_SIZE, issues_seed
from projects.models import Project, ProjectMember
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
        "Fill the database with a demo workspace: an owner, developers, a viewer, projects with "
        "their teams and labels, and issues spread over the last year with their history. "
        "--issues are shared among the demo projects, the first the largest; --project-name "
        "puts them all in one project instead (created when missing), which is how benchmarks "
        "get 1,000,000 issues in one project (bulk inserts: COPY on PostgreSQL). Running it "
        "again adds only what is missing: users, projects and labels are reused, each project "
        "is topped up to its share of issues and never trimmed, and existing users keep their "
        "passwords. Issue numbers run 1..N in each project and the per-status counters and "
        "number sequence are exact afterwards. Seeded issues record no events (the event log "
        "of a million issues is not what a demo or a benchmark needs). The demo projects' "
        "issues also get comment threads: about 40% of the issues without comments get 1 to 8 "
        "comments by the project's team (Markdown with code and @mentions, a few edited), with "
        "exact comment counts and history, mentions marked as notified (no email) and no "
        "events; a later run adds threads only to issues still without comments. A --project-name "
        "project gets no threads, so a benchmark's issues load as fast as before."
    )

    def add_arguments(self, parser):
        parser.add_argument("--workspace", default="Demo", help="Workspace name (default Demo).")
        parser.add_argument(
            "--projects",
            type=int,
            help="Demo projects (default 5, or 0 with --project-name).",
        )
        parser.add_argument(
            "--developers", type=int, default=3, help="Developers besides the owner (default 3)."
        )
        parser.add_argument(
            "--password",
            help="Password of the demo users created by this run (default: a random one, "
            "printed at the end). Existing users keep theirs.",
        )
        parser.add_argument(
            "--issues",
            type=int,
            default=2000,
            help="Issues the seeded projects hold together (default 2000).",
        )
        parser.add_argument(
            "--project-name",
            help="Put every issue in this project of the workspace, created when missing.",
        )
        parser.add_argument(
            "--batch-size",
            type=int,
            default=DEFAULT_BATCH_SIZE,
            help=f"Issues inserted per transaction (default {DEFAULT_BATCH_SIZE}).",
        )

    def handle(self, *args, workspace, projects, developers, password, **options):
        project_name = (options["project_name"] or "").strip()
        if options["project_name"] is not None and not project_name:
            raise CommandError("--project-name must not be empty.")
        if projects is None:
            projects = 0 if project_name else 5
        if not 0 <= projects <= 1000:
            raise CommandError("--projects must be between 0 and 1000.")
        if not 0 <= developers <= 100:
            raise CommandError("--developers must be between 0 and 100.")
        issues, batch_size = options["issues"], options["batch_size"]
        if not 0 <= issues <= 10_000_000:
            raise CommandError("--issues must be between 0 and 10000000.")
        if not 1 <= batch_size <= 100_000:
            raise CommandError("--batch-size must be between 1 and 100000.")
        workspace_name = workspace.strip()
        if not workspace_name:
            raise CommandError("--workspace must not be empty.")
        password = password or secrets.token_urlsafe(12)
        try:
            validate_password(password)
        except ValidationError as exc:
            raise CommandError("--password rejected: " + " ".join(exc.messages)) from None

        people = [("owner", "Olivia Owner", Role.OWNER)]
        people += [(f"dev{n}", f"Developer {n}", Role.DEVELOPER) for n in range(1, developers + 1)]
        people.append(("viewer", "Victor Viewer", Role.VIEWER))

        created_users: list[str] = []
        seeded: list[Project] = []
        new_projects = 0
        stream = progress_stream(self)
        quiet = options["verbosity"] == 0
        with tqdm(
            total=len(people) + projects + bool(project_name),
            desc="Seeding demo",
            unit="step",
            file=stream,
            disable=quiet,
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

            existing = {project.name: project for project in demo.projects.all()}
            for index in range(projects):
                topic, description = PROJECT_TOPICS[index % len(PROJECT_TOPICS)]
                round_ = index // len(PROJECT_TOPICS)
                name = topic if round_ == 0 else f"{topic} {round_ + 1}"
                project = existing.get(name)
                if project is None:
                    # Each project gets a different pair of developers on its team.
                    team = [
                        members[(index + n) % len(members)] for n in range(min(2, len(members)))
                    ]
                    project = self._project(
                        demo,
                        owner,
                        name,
                        description,
                        VISIBILITIES[index % len(VISIBILITIES)],
                        team,
                    )
                    new_projects += 1
                seeded.append(project)
                progress.update()
            if project_name:
                project = existing.get(project_name)
                if project is None:
                    project = self._project(
                        demo,
                        owner,
                        project_name,
                        "Seeded for benchmarks.",
                        Project.Visibility.PRIVATE,
                        members,
                    )
                    new_projects += 1
                # All the issues go here; the demo projects above get none.
                seeded = [project]
                progress.update()

        added, total_issues = self._issues(seeded, issues, batch_size, stream, quiet)
        # Threads cost a Markdown rendering per comment: a benchmark's project goes without.
        threads = None if project_name else self._threads(seeded, stream, quiet)
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo workspace '{demo.name}' (id {demo.pk}): {len(people)} people, "
                f"{demo.projects.count()} projects ({new_projects} new), "
                f"{total_issues} issues in the seeded projects ({added} new)."
            )
        )
        if threads is not None:
            comments_added, total_comments = threads
            self.stdout.write(f"{total_comments} comments on their issues ({comments_added} new).")
        if project_name:
            self.stdout.write(f"Project '{project_name}': id {seeded[0].pk}.")
        if created_users:
            self.stdout.write(f"New users (password: {password}):")
            for email in created_users:
                self.stdout.write(f"  {email}")
        else:
            self.stdout.write("Every demo user existed already; their passwords are unchanged.")

    def _project(self, workspace, owner, name, description, visibility, team) -> Project:
        project = project_create(
            workspace=workspace,
            actor=owner,
            name=name,
            description=description,
            visibility=visibility,
        )
        for member in team:
            project_member_add(project=project, user=member, actor=owner, skip_existing=True)
        return project

    def _issues(
        self, projects: list[Project], total: int, batch_size: int, stream, quiet
    ) -> tuple[int, int]:
        """Top each project up to its share of ``total``; returns the issues added, and how
        many the projects hold now."""
        shares = issue_shares(total, len(projects))
        missing = [
            max(0, share - project.issues.count())
            for project, share in zip(projects, shares, strict=True)
        ]
        added = held = 0
        with tqdm(
            total=sum(missing),
            desc="Seeding issues",
            unit="issue",
            unit_scale=True,
            file=stream,
            disable=quiet or not any(missing),
        ) as progress:
            for project, share in zip(projects, shares, strict=True):
                added += issues_seed(
                    project=project,
                    total=share,
                    people=_team(project),
                    batch_size=batch_size,
                    progress=progress.update,
                )
                held += project.issues.count()
        return added, held

    def _threads(self, projects: list[Project], stream, quiet) -> tuple[int, int]:
        """Comment threads on the projects' issues without comments; returns the comments
        added, and how many the projects hold now."""
        waiting = Issue.objects.filter(project__in=projects, comment_count=0).count()
        added = 0
        with tqdm(
            total=waiting,
            desc="Seeding threads",
            unit="issue",
            file=stream,
            disable=quiet or not waiting,
        ) as progress:
            for project in projects:
                added += threads_seed(
                    project=project, people=_team(project), progress=progress.update
                )
        return added, Comment.objects.filter(project__in=projects).count()

    def _user(self, email: str, name: str, password: str) -> tuple[User, bool]:
        user = User.objects.filter(email=email).first()
        if user is not None:
            return user, False
        user, _ = services.user_create(email=email, password=password, name=name)
        return user, True


def _team(project: Project) -> list[int]:
    # Everyone here can see the project, so can be its assignee, comment and be mentioned.
    return list(
        ProjectMember.objects.filter(project=project)
        .order_by("id")
        .values_list("user_id", flat=True)
    )


def issue_shares(total: int, count: int) -> list[int]:
    """``total`` split among ``count`` projects as a real workspace has them: the first the
    largest, the n-th about 1/n of it (largest remainders go first, so they add up)."""
    if not count:
        return []
    weights = [1 / (rank + 1) for rank in range(count)]
    exact = [total * weight / sum(weights) for weight in weights]
    shares = [int(value) for value in exact]
    by_remainder = sorted(range(count), key=lambda i: shares[i] - exact[i])
    for index in by_remainder[: total - sum(shares)]:
        shares[index] += 1
    return shares
