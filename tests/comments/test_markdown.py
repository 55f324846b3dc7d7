"""What a comment body costs to render: bounded, whatever its shape (comments.markdown)."""

import gc
import logging
import time

import pytest

from comments import markdown
from comments.models import BODY_MAX_LENGTH

# Shapes that cost markdown-it-py far more than their length (measured at 65,536 characters
# before the budget: "[" 0.9 s, "![" 0.7 s, "[a(" 0.36 s, "*a" 0.5 s, "|-\n" 0.75 s ...).
PATHOLOGICAL = [
    "[", "![", "[a](", "[](", "[](<", "](", "](<", "[]", "[[", "[a", "[a][", "[`", "[\\", "[a]",
    "[]]", "[a]: ", "[a]: <", "[x]: y\n", "*", "_", "*a", "_a", "a*", "*a**", "*_", "**_", "`",
    "`a", "<", "<a", "<http://", ">", "> ", "- > ", "&", "&#", "\\", "- ", "- \n", "1.\n",
    "  - ", "#", "|a\n", "a|\n", "|-\n", "~~", "\n",
]  # fmt: skip


def cpu_ms(function, *args) -> float:
    """CPU time of this thread for the call, the collector held off (a full collection of the
    test process's heap costs as much as the call; the server freezes its heap at start).
    Disabled, not collected first: a collection of the whole suite's heap takes longer than
    the call it would clear the way for."""
    gc.disable()
    try:
        start = time.thread_time()
        function(*args)
        return (time.thread_time() - start) * 1000
    finally:
        gc.enable()


def of_length(unit: str, length: int) -> str:
    return (unit * (length // len(unit) + 1))[:length]


@pytest.mark.parametrize("unit", PATHOLOGICAL)
def test_a_pathological_body_at_the_maximum_length_renders_in_under_200_ms(unit):
    body = of_length(unit, BODY_MAX_LENGTH)

    assert cpu_ms(markdown.render, body) < 200
    assert cpu_ms(markdown.mentions, body) < 200


def test_a_table_of_the_maximum_length_renders_in_under_200_ms():
    head = "|a|b|\n|-|-|\n"
    body = head + "|x|y|\n" * ((BODY_MAX_LENGTH - len(head)) // 6)

    assert cpu_ms(markdown.render, body) < 200


def test_a_body_past_the_budget_shows_as_escaped_text():
    body = "[" * 30_000 + "<script>x</script>\n\nsecond & last"

    assert markdown.render(body) == (
        "<p>" + "[" * 30_000 + "&lt;script&gt;x&lt;/script&gt;</p>\n<p>second &amp; last</p>\n"
    )


def test_a_body_past_the_budget_still_mentions(settings):
    assert markdown.mentions("[" * 60_000 + " @alice") == ["alice"]


ORDINARY = (
    "Reproduced on **staging** with `make test`; see [the log](https://example.com/log).\n"
    "\n- one\n- two with *emphasis*\n\n"
) * 143  # 16 KiB


def test_an_ordinary_long_body_renders_as_markdown():
    html = markdown.render(ORDINARY)

    assert html.count("<strong>staging</strong>") == ORDINARY.count("**staging**")
    assert html.count("<li>") == ORDINARY.count("\n- ")


def test_an_ordinary_body_renders_as_markdown_with_the_service_logging_at_debug(caplog):
    """LOG_LEVEL=DEBUG: the parser's trace of every rule at every line stays out (at INFO by
    the service's logging), or it costs each render its whole budget."""
    caplog.set_level(logging.DEBUG)

    html = markdown.render(ORDINARY)

    assert html.count("<strong>staging</strong>") == ORDINARY.count("**staging**")


def test_a_garbage_collection_during_a_render_is_not_charged_to_it(settings):
    """The collector runs where an allocation triggers it and costs what the whole process
    holds: a collection of 100 ms inside a render of 50 ms of budget leaves it markdown."""
    settings.MARKDOWN_RENDER_BUDGET_MS = 50
    collections = []

    def a_large_heap(phase, info):
        if phase == "start" and not collections:
            collections.append(info)
            started = time.thread_time()
            while time.thread_time() - started < 0.1:
                pass

    threshold = gc.get_threshold()
    gc.callbacks.append(a_large_heap)
    gc.set_threshold(1)  # a collection at the parse's first allocations
    try:
        html = markdown.render("Deployed on **staging**.\n\n- one\n- two\n")
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(a_large_heap)

    assert collections, "no collection ran during the render"
    assert "<strong>staging</strong>" in html and html.count("<li>") == 2


def test_the_budget_is_a_setting(settings):
    settings.MARKDOWN_RENDER_BUDGET_MS = 60_000

    assert markdown.render("[" * 20_000) == "<p>" + "[" * 20_000 + "</p>\n"
    settings.MARKDOWN_RENDER_BUDGET_MS = 0
    assert markdown.render("*a*") == "<p>*a*</p>\n"
