from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from collab.progress import progress_bar
from transfer.archive import ArchiveError
from transfer.importing import workspace_import


class Command(BaseCommand):
    help = (
        "Bring a workspace archive (made by export_workspace, here or on another instance) in "
        "as a new workspace: all of it or, on any error, nothing. People are matched by email; "
        "the others are created and invited. Progress bar on standard error."
    )

    def add_arguments(self, parser):
        parser.add_argument("archive", help="The archive (.tar.gz) to import.")
        parser.add_argument("--name", default=None, help="The new workspace's name.")

    def handle(self, *args, **options):
        path = Path(options["archive"])
        if not path.is_file():
            raise CommandError(f"No archive at {path}.")
        name = options["name"]
        if name is not None and not name.strip():
            raise CommandError("--name must not be empty.")
        quiet = options["verbosity"] == 0
        with progress_bar(self, quiet=quiet, desc="Importing", unit="record") as bar:
            try:
                workspace = workspace_import(path=path, name=name, progress=bar.update)
            except ArchiveError as exc:
                raise CommandError(f"{path.name}: nothing was imported. {exc}") from None
        if not quiet:
            self.stdout.write(
                f"Imported {path.name} as workspace {workspace.pk} ({workspace.name!r}, "
                f"slug {workspace.slug})."
            )
