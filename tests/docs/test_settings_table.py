"""The configuration page lists every setting read from the environment.

Every ``env.<cast>("NAME", ...)`` call in ``collab/settings/*.py`` must have a row in one of the
tables of docs/operations/configuration.md (its first cell names the variable in backquotes,
several to a cell allowed). A name built with an f-string (``f"RATE_LIMIT_{tier.upper()}"``)
must match at least one documented name. The other way round, every variable the tables name
must still be read somewhere, so a setting removed from the code leaves the page too.
"""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PAGE = ROOT / "docs" / "operations" / "configuration.md"
SETTINGS = ROOT / "collab" / "settings"
VARIABLE = re.compile(r"`([A-Z][A-Z0-9_]*)`")
# Where the variables that are not Django settings are read (the "Outside the settings" table).
PROCESS_FILES = ["run", "Dockerfile", "docker-compose.yml", "scripts/healthcheck.py"]


def settings_read() -> tuple[set[str], list[re.Pattern[str]]]:
    """The names read through ``env`` in the settings modules, and the f-string names as
    patterns."""
    names: set[str] = set()
    patterns: list[re.Pattern[str]] = []
    for path in sorted(SETTINGS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "env"
                and node.args
            ):
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
            elif isinstance(first, ast.JoinedStr):
                parts = [
                    re.escape(part.value) if isinstance(part, ast.Constant) else "[A-Z0-9_]+"
                    for part in first.values
                ]
                patterns.append(re.compile("".join(parts)))
    return names, patterns


def documented() -> set[str]:
    """The variables named in the first cell of every table row of the page."""
    names = set()
    for line in PAGE.read_text().splitlines():
        if not line.startswith("| `"):
            continue
        first_cell = line.split("|")[1]
        names.update(VARIABLE.findall(first_cell))
    return names


def test_the_settings_modules_read_the_environment():
    names, patterns = settings_read()
    # The parse found what it is meant to find (a walk that found nothing would pass below).
    assert {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "WEBHOOK_COUNTDOWN_MAX_SECONDS"} <= names
    assert [pattern.pattern for pattern in patterns] == ["RATE_LIMIT_[A-Z0-9_]+"]


def test_every_setting_read_from_the_environment_is_documented():
    names, patterns = settings_read()
    listed = documented()
    assert sorted(names - listed) == [], f"add them to {PAGE.relative_to(ROOT)}"
    for pattern in patterns:
        assert any(pattern.fullmatch(name) for name in listed), pattern.pattern


def test_every_documented_variable_is_still_read():
    names, _ = settings_read()
    code = "\n".join(
        path.read_text()
        for path in [*ROOT.glob("collab/**/*.py"), *ROOT.glob("gitintegration/*.py")]
    )
    code += "\n".join((ROOT / name).read_text() for name in PROCESS_FILES)
    stale = sorted(name for name in documented() - names if name not in code)
    assert stale == [], f"no longer read anywhere: remove them from {PAGE.relative_to(ROOT)}"
