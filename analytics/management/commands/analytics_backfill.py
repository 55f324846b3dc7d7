from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from analytics import services
from projects.models import Project


class Command(BaseCommand):
    help = (
        "Recompute the daily analytics rollups of every project (or of the given ones) from "
        "their first activity up to yesterday, with a progress bar."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--project", action="append", default=[], help="A project id (repeatable)."
        )
        parser.add_argument(
            "--workspace", type=int, default=None, help="Only the projects of this workspace."
        )

    def handle(self, *args, **options):
        projects = Project.objects.order_by("pk")
        if options["project"]:
            ids = []
            for raw in options["project"]:
                if not raw.isdigit():
                    raise CommandError(f"--project takes project ids, not {raw!r}.")
                ids.append(int(raw))
            projects = projects.filter(pk__in=ids)
            missing = sorted(set(ids) - set(projects.values_list("pk", flat=True)))
            if missing:
                raise CommandError(f"No project with id {', '.join(map(str, missing))}.")
        if options["workspace"] is not None:
            projects = projects.filter(workspace_id=options["workspace"])
            if not projects.exists():
                raise CommandError(f"No project in workspace {options['workspace']}.")
        quiet = options["verbosity"] == 0
        total_days = 0
        for project in projects:
            with tqdm(
                desc=f"{project.pk} {project.name}"[:40],
                unit="day",
                disable=quiet,
                file=self.stderr._out,
            ) as bar:
                total_days += services.rollup_project(
                    project_id=project.pk, full=True, progress=bar.update
                )
        if not quiet:
            self.stdout.write(f"Rolled up {total_days} days of {len(projects)} projects.")
