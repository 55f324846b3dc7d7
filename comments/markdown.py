"""Comment bodies: Markdown rendered to HTML a client may insert as is, and the mentions in it.

markdown-it-py parses (CommonMark, with GitHub's tables and strikethrough); raw HTML in the
source is shown as text, not passed through, and images render as links (no image is fetched
from wherever a commenter points, in a reader's browser). nh3 (the Ammonia sanitiser) then
keeps only the tags and attributes below, whatever the renderer let by: the second lock.

A parse is bounded in time. markdown-it-py is pure Python and some shapes of input cost it
far more than their length suggests: a body of 65,536 ``[`` took 0.9 s (every bracket starts a
link label that is scanned ahead), ``![``, ``[a](``, ``*a``, list markers or table rows
hundreds of milliseconds more. Each block line and each inline position the parser tries
first checks the thread's CPU clock; past ``MARKDOWN_RENDER_BUDGET_MS`` the parse stops and
the body is shown as what it is, escaped text in paragraphs (as GitHub shows a file too large
to render). CPU time and not the wall clock, so that a busy server does not make an ordinary
comment fall back; the same body costs the same everywhere, within the clock's noise. Nor the
garbage collector's passes, which run where an allocation happens to trigger them and cost
what the whole process holds: one took 80 ms of an ordinary 16 KB render, which fell back.
"""

import gc
import html
import re
import threading
import time
from collections.abc import Iterator

import nh3
from django.conf import settings
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token

from accounts.handles import mentioned_handles


class BudgetExceeded(Exception):
    """A parse (and its rendering) ran past its share of CPU time."""


# The clock is read every this many checks (a read costs about a microsecond).
CHECK_EVERY = 8
_DEADLINE = "collab_deadline"
_CHECKS = "collab_checks"


_collector = threading.local()


def _collector_clock(phase: str, info: dict) -> None:
    """``gc.callbacks``: the CPU time this thread has spent collecting garbage."""
    now = time.thread_time()
    if phase == "start":
        _collector.started = now
    elif (started := getattr(_collector, "started", None)) is not None:
        _collector.spent = getattr(_collector, "spent", 0.0) + now - started
        _collector.started = None


gc.callbacks.append(_collector_clock)


def _clock() -> float:
    """The thread's CPU time, less its garbage collections."""
    return time.thread_time() - getattr(_collector, "spent", 0.0)


def _over_budget(env: dict) -> bool:
    deadline = env.get(_DEADLINE)
    if deadline is None:
        return False
    env[_CHECKS] = checks = env.get(_CHECKS, 0) + 1
    if checks % CHECK_EVERY == 1 and _clock() > deadline:
        raise BudgetExceeded
    return False


def _budget_block(state, start_line, end_line, silent) -> bool:
    return _over_budget(state.env)


def _budget_inline(state, silent) -> bool:
    return _over_budget(state.env)


def _budget_pass(state) -> None:
    _over_budget(state.env)


class BudgetRenderer(RendererHTML):
    """Markdown-it's HTML renderer, on the parse's clock (a body of 20,000 list items makes
    as many tokens to write out)."""

    def renderToken(self, tokens, idx, options, env) -> str:  # noqa: N802 - markdown-it's name
        _over_budget(env)
        return super().renderToken(tokens, idx, options, env)

    def renderInline(self, tokens, options, env) -> str:  # noqa: N802 - markdown-it's name
        _over_budget(env)
        return super().renderInline(tokens, options, env)


_parser = (
    MarkdownIt(
        "commonmark",
        {"html": False, "linkify": False, "typographer": False},
        renderer_cls=BudgetRenderer,
    )
    .enable(["table", "strikethrough"])
    .disable("image")
)
# First in each chain, so every line and every position tried (look-aheads included) counts.
_parser.block.ruler.before(
    _parser.block.ruler.get_active_rules()[0],
    "collab_budget",
    _budget_block,
    {"alt": ["paragraph", "reference", "blockquote", "list"]},
)
_parser.inline.ruler.before(
    _parser.inline.ruler.get_active_rules()[0], "collab_budget", _budget_inline
)
# And between the passes that pair emphasis and brackets once a block's inline is read.
for _rule in _parser.inline.ruler2.get_all_rules():
    _parser.inline.ruler2.before(_rule, f"collab_budget_{_rule}", _budget_pass)

ALLOWED_TAGS = {
    "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
    "li", "ol", "p", "pre", "s", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "code": {"class"},
    "ol": {"start"},
    "td": {"style"},
    "th": {"style"},
}


def _budget_env() -> dict:
    return {_DEADLINE: _clock() + settings.MARKDOWN_RENDER_BUDGET_MS / 1000}


def _plain(body: str) -> str:
    """The body as text: its paragraphs escaped, its line breaks kept."""
    paragraphs = (part.strip("\n") for part in re.split(r"\n[ \t]*\n", body))
    return "".join(
        "<p>" + html.escape(part, quote=False).replace("\n", "<br>\n") + "</p>\n"
        for part in paragraphs
        if part.strip()
    )


def render(body: str) -> str:
    """The body as sanitised HTML: links open nothing but http(s) and mail, and carry
    ``rel="nofollow noopener noreferrer"``. A body whose parse runs past the budget is
    rendered as escaped text."""
    try:
        rendered = _parser.render(body, _budget_env())
    except BudgetExceeded:
        return _plain(body)  # escaped throughout: nothing for the sanitiser to do
    return sanitize(rendered)


def sanitize(markup: str) -> str:
    """HTML kept to what a rendered body may hold: ``render``'s second lock, also applied to
    HTML made elsewhere (the bodies of an imported workspace archive)."""
    return nh3.clean(
        markup,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="nofollow noopener noreferrer",
        # Table cells keep their alignment, and nothing else of a style.
        filter_style_properties={"text-align"},
    )


def _text(tokens: list[Token]) -> Iterator[str]:
    for token in tokens:
        # Code spans and blocks are quoted, not addressed to anyone.
        if token.type == "text":
            yield token.content
        elif token.children:
            yield from _text(token.children)


def mentions(body: str) -> list[str]:
    """The handles ``@mentioned`` in the body's text (outside code), lowercased, each once."""
    try:
        text = "\n".join(_text(_parser.parse(body, _budget_env())))
    except BudgetExceeded:
        text = body  # a body too costly to parse: its code is not told apart
    return mentioned_handles(text)
