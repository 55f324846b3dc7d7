"""One version, 1.0.0-style, defined once (``collab.__version__``) and shown everywhere it
appears: pyproject.toml, the schema's ``info.version`` (docs/openapi.json and /v1/schema),
``/healthz``, the client library (its own ``__version__``, its package and its User-Agent),
and the newest release in CHANGELOG.md."""

import json
import re
import tomllib

import collab_client
import pytest
from rest_framework.test import APIClient

from collab import __version__
from tests.liveserver import ROOT


def test_the_version_is_one_release_number():
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)


def test_the_packages_carry_the_version():
    service = tomllib.loads((ROOT / "pyproject.toml").read_text())
    client = tomllib.loads((ROOT / "client" / "pyproject.toml").read_text())
    assert service["project"]["version"] == __version__
    assert client["project"]["version"] == __version__
    assert collab_client.__version__ == __version__


def test_the_client_names_the_version_in_its_user_agent():
    with collab_client.Collab("http://127.0.0.1:8000", api_key="clb_unused") as client:
        assert client.user_agent.startswith(f"collab-client/{__version__} ")


def test_the_schema_and_the_health_probe_show_the_version(db):
    committed = json.loads((ROOT / "docs" / "openapi.json").read_text())
    assert committed["info"]["version"] == __version__
    served = APIClient().get("/v1/schema?format=json")
    assert served.json()["info"]["version"] == __version__
    health = APIClient().get("/healthz").json()
    assert health == {"success": True, "data": {"status": "ok", "version": __version__}}


def test_the_newest_release_in_the_changelog_is_the_version():
    changelog = ROOT / "CHANGELOG.md"
    if not changelog.exists():
        pytest.skip("no CHANGELOG.md yet")
    # Keep a Changelog: "## [1.0.0] - 2026-11-27", newest first, after "## [Unreleased]".
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", changelog.read_text(), re.MULTILINE)
    assert releases, "CHANGELOG.md names no release (## [x.y.z] - date)"
    assert releases[0] == __version__
