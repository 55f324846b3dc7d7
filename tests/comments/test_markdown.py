"""What a comment body costs to render: bounded, whatever its shape (comments.markdown)."""

import gc
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


def test_an_ordinary_long_body_renders_as_markdown():
    paragraph = (
        "Reproduced on **staging** with `make test`; see [the log](https://example.com/log).\n"
        "\n- one\n- two with *emphasis*\n\n"
    )
    body = paragraph * (16_384 // len(paragraph))

    html = markdown.render(body)

    assert html.count("<strong>staging</strong>") == body.count("**staging**")
    assert html.count("<li>") == body.count("\n- ")


def test_the_budget_is_a_setting(settings):
    settings.MARKDOWN_RENDER_BUDGET_MS = 60_000

    assert markdown.render("[" * 20_000) == "<p>" + "[" * 20_000 + "</p>\n"
    settings.MARKDOWN_RENDER_BUDGET_MS = 0
    assert markdown.render("*a*") == "<p>*a*</p>\n"
