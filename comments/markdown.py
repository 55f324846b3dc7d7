"""Comment bodies: Markdown rendered to HTML a client may insert as is, and the mentions in it.

markdown-it-py parses (CommonMark, with GitHub's tables and strikethrough); raw HTML in the
source is shown as text, not passed through, and images render as links (no image is fetched
from wherever a commenter points, in a reader's browser). nh3 (the Ammonia sanitiser) then
keeps only the tags and attributes below, whatever the renderer let by: the second lock.
"""

from collections.abc import Iterator

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token

from accounts.handles import mentioned_handles

_parser = (
    MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    .enable(["table", "strikethrough"])
    .disable("image")
)

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


def render(body: str) -> str:
    """The body as sanitised HTML: links open nothing but http(s) and mail, and carry
    ``rel="nofollow noopener noreferrer"``."""
    html = _parser.render(body)
    return nh3.clean(
        html,
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
    return mentioned_handles("\n".join(_text(_parser.parse(body))))
