"""The README stays a front door: short, undated, and linking to every page of the site."""

import re

import yaml

from tests.liveserver import ROOT

README = (ROOT / "README.md").read_text()


def nav_pages(entries) -> list[str]:
    pages = []
    for entry in entries:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            pages += nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_the_readme_is_at_most_200_lines():
    assert len(README.splitlines()) <= 200


def test_the_readme_carries_no_dated_prose():
    """Run diaries and dated figures belong in CHANGELOG.md and bench/results/, not here."""
    assert re.findall(r"\b20\d\d-\d\d-\d\d\b", README) == []


def test_the_readme_links_to_every_page_of_the_site():
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    linked = set(re.findall(r"\]\((docs/[^)#]+\.md)", README))

    assert {f"docs/{page}" for page in nav_pages(config["nav"])} <= linked
    assert all((ROOT / path).exists() for path in linked)
