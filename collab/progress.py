"""Progress bars for management commands (tqdm), on the command's standard error."""

import sys

from django.core.management.base import BaseCommand
from tqdm import tqdm


def progress_stream(command: BaseCommand):
    """The raw stream under ``command``'s standard error: tqdm redraws its line with "\\r", and
    Django's wrapper would end every write with a newline."""
    return getattr(command.stderr, "_out", sys.stderr)


def progress_bar(command: BaseCommand, *, quiet: bool, **options) -> tqdm:
    """A tqdm bar (``options`` as tqdm takes them) on ``command``'s standard error, off when
    ``quiet`` (``--verbosity 0``)."""
    return tqdm(file=progress_stream(command), disable=quiet, **options)
