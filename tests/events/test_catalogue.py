"""The catalogue of event kinds matches what the code records."""

import re
from pathlib import Path

from django.apps import apps as django_apps
from django.conf import settings

from events.catalogue import EVENT_KINDS, kind_matches, unknown_patterns

ROOT = Path(settings.BASE_DIR)
# The project's own apps: those installed from this repository (a new app is in it at once).
APPS = tuple(
    config.name for config in django_apps.get_app_configs() if Path(config.path).parent == ROOT
)
FAMILIES = "|".join(sorted({kind.split(".")[0] for kind in EVENT_KINDS}))
KIND = re.compile(rf"""["']((?:{FAMILIES})\.[a-z_]+)["']""")


def kinds_in_code() -> set[str]:
    found = set()
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" in path.parts or path.name == "catalogue.py":
                continue
            found.update(KIND.findall(path.read_text()))
    return found


def test_every_kind_recorded_is_catalogued():
    assert kinds_in_code() - set(EVENT_KINDS) == set()


def test_every_catalogued_kind_is_recorded_somewhere():
    assert set(EVENT_KINDS) - kinds_in_code() == set()


def test_patterns():
    assert kind_matches("issue.closed", ["issue.*"])
    assert kind_matches("issue.closed", ["*"])
    assert not kind_matches("issue.closed", ["issue.created", "pull_request.*"])
    assert not kind_matches("issues.closed", ["issue.*"])
    assert unknown_patterns(["issue.*", "*", "issue.closed", "issue.nope", "nope.*"]) == [
        "issue.nope",
        "nope.*",
    ]


def test_the_docs_list_every_kind():
    # The catalogue's table lives in the API guide (docs/guide/), whichever page holds it.
    docs = "\n".join(path.read_text() for path in sorted((ROOT / "docs").rglob("*.md")))
    missing = [kind for kind in EVENT_KINDS if f"| `{kind}` |" not in docs]
    assert missing == []
