"""docs/openapi.json, the OpenAPI document the API reference page renders, is the schema the
code generates now. After changing the API, run ``scripts/export-openapi`` and commit the file.

The document depends on the code alone: not on the settings module, the database (SQLite or
PostgreSQL), Redis, the host or the date, so the same file is right everywhere.
"""

import difflib

import pytest
from django.core.management import call_command

from tests.liveserver import ROOT

COMMITTED = ROOT / "docs" / "openapi.json"
REFRESH = "run scripts/export-openapi and commit docs/openapi.json"


def test_the_committed_schema_is_what_the_code_generates(tmp_path):
    generated = tmp_path / "openapi.json"
    call_command("spectacular", "--format", "openapi-json", "--file", str(generated))
    assert COMMITTED.exists(), f"docs/openapi.json is missing: {REFRESH}"
    now = generated.read_text().rstrip("\n").splitlines()
    kept = COMMITTED.read_text().rstrip("\n").splitlines()
    if now != kept:
        diff = difflib.unified_diff(kept, now, "docs/openapi.json", "generated", lineterm="")
        shown = list(diff)
        more = f"\n[... {len(shown) - 80} more lines]" if len(shown) > 80 else ""
        pytest.fail(
            f"docs/openapi.json is not the schema the code generates: {REFRESH}.\n"
            + "\n".join(shown[:80])
            + more
        )
