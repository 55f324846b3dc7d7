"""Export and import rates of the bench's workspace (``export_issues/s``, ``import_issues/s``).

The workspace holding the bench's projects is exported by ``manage.py export_workspace`` in a
process of its own (whose peak resident memory is the export's: ``export_max_rss_mib``), then
the archive imported (``transfer.importing``) inside a transaction that is rolled back once the
import is done, so the bench's database does not grow by a copy each run. The deferred
foreign-key checks a commit would run are forced first (``SET CONSTRAINTS ALL IMMEDIATE``),
so the import's figure includes them; what runs after a commit (the mirrors' syncs, the
rollups) is not counted. Both figures are issues per second of wall time.
"""

import json
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class _RolledBack(Exception):
    pass


def measure_transfer(workspace_id: int) -> dict:
    from django.db import connection, transaction

    from issues.models import Issue
    from transfer.archive import MANIFEST
    from transfer.importing import workspace_import

    issues = Issue.objects.filter(project__workspace_id=workspace_id).count()
    with tempfile.TemporaryDirectory(prefix="bench-transfer-") as folder:
        archive = Path(folder) / "workspace.tar.gz"
        began = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "manage.py",
                "export_workspace",
                str(workspace_id),
                "--output",
                str(archive),
                "--verbosity",
                "0",
            ],
            cwd=ROOT,
            env=os.environ,
            check=True,
        )
        export_seconds = time.perf_counter() - began
        # The largest child's peak so far: the export (the seeding ran in this process).
        export_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        with tarfile.open(archive, "r:gz") as tar:  # the manifest is the first member
            first = tar.next()
            assert first is not None and first.name == MANIFEST
            manifest = json.load(tar.extractfile(first))
        size = archive.stat().st_size
        began = time.perf_counter()
        try:
            with transaction.atomic():
                workspace_import(path=archive, name="Bench import (rolled back)")
                if connection.vendor == "postgresql":
                    with connection.cursor() as cursor:
                        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                import_seconds = time.perf_counter() - began
                raise _RolledBack
        except _RolledBack:
            pass
    return {
        "issues": issues,
        "records": sum(manifest["counts"].values()),
        "archive_bytes": size,
        "export_seconds": round(export_seconds, 1),
        "import_seconds": round(import_seconds, 1),
        "export_issues/s": round(issues / export_seconds),
        "import_issues/s": round(issues / import_seconds),
        "export_max_rss_mib": round(export_rss),
    }
