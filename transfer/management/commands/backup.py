from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from transfer.backup import BackupError, backup_create, layout_current


class Command(BaseCommand):
    help = (
        "Back up the whole service on its embedded default (SQLite) into a new folder, while "
        "it runs: the database (SQLite's online backup), a git bundle of every repository, the "
        "installation's key files and a manifest with their checksums. Progress goes to "
        "standard error. On PostgreSQL, use the pg_dump recipe of the docs instead."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--output", required=True, help="The folder to create (absent, or empty)."
        )

    def handle(self, *args, output, **options):
        def progress(line: str) -> None:
            if options["verbosity"] > 0:
                self.stderr.write(line)

        try:
            manifest = backup_create(
                layout=layout_current(), output=Path(output), progress=progress
            )
        except BackupError as error:
            raise CommandError(str(error)) from None
        for setting in manifest["secrets_from_environment"]:
            self.stderr.write(
                f"Warning: {setting} comes from the environment, so it is not in the backup; "
                "keep it with the backup."
            )
        if options["verbosity"] > 0:
            repositories = sum(1 for r in manifest["repositories"] if r["member"])
            self.stdout.write(
                f"Backed up into {output}: the database ({manifest['database']['pages']} pages), "
                f"{repositories} repositories, {len(manifest['keys'])} key files."
            )
