import os
import re

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from collab.progress import progress_bar
from projects.models import Project
from transfer.github import DEFAULT_BASE_URL, DEFAULT_MAX_WAIT, GithubClient, GithubError
from transfer.github_import import github_import

REPOSITORY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+$")
TOKEN_VARIABLE = "GITHUB_TOKEN"


class Command(BaseCommand):
    help = (
        "Bring a GitHub repository's labels, issues, pull requests (as issues with a note) and "
        "comments into a project. Running it again updates what changed and duplicates nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("repository", help="owner/name of the repository on GitHub.")
        parser.add_argument("--project", required=True, help="The id of the project to fill.")
        parser.add_argument(
            "--token",
            default=None,
            help=f"A GitHub token that can read the repository (default: ${TOKEN_VARIABLE}; "
            "without one, public repositories only).",
        )
        parser.add_argument(
            "--base-url",
            default=DEFAULT_BASE_URL,
            help="The REST API's address: GitHub Enterprise's https://HOST/api/v3 "
            f"(default {DEFAULT_BASE_URL}).",
        )
        parser.add_argument(
            "--max-wait",
            type=float,
            default=DEFAULT_MAX_WAIT,
            help="Seconds to wait in all for GitHub's rate limit to reset before giving up "
            f"(default {DEFAULT_MAX_WAIT:.0f}).",
        )

    def handle(self, *args, **options):
        repository = options["repository"].strip().removesuffix(".git")
        if not REPOSITORY.match(repository):
            raise CommandError(f"Name the repository as owner/name, not {repository!r}.")
        raw = str(options["project"])
        if not raw.isdigit():
            raise CommandError(f"--project takes a project id, not {raw!r}.")
        project = Project.objects.filter(pk=int(raw)).first()
        if project is None:
            raise CommandError(f"No project with id {raw}.")
        if options["max_wait"] < 0:
            raise CommandError("--max-wait takes a number of seconds, 0 or more.")
        token = options["token"] or os.environ.get(TOKEN_VARIABLE) or None
        try:
            client = GithubClient(
                base_url=options["base_url"], token=token, max_wait=options["max_wait"]
            )
        except GithubError as exc:
            raise CommandError(str(exc)) from None
        quiet = options["verbosity"] == 0
        bars: dict[str, tqdm] = {}

        def progress(kind: str) -> None:
            if kind not in bars:
                for bar in bars.values():
                    bar.close()
                bars[kind] = progress_bar(
                    self, quiet=quiet, desc=kind, unit=" " + kind.removesuffix("s")
                )
            bars[kind].update()

        try:
            report = github_import(
                client=client, repository=repository, project=project, progress=progress
            )
        except GithubError as exc:
            raise CommandError(f"{repository}: {exc}") from None
        finally:
            for bar in bars.values():
                bar.close()
        if quiet:
            return
        lines = [f"Imported {report.repository} into project {project.pk} ({project.name})."]
        for kind in ("issue", "comment", "label"):
            lines.append(
                f"  {kind}s: {report.created[kind]} created, {report.updated[kind]} updated, "
                f"{report.unchanged[kind]} unchanged"
            )
        lines.append(f"  pull requests among the issues: {report.pull_requests}")
        if report.skipped_comments:
            lines.append(f"  comments on issues no longer listed: {report.skipped_comments}")
        if report.unmatched:
            lines.append(
                "  GitHub users without an account here (named in the text): "
                + ", ".join(sorted(report.unmatched))
            )
        if client.waited:
            lines.append(f"  waited {client.waited:.0f} s for GitHub's rate limit")
        self.stdout.write("\n".join(lines))
