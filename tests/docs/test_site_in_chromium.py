"""The docs site as a reader opens it: served over HTTP on 127.0.0.1 and opened in headless
Chromium. The API reference draws every operation of the committed schema, the search box
finds what the guide explains, and no page reports an error."""

import functools
import http.server
import json

import pytest

from tests.browser.chromium import Chromium, executable
from tests.liveserver import ROOT, serve_in_thread

pytestmark = [pytest.mark.slow(seconds=12), pytest.mark.live]
METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


@pytest.fixture(scope="module")
def served(site):
    """The built site on a port of its own, as ``./doc serve`` or any static host serves it."""
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    serve_in_thread(server)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if executable() is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    chromium = Chromium(str(tmp_path_factory.mktemp("profile")))
    yield chromium
    chromium.close()


def operations() -> set[tuple[str, str]]:
    schema = json.loads((ROOT / "docs" / "openapi.json").read_text())
    return {
        (method.upper(), path)
        for path, item in schema["paths"].items()
        for method in item
        if method in METHODS
    }


# Swagger UI draws in a frame of the reference page (mkdocs-swagger-ui-tag).
DRAWN = """(() => {
  const frame = document.querySelector('iframe');
  const inner = frame && frame.contentDocument;
  if (!inner) return null;
  return Array.from(inner.querySelectorAll('.opblock-summary')).map(summary => [
    summary.querySelector('.opblock-summary-method').textContent.trim(),
    summary.querySelector('.opblock-summary-path').getAttribute('data-path'),
  ]);
})()"""


def test_the_reference_draws_every_operation(served, browser):
    expected = operations()
    _, problems = browser.visit(f"{served}/reference/", settle=0.5)

    drawn = browser.wait_until(f"(({DRAWN}) || []).length >= {len(expected)} && {DRAWN}")

    assert drawn, "Swagger UI drew no operation"
    assert {(method, path) for method, path in drawn} == expected
    assert problems + browser.problems() == []


SEARCH = """(() => {
  const input = document.querySelector('input.md-search__input');
  input.focus();
  input.value = %s;
  input.dispatchEvent(new Event('input', {bubbles: true}));
  input.dispatchEvent(new KeyboardEvent('keyup', {bubbles: true}));
  return true;
})()"""
RESULTS = """Array.from(document.querySelectorAll('.md-search-result__item a'))
  .map(link => [link.getAttribute('href'), link.textContent])"""


@pytest.mark.parametrize(
    ("words", "page"),
    [("Idempotency-Key", "guide/idempotency/"), ("If-Match", "guide/conditional-requests/")],
)
def test_the_search_box_finds_what_the_guide_explains(served, browser, words, page):
    _, problems = browser.visit(f"{served}/", settle=0.3)
    # The search index loads in a worker; typing before it is ready finds nothing yet.
    results = []
    for _attempt in range(40):
        browser.evaluate(SEARCH % json.dumps(words))
        if results := browser.wait_until(f"{RESULTS}.length && {RESULTS}", timeout=0.5):
            break

    assert results, f"the search for {words} found nothing"
    assert any(page in href for href, _text in results), results
    assert any(words.lower() in text.lower() for _href, text in results), results
    assert problems + browser.problems() == []
