from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from transfer.backup import BackupError, backup_restore, layout_current


class Command(BaseCommand):
    help = (
        "Restore a backup made by `backup` into this installation's data folder (the embedded "
        "default, SQLite), after checking every member against the manifest. The data folder "
        "must hold no installation yet, unless --force (stop the service first)."
    )

    def add_arguments(self, parser):
        parser.add_argument("source", help="The backup folder (the one holding manifest.json).")
        parser.add_argument(
            "--force",
            action="store_true",
            help="Replace the installation the data folder holds: its database, repositories "
            "and key files. Stop the service first.",
        )

    def handle(self, *args, source, force, **options):
        def progress(line: str) -> None:
            if options["verbosity"] > 0:
                self.stderr.write(line)

        # The restore writes the database file through SQLite itself; no connection of this
        # process may hold it open.
        connections.close_all()
        try:
            manifest = backup_restore(
                layout=layout_current(), source=Path(source), force=force, progress=progress
            )
        except BackupError as error:
            raise CommandError(str(error)) from None
        for setting in manifest["secrets_from_environment"]:
            self.stderr.write(
                f"Warning: {setting} came from the environment of the backed-up service; set "
                "the same value here."
            )
        if options["verbosity"] > 0:
            self.stdout.write(
                f"Restored the backup of {manifest['finished_at']} (Collab "
                f"{manifest['collab_version']}). Run `manage.py migrate` before starting the "
                "service if this Collab is newer."
            )
