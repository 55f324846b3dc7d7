import threading
import time

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, connections
from tqdm import tqdm

from collab.db import fulltext
from search.schema import TABLES

OUTCOMES = {
    "made": "built",
    "present": "already there",
    "no extension": "not built: the RUM extension's package is not installed on the database "
    "server (Debian: postgresql-<version>-rum)",
    "not allowed": "not built: CREATE EXTENSION rum needs a superuser; run it once as one, "
    "then this command again",
}


class Command(BaseCommand):
    help = (
        'PostgreSQL: build the rank indexes (RUM) that serve search\'s "best match first" '
        "pages, concurrently, while the service runs, with a progress bar; or show them "
        "(--status) or drop them (--drop). Without them, search ranks the newest "
        "SEARCH_RANK_CANDIDATES matches."
    )

    def add_arguments(self, parser):
        group = parser.add_mutually_exclusive_group()
        group.add_argument("--status", action="store_true", help="Show each index, build none.")
        group.add_argument("--drop", action="store_true", help="Drop the rank indexes.")

    def handle(self, *args, status=False, drop=False, **options):
        if connection.vendor != "postgresql":
            raise CommandError(
                "Rank indexes are PostgreSQL's; the embedded SQLite ranks with FTS5's bm25."
            )
        if status:
            self._status()
            return
        for table in TABLES:
            if drop:
                gone = fulltext.rank_index_drop(connection, table)
                self.stdout.write(f"{table}: {'dropped' if gone else 'there was none'}")
                continue
            started = time.monotonic()
            outcome = self._make(table, quiet=options["verbosity"] == 0)
            took = time.monotonic() - started
            self.stdout.write(f"{table}: {OUTCOMES[outcome]} ({took:.1f} s)")
            if outcome in ("no extension", "not allowed"):
                raise CommandError(OUTCOMES[outcome])

    def _status(self) -> None:
        self.stdout.write(f"RUM extension: {fulltext.rank_extension_state(connection)}")
        for table in TABLES:
            state = fulltext.rank_index_state(connection, table)
            if state is None:
                self.stdout.write(f"{table}: none")
                continue
            valid, size = state
            shown = "valid" if valid else "invalid"
            self.stdout.write(f"{table}: {shown}, {size / 2**20:.1f} MiB")

    def _make(self, table: str, *, quiet: bool) -> str:
        """The build, on a connection of its own in a thread, while this one follows its
        progress (pg_stat_progress_create_index) on a bar."""
        result: dict[str, object] = {}

        def build() -> None:
            worker = connections.create_connection("default")
            try:
                worker.ensure_connection()
                result["pid"] = worker.connection.info.backend_pid
                result["outcome"] = fulltext.rank_index_make(worker, table)
            except BaseException as exc:  # noqa: BLE001 - raised again below, in this thread
                result["error"] = exc
            finally:
                worker.close()

        thread = threading.Thread(target=build, daemon=True)
        thread.start()
        with tqdm(total=None, desc=table, unit="block", disable=quiet, leave=False) as bar:
            while thread.is_alive():
                thread.join(0.5)
                self._progress(bar, result.get("pid"))
        if "error" in result:
            raise result["error"]  # type: ignore[misc]
        fulltext.rank_index_forget()
        return str(result["outcome"])

    @staticmethod
    def _progress(bar: tqdm, pid: object) -> None:
        if not isinstance(pid, int):
            return
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT phase, blocks_done, blocks_total FROM pg_stat_progress_create_index "
                "WHERE pid = %s",
                [pid],
            )
            row = cursor.fetchone()
        if row is None:
            return
        phase, done, total = row
        bar.set_postfix_str(phase)
        if total:
            bar.total = total
            bar.n = done
            bar.refresh()
