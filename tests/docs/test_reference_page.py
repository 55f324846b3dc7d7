"""The API reference page (docs/reference.md) renders docs/openapi.json with Swagger UI, and
everything it loads comes with the site (mkdocs-swagger-ui-tag ships Swagger UI's files): no
script, style, font or frame from another host, so the site works offline and tells no one
who reads it."""

from urllib.parse import urlsplit

from bs4 import BeautifulSoup

from tests.liveserver import ROOT

LOADED = {"script": "src", "link": "href", "iframe": "src", "img": "src"}


def loaded_by(html: str) -> list[str]:
    """What a browser fetches for the page: scripts, styles and preconnects, frames, images
    (plain links are only followed when clicked)."""
    soup = BeautifulSoup(html, "html.parser")
    found = []
    for tag, attribute in LOADED.items():
        for element in soup.find_all(tag):
            if element.get(attribute) and not (tag == "link" and "canonical" in element["rel"]):
                found.append(element[attribute])
    return found


def test_the_reference_page_renders_the_committed_schema_with_local_files(site):
    page = (site / "reference" / "index.html").read_text()
    frames = [src for src in loaded_by(page) if src.startswith("swagger-")]
    assert len(frames) == 1, "the page has no Swagger UI frame"
    frame = (site / "reference" / frames[0]).read_text()
    assert 'var url = "../openapi.json"' in frame
    assert (site / "openapi.json").read_bytes() == (ROOT / "docs" / "openapi.json").read_bytes()
    for address in loaded_by(page) + loaded_by(frame):
        parts = urlsplit(address)
        assert not parts.scheme and not parts.netloc, f"loaded from elsewhere: {address}"
        assert (site / "reference" / parts.path).exists(), f"missing from the site: {address}"
