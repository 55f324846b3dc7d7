"""requirements.txt pins what the OpenTelemetry packages install, not only the packages it
names: every distribution of their dependency closure, read from the installed packages' own
metadata, has an exact pin there, of the version installed. A release of theirs that needs one
more package fails here until that one is pinned too."""

import importlib.metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent


def pins() -> dict[str, str]:
    found = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            requirement = Requirement(line)
            (specifier,) = requirement.specifier
            assert specifier.operator == "==", line
            found[canonicalize_name(requirement.name)] = specifier.version
    return found


def closure(names: list[str]) -> dict[str, str]:
    """Each installed distribution these need, with its version (markers and extras as pip
    reads them here)."""
    found: dict[str, str] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    pending: list[tuple[str, frozenset[str]]] = [(name, frozenset()) for name in names]
    while pending:
        name, extras = pending.pop()
        key = canonicalize_name(name)
        if (key, extras) in seen:
            continue
        seen.add((key, extras))
        distribution = importlib.metadata.distribution(name)
        found[key] = distribution.version
        for line in distribution.requires or []:
            requirement = Requirement(line)
            wanted = requirement.marker is None or any(
                requirement.marker.evaluate({"extra": extra}) for extra in {"", *extras}
            )
            if wanted:
                pending.append((requirement.name, frozenset(requirement.extras)))
    return found


def test_every_package_the_opentelemetry_packages_install_is_pinned():
    pinned = pins()
    roots = [name for name in pinned if name.startswith("opentelemetry-")]
    assert "opentelemetry-sdk" in roots
    needed = closure(roots)
    assert "protobuf" in needed and "wrapt" in needed
    unpinned = sorted(set(needed) - set(pinned))
    assert unpinned == [], f"pin these in requirements.txt: {unpinned}"
    for name, version in needed.items():
        assert pinned[name] == version, f"{name}: pinned {pinned[name]}, installed {version}"
