from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from collab.progress import progress_bar
from gitintegration.git import GitError
from transfer.exporting import WorkspaceNotFound, workspace_export


class Command(BaseCommand):
    help = (
        "Write a workspace (its people, projects, issues, comments, repositories and webhooks) "
        "to one archive, read as one snapshot, with a progress bar."
    )

    def add_arguments(self, parser):
        parser.add_argument("workspace_id", help="The workspace's id.")
        parser.add_argument("--output", required=True, help="The archive to write (.tar.gz).")
        parser.add_argument(
            "--include-credentials",
            action="store_true",
            help="Also the people's password hashes and the webhooks' and repositories' secrets.",
        )
        parser.add_argument(
            "--include-events", action="store_true", help="Also the workspace's event log."
        )

    def handle(self, *args, **options):
        raw = options["workspace_id"]
        if not raw.isdigit():
            raise CommandError(f"The workspace id is a number, not {raw!r}.")
        output = Path(options["output"])
        if output.is_dir():
            raise CommandError(f"--output {output} is a folder; name the archive to write.")
        if not output.parent.is_dir():
            raise CommandError(f"--output: the folder {output.parent} does not exist.")
        quiet = options["verbosity"] == 0
        with progress_bar(self, quiet=quiet, desc="Exporting", unit="record") as bar:
            try:
                manifest = workspace_export(
                    workspace_id=int(raw),
                    path=output,
                    include_credentials=options["include_credentials"],
                    include_events=options["include_events"],
                    progress=bar.update,
                )
            except WorkspaceNotFound as exc:
                raise CommandError(str(exc)) from None
            except GitError as exc:
                raise CommandError(f"A repository could not be bundled: {exc}") from None
            except OSError as exc:
                raise CommandError(f"The archive could not be written: {exc}") from None
        if not quiet:
            records = sum(manifest["counts"].values())
            self.stdout.write(
                f"Exported workspace {raw} to {output}: {records} records, "
                f"{sum(1 for name in manifest['repositories'].values() if name)} repository "
                f"bundles, in {manifest['seconds']} s."
            )
